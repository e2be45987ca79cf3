"""One fuzz run on one target: rounds of Hypothesis examples, then reduction, replay and the report.

- Rounds (``fuzz``): once Hypothesis has found divergences it stops generating soon after (at
  twice the call count of the last new one), so a run goes on in rounds seeded ``seed``,
  ``seed+1``, ... until ``examples`` sequences ran or the budget is spent; a divergence found in
  an earlier round ends its example as known (counted on its finding) and is not shrunk again.
- Bounded: Hypothesis gets no deadline (every step is bounded by the drivers' timeout) and only
  public settings; the run's own budgets bound it (context.FuzzContext), the reduction gets
  ``shrink_budget_s`` more.
- Findings: each divergence keeps the steps Hypothesis printed for it, one rule call per line
  (``_keep_printed_steps``); it is then reduced on the target (reduce.py) and replayed as a case
  (replay.py); a confirmed one is saved under ``save_dir``.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Optional

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import run_state_machine_as_test

from conformance import generated
from conformance import verdicts as v
from conformance.coverage import Coverage
from conformance.execute import TargetSession
from conformance.fuzz.context import FuzzContext
from conformance.fuzz.machine import Divergence, machine_class, only_divergences
from conformance.fuzz.reduce import reduce_finding
from conformance.fuzz.replay import replay_finding
from conformance.fuzz.report import FuzzReport
from conformance.fuzz.vocabulary import capabilities
from conformance.executor import Stepper

DEFAULT_STEPS = 10
DEFAULT_BUDGET_S = 600.0
DEFAULT_SHRINK_BUDGET_S = 120.0


def _divergences(exc: BaseException):
    if isinstance(exc, Divergence):
        yield exc
    for child in getattr(exc, "exceptions", ()):
        yield from _divergences(child)


def _keep_printed_steps(ctx: FuzzContext, exc: BaseException) -> None:
    """Keep on each finding Hypothesis' own account of its shrunk failure, ``state.<rule>(<args>)``
    per step."""
    for divergence in _divergences(exc):
        finding = ctx.findings.get(divergence.signature)
        notes = [n for n in getattr(divergence, "__notes__", ()) if n.startswith("state.") and n != "state.teardown()"]
        if finding is not None and notes:
            finding.hypothesis_steps = notes


def fuzz(session: TargetSession, *, examples: int = 100, seed: Optional[int] = None, steps: int = DEFAULT_STEPS,
         budget_s: float = DEFAULT_BUDGET_S, shrink_budget_s: float = DEFAULT_SHRINK_BUDGET_S,
         save_dir: Optional[Path] = None, known: tuple = ()) -> FuzzReport:
    """Run up to ``examples`` generated sequences on the session's target."""
    seed = secrets.randbelow(2**31) if seed is None else seed
    started = time.monotonic()
    session.start()
    target = session.target
    coverage = Coverage(target.name)
    if target.start_error:
        return FuzzReport(target.name, target.version or "unknown", seed, examples, 0, 0, 0, 0.0, budget_s, False,
                          {}, [], [], [], coverage.to_json(), error=f"target could not start: {target.start_error}")
    ctx = FuzzContext(session, Stepper(session), capabilities(target), coverage, seed, budget_s, shrink_budget_s,
                      known=tuple(known))
    machine = machine_class(ctx)
    error = ""
    while ctx.sequences < examples and ctx.elapsed() < budget_s:  # another round
        before = ctx.sequences
        config = settings(max_examples=examples - ctx.sequences, stateful_step_count=steps, deadline=None,
                          database=None, suppress_health_check=list(HealthCheck), report_multiple_bugs=True,
                          derandomize=False, phases=(Phase.explicit, Phase.generate, Phase.shrink),
                          print_blob=False, verbosity=Verbosity.normal)
        try:
            run_state_machine_as_test(hypothesis_seed(seed + ctx.round)(machine), settings=config)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - divergences (one or a group), Flaky, Unsatisfiable...
            if only_divergences(exc):
                _keep_printed_steps(ctx, exc)
            else:
                kind = type(exc).__name__
                if not (ctx.findings or kind in ("Unsatisfiable",) or "Flaky" in kind):
                    error = f"{kind}: {str(exc).splitlines()[0] if str(exc) else ''}"
                    break
        ctx.round += 1
        if ctx.sequences == before:
            break  # nothing ran in this round (budget, or every example rejected): more would not either
    findings = sorted(ctx.findings.values(), key=lambda f: (f.signature,))
    reduce_until = time.monotonic() + shrink_budget_s
    for finding in findings:
        reduce_finding(ctx, finding, reduce_until)
    for finding in findings:
        try:
            case, doc, verdict = replay_finding(session, finding, seed=seed + finding.round)
        except Exception as exc:  # noqa: BLE001 - a finding the case loader cannot take is reported
            finding.confirmed, finding.replay_reason = "broken", f"{type(exc).__name__}: {exc}"
            continue
        finding.confirmed, finding.replay_reason = verdict.verdict, verdict.reason
        finding.case_id = doc["id"]
        if verdict.verdict == v.FAILED and save_dir is not None:
            finding.path = str(generated.save(doc, save_dir))
    return FuzzReport(target.name, target.version or "unknown", seed, examples, ctx.sequences, ctx.completed,
                      ctx.steps, time.monotonic() - started, budget_s, ctx.budget_hit, dict(ctx.rejected), findings,
                      ctx.indefinite, ctx.broken, coverage.to_json(), error, dict(ctx.known_seen), max(ctx.round, 1))
