"""conformance/scheduler.py: groups, lanes, concurrency that changes no verdict and no order."""

import threading
import time
from dataclasses import dataclass

from conformance import capacity, verdicts as v
from conformance.execute import TargetSession
from conformance.scheduler import Group, Lane, Schedule, assign, changes_config, plan, split
from model.outcomes import Done
from tests.conformance.helpers import FakeCase, FakeDriver, FakeTarget


@dataclass(frozen=True)
class _Step:
    op: object
    role: str
    expected: object


class _Op:
    api = "binary"


def _case(name: str, config: dict = None):
    def steps(namespace):
        return (_Step(_Op(), "action", Done()),)
    return FakeCase(f"{name}[binary]", steps, broker_config=dict(config or {}))


class _Fleet:
    """Fake targets that count how many cases run at once on each instance."""

    def __init__(self):
        self.lock = threading.Lock()
        self.running: dict[int, int] = {}
        self.peak: dict[int, int] = {}
        self.order: list[str] = []
        self.instances: list[FakeTarget] = []

    def factory(self, target):
        fleet = self

        def answer(op):
            key = id(target)
            with fleet.lock:
                fleet.running[key] = fleet.running.get(key, 0) + 1
                fleet.peak[key] = max(fleet.peak.get(key, 0), fleet.running[key])
            time.sleep(0.05)
            with fleet.lock:
                fleet.running[key] -= 1
            return Done()
        return {"wire": FakeDriver("wire", answer)}


class _Spawning(FakeTarget):
    max_instances = 3

    def __init__(self, fleet: _Fleet, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fleet = fleet
        fleet.instances.append(self)

    def spawn(self, index):
        return _Spawning(self.fleet, self.name)


def test_plan_groups_by_configuration_and_sets_config_changes_apart():
    target = FakeTarget()
    a, b, c = _case("a", {"k": "1"}), _case("b", {"k": "2"}), _case("c", {"k": "1"})
    groups = plan([a, b, c], target)
    assert [[x.id for x in g.cases] for g in groups] == [["a[binary]", "c[binary]"], ["b[binary]"]]
    assert not changes_config(a)


def test_assign_gives_each_non_dynamic_configuration_its_lane_and_splits_the_big_one():
    def group(size, static=()):
        g = Group((("k", str(size)),), static)
        g.cases = [object()] * size
        return g
    groups = [group(40), group(10), group(5, (("enableNonPersistentTopics", "false"),)),
              group(3, (("maxConcurrentNonPersistentMessagePerConnection", "0"),))]
    lanes = assign(groups, 5)
    assert len(lanes) == 5
    assert lanes[0][0].static == ()  # the target's own instance takes the defaults
    statics = [{g.static for g in lane} for lane in lanes]
    assert all(len(s) == 1 for s in statics)  # no lane restarts
    assert sum(g.size for lane in lanes for g in lane) == 58
    # with fewer lanes than configurations, a lane takes several, in order of configuration
    few = assign(groups, 2)
    assert len(few) == 2 and few[0][0].static == ()
    assert [g.static for g in few[1]] == sorted(g.static for g in few[1])


def test_with_fewer_lanes_than_configurations_the_default_is_cut_over_the_lanes_it_needs():
    def group(size, static=()):
        g = Group((("k", str(size)),) + static, static)
        g.cases = [object()] * size
        return g
    others = [group(n, (("key", str(i)),)) for i, n in enumerate((22, 9, 6, 6, 5, 5, 5, 3, 2, 2))]
    groups = [group(900), *others]
    lanes = assign(groups, 8)  # a cheap broker: 8 instances for 11 configurations
    assert sum(g.size for lane in lanes for g in lane) == 965 and len(lanes) <= 8
    default_lanes = [lane for lane in lanes if lane[0].static == ()]
    assert lanes[0][0].static == () and len(default_lanes) > 1  # the 900 cases are not left to one broker
    assert all({g.static for g in lane} == {()} for lane in default_lanes)
    rest = [lane for lane in lanes if lane[0].static != ()]
    assert sorted(g.static for lane in rest for g in lane) == sorted(g.static for g in others)
    assert all([g.static for g in lane] == sorted(g.static for g in lane) for lane in rest)
    two = assign(groups, 2)  # a JVM: the defaults on one instance, the rest restarting on the other
    assert [{g.static for g in lane} == {()} for lane in two] == [True, False]
    one = assign(groups, 1)  # a broker given by URL: one instance for everything, its own first
    assert len(one) == 1 and one[0][0].static == () and [g.static for g in one[0]] == sorted(g.static for g in groups)
    assert all(len(lane) == 1 for lane in assign(others, 10)) and len(assign(others, 3)) == 3  # no defaults


def test_split_keeps_every_case_once():
    g = Group((), ())
    g.cases = list(range(23))
    lanes = split([g], 4)
    assert sorted(c for lane in lanes for part in lane for c in part.cases) == list(range(23))
    assert max(len(part.cases) for lane in lanes for part in lane) <= 6


def test_cases_run_concurrently_on_several_instances_and_results_keep_their_order(monkeypatch):
    monkeypatch.setattr(capacity, "available_memory_mb", lambda: 1400)  # 1,050 MiB to plan with
    fleet = _Fleet()
    target = _Spawning(fleet, "fake")
    session = TargetSession(target, driver_factory=fleet.factory)
    cases = [_case(f"c{i}", {"k": str(i % 3)}) for i in range(30)]
    with capacity.using(capacity.Capacity(cores=4)) as machine:  # room for a lane per configuration
        schedule = Schedule(session, cases, jobs=6)
        runs = [schedule.result(case, timeout=30) for case in cases]
        schedule.join(10)
        assert machine.reserve_instances(8, 1.0, 256) == 4  # the schedule's plan gave its memory back
    assert [r.case.id for r in runs] == [c.id for c in cases]
    assert all(r.verdict.verdict == v.PASSED for r in runs)
    assert len(fleet.instances) == 3  # the target and two spawned, one per lane
    assert max(fleet.peak.values()) >= 2  # cases overlapped on an instance
    schedule.join(10)
    assert all(t.stopped for t in fleet.instances[1:])  # spawned instances are stopped by their lane


def test_jobs_1_is_one_case_at_a_time_on_one_instance():
    fleet = _Fleet()
    target = _Spawning(fleet, "fake")
    schedule = Schedule(TargetSession(target, driver_factory=fleet.factory), [_case(f"c{i}") for i in range(6)],
                        jobs=1, instances=1)
    assert all(schedule.result(c, timeout=10).verdict.verdict == v.PASSED for c in schedule.cases)
    assert len(fleet.instances) == 1 and max(fleet.peak.values()) == 1


def test_a_case_that_changes_configuration_runs_alone():
    fleet = _Fleet()
    target = _Spawning(fleet, "fake")
    exclusive = _case("x", {"k": "1"})
    object.__setattr__(exclusive, "program", ('{"op": "SetBrokerConfig", "key": "k", "value": "2"}',))
    assert changes_config(exclusive)
    others = [_case(f"c{i}", {"k": "1"}) for i in range(8)]
    groups = plan([exclusive, *others], target)
    assert len(groups) == 1 and groups[0].exclusive == [exclusive] and len(groups[0].cases) == 8


def test_a_target_that_cannot_start_gives_every_case_its_reason_at_once():
    target = FakeTarget(fail_start="binary not found")
    schedule = Schedule(TargetSession(target, driver_factory=lambda t: {}), [_case("a"), _case("b")], jobs=4)
    runs = [schedule.result(c, timeout=10) for c in schedule.cases]
    assert all(r.verdict.verdict == v.TARGET_ERROR and "binary not found" in r.verdict.reason for r in runs)


def test_a_spawned_instance_that_cannot_start_fails_only_its_lane():
    fleet = _Fleet()

    class Flaky(_Spawning):
        def spawn(self, index):
            return FakeTarget(self.name, fail_start="no free port")

    target = Flaky(fleet, "fake")
    cases = [_case(f"c{i}", {"k": str(i % 2)}) for i in range(8)]
    schedule = Schedule(TargetSession(target, driver_factory=fleet.factory), cases, jobs=4)
    verdicts = {c.id: schedule.result(c, timeout=10).verdict for c in cases}
    assert {x.verdict for x in verdicts.values()} == {v.PASSED, v.TARGET_ERROR}
    assert all("no free port" in x.reason for x in verdicts.values() if x.verdict == v.TARGET_ERROR)


def test_stop_ends_the_schedule_between_cases():
    fleet = _Fleet()
    target = FakeTarget()
    cases = [_case(f"c{i}") for i in range(200)]
    schedule = Schedule(TargetSession(target, driver_factory=fleet.factory), cases, jobs=1, instances=1)
    schedule.start()
    schedule.result(cases[0], timeout=10)  # one case done: the stop comes between cases
    schedule.stop()
    schedule.join(10)
    runs = [schedule.result(c, timeout=1) for c in cases]
    assert any(r.verdict.verdict == v.PASSED for r in runs)
    assert any(r.verdict.verdict == v.UNSUPPORTED and "stopped" in r.verdict.reason for r in runs)


def test_stop_at_failure_ends_the_schedule_at_the_first_failed_case():
    from model.outcomes import Partitions

    answered = []

    def factory(target):
        def answer(op):
            answered.append(op)
            return Partitions(partitions=1) if len(answered) == 3 else Done()  # the third case differs
        return {"wire": FakeDriver("wire", answer)}

    cases = [_case(f"c{i}") for i in range(50)]
    schedule = Schedule(TargetSession(FakeTarget(), driver_factory=factory), cases, jobs=1, instances=1,
                        stop_at_failure=True)
    schedule.start()
    schedule.join(10)
    verdicts = [schedule.result(c, timeout=1).verdict for c in cases]
    assert [x.verdict for x in verdicts[:3]] == [v.PASSED, v.PASSED, v.FAILED]
    assert all(x.verdict == v.UNSUPPORTED and "stopped" in x.reason for x in verdicts[3:])
    assert len(answered) == 3


def test_without_stop_at_failure_every_case_runs():
    from model.outcomes import Partitions

    def factory(target):
        return {"wire": FakeDriver("wire", lambda op: Partitions(partitions=1))}

    cases = [_case(f"c{i}") for i in range(5)]
    schedule = Schedule(TargetSession(FakeTarget(), driver_factory=factory), cases, jobs=1, instances=1)
    schedule.start()
    schedule.join(10)
    assert [schedule.result(c, timeout=1).verdict.verdict for c in cases] == [v.FAILED] * 5


def test_a_lane_with_nothing_left_takes_one_configuration_from_the_busiest_lane():
    fleet = _Fleet()
    target = _Spawning(fleet, "fake")
    session = TargetSession(target, driver_factory=fleet.factory)
    schedule = Schedule(session, [], jobs=2)

    def group(name, static):
        g = Group((("k", name),), static)
        g.cases = [name]
        return g
    a, b, c, d = group("a", ()), group("b", (("x", "1"),)), group("c", (("x", "1"),)), group("d", (("x", "2"),))
    idle, busy = Lane(schedule, session, [], owned=False), Lane(schedule, session, [a, b, c], owned=True)
    other = Lane(schedule, session, [d], owned=True)
    schedule._lanes = [idle, busy, other]
    assert schedule.next_group(idle) is b  # both groups of x=1, from the end of the busiest lane
    assert [g.cases for g in idle.pending] == [["c"]] and list(busy.pending) == [a]
    assert idle.groups == [b, c] and busy.groups == [a]  # a failure of either fails only its own
    assert schedule.next_group(idle) is c
    assert schedule.next_group(idle) is None  # a lane's last waiting group stays with it
    assert schedule.next_group(busy) is a and schedule.next_group(busy) is None
