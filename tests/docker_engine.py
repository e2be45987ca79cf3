"""The Docker engine the container tests run on: the one that answers, or one `make docker` starts,
which `make docker-stop` stops again when the tests of the module are done (and only then: an
engine somebody else started is left as it was)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conformance.targets.container import docker_engine_problem

REPO = Path(__file__).resolve().parents[1]


def engine_answers() -> bool:
    return docker_engine_problem(5.0) is None


@pytest.fixture(scope="module")
def engine():
    started = False
    if not engine_answers():
        if shutil.which("make") is None:
            pytest.skip("no Docker engine answers and make is not installed to start one")
        done = subprocess.run(["make", "-C", str(REPO), "docker"], capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert engine_answers()
        started = True
    yield
    if started:
        subprocess.run(["make", "-C", str(REPO), "docker-stop"], capture_output=True, text=True, timeout=120)
