"""Delta-debugging what Hypothesis left: drop earlier steps while the same divergence still shows.

``try_program`` runs a candidate program on fresh names with the target reset (Stepper.begin),
each step through the shared step runner (steps.run_step); it counts only when every step but the
last agrees with the model and the last disagrees with the same signature, answered (or answered
with a protocol violation) by the target itself, not a stand-in.

``reduce_finding`` is bounded by a deadline; it drops one step at a time, and the first smaller
program that keeps the divergence replaces the finding's.
"""

from __future__ import annotations

import time

from conformance import generated
from conformance.fuzz.context import Finding, FuzzContext
from conformance.fuzz.steps import outcome_json, run_step, signature_of
from conformance.fuzz.vocabulary import ERA, Names
from conformance.executor import ANSWERED, VIOLATION
from model.machine import initial_state
from model.ops import op_from_json


def _names_map(names: Names) -> dict[str, str]:
    return {generated.NS: names.ns, generated.TENANT: names.tenant}


def try_program(ctx: FuzzContext, steps: list, signature: str):
    """(expected, actual) JSON lists when ``steps`` (JSON with placeholders) still shows the
    divergence ``signature`` at its last step; else None."""
    names = Names.fresh()
    try:
        ops = [op_from_json(generated.fill(step, _names_map(names))) for step in steps]
        baseline = initial_state({}, ERA).config.to_strings()
        ctx.stepper.begin(baseline)
    except Exception:  # noqa: BLE001 - a candidate that cannot even start is not smaller
        return None
    state = initial_state(baseline, ERA)
    expected_json, actual_json = [], []
    for index, op in enumerate(ops):
        last = index == len(ops) - 1
        step = run_step(ctx.stepper, state, op)
        if step.result is None:
            return None  # skipped by the model, unsupported or a stand-in: nothing was performed
        ctx.steps += 1
        if step.status != ANSWERED and not (step.status == VIOLATION and last):
            return None
        expected_json.append(generated.fill(outcome_json(step.expected), names.placeholders()))
        actual_json.append(generated.fill(outcome_json(step.actual), names.placeholders()))
        if not last:
            if not step.agrees:
                return None
            state = step.new_state
        elif step.agrees or step.result.substitute or signature_of(op, step.expected, step.actual) != signature:
            return None
    return expected_json, actual_json


def reduce_finding(ctx: FuzzContext, finding: Finding, deadline: float) -> Finding:
    """``finding`` with the smallest program found before ``deadline``, each candidate re-run
    on the live target."""
    steps = list(finding.steps)
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for index in range(len(steps) - 1):
            if time.monotonic() >= deadline:
                break
            candidate = steps[:index] + steps[index + 1:]
            answer = try_program(ctx, candidate, finding.signature)
            if answer is not None:
                steps = candidate
                finding.steps, (finding.expected, finding.actual) = steps, answer
                improved = True
                break
    return finding
