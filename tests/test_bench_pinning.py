"""bench/common.pin_process, which bench/nonpersistent.py --pin uses to keep brokers off the clients' CPUs.

Affinity is per thread on Linux, so a process pinned through its main thread alone would leave the
threads it had already started (tokio's workers, the client's I/O threads) free to run anywhere.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.common import Placement, pin_process

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                                reason="needs Linux affinity and two CPUs")

# A child that starts a thread, then reports the CPUs its main thread and that thread may use when asked.
CHILD = """
import os, sys, threading
ready, asked = threading.Event(), threading.Event()
seen = {}
def worker():
    seen["tid"] = threading.get_native_id()
    ready.set()
    asked.wait(30)
    seen["worker"] = sorted(os.sched_getaffinity(0))
thread = threading.Thread(target=worker)
thread.start()
ready.wait(30)
print("started", flush=True)
sys.stdin.readline()
asked.set()
thread.join(30)
print(sorted(os.sched_getaffinity(0)), seen["worker"], flush=True)
"""


def test_every_thread_of_the_process_is_pinned_not_only_its_main_thread():
    cpu = sorted(os.sched_getaffinity(0))[-1]
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "started"
        pin_process(child.pid, {cpu})
        child.stdin.write("\n")
        child.stdin.flush()
        main_cpus, worker_cpus = child.stdout.readline().strip().split("] [")
        assert main_cpus + "]" == f"[{cpu}]" and "[" + worker_cpus == f"[{cpu}]"
    finally:
        child.kill()
        child.wait(10)


def test_a_process_that_is_gone_is_an_error_not_a_silent_success():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(10)
    with pytest.raises(FileNotFoundError):
        pin_process(child.pid, {0})


def test_placement_refuses_to_pin_on_one_cpu_and_does_nothing_unasked(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})
    with pytest.raises(ValueError, match="two CPUs or more"):
        Placement(True)
    unpinned = Placement(False)
    unpinned.broker(os.getpid())  # nothing moves
    unpinned.clients_here()
    assert unpinned.describe() == "brokers and clients sharing every CPU"


def test_placement_names_the_cpus_it_uses(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    assert Placement(True).describe("client") == "brokers on CPU 2, client on CPU 0,1"
