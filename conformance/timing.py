"""Where a run's time went: start-ups, restarts for configuration a broker cannot change while it
runs, the pauses before a step is performed again, the quiet periods that end a collection of
messages, and the cases themselves.

Every part of the harness that spends time for one of these reasons adds it here (``spent``); the
runner prints the account at the end of a run (``account``), so a slow run says why. Process-wide,
like the machine it measures; ``reset`` starts a new account at the start of a run.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

START_UP = "start-up"      # a broker's first start, version detection included
RESTART = "restart"        # a broker started again with another non-dynamic configuration
RETRY_PAUSE = "retry pause"  # the pause before a step is performed again (conformance/executor.py)
QUIET = "quiet period"     # a collection of messages ended by silence, not by the broker's counters


@dataclass
class Entry:
    seconds: float = 0.0
    count: int = 0
    by: dict = field(default_factory=lambda: defaultdict(float))  # a target -> seconds
    why: dict = field(default_factory=lambda: defaultdict(int))  # a reason (a config key=value) -> times


_lock = threading.Lock()
_entries: dict[str, Entry] = defaultdict(Entry)


def reset() -> None:
    with _lock:
        _entries.clear()


def spent(kind: str, seconds: float, where: str, *why: str) -> None:
    """``seconds`` of ``kind`` on ``where`` (a target, a driver), for each of the reasons ``why``."""
    with _lock:
        entry = _entries[kind]
        entry.seconds += seconds
        entry.count += 1
        entry.by[where] += seconds
        for reason in why:
            entry.why[reason] += 1


@contextlib.contextmanager
def timed(kind: str, where: str, *why: str):
    started = time.monotonic()
    try:
        yield
    finally:
        spent(kind, time.monotonic() - started, where, *why)


def snapshot() -> dict[str, Entry]:
    with _lock:
        return {kind: Entry(e.seconds, e.count, dict(e.by), dict(e.why)) for kind, e in _entries.items()}


def account(wall_s: float, case_seconds: dict[str, float], case_counts: dict[str, int]) -> list[str]:
    """The lines the runner prints: the wall time, then each kind of time with its biggest parts."""
    entries = snapshot()
    lines = [f"where the time went: {wall_s:.0f} s wall"]
    for kind in (START_UP, RESTART, RETRY_PAUSE, QUIET):
        entry = entries.get(kind)
        if entry is None or not entry.count:
            continue
        parts = sorted(entry.by.items(), key=lambda item: -item[1])[:6]
        detail = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in parts)
        reasons = sorted(entry.why.items(), key=lambda item: (-item[1], item[0]))[:8]
        why = "; for " + ", ".join(f"{reason} x{times}" for reason, times in reasons) if reasons else ""
        lines.append(f"  {kind}: {entry.count} taking {entry.seconds:.1f} s ({detail}){why}")
    for target in sorted(case_seconds):
        lines.append(f"  cases on {target}: {case_counts[target]} taking {case_seconds[target]:.1f} s summed "
                     f"(run side by side, so more than the wall time)")
    return lines
