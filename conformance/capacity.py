"""What the machine runs at once during a run, shared by every target of the run.

A run's targets share one machine. Left to themselves, four targets each start their brokers and
run their cases as if the machine were theirs: on two cores a JVM starting beside another JVM,
ZooKeeper, a Python broker and fifty cases drove the load above ten, and slow answers then looked
like the broker's fault. So the run asks this module before it does anything heavy:

- ``startup(cores)``: broker and driver processes start (or restart) with at most ``startups``
  cores' worth of start-ups at once, one core per two; a JVM's start takes a whole core for seconds
  (``cores`` 1), a Python broker's half a core for a fraction of a second, a native client's
  program next to nothing (counted in quarters of a core, ``START_QUARTERS``): on two cores one JVM
  starts at a time, or two Python brokers, or four native clients. Waiting here is not part of a
  start's own bound, which counts from the launch.
- ``case(weight)``: at most ``units`` units of cases run at once over all targets, ``UNITS_PER_CORE``
  per core; a case weighs ``case_weight`` units, more for the cases whose client runs threads or a
  JVM of its own and for PubSub's deliveries, which wait for a broker's dispatcher, times its
  target's own weight (``Target.case_weight``: a JVM broker spends more of the machine per case).
- ``waiting()``: a case that waits out a window whose end it need not catch at once (a broker's
  timer it must outlive, the pause before a retry) uses no CPU meanwhile, so its units go back for
  that time and are taken again before it goes on; the wait itself is the window's own, already
  bounded. Not for a window read on its way (the stats read across a rate period): taking the
  units back may come late.
- ``lanes(wanted, instance_cores, instance_memory_mb)``: how many broker instances one target may run
  side by side: as many as its instances' share of a core lets the cores hold (a JVM takes a
  core, a reference broker a quarter; at least two, so groups of another static configuration need
  not wait for a restart), and no more than the memory the machine has available holds, a quarter
  of it kept for the harness and the drivers. Targets plan at about the same moment, before their
  brokers have grown, so each target's plan holds the memory of its instances back from the
  others' (``reserve_instances`` until ``release_instances``): three releases on a runner of 7 GB
  do not each count on all of it.

Every wait here ends when a case or a start-up ends, and each of those is bounded by its own waits.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Optional

UNITS_PER_CORE = 6
START_QUARTERS = 4  # what a core of start-ups is counted in
HEAVY_DRIVERS = frozenset({"client", "java-client", "java-admin", "go-client", "rust-client"})
HEAVY_WEIGHT = 2


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def available_memory_mb() -> Optional[int]:
    """MemAvailable of /proc/meminfo in MiB, None where there is none (not Linux)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


class WeightedSlots:
    """A semaphore whose holders take ``weight`` units each; a holder heavier than the whole takes it all."""

    def __init__(self, units: int):
        self.units = units
        self._free = units
        self._changed = threading.Condition()
        self._held = threading.local()  # what the current thread holds (``released``)

    @contextlib.contextmanager
    def hold(self, weight: int):
        weight = max(1, min(weight, self.units))
        self._take(weight)
        self._held.weight = weight
        try:
            yield
        finally:
            self._held.weight = 0
            self._give(weight)

    @contextlib.contextmanager
    def released(self):
        """The current thread's units given back while the block lasts (none held: nothing)."""
        weight = getattr(self._held, "weight", 0)
        if not weight:
            yield
            return
        self._held.weight = 0
        self._give(weight)
        try:
            yield
        finally:
            self._take(weight)
            self._held.weight = weight

    def _take(self, weight: int) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self._free >= weight)
            self._free -= weight

    def _give(self, weight: int) -> None:
        with self._changed:
            self._free += weight
            self._changed.notify_all()


class Capacity:
    def __init__(self, cores: Optional[int] = None, units: Optional[int] = None):
        self.cores = max(1, cores or available_cores())
        self.startups = max(1, self.cores // 2)
        self.units = units or UNITS_PER_CORE * self.cores
        self._startups = WeightedSlots(START_QUARTERS * self.startups)
        self._cases = WeightedSlots(self.units)
        self._planned_mb = 0  # the memory of the instances other targets' plans hold
        self._planning = threading.Lock()

    def startup(self, cores: float = 1.0):
        """Held while a process starts that takes ``cores`` of the machine meanwhile."""
        return self._startups.hold(max(1, round(cores * START_QUARTERS)))

    def case(self, weight: int = 1):
        return self._cases.hold(weight)

    def waiting(self):
        """Held while the current thread's case waits out a window: its units are free meanwhile."""
        return self._cases.released()

    def lanes(self, wanted: int, instance_cores: float = 1.0, instance_memory_mb: int = 0, planned_mb: int = 0) -> int:
        by_cores = max(2, int(self.cores / max(instance_cores, 0.01)))
        memory = available_memory_mb()
        by_memory = (max(1, int((memory * 0.75 - planned_mb) // instance_memory_mb)) if memory and instance_memory_mb
                     else by_cores)
        return max(1, min(wanted, by_cores, by_memory))

    def reserve_instances(self, wanted: int, instance_cores: float = 1.0, instance_memory_mb: int = 0) -> int:
        """``lanes``, less the memory other targets' plans hold, and that many instances' memory
        held from now on (give back what is not used, and the rest at the end, with ``release_instances``)."""
        with self._planning:
            count = self.lanes(wanted, instance_cores, instance_memory_mb, self._planned_mb)
            self._planned_mb += count * instance_memory_mb
            return count

    def release_instances(self, count: int, instance_memory_mb: int) -> None:
        with self._planning:
            self._planned_mb = max(0, self._planned_mb - count * instance_memory_mb)


_machine = Capacity()


def machine() -> Capacity:
    """The process's capacity: one machine, whatever number of runs or targets use it."""
    return _machine


@contextlib.contextmanager
def using(capacity: Capacity):
    """``capacity`` as the machine's for a while (tests of a machine of another size)."""
    global _machine
    previous, _machine = _machine, capacity
    try:
        yield capacity
    finally:
        _machine = previous


def case_weight(case, driver: str) -> int:
    """Units a case takes while it runs (see the module's docstring)."""
    if driver in HEAVY_DRIVERS:
        return HEAVY_WEIGHT
    program = getattr(case, "program", None)
    if program:
        return HEAVY_WEIGHT if any('"PubSub"' in step for step in program) else 1
    row = getattr(case, "row", None)
    if row is not None and row.operation_json().get("op") == "PubSub":
        return HEAVY_WEIGHT
    return 1
