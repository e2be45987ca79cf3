"""The step executor: the one place where a step is performed on a target, and where whatever went
wrong on the way becomes the step's status.

Everything that runs steps runs them here: a case's steps (execute.py, for the scheduler and
``TargetSession.run_case``), a generated sequence's steps (fuzz/steps.py, fuzz/reduce.py) and a
differential run's (diff.py). So a step is routed, retried and judged the same way wherever it runs.

Routing is routing.py's: on a target with implicit namespaces and no admin API the
``NamespaceLedger`` answers the creations it needs no I/O for, every other step goes to
``Router.driver_for(step, case_api)``.

What went wrong is decided by ``TROUBLE``, a table from the exception a driver raised to the step's
status and to whether the step may be performed again. A verdict is about the broker, so the
harness's own trouble is never an answer: a step whose request never reached the broker
(``NoContact``: a connection not made within its bound, a driver process busy or gone before it
sent anything) is performed again whatever it does; a step whose request may have reached the
broker is performed again only when its operation repeats (``model.ops.repeatable``: reads, and
lookups whose creation gives the same answer twice), since doing anything else twice changes what
the model expects. Attempts are bounded (``RETRY``), with a pause between them, and the driver
drops its connection before each new attempt. Trouble that remains is reported with its attempts:
``indefinite`` (no answer), ``broken`` (the harness's or a driver program's fault), never ``failed``.

A setup step is a precondition of the case, never what it judges: where the broker answers one with
a server failure (``server_failure``: an HTTP 5xx, or ServiceNotReady, MetadataError, UnknownError or
TooManyRequests on the wire) instead of the success the model expects, the step is performed again
within the same bound on attempts; one that keeps failing is the case's failure, its reason naming
every attempt. An action's answer is always the answer.

A stand-in for the admin API (a PRODUCER creating a topic where there is no REST) can only reproduce
the admin API's Done: ``StepResult.substitute`` says so, and callers name it in their reasons.
A SetBrokerConfig answered Done is noted on the target, so the next configuration puts the key back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from conformance import capacity, timing
from conformance.drivers.external import DriverCrashed, DriverError
from conformance.errors import Indefinite, NoContact, ProtocolViolation, TargetError, Unsupported
from conformance.generated import natural_route
from conformance.routing import NamespaceLedger, Router
from model import ops
from model.outcomes import Done, RestError, ServerError

ANSWERED, UNSUPPORTED, INDEFINITE, VIOLATION, BROKEN = "answered", "unsupported", "indefinite", "violation", "broken"

# When a step may be performed again after its trouble.
ANY_STEP = "any step"                 # nothing reached the broker
REPEATABLE_STEP = "repeatable steps"  # something may have: only an operation that repeats
NEVER = "never"


@dataclass(frozen=True)
class Trouble:
    exception: type
    status: str
    retry: str
    means: str


# Ordered: the first row whose exception the raised one is an instance of decides. docs/runner-contract.md
# shows this table to users; tests/conformance/test_executor.py injects each row's fault.
TROUBLE: tuple[Trouble, ...] = (
    Trouble(Unsupported, UNSUPPORTED, NEVER, "the target cannot perform the step (no admin API, a config it cannot take)"),
    Trouble(NoContact, INDEFINITE, ANY_STEP,
            "the request never reached the broker: no connection within its bound, a driver process busy or gone"),
    Trouble(DriverCrashed, BROKEN, REPEATABLE_STEP, "the client driver's process ended during the request"),
    Trouble(DriverError, BROKEN, NEVER,
            "the client driver broke its protocol, refused the request, could not start, or raised outside its API"),
    Trouble(Indefinite, INDEFINITE, REPEATABLE_STEP, "no answer within the bound, or the connection closed while waiting"),
    Trouble(ProtocolViolation, VIOLATION, NEVER, "the target sent something no Pulsar broker may send"),
    Trouble(TargetError, INDEFINITE, NEVER, "the target could not be driven"),
    Trouble(Exception, BROKEN, NEVER, "a bug in the harness"),
)


def trouble_of(exc: BaseException) -> Trouble:
    return next(row for row in TROUBLE if isinstance(exc, row.exception))


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 3                    # in all, the first included
    pauses_s: tuple[float, ...] = (0.25, 1.0)  # before the second attempt, the third, ...

    def pause(self, attempt: int) -> float:
        """The pause before attempt ``attempt`` (2 for the first retry)."""
        return self.pauses_s[min(attempt - 2, len(self.pauses_s) - 1)] if self.pauses_s else 0.0


RETRY = RetryPolicy()


def may_retry(row: Trouble, op) -> bool:
    return row.retry == ANY_STEP or (row.retry == REPEATABLE_STEP and ops.repeatable(op))


@dataclass(frozen=True)
class StepView:
    """What routing reads of a step (conformance.cases.Step's fields)."""
    op: Any
    role: str
    expected: Any = None


@dataclass(frozen=True)
class StepResult:
    status: str                 # ANSWERED | UNSUPPORTED | INDEFINITE | VIOLATION | BROKEN
    actual: Any = None          # the outcome when ANSWERED; the violation's record when VIOLATION
    reason: str = ""
    driver: str = ""
    substitute: bool = False    # a stand-in for the admin API performed it
    kind: str = ""              # UNSUPPORTED: the conformance/reasons.py id
    attempts: int = 1
    error: Optional[BaseException] = field(default=None, compare=False, repr=False)  # BROKEN: for its traceback

    @property
    def answered(self) -> bool:
        return self.status == ANSWERED


def violation_outcome(reason: str) -> dict:
    """How a ProtocolViolation is recorded where an outcome would be (never equal to an outcome)."""
    return {"kind": "ProtocolViolation", "reason": reason}


class StepExecutor:
    """Performs the steps of one case or one sequence on a configured target: a new one resets the
    drivers (fresh transcripts and connections), as a new case starts."""

    def __init__(self, target, drivers: dict, broker_config: Optional[Mapping[str, str]] = None, *,
                 retry: RetryPolicy = RETRY):
        self.target = target
        self.retry = retry
        for driver in drivers.values():
            if driver is not None:
                driver.reset()
        self.router = Router(drivers, has_admin=target.has_admin, broker_config=broker_config)
        self.ledger = NamespaceLedger() if NamespaceLedger.applies(target) else None

    def route(self, step, case_api: str):
        """(driver, or None for the ledger; whether it stands in for the admin API) without
        performing; raises Unsupported."""
        if self.ledger is not None and self.ledger.check(step) is not None:
            return None, False
        driver = self.router.driver_for(step, case_api)
        return driver, self.router.is_substitute(step, driver)

    def perform(self, step, case_api: str) -> StepResult:
        """The step's outcome, or its trouble as a status, after at most ``retry.attempts`` attempts."""
        if self.ledger is not None:
            known = self.ledger.check(step)
            if known is not None:
                return StepResult(ANSWERED, known, driver="ledger")
        driver, substitute, notes = None, False, []
        for attempt in range(1, self.retry.attempts + 1):
            try:
                driver = self.router.driver_for(step, case_api)
                substitute = self.router.is_substitute(step, driver)
                actual = driver.perform(step.op)
            except Exception as exc:  # noqa: BLE001 - TROUBLE decides what each one means
                row = trouble_of(exc)
                reason = str(getattr(exc, "reason", "") or exc) or type(exc).__name__
                if isinstance(exc, TargetError):
                    reason = f"target error: {reason}"
                if attempt < self.retry.attempts and may_retry(row, step.op):
                    notes.append(f"attempt {attempt}: {reason}")
                    _note(driver, f"{reason}; performing the step again ({row.means})")
                    _drop_connection(driver)
                    self._pause(attempt + 1)
                    continue
                if notes:
                    reason = f"{reason} (after {attempt} attempts; {'; '.join(notes)})"
                return StepResult(row.status, violation_outcome(reason) if row.status == VIOLATION else None,
                                  reason, getattr(driver, "name", ""), substitute,
                                  kind=getattr(exc, "kind", "") if row.status == UNSUPPORTED else "",
                                  attempts=attempt, error=exc if row.status == BROKEN else None)
            if isinstance(step.op, ops.SetBrokerConfig) and actual == Done():
                self.target.note_config_change(step.op.key, step.op.value)
            if step.role == "setup" and actual != step.expected and server_failure(actual):
                if attempt < self.retry.attempts:
                    notes.append(f"attempt {attempt}: the target answered {actual!r}")
                    _note(driver, "a setup step the broker failed to carry out; performing it again")
                    _drop_connection(driver)
                    self._pause(attempt + 1)
                    continue
            reason = f"after {attempt} attempts; {'; '.join(notes)}" if notes else ""
            return StepResult(ANSWERED, actual, reason, driver=driver.name, substitute=substitute, attempts=attempt)
        raise AssertionError("unreachable: the last attempt returns")

    def _pause(self, attempt: int) -> None:
        pause = self.retry.pause(attempt)
        with capacity.machine().waiting():
            time.sleep(pause)
        timing.spent(timing.RETRY_PAUSE, pause, self.target.name)


TRANSIENT_SERVER_ERRORS = frozenset({"ServiceNotReady", "MetadataError", "UnknownError", "TooManyRequests"})


def server_failure(outcome) -> bool:
    """An answer by which the broker says it failed to carry out a request, not that it refuses it."""
    if isinstance(outcome, RestError):
        return outcome.status >= 500
    return isinstance(outcome, ServerError) and outcome.error in TRANSIENT_SERVER_ERRORS


def _note(driver, text: str) -> None:
    transcript = getattr(driver, "transcript", None)
    if transcript is not None:
        transcript.note(text)


def _drop_connection(driver) -> None:
    """A new attempt starts on a new connection where the driver keeps one (drivers/base.py)."""
    drop = getattr(driver, "drop_connection", None)
    if drop is not None:
        drop()


class Stepper:
    """Single steps on a started ``TargetSession``, for generated sequences and differential runs:
    ``begin`` configures the target for a sequence, ``perform`` runs one operation and hands its
    result back instead of judging it."""

    def __init__(self, session):
        self.session = session
        self.executor: Optional[StepExecutor] = None

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
        self.executor = StepExecutor(target, self.session.drivers(), broker_config)

    def route(self, op, role: str, case_api: str, expected=None):
        """(driver or None for the ledger, substitute?) without performing; raises Unsupported."""
        return self.executor.route(StepView(op, role, expected), case_api)

    def perform(self, op, *, expected=None, role: Optional[str] = None, case_api: Optional[str] = None) -> StepResult:
        if role is None or case_api is None:
            role, case_api = natural_route(op)
        return self.executor.perform(StepView(op, role, expected), case_api)
