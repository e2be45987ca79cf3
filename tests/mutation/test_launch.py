"""``python -m mutation.launch``: a reference broker with one variant installed, started from the
command line, and the list of variants the mutation check reads; the shipped broker has no
``--mutant`` of its own."""

from __future__ import annotations

import contextlib
import io
import json
import signal
import subprocess
import sys

import pytest

from mutation import launch, variants
from reference_broker.__main__ import parse_args


def _start(argv: list[str]) -> tuple[int, str, str]:
    """Start ``argv``, wait for its first line (READY, or an exit), stop it: (code, first line, stderr)."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = process.stdout.readline()  # READY, or "" when it exits first
        if first:
            process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
        return code, first, process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


BROKER_ARGS = ["--broker-port", "0", "--web-port", "0", "--metadata-store", "memory:"]


@pytest.mark.slow
def test_the_launcher_starts_a_broker_with_the_variant_and_the_brokers_own_arguments():
    code, first, err = _start([sys.executable, "-m", "mutation.launch", "--mutant", "p344-bin-ignores-field6",
                               *BROKER_ARGS, "--set", "allowAutoTopicCreation=false"])
    assert code == 0 and first.startswith("READY pulsar://127.0.0.1:"), err


@pytest.mark.slow
def test_an_unknown_variant_is_refused_before_anything_listens():
    code, first, err = _start([sys.executable, "-m", "mutation.launch", "--mutant", "no-such-mutant", *BROKER_ARGS])
    assert code == 2 and first == "" and "unknown mutant 'no-such-mutant'" in err


def test_a_stale_variant_is_refused_with_exit_code_2(monkeypatch, capsys):
    stale = variants.Mutant("stale", "344", "rest", "x", "reference_broker.autocreation:is_system_topic",
                            "this text is not in the function", "x")
    monkeypatch.setitem(variants.BY_NAME, "stale", stale)
    assert launch.main(["--mutant", "stale", *BROKER_ARGS]) == 2
    assert "occurs 0 times" in capsys.readouterr().err


def test_the_list_is_every_variant_as_one_json_object_a_line(capsys):
    assert launch.main(["--list"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [entry["name"] for entry in listed] == [m.name for m in variants.MUTANTS]
    assert listed[0] == {"name": variants.MUTANTS[0].name, "pip": variants.MUTANTS[0].pip,
                         "api": variants.MUTANTS[0].api, "description": variants.MUTANTS[0].description}


def test_the_shipped_broker_has_no_mutant_flag():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        parse_args(["--help"])
    assert "--mutant" not in out.getvalue()
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        parse_args(["--mutant", "p344-bin-ignores-field6"])
