"""conformance/capacity.py: what one machine runs at once, shared by every target of a run."""

from __future__ import annotations

import threading
import time

import pytest

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


def test_targets_planning_together_share_the_memory_available(monkeypatch):
    """Three JVM releases planned at once on 4,000 MiB available (3,000 to plan with): the first
    gets two instances, the others what is left, at least one each; a plan ended gives its back."""
    two = Capacity(cores=2)
    monkeypatch.setattr(capacity, "available_memory_mb", lambda: 4000)
    plans = [two.reserve_instances(8, 1.0, 1024) for _ in range(3)]
    assert plans == [2, 1, 1]
    for count in plans:
        two.release_instances(count, 1024)
    assert two.reserve_instances(8, 1.0, 1024) == 2
    assert two.reserve_instances(8, 0.25, 0) == 8  # a target that names no memory plans by its cores alone


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


@pytest.mark.parametrize("cores, at_once", [(1.0, 1), (0.5, 2), (0.25, 4)])
def test_start_ups_on_two_cores_are_weighed_by_the_cores_they_take(cores, at_once):
    """One JVM's start at a time, two Python brokers', four native clients'."""
    machine = Capacity(cores=2)
    inside, peak, lock, full = [0], [0], threading.Lock(), threading.Event()
    # The first ones in stay until as many are inside as may be; anyone entering later found a
    # slot freed by them, so after that moment, and passes.
    every_one_in = threading.Barrier(at_once, action=full.set, timeout=10)

    def start():
        with machine.startup(cores):
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            if not full.is_set():
                every_one_in.wait()
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=start) for _ in range(2 * at_once + 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert peak[0] == at_once


def test_a_case_waiting_out_a_window_frees_its_units_meanwhile():
    machine = Capacity(cores=1, units=2)
    waiting, other_ran, resumed = threading.Event(), threading.Event(), threading.Event()

    def sleeper():
        with machine.case(2):
            with machine.waiting():
                waiting.set()
                assert other_ran.wait(10)  # the other case took the units this one gave back
            resumed.set()

    def other():
        assert waiting.wait(10)
        with machine.case(2):
            other_ran.set()

    threads = [threading.Thread(target=sleeper), threading.Thread(target=other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert other_ran.is_set() and resumed.is_set()
    with machine.waiting():  # a thread that holds nothing gives nothing back
        pass
    with machine.case(2):  # and every unit is free again
        pass


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
