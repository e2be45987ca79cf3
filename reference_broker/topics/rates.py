"""Rates for the stats API: events per second over a sliding window (PIP-2 msgDropRate and friends).

Pulsar computes its rates (msgRateIn, msgRateOut, msgDropRate, ...) once per
``statsUpdateFrequencyInSecs`` (60 s by default) as "events since the last update / elapsed", so a
reading shows the previous interval and a fresh broker shows 0 until the first update; its tests
call ``updateRates()`` by hand before reading them (Pulsar's NonPersistentTopicTest).

Our window (a documented decision): a rate is the number of events recorded in the last
``RATE_WINDOW_S`` seconds (60, Pulsar's default update interval) divided by that window, read at
the moment of the request. So it is positive from the first event until 60 s after the last one,
and after a burst of D drops and nothing else it reads D / 60. Events are kept in one-second
buckets, so recording is O(1) whatever the message rate. The clock is ``time.monotonic``; tests
pass their own.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Callable

RATE_WINDOW_S = 60
_NO_BUCKET = (None,)  # never equal to a second


class Rate:
    """Events (and bytes) per second over the trailing ``window`` seconds, read when asked."""

    __slots__ = ("window", "clock", "_buckets", "_newest", "total", "total_bytes")

    def __init__(self, window: int = RATE_WINDOW_S, clock: Callable[[], float] = time.monotonic):
        self.window = window
        self.clock = clock
        self._buckets: deque[list] = deque()  # [second, events, bytes], oldest first
        # The last bucket recorded into (first, one no second equals): a record compares one number,
        # not the deque's length and its last item's (it runs for every message moved). Pruned, it
        # is never written again, since its second lies a window behind the clock (a monotonic clock).
        self._newest: list | tuple = _NO_BUCKET
        self.total = 0          # cumulative events (the *Counter fields)
        self.total_bytes = 0

    def record(self, events: int = 1, size: int = 0, now: float | None = None) -> None:
        """``now``: the caller's clock reading, when it records several rates for one event."""
        second = int(self.clock() if now is None else now)
        bucket = self._newest
        if bucket[0] != second:  # a new second: only now can old buckets have left the window (reads prune too)
            bucket = self._newest = [second, 0, 0]
            self._buckets.append(bucket)
            self._prune(second)
        bucket[1] += events
        bucket[2] += size
        self.total += events
        self.total_bytes += size

    def _prune(self, now_second: int) -> None:
        while self._buckets and self._buckets[0][0] <= now_second - self.window:
            self._buckets.popleft()

    def rate(self) -> float:
        """Events per second over the window."""
        self._prune(int(self.clock()))
        return sum(b[1] for b in self._buckets) / self.window

    def throughput(self) -> float:
        """Bytes per second over the window."""
        self._prune(int(self.clock()))
        return sum(b[2] for b in self._buckets) / self.window
