"""Child processes that die with the harness, whichever thread starts them.

The harness's children (brokers, ZooKeeper, client drivers) get PR_SET_PDEATHSIG(SIGKILL), so a
harness killed outright takes them with it. Linux sends that signal when the *thread* that
forked the child exits, not the process; and cases run on worker threads that come and go. So
every child is forked by one long-lived thread of this module (``popen``), which lives as long
as the harness process does.

Folders a harness process keeps in the temporary directory (key files, drivers' TMPDIRs) are named
``<prefix><pid>-...``: one that a killed harness could not remove is removed by a later one
(``remove_folders_of_gone``).
"""

from __future__ import annotations

import ctypes
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Optional

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
