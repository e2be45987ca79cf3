"""The Hypothesis state machine that runs generated sequences on one live target.

Each operation family of the vocabulary (vocabulary.RULES) is one Hypothesis rule, named after the
family and drawing its arguments from the family's pools, so a shrunk failure prints as readable
steps (``state.create_namespace(policies=(), which='ns')``, then ``state.partitioned_metadata(...)``).
Every rule builds its operation and hands it to ``TargetMachine.do``, which runs it with the shared
step runner (steps.run_step) and compares the target's answer with the model's.

- An example starts with fresh names and the target configured back to Pulsar's defaults
  (``TargetMachine.begin``, Stepper.begin), so Hypothesis can re-run any candidate program while
  it shrinks.
- Shrinking happens on the target: a disagreement raises ``Divergence`` subclassed per signature
  (``divergence_class``, steps.signature_of), so Hypothesis keeps distinct divergences apart
  (``report_multiple_bugs``) and shrinks each by re-running candidate programs on the live
  target. Every failing program is recorded in the run's context (context.FuzzContext).
- In ``TargetMachine.do``, a step the target could not be asked (unsupported, a stand-in that
  cannot give the model's answer) or did not answer (indefinite, a harness error) ends its
  example as rejected, never as a divergence; an unanswered step also counts toward the
  context's hang limit. A divergence the run was told about (``--known``) or found in an earlier
  round is counted and ends its example, without being shrunk again.
"""

from __future__ import annotations

from typing import Any, Optional

from hypothesis import reject, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from conformance.coverage import op_variant
from conformance.errors import Indefinite, TargetError, Unsupported
from conformance.fuzz.context import FuzzContext
from conformance.fuzz.steps import SKIPPED_BY_MODEL, STAND_IN_CANNOT, run_step, signature_of
from conformance.fuzz.vocabulary import ERA, POLICIES, Names, OpRule, initial_ops, rules_for
from conformance.executor import BROKEN, INDEFINITE, UNSUPPORTED
from model.machine import initial_state


class Divergence(AssertionError):
    signature = ""


_DIVERGENCE_CLASSES: dict[str, type] = {}


def divergence_class(signature: str) -> type:
    cls = _DIVERGENCE_CLASSES.get(signature)
    if cls is None:
        cls = _DIVERGENCE_CLASSES[signature] = type("Divergence", (Divergence,), {"signature": signature})
    return cls


def only_divergences(exc: BaseException) -> bool:
    """True for a Divergence, or a group of them (Hypothesis' report_multiple_bugs)."""
    if isinstance(exc, Divergence):
        return True
    children = getattr(exc, "exceptions", None)
    return bool(children) and all(only_divergences(c) for c in children)


class TargetMachine(RuleBasedStateMachine):
    """Rules are attached by ``machine_class`` for one target's capabilities."""

    ctx: FuzzContext = None  # set on the per-run subclass

    def __init__(self):
        super().__init__()
        self.names: Optional[Names] = None
        self.state = None
        self.program: list = []   # (op, expected, actual) of every step performed so far
        self.counted = False
        self._ok = True

    def begin(self, policies) -> None:
        """Start an example: fresh names, the target back at Pulsar's defaults, the initial ops."""
        ctx = self.ctx
        if not ctx.may_start_example():
            ctx.note_reject("time budget")
            reject()
        self.names = Names.fresh()
        baseline = initial_state({}, ERA).config.to_strings()
        try:
            ctx.stepper.begin(baseline)
        except (Unsupported, Indefinite, TargetError) as exc:
            ctx.note_reject(f"target could not be set up: {getattr(exc, 'reason', exc)}")
            reject()
        self.state = initial_state(baseline, ERA)
        ctx.sequences += 1
        self.counted = True
        for op in initial_ops(self.names, ctx.caps, policies):
            self.do(op)

    def teardown(self):
        if self.counted and self._ok:
            self.ctx.completed += 1

    def _abort(self, why: str):
        self._ok = False
        if self.counted:
            self.ctx.sequences -= 1  # not a sequence that ran: it is reported under rejected
        self.counted = False
        self.ctx.note_reject(why)
        reject()

    def do(self, op) -> None:
        ctx = self.ctx
        if ctx.elapsed() > ctx.budget_s + ctx.shrink_budget_s + 60:
            self._abort("time budget")  # never outlive the budget by more than a step
        variant = op_variant(op)
        if ctx.hung_too_often(variant):
            ctx.coverage.status("skipped-hangs", op)
            return
        step = run_step(ctx.stepper, self.state, op)
        if step.status in (SKIPPED_BY_MODEL, STAND_IN_CANNOT, UNSUPPORTED):
            ctx.coverage.status("unsupported" if step.status == UNSUPPORTED else step.status, op)
            if step.result is not None:
                ctx.steps += 1
            return
        ctx.steps += 1
        if step.status == INDEFINITE:
            ctx.coverage.status("indefinite", op)
            ctx.indefinite.append({"op": variant, "reason": step.result.reason})
            ctx.note_hang(variant)
            self._abort("indefinite step")
        if step.status == BROKEN:
            ctx.coverage.status("broken", op)
            ctx.broken.append({"op": repr(op), "reason": step.result.reason})
            self._abort("harness error")
        expected, actual = step.expected, step.actual
        self.program.append((op, expected, actual))
        ctx.coverage.performed(op, expected, actual)
        if step.agrees:
            self.state = step.new_state
            return
        if step.result.substitute:
            ctx.coverage.status("stand-in-mismatch", op)
            self._abort("stand-in mismatch")
        signature = signature_of(op, expected, actual)
        earlier = ctx.findings.get(signature)
        if earlier is not None and earlier.round < ctx.round:
            earlier.seen += 1  # found and shrunk in an earlier round
            self._ok = False
            reject()
        if ctx.is_known(signature):
            ctx.known_seen[signature] = ctx.known_seen.get(signature, 0) + 1
            self._ok = False
            reject()
        ctx.record_failure(signature, self.program, self.names)
        self._ok = False
        raise divergence_class(signature)(f"{signature}\n  op: {op}\n  expected: {expected!r}\n  actual: {actual!r}")


def _family_rule(op_rule: OpRule, caps: frozenset):
    """One Hypothesis rule for one operation family, named after it."""
    pools = dict(sorted(op_rule.args(caps).items()))

    def perform(self, **args):
        op = op_rule.build(self.names, **args)
        if op is not None:
            self.do(op)

    perform.__name__ = perform.__qualname__ = op_rule.name
    return rule(**{name: st.sampled_from(values) for name, values in pools.items()})(perform)


def machine_class(ctx: FuzzContext) -> type:
    """A TargetMachine subclass bound to ``ctx``, one rule per operation family its target can perform."""
    policies = POLICIES if "explicit" in ctx.caps else ((),)

    @initialize(policies=st.sampled_from(policies))
    def start(self, policies):
        self.begin(policies)

    attrs: dict[str, Any] = {"ctx": ctx, "start": start}
    for op_rule in rules_for(ctx.caps):
        attrs[op_rule.name] = _family_rule(op_rule, ctx.caps)
    return type(f"TargetMachine_{ctx.session.target.name.replace('-', '_').replace(':', '_')}", (TargetMachine,), attrs)
