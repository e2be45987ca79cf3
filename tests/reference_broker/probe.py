"""Figures the reliability tests print: how long another client waits, and how big the broker grows.

``Prober`` is the other client served throughout: a connection of its own that sends a PING and
waits for its PONG, over and over; its worst round trip is the longest stall a client saw.
``rss_bytes`` reads a process's resident memory from /proc.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Optional

from pulsar_codec import events as ev

from .wire_client import raw_connect, read_event


class Prober:
    """``with Prober(url) as probe: ...`` then ``probe.worst`` (seconds) and ``probe.round_trips``."""

    def __init__(self, broker_url: str, interval: float = 0.01, timeout: float = 60.0) -> None:
        self.broker_url, self.interval, self.timeout = broker_url, interval, timeout
        self.worst = 0.0
        self.round_trips = 0
        self.failure: Optional[BaseException] = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="prober", daemon=True)

    def __enter__(self) -> "Prober":
        self._sock, self._conn = raw_connect(self.broker_url, client_version="prober")
        self._sock.settimeout(self.timeout)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(self.timeout + 5)
        self._sock.close()
        if self.failure is not None and exc[0] is None:
            raise AssertionError(f"the other client was not served: {self.failure!r}")

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                started = time.monotonic()
                self._sock.sendall(self._conn.send(ev.Ping()))
                while not isinstance(event := read_event(self._sock, self._conn), ev.Pong):
                    if not isinstance(event, ev.Ping):
                        raise AssertionError(f"expected PONG, got {event!r}")
                    self._sock.sendall(self._conn.send(ev.Pong()))
                self.worst = max(self.worst, time.monotonic() - started)
                self.round_trips += 1
                self._stop.wait(self.interval)
        except (OSError, AssertionError, socket.timeout) as exc:
            self.failure = exc


def rss_bytes(pid: int) -> int:
    """Resident set size of process ``pid``."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"
