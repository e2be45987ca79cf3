"""Child processes that die with the harness, whichever thread starts them.

The harness's children (brokers, ZooKeeper, client drivers) get PR_SET_PDEATHSIG(SIGKILL), so a
harness killed outright takes them with it. Linux sends that signal when the *thread* that
forked the child exits, not the process; and cases run on worker threads that come and go. So
every child is forked by one long-lived thread of this module (``popen``), which lives as long
as the harness process does.
"""

from __future__ import annotations

import ctypes
import queue
import signal
import subprocess
import sys
import threading
from concurrent.futures import Future

_requests: "queue.Queue[tuple[tuple, dict, Future]]" = queue.Queue()
_started = threading.Lock()
_thread = None


def _load_prctl():
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except OSError:
        return None


# Loaded here, in the parent: a dlopen between fork and exec can wait forever on a loader lock
# that another thread of the harness held at the fork (observed: a child stuck before exec).
_PRCTL = _load_prctl() if sys.platform.startswith("linux") else None


def die_with_parent() -> None:  # runs in the child between fork and exec
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _fork_forever() -> None:
    while True:
        args, kwargs, future = _requests.get()
        try:
            future.set_result(subprocess.Popen(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - the caller gets it
            future.set_exception(exc)


def popen(*args, **kwargs) -> subprocess.Popen:
    """``subprocess.Popen`` with death-with-the-harness, forked by the long-lived thread."""
    global _thread
    if sys.platform.startswith("linux"):
        kwargs.setdefault("preexec_fn", die_with_parent)
    with _started:
        if _thread is None:
            _thread = threading.Thread(target=_fork_forever, name="child process spawner", daemon=True)
            _thread.start()
    future: Future = Future()
    _requests.put((args, kwargs, future))
    return future.result()
