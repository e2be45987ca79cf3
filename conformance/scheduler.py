"""Running a target's cases concurrently: groups by broker configuration, lanes of broker
instances, and workers with drivers of their own.

What makes concurrency safe here is the isolation each case already has: its own namespace (and
its own tenant when it needs one missing), its own topics, its own connections. What cases share
is the broker, and the only broker-wide thing a case sets is its configuration.

- Groups (``plan``): a *group* is the cases with the same broker configuration
  (``Case.broker_config``, every modelled key). An instance runs one group at a time, configured
  once for it; its cases run at once as far as ``jobs`` allows, a budget of the target's cases at
  once shared by all its lanes (``Schedule.slots``), so lanes that finish early leave their share
  to the others.
- A case whose steps change the broker's configuration (SetBrokerConfig, ``changes_config``) runs
  alone on its instance, after its group's other cases, and the next group configures the
  instance again.
- Lanes (``assign``, ``split``): a target whose kind can run several brokers side by side
  (``Target.max_instances``) gets one *lane* per instance, the target itself being the first and
  ``Target.spawn()`` making the others; a group larger than a lane's share is cut into parts,
  parts go to the lane with the least work so far, largest first, and within a lane groups that
  need the same non-dynamic configuration follow each other, so a restart happens once per
  distinct one. A target that cannot (a URL, a container) has one lane.
- A lane that has run all its groups takes, from the end of the lane with the most cases still
  waiting, the groups of one non-dynamic configuration (``Schedule.next_group``): no instance
  idles while another has a queue; the taker restarts once for them.
- Every worker thread has its own drivers, made by the driver factory for its lane's instance
  (``Lane``): drivers hold sockets, transcripts and per-case state and are never shared.
- Whether a case can run at all (the target's detected version, feature flags, probed
  capabilities) is decided on the first instance before any lane starts (``Schedule._run``);
  such cases get their verdict at once and never wait for a lane.
- ``result(case)`` hands back each case's CaseRun when it is done, so the caller records them in
  its own order, and every output keeps that order whatever ran first.
- Nothing waits unboundedly: a case's waits are its drivers' bounded ones; ``stop()`` sets an
  event every lane checks between cases, and each lane stops its instances when it ends.
- ``stop_at_failure`` (``Schedule.finish``): the first failed case stops the schedule as
  ``stop()`` does; cases already running finish, the others are unsupported ("the run was
  stopped"). Whichever case fails first in time ends the run, not the first in the items' order.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict, deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Optional

from conformance import capacity, verdicts as v
from conformance.execute import CaseRun, TargetSession, applicability, configure, execute_case
from conformance.routing import action_driver_name
from conformance.errors import Unsupported
from model import ops

# Cases of one target at once, over all its instances: most of a case is waiting for answers, so
# several per core keep the machine busy without starving the brokers of CPU.
DEFAULT_JOBS = max(8, min(32, 8 * (os.cpu_count() or 1)))


def config_key(case) -> tuple:
    return tuple(sorted((getattr(case, "broker_config", None) or {}).items()))


def changes_config(case) -> bool:
    """Whether ``case`` has a SetBrokerConfig step (generated sequences have them): it then runs alone."""
    program = getattr(case, "program", None)
    if program:
        return any('"SetBrokerConfig"' in step for step in program)
    row = getattr(case, "row", None)
    if row is None:
        return False
    operations = [row.operation_json(), *row.observe_json()]
    return any(op.get("op") == ops.SetBrokerConfig.__name__ for op in operations)


class Group:
    def __init__(self, key: tuple, static: tuple):
        self.key = key
        self.static = static
        self.cases: list = []
        self.exclusive: list = []

    @property
    def size(self) -> int:
        return len(self.cases) + len(self.exclusive)


def plan(cases: list, target) -> list[Group]:
    """The cases grouped by configuration, in first-seen order; cases that change it are kept
    apart in each group's ``exclusive``."""
    groups: "OrderedDict[tuple, Group]" = OrderedDict()
    for case in cases:
        key = config_key(case)
        group = groups.get(key)
        if group is None:
            group = groups[key] = Group(key, target.config_group(dict(key)))
        (group.exclusive if changes_config(case) else group.cases).append(case)
    return list(groups.values())


def split(groups: list[Group], lanes: int) -> list[list[Group]]:
    """``groups`` (one non-dynamic configuration) spread over ``lanes`` lanes of about equal
    size: a group larger than a lane's share is cut into parts of the same configuration."""
    total = sum(g.size for g in groups)
    share = max(1, -(-total // max(1, lanes)))
    parts: list[Group] = []
    for group in groups:
        if len(group.cases) <= share:
            parts.append(group)
            continue
        pieces = -(-len(group.cases) // share)
        for index in range(pieces):
            part = Group(group.key, group.static)
            part.cases = group.cases[index::pieces]
            parts.append(part)
        parts[-1].exclusive = group.exclusive
    chosen: list[list[Group]] = [[] for _ in range(lanes)]
    loads = [0] * lanes
    for part in sorted(parts, key=lambda g: -g.size):
        lane = loads.index(min(loads))
        chosen[lane].append(part)
        loads[lane] += part.size
    return [lane for lane in chosen if lane]


# What the plan weighs one restart of an instance at, in cases: a broker's start-up takes about
# as long as ten of its cases (a reference broker's half a second, a JVM's few seconds).
RESTART_COST = 10


def assign(groups: list[Group], lanes: int) -> list[list[Group]]:
    """The groups over at most ``lanes`` lanes. Each non-dynamic configuration gets a lane
    of its own when there are enough (an instance starts with it and never restarts), the extra
    lanes go to the configurations with the most cases. With fewer lanes than configurations, the
    default configuration's cases (the most, as a rule) are cut over as many lanes as make the
    longest lane shortest, each restart weighed as RESTART_COST cases, and the other lanes take
    the other configurations, in the order of their configuration, so each restarts once per
    distinct one. The first lane, the target's own instance, takes the default configuration if any."""
    by_static: "OrderedDict[tuple, list[Group]]" = OrderedDict()
    for group in sorted(groups, key=lambda g: g.static == ()):  # stable; defaults last ...
        by_static.setdefault(group.static, []).append(group)
    statics = sorted(by_static, key=lambda st: st != ())  # ... and first here
    size = {st: sum(g.size for g in by_static[st]) for st in statics}
    if not statics:
        return []
    if lanes < len(statics):
        return _share(by_static, size, lanes)
    count = {st: 1 for st in statics}
    for _ in range(lanes - len(statics)):
        busiest = max(statics, key=lambda st: size[st] / count[st])
        count[busiest] += 1
    result: list[list[Group]] = []
    for st in statics:
        result.extend(split(by_static[st], count[st]))
    return result


def _share(by_static: "OrderedDict[tuple, list[Group]]", size: dict, lanes: int) -> list[list[Group]]:
    """``assign`` with fewer lanes than configurations."""
    if lanes <= 1:  # one instance: every configuration in turn, the defaults (its own) first
        return [[group for st in sorted(by_static) for group in by_static[st]]]
    others = [st for st in by_static if st != ()]
    has_default = () in by_static
    best = None
    for own in (range(1, lanes) if has_default else [0]):
        packed = _pack(others, max(1, lanes - own), size)
        longest = max([size[()] / own if own else 0.0,
                       *(sum(size[st] for st in lane) + RESTART_COST * (len(lane) - 1) for lane in packed)])
        if best is None or longest < best[0]:
            best = (longest, own, packed)
    _, own, packed = best
    result = split(by_static[()], own) if own else []
    for lane in packed:
        result.append([group for st in sorted(lane) for group in by_static[st]])
    return [lane for lane in result if lane]


def _pack(statics: list[tuple], lanes: int, size: dict) -> list[list[tuple]]:
    """``statics`` over ``lanes`` lanes, largest first onto the least loaded."""
    chosen: list[list[tuple]] = [[] for _ in range(lanes)]
    loads = [0] * lanes
    for st in sorted(statics, key=lambda st: -size[st]):
        lane = loads.index(min(loads))
        chosen[lane].append(st)
        loads[lane] += size[st] + RESTART_COST
    return [lane for lane in chosen if lane]


class Lane:
    """One broker instance, the groups it runs one at a time, and its workers, each with drivers of
    its own."""

    def __init__(self, schedule: "Schedule", session: TargetSession, groups: list[Group], owned: bool):
        self.schedule = schedule
        self.session = session
        self.groups = groups
        self.pending: "deque[Group]" = deque(groups)  # not started yet; another lane may take some (``next_group``)
        self.owned = owned  # a spawned instance, stopped when the lane ends
        self._local = threading.local()
        self._workers: list[dict] = []
        self._workers_lock = threading.Lock()

    def _drivers(self) -> dict:
        target = self.session.target
        held = getattr(self._local, "held", None)
        if held is None or held[0] != target.generation:
            if held is not None:
                _close(held[1])
            held = (target.generation, self.session.driver_factory(target))
            self._local.held = held
            with self._workers_lock:
                self._workers.append(held[1])
        return held[1]

    def run(self) -> None:
        target = self.session.target
        try:
            if self.owned and self.groups:
                target.static = dict(self.groups[0].static)  # started with it: no restart for it
            self.session.start()
            with ThreadPoolExecutor(max_workers=self.schedule.jobs,
                                    thread_name_prefix=f"{target.name} lane") as pool:
                while (group := self.schedule.next_group(self)) is not None:
                    self._run_group(group, pool)
        except BaseException as exc:  # noqa: BLE001 - every case of the lane still gets a verdict
            self.schedule.fail_remaining(self.groups, exc)
        finally:
            with self._workers_lock:
                for drivers in self._workers:
                    _close(drivers)
                self._workers.clear()
            if self.owned:
                self.session.stop()

    def _run_group(self, group: Group, pool: ThreadPoolExecutor) -> None:
        if self.schedule.stopping.is_set():
            self.schedule.cancel([*group.cases, *group.exclusive], "the run was stopped")
            return
        refusal = self._configure(group.cases[0] if group.cases else group.exclusive[0])
        if refusal is not None:
            for case in [*group.cases, *group.exclusive]:
                self.schedule.finish(case, CaseRun(case, self.schedule.name, _driver_name(case), refusal, 0.0))
            return
        futures = [pool.submit(self._perform, case) for case in group.cases]
        for future in futures:
            future.result()  # _perform never raises: every outcome is a verdict
        for case in group.exclusive:  # alone, after the others, each from the group's configuration
            refusal = self._configure(case)
            if refusal is None:
                self._perform(case)
            else:
                self.schedule.finish(case, CaseRun(case, self.schedule.name, _driver_name(case), refusal, 0.0))

    def _configure(self, case) -> Optional[v.Verdict]:
        """The instance configured for ``case``'s group, or the verdict of every case it had to run."""
        target = self.session.target
        if not target.start_error:
            died = target.check_alive()
            if died:
                target.start_error = died
                target.stop()
                return v.target_error(f"target stopped serving: {died}")
        if target.start_error:
            return v.target_error(f"target could not start: {target.start_error}")
        return configure(target, case)

    def _perform(self, case) -> None:
        driver = _driver_name(case)
        weight = capacity.case_weight(case, driver) * self.session.target.case_weight
        with self.schedule.slots, capacity.machine().case(weight):
            if self.schedule.stopping.is_set():
                run = CaseRun(case, self.schedule.name, driver,
                              v.unsupported("the run was stopped before this case", kind="not-run"), 0.0)
            else:
                try:
                    drivers = self._drivers()
                except Exception as exc:  # noqa: BLE001 - a harness bug is a verdict, not a crash
                    run = CaseRun(case, self.schedule.name, driver, v.broken(exc), 0.0)
                else:
                    run = execute_case(case, self.session.target, drivers, driver)
        self.schedule.finish(case, run)


class Schedule:
    """All of one target's cases, run concurrently over its lanes; each case's run is handed back
    by ``result``, and nothing waits unboundedly."""

    def __init__(self, session: TargetSession, cases: list, *, jobs: int = DEFAULT_JOBS,
                 instances: Optional[int] = None, stop_at_failure: bool = False):
        self.session = session
        self.stop_at_failure = stop_at_failure
        self.name = session.target.name
        self.cases = list(cases)
        self.jobs = max(1, min(jobs, session.target.max_jobs or jobs))
        self.instances = instances
        self.stopping = threading.Event()
        self.slots = threading.Semaphore(self.jobs)  # the target's cases at once, shared by all lanes
        self._futures: dict[str, Future] = {case.id: Future() for case in self.cases}
        self._thread: Optional[threading.Thread] = None
        self._lanes: list[Lane] = []
        self._pending_lock = threading.Lock()

    def start(self) -> None:
        """Start running in the background (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"schedule {self.name}", daemon=True)
            self._thread.start()

    def result(self, case, timeout: Optional[float] = None) -> CaseRun:
        self.start()
        return self._futures[case.id].result(timeout)

    def stop(self, abort: bool = False) -> None:
        """No case starts after this; with ``abort`` every instance is stopped as well, even one that
        is still starting (the run was interrupted and no running case's verdict will be recorded)."""
        self.stopping.set()
        if abort:
            for session in [self.session, *(lane.session for lane in list(self._lanes))]:
                try:
                    session.target.stop()
                except Exception:  # noqa: BLE001 - stopped again when the lanes end
                    pass

    def join(self, timeout: Optional[float] = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    # -- bookkeeping ---------------------------------------------------------------------------

    def finish(self, case, run: CaseRun) -> None:
        future = self._futures[case.id]
        if not future.done():
            future.set_result(run)
        if self.stop_at_failure and run.verdict.verdict == v.FAILED:  # the first failure in time stops it
            self.stopping.set()

    def cancel(self, cases, reason: str) -> None:
        for case in cases:
            self.finish(case, CaseRun(case, self.name, _driver_name(case), v.unsupported(reason, kind="not-run"), 0.0))

    def next_group(self, lane: Lane) -> Optional[Group]:
        """``lane``'s next group; when it has none left, the groups of one non-dynamic configuration
        taken from the end of the lane with the most cases still waiting, so no lane idles while
        another has a queue (the taker restarts once for them, the lane they came from not at all)."""
        with self._pending_lock:
            if not lane.pending:
                busiest = max((other for other in self._lanes if other is not lane and len(other.pending) > 1),
                              key=lambda other: sum(g.size for g in other.pending), default=None)
                if busiest is not None:
                    static = busiest.pending[-1].static
                    taken = []
                    while len(busiest.pending) > 1 and busiest.pending[-1].static == static:
                        taken.append(busiest.pending.pop())
                    for group in reversed(taken):
                        busiest.groups.remove(group)  # its cases are the taker's to finish, or to fail
                        lane.groups.append(group)
                        lane.pending.append(group)
            return lane.pending.popleft() if lane.pending else None

    def fail_remaining(self, groups: list[Group], exc: BaseException) -> None:
        for group in groups:
            for case in [*group.cases, *group.exclusive]:
                self.finish(case, CaseRun(case, self.name, _driver_name(case), v.broken(exc), 0.0))

    # -- the run -------------------------------------------------------------------------------

    def _run(self) -> None:
        target = self.session.target
        try:
            self.session.start()
            runnable = []
            for case in self.cases:  # decided before any lane starts; never waits for one
                try:
                    action_driver_name(case.api)
                except Unsupported as exc:
                    self.finish(case, CaseRun(case, self.name, "?", v.unsupported(exc.reason, kind=exc.kind), 0.0))
                    continue
                verdict = applicability(case, target)
                if verdict is not None:
                    self.finish(case, CaseRun(case, self.name, _driver_name(case), verdict, 0.0))
                else:
                    runnable.append(case)
            groups = plan(runnable, target)
            machine, memory = capacity.machine(), target.instance_memory_mb
            reserved = 0 if self.instances is not None else machine.reserve_instances(
                target.max_instances, target.instance_cores, memory)
            lanes = assign(groups, max(1, min(self.instances or reserved, len(groups) or 1)))
            machine.release_instances(max(0, reserved - len(lanes)), memory)  # planned, not needed
            reserved = min(reserved, len(lanes))
            try:
                self._lanes = [Lane(self, self.session, lanes[0], owned=False)] if lanes else []
                for groups_of_lane in lanes[1:]:
                    spawned = TargetSession(target.spawn(len(self._lanes)), driver_factory=self.session.driver_factory)
                    self._lanes.append(Lane(self, spawned, groups_of_lane, owned=True))
                threads = [threading.Thread(target=lane.run, name=f"{self.name} lane {i}", daemon=True)
                           for i, lane in enumerate(self._lanes)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
            finally:
                machine.release_instances(reserved, memory)
        except BaseException as exc:  # noqa: BLE001 - no case is left without a verdict
            for case in self.cases:
                self.finish(case, CaseRun(case, self.name, _driver_name(case), v.broken(exc), 0.0))


def _driver_name(case) -> str:
    try:
        return action_driver_name(case.api)
    except Unsupported:
        return "?"


def _close(drivers: dict) -> None:
    for driver in drivers.values():
        if driver is not None:
            try:
                driver.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
