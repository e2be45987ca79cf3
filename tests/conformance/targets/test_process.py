"""conformance/targets/process.py: bounded start and stop of child processes."""

import os
import sys
import time

import pytest

from conformance.errors import TargetError
from conformance.targets.process import ManagedProcess, live_pids

PY = sys.executable


def _py(code: str, name: str = "child") -> ManagedProcess:
    return ManagedProcess([PY, "-u", "-c", code], name=name)


def _line_ready(text):
    return lambda lines: True if any(text in line for line in lines) else None


def test_ready_line_then_sigterm_stop():
    process = _py("import time; print('hello'); print('READY now'); time.sleep(60)")
    process.start(_line_ready("READY"), timeout=10)
    pid = process.pid
    assert pid in live_pids()
    assert process.stop() == -15  # ended by SIGTERM
    assert pid not in live_pids() and not os.path.exists(f"/proc/{pid}")


def test_a_child_that_dies_is_an_error_with_its_last_output():
    process = _py("import sys; print('bad config key foo'); sys.exit(2)")
    with pytest.raises(TargetError, match=r"exited with code 2 before it was ready: bad config key foo"):
        process.start(_line_ready("READY"), timeout=10)


def test_a_silent_child_is_an_error_after_the_bound_and_is_killed():
    process = _py("import time; time.sleep(60)")
    started = time.monotonic()
    with pytest.raises(TargetError, match="not ready within 0.5 s"):
        process.start(_line_ready("READY"), timeout=0.5)
    assert time.monotonic() - started < 30  # bounded; generous for a loaded machine
    assert not process.alive() and process.pid not in live_pids()


def test_a_child_ignoring_sigterm_is_killed_after_the_bound():
    process = _py("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('READY'); time.sleep(60)")
    process.start(_line_ready("READY"), timeout=10)
    started = time.monotonic()
    assert process.stop(timeout=0.5) == -9
    assert time.monotonic() - started < 30  # bounded; generous for a loaded machine


def test_missing_executable_is_a_target_error():
    with pytest.raises(TargetError, match="cannot execute"):
        ManagedProcess(["/nonexistent/broker"], name="x").start(_line_ready("READY"), timeout=1)
