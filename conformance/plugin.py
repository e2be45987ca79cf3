"""pytest plugin: conformance cases as test items, one per case x target (x its driver).

The runner (runner.py) builds a ``ConformancePlugin`` with the loaded cases and the targets,
and passes it to ``pytest.main``; pytest then gives us -k selection, JUnit XML, allure-pytest
and Ctrl-C handling for free.

- Items are named ``<case id>[<target>-<driver>]`` under one collector per target
  (``TargetCollector``), in target order then case order, so a target's cases run sequentially
  and together.
- Verdict -> pytest outcome (``ConformanceItem.runtest``): passed -> pass; failed ->
  ConformanceFailure (an AssertionError: Allure "failed"); unsupported -> skip with the reason;
  indefinite, broken and target-error -> HarnessTrouble (Allure "broken", the verdict the
  message's first word). The verdict is also a JUnit property, since JUnit has no word for
  "indefinite".
- Every item writes exactly one JSONL record (``ConformancePlugin.record``, results.py); an item
  that dies without one (a bug in this plugin) is counted as broken
  (``ConformancePlugin.verdicts``).
- Targets start lazily at their first selected item, stop after their last one
  (``pytest_runtest_teardown``: a JVM need not idle through the other targets' cases), and are
  all stopped again in ``pytest_sessionfinish``, which pytest runs on success, failure and
  Ctrl-C alike.
- A target's items are ordered by ``Target.config_group``, then by the spec's order, so each
  distinct non-dynamic configuration starts once per run.
- Cases run concurrently (conformance/scheduler.py, ``pytest_collection_finish``): once the
  items are selected, every target's schedule starts in the background with the cases of its
  items, and each item waits for its own case's run and records it; so records, JUnit and Allure
  keep the items' order whatever ran first. ``jobs`` = 1 runs one case at a time on one broker.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import pytest

from conformance import results, verdicts as v
from conformance.divergences import KnownDivergences
from conformance.drivers.protocol_client import client_library
from conformance.execute import CaseRun, TargetSession
from conformance.errors import Unsupported
from conformance.reasons import tagged
from conformance.routing import action_driver_name
from conformance.scheduler import DEFAULT_JOBS, Schedule
from conformance.security import redact
from conformance.transcript import format_transcript

STOP_JOIN_S = 60.0  # a stopped schedule ends after its running cases, each bounded by its waits


class ConformanceFailure(AssertionError):
    """The target's answer differs from the model's (verdict failed)."""


class HarnessTrouble(Exception):
    """No comparable answer (indefinite) or a harness error (broken); never a spec failure."""


def _marker_name(text: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", text.lower())


class ConformanceItem(pytest.Item):
    def __init__(self, *, case, session_: TargetSession, plugin: "ConformancePlugin", driver: str, **kwargs):
        super().__init__(**kwargs)
        self.case = case
        self.target_session = session_
        self.plugin = plugin
        self.driver = driver
        for marker in (f"pip{case.pip}", _marker_name(case.grade), f"api_{_marker_name(case.api)}"):
            self.add_marker(marker)

    def runtest(self) -> None:
        run = self.plugin.run_of(self)
        self.plugin.record(self, run)
        verdict = run.verdict
        reason = redact(verdict.reason)  # JUnit and Allure never show a token
        if verdict.verdict == v.PASSED:
            return
        if verdict.verdict == v.FAILED:
            raise ConformanceFailure(reason)
        if verdict.verdict == v.UNSUPPORTED:
            pytest.skip(f"unsupported: {reason}")
        if verdict.verdict in (v.INDEFINITE, v.TARGET_ERROR):
            raise HarnessTrouble(f"{verdict.verdict}: {reason}")
        raise HarnessTrouble(f"broken: {reason}\n{redact(verdict.traceback)}")

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, (ConformanceFailure, HarnessTrouble)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, self.name


class TargetCollector(pytest.Collector):
    def __init__(self, *, target_session: TargetSession, plugin: "ConformancePlugin", **kwargs):
        super().__init__(**kwargs)
        self.target_session = target_session
        self.plugin = plugin

    def collect(self):
        target = self.target_session.target
        # Stable sort: within a group the spec's order; each non-dynamic configuration starts once.
        for case in sorted(self.plugin.cases, key=lambda c: target.config_group(dict(c.broker_config or {}))):
            try:
                driver = action_driver_name(case.api)
            except Unsupported:
                driver = "unknown"
            yield ConformanceItem.from_parent(self, name=f"{case.id}[{target.name}-{driver}]", case=case,
                                              session_=self.target_session, plugin=self.plugin, driver=driver)


class ConformancePlugin:
    """Holds the run's cases, target sessions and results; registered as a pytest plugin."""

    def __init__(self, cases: list, sessions: list[TargetSession], *, out_dir: Path, run_id: str,
                 allure_dir: Optional[Path] = None, jobs: int = DEFAULT_JOBS, stop_at_failure: bool = False):
        self.cases = cases
        self.sessions = sessions
        self.jobs = jobs
        self.stop_at_failure = stop_at_failure
        self.schedules: dict[int, Schedule] = {}
        self.out_dir = Path(out_dir)
        self.run_id = run_id
        self.allure_dir = allure_dir
        self.writer: Optional[results.ResultWriter] = None
        self.records: list[results.ResultRecord] = []
        self.recorded_nodeids: set[str] = set()
        self.items_run: list[str] = []
        self.selected = 0
        self._known_by_target: dict[str, KnownDivergences] = {}

    def _known(self, target) -> KnownDivergences:
        # Read after the target started: its profile depends on the version it reported.
        if target.name not in self._known_by_target:
            self._known_by_target[target.name] = KnownDivergences.for_target(target)
        return self._known_by_target[target.name]

    # -- pytest hooks ------------------------------------------------------------------------

    def pytest_configure(self, config) -> None:
        self.writer = results.ResultWriter(self.out_dir, self.run_id)
        markers = {f"pip{c.pip}" for c in self.cases} | {_marker_name(c.grade) for c in self.cases}
        markers |= {f"api_{_marker_name(c.api)}" for c in self.cases}
        for marker in sorted(markers):
            config.addinivalue_line("markers", f"{marker}: conformance cases tagged {marker}")

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session) -> bool:
        items = []
        for target_session in self.sessions:
            name = target_session.target.name
            collector = TargetCollector.from_parent(session, name=name, nodeid=name,
                                                    target_session=target_session, plugin=self)
            collected = list(collector.collect())
            # The terminal reporter counts "collected N items" from collect reports.
            session.config.hook.pytest_collectreport(
                report=pytest.CollectReport(collector.nodeid, "passed", None, collected))
            items.extend(collected)
        session.items = items
        session.config.hook.pytest_collection_modifyitems(session=session, config=session.config, items=items)
        session.config.hook.pytest_collection_finish(session=session)
        session.testscollected = len(items)
        self.selected = len(session.items)
        return True

    def pytest_collection_finish(self, session) -> None:
        """One schedule per target, over the cases of its selected items, started now; items then
        wait for their own case's run."""
        by_session: dict[int, list] = {}
        for item in session.items:
            if isinstance(item, ConformanceItem):
                by_session.setdefault(id(item.target_session), []).append(item.case)
        for target_session in self.sessions:
            cases = by_session.get(id(target_session), [])
            if cases:
                schedule = Schedule(target_session, cases, jobs=self.jobs, instances=1 if self.jobs == 1 else None,
                                    stop_at_failure=self.stop_at_failure)
                self.schedules[id(target_session)] = schedule
        for schedule in self.schedules.values():
            schedule.start()

    def run_of(self, item: "ConformanceItem") -> CaseRun:
        schedule = self.schedules.get(id(item.target_session))
        if schedule is None:  # an item pytest runs that collection did not select
            item.target_session.start()
            return item.target_session.run_case(item.case)
        return schedule.result(item.case)

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            if report.nodeid not in self.items_run:
                self.items_run.append(report.nodeid)

    def pytest_runtest_teardown(self, item, nextitem) -> None:
        if not isinstance(item, ConformanceItem):
            return
        following = getattr(nextitem, "target_session", None)
        if following is not item.target_session:
            schedule = self.schedules.get(id(item.target_session))
            if schedule is not None:
                schedule.join()
            try:
                item.target_session.stop()
            except Exception as exc:  # noqa: BLE001 - stopped again at session finish
                print(f"conformance: stopping {item.target_session.target.name} failed: {exc}")

    def pytest_sessionfinish(self, session, exitstatus=0) -> None:
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
        for schedule in self.schedules.values():
            # Interrupted, a lane may be inside a broker's start-up; ending its process now ends that
            # wait too, where joining first would wait out the whole start-up bound.
            schedule.stop(abort=interrupted)
        for schedule in self.schedules.values():
            schedule.join(STOP_JOIN_S)
        for target_session in self.sessions:
            try:
                target_session.stop()
            except Exception as exc:  # noqa: BLE001 - keep stopping the others
                print(f"conformance: stopping {target_session.target.name} failed: {exc}")
        if self.writer is not None:
            self.writer.close()
        if self.allure_dir is not None:
            self.write_environment(self.allure_dir)

    # -- results -----------------------------------------------------------------------------

    def record(self, item: ConformanceItem, run: CaseRun) -> None:
        """Write the JSONL record, JUnit properties and Allure labels of one case run: exactly one
        record per item."""
        case, verdict, target = item.case, run.verdict, item.target_session.target
        known = self._known(target).applies(verdict.verdict, case.id, case.row_id, target.release)
        record = results.ResultRecord(
            schema_version=results.SCHEMA_VERSION, run_id=self.run_id, timestamp=results.utc_now(),
            case_id=case.id, row_id=case.row_id, pip=str(case.pip), table=case.table, grade=case.grade,
            era=case.era or "", api=case.api, target=target.name, target_version=target.version,
            driver=run.driver, verdict=verdict.verdict,
            reason=tagged(verdict.kind, verdict.reason) if verdict.verdict == v.UNSUPPORTED else verdict.reason,
            expected=results.outcome_json(verdict.expected), actual=results.outcome_json(verdict.actual),
            failing_step=verdict.failing_step, duration_s=round(run.duration_s, 4),
            source=list(case.source or ()), namespace=run.namespace, known_divergence=known.id if known else "",
            client=client_library(run.driver))
        self.writer.write(record)
        self.records.append(record)
        self.recorded_nodeids.add(item.nodeid)
        if known is not None:
            item.user_properties.append(("known_divergence", known.id))
        for key, value in (("verdict", verdict.verdict), ("target", target.name), ("driver", run.driver),
                           ("target_version", target.version or ""), ("row_id", case.row_id),
                           ("grade", case.grade), ("namespace", run.namespace)):
            item.user_properties.append((key, value))
        _allure(case, run, target, known, self.run_id)

    def verdicts(self) -> list[str]:
        """One verdict per item that ran; items without a record count as broken
        (a bug in this plugin)."""
        names = [r.verdict for r in self.records]
        names += [v.BROKEN for nodeid in self.items_run if nodeid not in self.recorded_nodeids]
        return names

    def write_environment(self, allure_dir: Path) -> None:
        """environment.properties: each target's version, era and URLs for the Allure report."""
        allure_dir.mkdir(parents=True, exist_ok=True)
        lines = [f"run_id={self.run_id}"]
        for target_session in self.sessions:
            target = target_session.target
            for key, value in target.describe().items():
                lines.append(f"{_escape_properties(f'{target.name}.{key}')}={_escape_properties(value)}")
        (allure_dir / "environment.properties").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _escape_properties(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace("=", "\\=").replace(":", "\\:")


def _allure(case, run: CaseRun, target, known=None, run_id: str = "") -> None:
    """Labels, parameters and transcripts; no-ops when allure-pytest is not collecting."""
    import allure

    # reports/ keeps the latest run's results by this label: allure-results accumulates runs.
    allure.dynamic.label("run_id", run_id)
    allure.dynamic.epic(f"PIP-{case.pip}")
    allure.dynamic.feature(case.table)
    allure.dynamic.story(case.row_id)
    allure.dynamic.severity(allure.severity_level.CRITICAL if case.grade == "MUST" else allure.severity_level.NORMAL)
    allure.dynamic.tag(case.grade)
    if known is not None:
        allure.dynamic.tag("known divergence")
        allure.dynamic.label("known_divergence", known.id)
    allure.dynamic.parameter("target", target.name)
    allure.dynamic.parameter("driver", run.driver)
    allure.dynamic.parameter("api", case.api)
    if client_library(run.driver):  # reports/allure.py groups the client libraries' report by it
        allure.dynamic.label("client", client_library(run.driver))
    allure.dynamic.parameter("target_version", target.version or "unknown", excluded=True)
    sources = "\n".join(f"- {s}" for s in (case.source or ()))
    recorded = (f"\n\nKnown divergence {known.id} ({known.kind}): {known.summary}"
                f"{' Upstream: ' + known.upstream if known.upstream else ''}") if known is not None else ""
    allure.dynamic.description(f"{case.description}\n\n{case.info or ''}\n\nSources:\n{sources}\n\n"
                               f"Verdict: {run.verdict.verdict} {run.verdict.reason}{recorded}")
    for transcript in run.transcripts:
        allure.attach(format_transcript(transcript), name=f"{transcript.channel} transcript",
                      attachment_type=allure.attachment_type.TEXT)
    if run.verdict.traceback:
        allure.attach(run.verdict.traceback, name="harness traceback", attachment_type=allure.attachment_type.TEXT)
