"""conformance/capacity.py: what one machine runs at once, shared by every target of a run."""

from __future__ import annotations

import threading
import time

from conformance import capacity, verdicts as v
from conformance.capacity import Capacity, WeightedSlots, case_weight
from conformance.execute import TargetSession
from conformance.scheduler import Schedule
from model import ops
from model.outcomes import Done, Partitions
from tests.conformance.helpers import FakeCase, FakeDriver, FakeTarget, Step


def test_the_machine_is_sized_by_its_cores():
    two = Capacity(cores=2)
    assert (two.startups, two.units, two.lanes(8), two.lanes(1)) == (1, 2 * capacity.UNITS_PER_CORE, 2, 1)
    eight = Capacity(cores=8)
    assert (eight.startups, eight.lanes(8), eight.lanes(3)) == (4, 8, 3)


def test_lighter_instances_run_more_side_by_side_within_the_memory_available(monkeypatch):
    two = Capacity(cores=2)
    monkeypatch.setattr(capacity, "available_memory_mb", lambda: 16000)
    assert (two.lanes(8, 0.25, 128), two.lanes(8, 1.0, 1024), two.lanes(3, 0.25, 128)) == (8, 2, 3)
    monkeypatch.setattr(capacity, "available_memory_mb", lambda: 1500)  # holds one JVM of 1 GiB, not two
    assert (two.lanes(8, 1.0, 1024), two.lanes(8, 0.25, 128)) == (1, 8)
    monkeypatch.setattr(capacity, "available_memory_mb", lambda: None)  # not Linux: cores alone decide
    assert two.lanes(8, 1.0, 1024) == 2


def test_weighted_slots_never_hold_more_than_their_units():
    slots = WeightedSlots(4)
    held, peak, lock = [0], [0], threading.Lock()

    def worker(weight):
        with slots.hold(weight):
            with lock:
                held[0] += weight
                peak[0] = max(peak[0], held[0])
            time.sleep(0.01)
            with lock:
                held[0] -= weight

    threads = [threading.Thread(target=worker, args=(1 + i % 2,)) for i in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert peak[0] <= 4 and held[0] == 0
    with slots.hold(99):  # heavier than the whole: takes it all, not forever
        pass


def test_start_ups_are_one_at_a_time_on_two_cores():
    machine = Capacity(cores=2)
    inside, peak, lock = [0], [0], threading.Lock()

    def start():
        with machine.startup():
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            time.sleep(0.02)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=start) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert peak[0] == 1


def test_heavy_cases_weigh_more():
    class Row:
        def __init__(self, op):
            self.op = op

        def operation_json(self):
            return {"op": self.op}

    light = FakeCase("a[binary]", lambda ns: ())
    assert case_weight(light, "wire") == 1 and case_weight(light, "java-client") == capacity.HEAVY_WEIGHT
    object.__setattr__(light, "row", Row("PubSub"))
    assert case_weight(light, "wire") == capacity.HEAVY_WEIGHT
    object.__setattr__(light, "row", Row("Lookup"))
    assert case_weight(light, "rest") == 1


def test_two_targets_share_the_machines_case_units():
    """Each target's own --jobs would allow 8 at once; the machine allows 3 units over both."""
    running, peak, lock = [0], [0], threading.Lock()

    def answer(op):
        if isinstance(op, ops.CreateNamespace):
            return Done()
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1
        return Partitions(3)

    def case(name):
        return FakeCase(f"{name}[binary]", lambda ns: (
            Step(ops.CreateNamespace(ns), "setup", Done()),
            Step(ops.GetPartitionedMetadata(f"persistent://{ns}/t", "binary", False), "action", Partitions(3))))

    with capacity.using(Capacity(cores=1, units=3)):
        schedules = [Schedule(TargetSession(FakeTarget(name), driver_factory=lambda t: {
            "rest": FakeDriver("rest", answer), "wire": FakeDriver("wire", answer)}),
            [case(f"{name}-{i}") for i in range(12)], jobs=8) for name in ("one", "two")]
        for schedule in schedules:
            schedule.start()
        runs = [schedule.result(c, timeout=30) for schedule in schedules for c in schedule.cases]
    assert all(run.verdict.verdict == v.PASSED for run in runs)
    assert peak[0] <= 3
