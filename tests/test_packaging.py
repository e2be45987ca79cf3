"""The project as a user installs it: an sdist and a wheel built from what a clean clone holds, the wheel
installed into a fresh virtualenv, and its commands run from a folder outside the repository.

A clone has no generated protobuf module (pulsar_codec/pulsar_api_pb2.py is built, never committed), so
this proves setup.py's build step writes it, and that every file the harness reads at run time (spec rows,
recorded observations, known divergences, generated cases, the client-driver protocol and the Java drivers'
sources, the Maven settings) is package data: the installed `cases` lists exactly what the clone lists,
and a whole PIP-344 run and the reports stage succeed with nothing of the clone on sys.path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STEP_TIMEOUT = 600


def run(argv: list, cwd: Path, timeout: float = STEP_TIMEOUT) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, argv))} exited {done.returncode}:\n{done.stdout[-3000:]}\n" \
                                 f"{done.stderr[-3000:]}"
    return done


def clean_clone(into: Path) -> Path:
    """The working tree's files that git would clone (tracked or new, never ignored ones such as the
    generated module or .venv/)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for relative in filter(None, listed):
        source = ROOT / relative
        if source.is_file():
            (into / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / relative)
    assert not (into / "pulsar_codec" / "pulsar_api_pb2.py").exists()
    return into


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_wheel_installs_and_runs_outside_the_repository(tmp_path):
    allure_cli = ROOT / "node_modules" / ".bin" / "allure"
    if not allure_cli.exists():
        pytest.fail("the allure CLI is not installed: run `make node_modules`")
    source = clean_clone(tmp_path / "clone")
    dist = tmp_path / "dist"
    # The wheel is built from the sdist, so this proves the sdist complete as well.
    run([sys.executable, "-m", "build", "--outdir", dist, source], cwd=tmp_path)
    wheel = next(dist.glob("pulsar_conformance-*.whl"))
    assert next(dist.glob("pulsar_conformance-*.tar.gz"))

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv], cwd=tmp_path)
    python = venv / "bin" / "python"
    run([python, "-m", "pip", "install", "--quiet", f"{wheel}[reports]"], cwd=tmp_path)

    work = tmp_path / "elsewhere"
    work.mkdir()
    where = run([python, "-c", "import conformance, pulsar_codec.pulsar_api_pb2 as pb; print(conformance.__file__)"],
                cwd=work).stdout.strip()
    assert where.startswith(str(venv)), where

    installed = run([venv / "bin" / "pulsar-conformance", "cases"], cwd=work)
    in_clone = run([sys.executable, "-m", "conformance", "cases"], cwd=ROOT)
    assert installed.stdout == in_clone.stdout and installed.stdout.count("\n") > 500
    assert installed.stderr.strip().endswith(" cases") and installed.stderr == in_clone.stderr

    run([venv / "bin" / "pulsar-conformance", "run", "--target", "reference", "--pip", "344", "--out", "out"],
        cwd=work)
    (results,) = (work / "out" / "results").glob("*.jsonl")
    records = [json.loads(line) for line in results.read_text().splitlines()]
    verdicts = [record["verdict"] for record in records]
    assert verdicts.count("passed") > 300 and not {"broken", "indefinite"} & set(verdicts)
    # a client library's known divergences fail on every broker, the reference one included
    assert all(record["known_divergence"] for record in records if record["verdict"] == "failed")
    assert any(record["client"].startswith("github.com/apache/pulsar-client-go") for record in records)

    run([venv / "bin" / "pulsar-conformance", "report", "--results", "out/results", "--out", "out", "--quiet",
         "--allure-cli", allure_cli], cwd=work)
    assert (work / "out" / "summary.html").is_file() and (work / "out" / "allure-report" / "index.html").is_file()
