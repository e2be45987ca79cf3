"""kill -9 during metadata writes loses no acknowledged write, on the SQLite and the ZooKeeper stores.

Each round starts a broker process on the same store, writes namespaces through the admin API as fast
as it answers, kills the process with SIGKILL at a random moment, and restarts on the store: every
namespace whose creation was answered 204 must be there. ``DURABILITY_KILLS`` rounds per store (3 by
default; ``make fuzz`` runs 25). The figures are printed.
"""

import os
import random
import signal
import threading
import time

import httpx
import pytest

from .broker_process import start, stop
from .zookeeper_server import zookeeper_server  # noqa: F401

pytestmark = pytest.mark.slow

KILLS = int(os.environ.get("DURABILITY_KILLS", "3"))


def _write_until_killed(web_url: str, round_number: int, acknowledged: list[str], stop_writing: threading.Event):
    with httpx.Client(timeout=5) as http:
        index = 0
        while not stop_writing.is_set():
            name = f"public/r{round_number}-n{index}"
            index += 1
            try:
                if http.put(f"{web_url}/admin/v2/namespaces/{name}").status_code == 204:
                    acknowledged.append(name)
            except httpx.HTTPError:
                return  # the broker is gone


def _kill_loop(store_url: str, label: str) -> None:
    rng = random.Random(26)
    acknowledged: list[str] = []
    for round_number in range(KILLS):
        process, _, web_url = start("--metadata-store", store_url)
        stop_writing = threading.Event()
        writer = threading.Thread(target=_write_until_killed, args=(web_url, round_number, acknowledged, stop_writing))
        writer.start()
        time.sleep(rng.uniform(0.2, 0.8))
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        stop_writing.set()
        writer.join(10)
    process, _, web_url = start("--metadata-store", store_url)
    try:
        present = set(httpx.get(f"{web_url}/admin/v2/namespaces/public", timeout=10).json())
    finally:
        stop(process)
    lost = [name for name in acknowledged if name not in present]
    print(f"\n{label}: {KILLS} kill -9 rounds, {len(acknowledged):,} acknowledged namespace creations, "
          f"{len(lost)} lost")
    assert acknowledged and not lost, lost[:10]


def test_sqlite_store_loses_no_acknowledged_write_under_kill_9(tmp_path):
    _kill_loop(f"sqlite:{tmp_path / 'metadata.db'}", "SQLite")


def test_zookeeper_store_loses_no_acknowledged_write_under_kill_9(zookeeper_server):  # noqa: F811
    _kill_loop(zookeeper_server.unique_url(), "ZooKeeper")
