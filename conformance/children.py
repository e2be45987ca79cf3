"""Child processes that die with the harness, whichever thread starts them, and never hang its start.

The harness's children (brokers, ZooKeeper, client drivers) die with it: a harness killed outright
takes them along. Two facts of Linux shape how:

- the parent-death signal (PR_SET_PDEATHSIG) fires when the *thread* that forked the child ends,
  not the process, and cases run on worker threads that come and go. So every child is forked by
  a long-lived spawner thread of this module (``popen``).
- nothing may run between fork and exec in the child of a multi-threaded process but what is safe
  after fork: Python code there (``preexec_fn``) can wait forever on a lock another thread held at
  the fork (a child stuck before exec was seen). So the signal is set by util-linux's ``setpriv
  --pdeathsig KILL`` in front of the command, which execs it in the same process, and the fork
  runs no Python. It is a fork, not a vfork (``_USE_VFORK``, below).

Every start is bounded (``SPAWN_TIMEOUT_S``): a start that does not return raises
``ChildStartTimeout`` to its caller, the spawner thread that hung is given up and a new one serves
the next start, and a child that the hung start makes after all is killed at once.

Folders a harness process keeps in the temporary directory (key files, drivers' TMPDIRs) are named
``<prefix><pid>-...``: one that a killed harness could not remove is removed by a later one
(``remove_folders_of_gone``).
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future, TimeoutError as FutureTimeout
from pathlib import Path
from typing import Optional

from conformance.errors import ConformanceError

SPAWN_TIMEOUT_S = 30.0
SETPRIV = shutil.which("setpriv") if sys.platform.startswith("linux") else None

# CPython starts a child with vfork() where it can, and the child then shares the memory of a
# harness whose other threads go on running; exec failed there with EFAULT ("Bad address") now and
# then on a busy machine. A plain fork, with only C code between fork and exec, has no such hazard.
if hasattr(subprocess, "_USE_VFORK"):
    subprocess._USE_VFORK = False


class ChildStartTimeout(ConformanceError, OSError):
    """A child process could not be started within ``SPAWN_TIMEOUT_S`` (an OSError, as every other
    failure to start a program is)."""


class _Spawner:
    """One thread that forks every child asked of it, for as long as the harness lives."""

    def __init__(self) -> None:
        self.requests: "queue.Queue[tuple[tuple, dict, Future, threading.Event]]" = queue.Queue()
        self.thread = threading.Thread(target=self._serve, name="child process spawner", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            args, kwargs, future, abandoned = self.requests.get()
            try:
                child = subprocess.Popen(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - the caller gets it
                future.set_exception(exc)
                continue
            if abandoned.is_set():  # its caller gave up waiting: nobody would ever stop it
                _kill(child, kwargs.get("start_new_session", False))
                continue
            future.set_result(child)


_spawner: Optional[_Spawner] = None
_spawner_lock = threading.Lock()


def with_death_signal(argv: list, death_signal: str = "KILL") -> list:
    """``argv`` run so that it gets ``death_signal`` when the thread that forked it ends (Linux, setpriv)."""
    if SETPRIV is None:
        return list(argv)
    return [SETPRIV, "--pdeathsig", death_signal, "--", *argv]


def popen(argv, timeout: Optional[float] = None, death_signal: str = "KILL", **kwargs) -> subprocess.Popen:
    """``subprocess.Popen(argv, **kwargs)`` forked by the spawner thread, getting ``death_signal``
    when the harness dies (KILL; TERM for a child that must clean up after itself, such as a whole
    run); raises ChildStartTimeout when the start does not return within ``timeout`` seconds
    (default ``SPAWN_TIMEOUT_S``)."""
    global _spawner
    timeout = SPAWN_TIMEOUT_S if timeout is None else timeout
    if "preexec_fn" in kwargs:
        raise ValueError("children.popen runs no Python between fork and exec: no preexec_fn")
    with _spawner_lock:
        if _spawner is None:
            _spawner = _Spawner()
        spawner = _spawner
    _check_executable(str(argv[0]), kwargs.get("env"), kwargs.get("cwd"))
    future: Future = Future()
    abandoned = threading.Event()
    spawner.requests.put(((with_death_signal(list(argv), death_signal),), kwargs, future, abandoned))
    try:
        return future.result(timeout)
    except FutureTimeout:
        abandoned.set()
        with _spawner_lock:
            if _spawner is spawner:
                _spawner = None  # the next start gets a thread that is not stuck
        raise ChildStartTimeout(f"starting {argv[0]!r} did not return within {timeout:g} s; "
                                "the spawner thread was given up and a new one serves later starts") from None


def _check_executable(program: str, env: Optional[dict], cwd) -> None:
    """The FileNotFoundError Popen would raise for a missing program, raised before setpriv hides
    it behind an exit status."""
    if os.sep in program:
        path = program if os.path.isabs(program) else os.path.join(cwd or os.getcwd(), program)
        found = os.path.isfile(path) and os.access(path, os.X_OK)
    else:
        found = shutil.which(program, path=os.pathsep.join(os.get_exec_path(env))) is not None
    if not found:
        raise FileNotFoundError(2, "No such file or directory", program)


def _kill(child: subprocess.Popen, own_group: bool) -> None:
    try:
        if own_group:
            os.killpg(child.pid, signal.SIGKILL)
        else:
            child.kill()
    except (ProcessLookupError, PermissionError):
        pass
    try:
        child.wait(5)
    except subprocess.TimeoutExpired:
        pass


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_folders_of_gone(prefix: str, parent: Optional[Path] = None) -> list[Path]:
    """The ``<prefix><pid>-...`` folders of processes that are gone, removed; returns them."""
    removed = []
    for folder in Path(parent or tempfile.gettempdir()).glob(prefix + "*"):
        pid_text = folder.name[len(prefix):].split("-", 1)[0]
        if pid_text.isdigit() and int(pid_text) != os.getpid() and not process_alive(int(pid_text)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed
