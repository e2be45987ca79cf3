"""What the examples of one fuzz run share: the target's stepper, the budgets and what was found.

- Bounded: no new example starts once the run's ``budget_s`` is spent, or, after a first
  divergence, once its shrink budget is spent too (``FuzzContext.may_start_example``); an
  operation variant left unanswered ``HANG_LIMIT`` times is not sent again in the run
  (``hung_too_often``), so a hanging target costs at most that many timeouts per variant.
- Findings (``FuzzContext.record_failure``): a divergence is kept per signature (operation
  variant, expected kind, actual kind) as the smallest program seen with it, steps and outcomes
  written with the ``{ns}``/``{tenant}`` placeholders (generated.steps_json, generated.fill).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Optional

from conformance import generated
from conformance.coverage import Coverage
from conformance.execute import TargetSession
from conformance.fuzz.steps import outcome_json
from conformance.fuzz.vocabulary import Names
from conformance.executor import Stepper

HANG_LIMIT = 2


@dataclass
class Finding:
    signature: str
    steps: list                 # JSON ops with placeholders
    expected: list
    actual: list
    seen: int = 1
    round: int = 0                    # the fuzz round that found it
    confirmed: Optional[str] = None   # verdict of the replay as a case
    replay_reason: str = ""
    case_id: str = ""
    path: str = ""
    hypothesis_steps: list = field(default_factory=list)  # the rule calls Hypothesis printed, shrunk

    def size(self) -> tuple:
        return len(self.steps), len(json.dumps(self.steps, sort_keys=True))


@dataclass
class FuzzContext:
    """Shared by every example of one run on one target."""
    session: TargetSession
    stepper: Stepper
    caps: frozenset
    coverage: Coverage
    seed: int
    budget_s: float
    shrink_budget_s: float
    started: float = field(default_factory=time.monotonic)
    sequences: int = 0          # examples that ran (completed or diverged)
    completed: int = 0
    steps: int = 0
    rejected: dict = field(default_factory=dict)
    findings: dict = field(default_factory=dict)   # signature -> Finding (smallest program)
    indefinite: list = field(default_factory=list)
    broken: list = field(default_factory=list)
    first_failure_at: Optional[float] = None
    budget_hit: bool = False
    known: tuple = ()           # substrings of signatures acknowledged as known divergences
    known_seen: dict = field(default_factory=dict)
    hangs: dict = field(default_factory=dict)   # op variant -> steps that got no answer
    round: int = 0              # fuzz round: seed + round seeds Hypothesis

    def is_known(self, signature: str) -> bool:
        return any(k in signature for k in self.known)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def may_start_example(self) -> bool:
        if self.first_failure_at is None:
            ok = self.elapsed() < self.budget_s
        else:
            ok = self.elapsed() < max(self.budget_s, self.first_failure_at + self.shrink_budget_s)
        if not ok:
            self.budget_hit = True
        return ok

    def hung_too_often(self, variant: str) -> bool:
        return self.hangs.get(variant, 0) >= HANG_LIMIT

    def note_hang(self, variant: str) -> None:
        self.hangs[variant] = self.hangs.get(variant, 0) + 1

    def note_reject(self, why: str) -> None:
        self.rejected[why] = self.rejected.get(why, 0) + 1

    def record_failure(self, signature: str, program: list, names: Names) -> None:
        """Keep ``program`` as the finding of ``signature`` when it is the smallest seen with it;
        ``program`` is (op, expected, actual) per step, the last one diverging."""
        if self.first_failure_at is None:
            self.first_failure_at = self.elapsed()
        steps = generated.steps_json([p[0] for p in program], names.placeholders())
        finding = Finding(signature, steps,
                          [generated.fill(outcome_json(p[1]), names.placeholders()) for p in program],
                          [generated.fill(outcome_json(p[2]), names.placeholders()) for p in program])
        finding.round = self.round
        known = self.findings.get(signature)
        if known is None:
            self.findings[signature] = finding
        else:
            known.seen += 1
            if finding.size() < known.size():
                finding.seen = known.seen
                self.findings[signature] = finding
