"""One step of a generated sequence: the operation applied to the model and performed on the target.

The state machine (machine.py) and the reducer (reduce.py) both run programs step by step; this is
the one place that does it, so the two can never judge a step differently.

``run_step``:

- The model goes first. An operation the model refuses to settle (ModelUsageError) is
  ``SKIPPED_BY_MODEL`` and never sent.
- The step is routed as it would be alone (``generated.natural_route``), as the runner routes a
  case's steps. A route that needs a stand-in for the admin API (a PRODUCER creating a topic) is
  taken only where the model expects Done, since a stand-in can only reproduce the admin API's
  Done (executor.py says why); otherwise ``STAND_IN_CANNOT``, nothing sent.

What the target answered is compared with the model by the caller: ``Step.agrees``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from conformance.coverage import op_variant, outcome_kind
from conformance.errors import Unsupported
from conformance.generated import natural_route
from conformance.executor import ANSWERED, UNSUPPORTED, StepResult, Stepper
from model.errors import ModelUsageError
from model.machine import apply
from model.outcomes import Done, outcome_to_json

SKIPPED_BY_MODEL = "skipped-by-model"
STAND_IN_CANNOT = "stand-in-cannot"


@dataclass(frozen=True)
class Step:
    status: str                       # SKIPPED_BY_MODEL, STAND_IN_CANNOT, or the Stepper's status
    op: Any
    expected: Any = None              # the model's outcome (when it settled the op)
    new_state: Any = None             # the model's state after the op
    result: Optional[StepResult] = None

    @property
    def actual(self):
        return self.result.actual if self.result is not None else None

    @property
    def agrees(self) -> bool:
        return self.status == ANSWERED and self.actual == self.expected


def run_step(stepper: Stepper, state, op) -> Step:
    """The model's answer, then the target's, for ``op`` in model ``state``; nothing is sent for
    an op the model does not settle or a stand-in could not answer as the model expects."""
    try:
        new_state, expected = apply(state, op)
    except ModelUsageError:
        return Step(SKIPPED_BY_MODEL, op)
    role, api = natural_route(op)
    try:
        _, substitute = stepper.route(op, role, api, expected)
    except Unsupported:
        return Step(UNSUPPORTED, op, expected, new_state)
    if substitute and expected != Done():
        return Step(STAND_IN_CANNOT, op, expected, new_state)
    result = stepper.perform(op, expected=expected, role=role, case_api=api)
    return Step(result.status, op, expected, new_state, result)


def signature_of(op, expected, actual) -> str:
    """Operation variant (the domain left out: one case per behaviour is enough), expected and actual kinds."""
    variant = op_variant(op).replace(",non-persistent]", "]").replace(",persistent]", "]")
    variant = variant.replace("[non-persistent]", "").replace("[persistent]", "")
    return f"{variant}: expected {outcome_kind(expected)}, got {outcome_kind(actual)}"


def outcome_json(outcome) -> Any:
    if outcome is None:
        return None
    if isinstance(outcome, dict):
        return outcome
    try:
        return outcome_to_json(outcome)
    except Exception:  # noqa: BLE001 - an outcome type the serialiser does not know yet
        return {"kind": type(outcome).__name__, "repr": repr(outcome)}
