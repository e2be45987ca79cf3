"""One operation at a time on a live target, routed the way the runner routes a case's steps.

``execute.TargetSession.run_case`` performs a whole bound case and stops at the first mismatch.
Generated sequences (conformance/fuzz/) and differential runs (diff.py) need the same routing one step
at a time, with the answer handed back instead of judged; that is ``Stepper``.

Rule 1: routing is the runner's (routing.py): the NamespaceLedger first on targets with implicit
        namespaces and no admin API, then ``Router.driver_for(step, case_api)``. ``natural_route(op)`` gives the
        role and case api a step is routed with when it stands alone: an op naming its own api
        (or client transport) is an "action" of that api; an admin op without one is "setup", so
        REST performs it where there is an admin API and a stand-in (the wire driver's PRODUCER
        for CreateNonPartitionedTopic) elsewhere.
Rule 2: every exception becomes a ``StepResult`` status, as execute.py Rule 3 maps them:
        Unsupported -> "unsupported" (nothing was judged), Indefinite and TargetError ->
        "indefinite", ProtocolViolation -> "violation" (an answer, and a wrong one), anything
        else -> "broken" (our bug). Every wait is the drivers' own, bounded by the target's timeout.
Rule 3: a stand-in for the admin API (``substitute``) can only reproduce the admin API's Done: a
        caller that compares its answer treats a mismatch as "the target cannot be set up", not
        as a divergence (execute.py does the same).
Rule 4: a SetBrokerConfig answered Done is noted on the target, so the next ``begin`` puts the
        key back (targets/base.py Rule 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from conformance.errors import Indefinite, ProtocolViolation, TargetError, Unsupported
from conformance.execute import TargetSession
from conformance.generated import natural_route
from conformance.routing import NamespaceLedger, Router
from model import ops
from model.outcomes import Done

ANSWERED, UNSUPPORTED, INDEFINITE, VIOLATION, BROKEN = "answered", "unsupported", "indefinite", "violation", "broken"


@dataclass(frozen=True)
class StepView:
    """What routing reads of a step (conformance.cases.Step's fields)."""
    op: Any
    role: str
    expected: Any = None


@dataclass(frozen=True)
class StepResult:
    status: str                 # ANSWERED | UNSUPPORTED | INDEFINITE | VIOLATION | BROKEN
    actual: Any = None          # the outcome when ANSWERED
    reason: str = ""
    driver: str = ""
    substitute: bool = False    # Rule 3
    kind: str = ""              # UNSUPPORTED: the conformance/reasons.py id

    @property
    def answered(self) -> bool:
        return self.status == ANSWERED


def violation_outcome(reason: str) -> dict:
    """How a ProtocolViolation is recorded where an outcome would be (never equal to an outcome)."""
    return {"kind": "ProtocolViolation", "reason": reason}


class Stepper:
    """Performs single steps on a started ``TargetSession`` (Rules 1-4)."""

    def __init__(self, session: TargetSession):
        self.session = session
        self.router: Optional[Router] = None
        self.ledger: Optional[NamespaceLedger] = None

    @property
    def target(self):
        return self.session.target

    def begin(self, broker_config: Mapping[str, str]) -> None:
        """Start a new sequence: the target configured as ``broker_config``, fresh drivers.

        Raises Unsupported (target down, config refused), Indefinite or TargetError."""
        self.session.start()
        target = self.target
        if target.start_error:
            raise Unsupported("not-run", f"target could not start: {target.start_error}")
        target.configure(dict(broker_config))
        drivers = self.session.drivers()
        for driver in drivers.values():
            if driver is not None:
                driver.reset()
        self.router = Router(drivers, has_admin=target.has_admin, broker_config=broker_config)
        self.ledger = NamespaceLedger() if NamespaceLedger.applies(target) else None

    def route(self, op, role: str, case_api: str, expected=None):
        """(driver or None for the ledger, substitute?) without performing; raises Unsupported."""
        step = StepView(op, role, expected)
        if self.ledger is not None and self.ledger.check(step) is not None:
            return None, False
        driver = self.router.driver_for(step, case_api)
        return driver, self.router.is_substitute(step, driver)

    def perform(self, op, *, expected=None, role: Optional[str] = None, case_api: Optional[str] = None) -> StepResult:
        if role is None or case_api is None:
            role, case_api = natural_route(op)
        step = StepView(op, role, expected)
        driver = None
        substitute = False
        try:
            actual = self.ledger.check(step) if self.ledger is not None else None
            if actual is not None:
                return StepResult(ANSWERED, actual, driver="ledger")
            driver = self.router.driver_for(step, case_api)
            substitute = self.router.is_substitute(step, driver)
            actual = driver.perform(op)
        except Unsupported as exc:
            return StepResult(UNSUPPORTED, reason=exc.reason, driver=getattr(driver, "name", ""), substitute=substitute,
                              kind=exc.kind)
        except Indefinite as exc:
            return StepResult(INDEFINITE, reason=exc.reason, driver=getattr(driver, "name", ""), substitute=substitute)
        except ProtocolViolation as exc:
            return StepResult(VIOLATION, violation_outcome(exc.reason), reason=exc.reason, driver=driver.name,
                              substitute=substitute)
        except TargetError as exc:
            return StepResult(INDEFINITE, reason=f"target error: {exc}", driver=getattr(driver, "name", ""),
                              substitute=substitute)
        except Exception as exc:  # noqa: BLE001 - a harness bug is reported, never a divergence
            return StepResult(BROKEN, reason=f"{type(exc).__name__}: {exc}", driver=getattr(driver, "name", ""),
                              substitute=substitute)
        if isinstance(op, ops.SetBrokerConfig) and actual == Done():
            self.target.note_config_change(op.key, op.value)  # Rule 4
        return StepResult(ANSWERED, actual, driver=driver.name, substitute=substitute)
