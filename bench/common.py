"""Small helpers the official-client benchmarks share."""

from __future__ import annotations

import logging
import math
import os
import statistics
import sys
from pathlib import Path
from typing import Optional

from conformance.targets.process import ManagedProcess


def quiet_logger(name: str) -> logging.Logger:
    """A logger for pulsar.Client that stays silent (the client logs every connection)."""
    logger = logging.getLogger(name)
    logger.setLevel(logging.CRITICAL)
    return logger


def percentile(samples: list[float], fraction: float) -> float:
    """The nearest-rank sample at ``fraction`` (0.5 = p50) of ``samples``."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def median_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """``(low, high, coverage)``: a distribution-free interval for the median of ``values``.

    The order statistics x(k) and x(n+1-k) hold the median between them with probability
    1 - 2 P(B <= k-1), B ~ Binomial(n, 1/2) (the sign test's interval); k is the largest that
    still reaches ``confidence``. Seven rounds give only the whole range (98.4%); fifteen give
    the 4th to the 12th value (96.5%). Nothing is assumed about how the rounds are spread, which
    on a shared machine is anything but normal."""
    ordered = sorted(values)
    count = len(ordered)
    if not count:
        raise ValueError("median_interval needs at least one value")

    def coverage(k: int) -> float:
        return 1 - 2 * sum(math.comb(count, i) for i in range(k)) / 2 ** count

    k = 1
    while k + 1 <= (count + 1) // 2 and coverage(k + 1) >= confidence:
        k += 1
    return ordered[k - 1], ordered[count - k], coverage(k)


def paired_ratio_text(ratios: list[float], above: str = "reference faster", below: str = "reference slower") -> str:
    """The median of paired-round ratios (this/other) with its interval and what it shows: ``above``
    when the whole interval is above 1, ``below`` when it is below."""
    low, high, coverage = median_interval(ratios)
    verdict = above if low > 1 else below if high < 1 else "no difference shown"
    return f"{statistics.median(ratios):.2f}x ({coverage:.0%} interval {low:.2f}-{high:.2f}x: {verdict})"


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


class Placement:
    """The benches' ``--pin``: brokers on the last CPU this process may use, the bench process and
    its clients on the others, as in a deployment; without it everything shares every CPU."""

    def __init__(self, pin: bool) -> None:
        self.cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        if pin and len(self.cpus) < 2:
            raise ValueError(f"--pin needs two CPUs or more and Linux affinity; this process may use "
                             f"{len(self.cpus) or 'an unknown number of'}")
        self.pin = pin

    def clients_here(self) -> None:
        """Move this process (and the client threads it starts from now on) off the brokers' CPU."""
        if self.pin:
            os.sched_setaffinity(0, set(self.cpus[:-1]))

    def broker(self, pid: Optional[int]) -> None:
        """Pin a broker; call before each measurement, as it may have started threads since."""
        if self.pin and pid is not None:
            pin_process(pid, {self.cpus[-1]})

    def describe(self, clients: str = "clients") -> str:
        if not self.pin:
            return f"brokers and {clients} sharing every CPU"
        return f"brokers on CPU {self.cpus[-1]}, {clients} on CPU {','.join(map(str, self.cpus[:-1]))}"


def target_pid(target) -> Optional[int]:
    """The broker process of a started conformance target, when it runs as a local process."""
    process = getattr(target, "process", None)
    return getattr(process, "pid", None) if process is not None else None


class FloorServer:
    """A floor server of bench/ (``lookup_floor.py``, ``nonpersistent_floor.py``) in a child process,
    started and stopped like a conformance target: the ``python-floor`` row of a bench."""

    def __init__(self, script: str, *args: str) -> None:
        self.process = ManagedProcess([sys.executable, str(Path(__file__).with_name(script)), *args],
                                      name=" ".join([Path(script).stem, *args]))
        self.service_url = ""

    def start(self) -> None:
        line = self.process.start(lambda lines: next((l for l in lines if l.startswith("READY ")), None), 30)
        self.service_url = line.split()[1]

    def stop(self) -> None:
        self.process.stop()
