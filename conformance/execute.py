"""Running cases on one target: the part of a run that does not know about pytest.

``TargetSession`` owns a target and its drivers; ``run_case`` performs one case and returns a
``CaseRun`` with its verdict. The scheduler (scheduler.py) runs many at once through
``execute_case``; the tests call ``run_case``.

- Each case gets a fresh namespace ``public/c<8 hex>`` (``new_namespace``): isolation per case, not
  a fresh broker (a broker restart costs seconds; a namespace costs nothing).
- Before any step, ``applicability`` decides whether the case can run at all: a feature the target
  was detected to lack (feature_flags.py, capabilities.py), another era or release, and
  ``configure`` a broker_config the target cannot take, each give "unsupported" with the reason;
  a target that could not start, stopped serving, or could not be restarted with the case's
  configuration gives "target-error". Nothing is sent for such a case.
- ``perform`` runs the steps through the step executor (executor.py), which retries what is safe
  and maps every exception to a status, and stops at the first step whose answer differs from the
  model's (verdicts.py). A step that ends indefinite or with a protocol violation makes the case
  target-error instead when the target no longer answers a fresh CONNECT (``down``).
- Drivers are rebuilt when the target's ``generation`` changes (a restarted process has new sockets)
  and reset before every case (fresh transcripts, fresh connections).
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from conformance import verdicts as v
from conformance.capabilities import unsupported_reason
from conformance.feature_flags import missing_flag
from conformance.drivers.client import ClientDriver
from conformance.drivers.java import java_drivers
from conformance.drivers.native_clients import native_drivers
from conformance.drivers.metadata import MetadataDriver
from conformance.drivers.rest import RestDriver
from conformance.drivers.wire import WireDriver
from conformance.errors import Indefinite, ProtocolViolation, TargetError, Unsupported
from conformance.executor import BROKEN, INDEFINITE, UNSUPPORTED, VIOLATION, StepExecutor, StepResult
from conformance.routing import action_driver_name
from conformance.targets.base import ERA_PIP344, Target
from conformance.targets.reference_cluster import attach_cluster
from conformance.transcript import Transcript

NAMESPACE_TENANT = "public"


def new_namespace() -> str:
    return f"{NAMESPACE_TENANT}/c{secrets.token_hex(4)}"


def default_drivers(target: Target) -> dict:
    """The drivers a target offers: REST (and the client libraries' admin drivers) only with an admin
    API, the others always."""
    admin = target.admin_url if target.has_admin else None
    credentials = target.credentials()  # conformance/security.py: token and CA, redacted everywhere
    return {
        "rest": attach_cluster(RestDriver(admin, timeout=target.timeout, credentials=credentials), target)
        if admin else None,
        "wire": attach_cluster(WireDriver(target.service_url, timeout=target.timeout, admin_url=admin,
                                          credentials=credentials), target),
        "client": ClientDriver(target.service_url, admin, timeout=target.timeout, credentials=credentials),
        # white-box reads; without an exposed store it answers Unsupported (drivers/metadata.py, NO_STORE)
        "metadata": MetadataDriver(target.metadata_store_url, timeout=target.timeout),
        # the Java client and admin client, in the run's driver processes (drivers/java.py)
        **java_drivers(target.service_url, admin, timeout=target.timeout, credentials=credentials),
        # the Go client and the Rust crate, likewise (drivers/native_clients.py)
        **native_drivers(target.service_url, admin, timeout=target.timeout, credentials=credentials),
    }


def era_mismatch(case_era: Optional[str], target_era: Optional[str]) -> Optional[str]:
    """The reason a case does not apply to a target of ``target_era``, or None if it does."""
    if not case_era or not target_era or case_era in (target_era, "any"):
        return None
    if case_era == ERA_PIP344:
        return "row judges PIP-344 brokers; the target's version is an Apache Pulsar release before PIP-344"
    if target_era == ERA_PIP344:
        return "row judges pre-PIP-344 Apache Pulsar releases; the target is held to the current spec"
    return f"row judges {case_era} brokers; target is {target_era}"


@dataclass
class CaseRun:
    case: object
    target: str
    driver: str
    verdict: v.Verdict
    duration_s: float
    namespace: str = ""
    transcripts: list[Transcript] = field(default_factory=list)


class TargetSession:
    """A target plus its drivers, started once and used for every case of the run."""

    def __init__(self, target: Target, *, driver_factory: Callable[[Target], dict] = default_drivers):
        self.target = target
        self.driver_factory = driver_factory
        self._drivers: Optional[dict] = None
        self._generation = -1
        self.start_attempted = False
        self._starting = threading.Lock()  # a second caller waits for the first's start to end

    def start(self) -> None:
        """Start the target once; a failure is kept in ``target.start_error``, not raised."""
        with self._starting:
            if self.start_attempted:
                return
            self.start_attempted = True
            try:
                self.target.start()
            except TargetError:
                pass  # target.start_error holds the reason
            except Exception as exc:  # noqa: BLE001 - any start failure is every case's target-error
                self.target.start_error = f"{type(exc).__name__}: {exc}"
                self.target.stop()

    def stop(self) -> None:
        self._close_drivers()
        self.target.stop()

    def _close_drivers(self) -> None:
        for driver in (self._drivers or {}).values():
            if driver is not None:
                try:
                    driver.close()
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass
        self._drivers = None

    def drivers(self) -> dict:
        if self._drivers is None or self._generation != self.target.generation:
            self._close_drivers()
            self._drivers = self.driver_factory(self.target)
            self._generation = self.target.generation
        return self._drivers

    def run_case(self, case) -> CaseRun:
        """Start the target if needed, decide whether ``case`` can run on it, configure it, and
        perform and judge the case; one case at a time (the scheduler runs them concurrently)."""
        try:
            driver_name = action_driver_name(case.api)
        except Unsupported as exc:
            return CaseRun(case, self.target.name, "?", v.unsupported(exc.reason, kind=exc.kind), 0.0)
        try:
            self.start()
            refusal = applicability(case, self.target) or configure(self.target, case)
        except Exception as exc:  # noqa: BLE001 - a harness bug is a verdict, not a crash
            refusal = v.broken(exc)
        if refusal is not None:
            return CaseRun(case, self.target.name, driver_name, refusal, 0.0)
        return execute_case(case, self.target, self.drivers(), driver_name)


def down(target: Target) -> Optional[str]:
    """After an indefinite or garbled answer, whether the target itself stopped serving
    (targets/base.py ``unresponsive``); if so it is stopped and every later case is target-error."""
    why = target.unresponsive()
    if why is None:
        return None
    target.start_error = f"stopped serving during the run: {why}"
    target.stop()
    return f"target stopped serving: {why}"


def applicability(case, target: Target) -> Optional[v.Verdict]:
    """The verdict of a case that cannot run on ``target`` (started), or None when it can."""
    if not target.start_error:
        died = target.check_alive()
        if died:  # its later cases are target-error with the reason, like a failed start's
            target.start_error = died
            target.stop()
            return v.target_error(f"target stopped serving: {died}")
    if target.start_error:
        return v.target_error(f"target could not start: {target.start_error}")
    reason = missing_flag(case, target)  # PIP-35: FeatureFlags the row needs (feature_flags.py)
    if reason:
        return v.unsupported(reason, kind="feature-not-advertised")
    try:
        reason = unsupported_reason(case, target)  # PIP-157: numberOfTopicBuckets probed (capabilities.py)
    except Indefinite as exc:
        return v.indefinite(f"detecting numberOfTopicBuckets support: {exc.reason}")
    if reason:
        return v.unsupported(reason, kind="feature-not-detected")
    reason = era_mismatch(getattr(case, "era", None), target.era)
    if reason:
        return v.unsupported(reason, kind="era-mismatch")
    reason = case.applies_to(target.release) if hasattr(case, "applies_to") else None
    if reason:
        return v.unsupported(reason, kind="release-range")
    return None


def configure(target: Target, case) -> Optional[v.Verdict]:
    """Make ``target`` run with the case's broker config; the verdict when it cannot, else None."""
    try:
        target.configure(dict(getattr(case, "broker_config", None) or {}))
    except Unsupported as exc:
        if target.start_error:  # it stopped serving, or could not start, before this case
            return v.target_error(exc.reason)
        return v.unsupported(exc.reason, kind=exc.kind)
    except Indefinite as exc:
        return v.indefinite(f"configuring the target: {exc.reason}")
    except Exception as exc:  # noqa: BLE001 - a restart that failed leaves start_error set
        if target.start_error:
            return v.target_error(f"target could not be restarted for this case: {target.start_error}")
        if isinstance(exc, TargetError):
            return v.indefinite(f"target error while configuring: {exc}")
        raise
    return None


def _stand_in_note(result: StepResult, step, index: int) -> str:
    """Names a setup step a binary-protocol stand-in performed for the admin API (routing.py): it is
    used only where Pulsar would succeed through it, so its failure is the target's."""
    if step.role == "setup" and result.substitute:
        return (f"setup step {index} ({type(step.op).__name__}) through the {result.driver} driver, standing in "
                f"for the admin API where Pulsar with this config would succeed: ")
    return ""


def perform(case, target: Target, drivers: dict, run: CaseRun) -> v.Verdict:
    """The case's steps on a configured ``target`` through ``drivers`` (conformance/executor.py), in a
    fresh namespace, judged: the first step whose answer differs from the model's ends the case."""
    executor = StepExecutor(target, drivers, getattr(case, "broker_config", None))
    run.namespace = new_namespace()
    steps = tuple(case.bind(run.namespace, release=target.release).steps)
    if not steps:
        return v.unsupported("case has no steps after binding; nothing to compare", kind="no-steps")
    last = None
    for index, step in enumerate(steps):
        result = executor.perform(step, case.api)
        if result.status == UNSUPPORTED:
            return v.unsupported(result.reason, index, step, kind=result.kind)
        if result.status == BROKEN:
            return v.broken(result.error, index, step)
        if result.status in (INDEFINITE, VIOLATION):
            stopped = down(target)
            if stopped:
                return v.target_error(stopped, index, step)
        if result.status == INDEFINITE:
            return v.indefinite(_stand_in_note(result, step, index) + result.reason, index, step)
        if result.status == VIOLATION:
            return v.failed(index, step, ProtocolViolation(result.reason),
                            f"{step.role} step {index} ({type(step.op).__name__}): protocol violation: {result.reason}")
        if not v.compare(step.expected, result.actual):
            where = _stand_in_note(result, step, index) or f"{step.role} step {index} ({type(step.op).__name__}): "
            attempts = f" ({result.reason})" if result.reason else ""
            return v.failed(index, step, result.actual,
                            f"{where}expected {step.expected!r}, got {result.actual!r}{attempts}")
        last = (index, step, result.actual)
    return v.passed(*last)


def execute_case(case, target: Target, drivers: dict, driver_name: str) -> CaseRun:
    """One case on a configured target, timed, with its transcripts; never raises."""
    started = time.monotonic()
    run = CaseRun(case, target.name, driver_name, v.unsupported("not run", kind="not-run"), 0.0)
    try:
        run.verdict = perform(case, target, drivers, run)
    except Exception as exc:  # noqa: BLE001 - a harness bug is a verdict, not a crash
        run.verdict = v.broken(exc)
    run.duration_s = time.monotonic() - started
    run.transcripts = [d.transcript for d in drivers.values() if d is not None and d.transcript]
    return run
