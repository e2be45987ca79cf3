"""Small helpers the official-client benchmarks share."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Optional


def quiet_logger(name: str) -> logging.Logger:
    """A logger for pulsar.Client that stays silent (the client logs every connection)."""
    logger = logging.getLogger(name)
    logger.setLevel(logging.CRITICAL)
    return logger


def percentile(samples: list[float], fraction: float) -> float:
    """The nearest-rank sample at ``fraction`` (0.5 = p50) of ``samples``."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def process_cpu_seconds(pid: Optional[int]) -> Optional[float]:
    """User + system CPU seconds of a process so far, every thread (Linux /proc), or None."""
    times = process_cpu_times(pid)
    return None if times is None else sum(times)


def process_cpu_times(pid: Optional[int]) -> Optional[tuple[float, float]]:
    """(user, system) CPU seconds of a process so far, every thread (Linux /proc), or None."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def pin_process(pid: int, cpus: set[int]) -> None:
    """Keep every thread of process ``pid`` on ``cpus`` (Linux: affinity is per thread, so each
    task under /proc/PID/task is set; call again after the process may have started threads)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), cpus)
        except ProcessLookupError:
            continue  # a thread that ended meanwhile


def target_pid(target) -> Optional[int]:
    """The broker process of a started conformance target, when it runs as a local process."""
    process = getattr(target, "process", None)
    return getattr(process, "pid", None) if process is not None else None
