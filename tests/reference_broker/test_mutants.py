"""The deliberately broken variants of the reference broker (reference_broker/mutants.py): each one
applies, replaces exactly one function, changes the behaviour it names, and the broker starts
with it (``--mutant NAME`` or PULSAR_CONFORMANCE_MUTANT)."""

from __future__ import annotations

import collections
import inspect
import os
import signal
import subprocess
import sys
import types

import pytest

from model.names import TopicName
from reference_broker import autocreation, mutants
from reference_broker.config import build_config


def test_at_least_forty_mutants_covering_every_pip_and_both_apis():
    assert len(mutants.MUTANTS) >= 40
    assert len(mutants.BY_NAME) == len(mutants.MUTANTS)
    by_pip = collections.Counter(m.pip for m in mutants.MUTANTS)
    assert set(by_pip) == {"344", "2", "157", "35"}
    apis_344 = {m.api for m in mutants.MUTANTS if m.pip == "344"}
    assert {"rest", "binary", "both"} <= apis_344
    assert {m.api for m in mutants.MUTANTS if m.pip == "2"} >= {"rest", "binary"}


@pytest.mark.parametrize("name", sorted(mutants.BY_NAME))
def test_every_mutant_matches_the_code_once_and_compiles(name):
    assert mutants.check(name) is None


def _bindings() -> dict:
    """Every function-valued binding of every reference_broker module and class."""
    seen = {}
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("reference_broker") or not isinstance(module, types.ModuleType):
            continue
        for key, value in list(vars(module).items()):
            if inspect.isfunction(value):
                seen[(module.__name__, key)] = value
            elif inspect.isclass(value) and value.__module__ == module.__name__:
                for attr, member in vars(value).items():
                    if inspect.isfunction(member) or isinstance(member, (staticmethod, classmethod)):
                        seen[(f"{module.__name__}.{key}", attr)] = member
    return seen


@pytest.mark.parametrize("name", sorted(mutants.BY_NAME))
def test_every_mutant_replaces_exactly_one_function_and_is_undone(name):
    mutant = mutants.get(name)
    with mutants.applied(name):
        pass  # imports everything first
    before = _bindings()
    with mutants.applied(name):
        during = _bindings()
    after = _bindings()
    changed = {key for key in before if during.get(key) is not before[key]}
    assert changed, name
    qualname = mutant.where.split(":", 1)[1]
    attribute = qualname.rsplit(".", 1)[-1]
    assert {key[1] for key in changed} == {attribute}  # one function (and its aliases, Rule 3)
    assert all(after[key] is before[key] for key in before)


def test_a_mutant_changes_the_behaviour_it_names():
    config = build_config(overrides=["allowAutoTopicCreation=false"])
    topic = TopicName.parse("persistent://public/default/t")
    assert autocreation.is_allow_auto_topic_creation(topic, {}, config) is False
    with mutants.applied("auto-broker-flag-ignored"):
        assert autocreation.is_allow_auto_topic_creation(topic, {}, config) is True
    assert autocreation.is_allow_auto_topic_creation(topic, {}, config) is False


def test_an_unknown_or_stale_mutant_is_refused():
    with pytest.raises(mutants.MutantError, match="unknown mutant"):
        mutants.get("nope")
    stale = mutants.Mutant("stale", "344", "rest", "x", "reference_broker.autocreation:is_system_topic",
                           "this text is not in the function", "x")
    with pytest.raises(mutants.MutantError, match="occurs 0 times"):
        mutants._compile(stale)


def _start(args: list[str], env: dict) -> tuple[int, str, str]:
    """Start the broker, wait for its first line (READY, or an exit), stop it: (code, first line, stderr)."""
    process = subprocess.Popen([sys.executable, "-m", "reference_broker", "--broker-port", "0", "--web-port", "0",
                                *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
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


@pytest.mark.slow
def test_the_broker_starts_with_a_mutant_from_the_flag_or_the_environment():
    env = dict(os.environ)
    code, first, err = _start(["--mutant", "p344-bin-ignores-field6"], env)
    assert code == 0 and first.startswith("READY pulsar://"), err
    env[mutants.ENV_VAR] = "p2-drop-receipt-zero"
    code, first, err = _start([], env)
    assert code == 0 and first.startswith("READY "), err
    env[mutants.ENV_VAR] = "no-such-mutant"
    code, first, err = _start([], env)
    assert code == 2 and first == "" and "unknown mutant" in err


def test_the_flag_is_hidden_from_help():
    from reference_broker.__main__ import parse_args
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        parse_args(["--help"])
    assert "--mutant" not in out.getvalue()
    assert parse_args(["--mutant", "x"]).mutant == "x"
