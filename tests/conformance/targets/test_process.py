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


_ECHO = ("import sys\n"
         "print('READY 0', flush=True)\n"
         "for line in sys.stdin:\n"
         "    if line.startswith('EXIT'): sys.exit(3)\n"
         "    print('noise', flush=True)\n"
         "    print('READY ' + line.split()[1], flush=True)\n")


def test_a_child_taking_commands_is_told_one_and_its_answer_after_it_awaited():
    process = ManagedProcess([PY, "-u", "-c", _ECHO], name="echo", commands=True)
    first = lambda lines: next((line for line in lines if line.startswith("READY")), None)  # noqa: E731
    try:
        assert process.start(first, timeout=10) == "READY 0"
        pid = process.pid
        # Only what was printed after the command counts: the READY 0 before it is not the answer.
        assert process.tell("AGAIN 1", first, timeout=10) == "READY 1"
        assert process.tell("AGAIN 2", first, timeout=10) == "READY 2"
        assert process.pid == pid
        with pytest.raises(TargetError, match=r"exited with code 3 before it was done with 'EXIT'"):
            process.tell("EXIT now", first, timeout=10)
        assert pid not in live_pids()
    finally:
        process.stop()


def test_a_child_without_commands_cannot_be_told_anything():
    process = _py("import time; print('READY'); time.sleep(60)")
    try:
        process.start(_line_ready("READY"), timeout=10)
        with pytest.raises(TargetError, match="takes no commands"):
            process.tell("RESTART []", _line_ready("READY"), timeout=1)
    finally:
        process.stop()
