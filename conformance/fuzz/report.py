"""What one fuzz run on one target reports: sequences, steps, divergences, coverage, exit code.

``FuzzReport.exit_code`` follows the run command's (verdicts.py): a harness error or no sequence
at all is EXIT_HARNESS, any divergence EXIT_FAILED, only unanswered steps EXIT_INDEFINITE.
``lines`` is the printed summary, each divergence with its minimal program as JSON steps and the
expected and actual outcome of its last step; ``to_json`` is the report file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from conformance import verdicts as v


@dataclass
class FuzzReport:
    target: str
    target_version: str
    seed: int
    examples: int
    sequences: int
    completed: int
    steps: int
    duration_s: float
    budget_s: float
    budget_hit: bool
    rejected: dict
    findings: list
    indefinite: list
    broken: list
    coverage: dict
    error: str = ""
    known_seen: dict = field(default_factory=dict)
    rounds: int = 1

    @property
    def exit_code(self) -> int:
        if self.error or self.broken or self.sequences == 0:
            return v.EXIT_HARNESS
        if self.findings:
            return v.EXIT_FAILED
        if self.indefinite:
            return v.EXIT_INDEFINITE
        return v.EXIT_OK

    def to_json(self) -> dict:
        data = dict(self.__dict__)
        data["findings"] = [dict(f.__dict__) for f in self.findings]
        data["exit_code"] = self.exit_code
        return data

    def lines(self) -> list[str]:
        seeds = f"seed {self.seed}" if self.rounds == 1 else f"seeds {self.seed}..{self.seed + self.rounds - 1}"
        out = [f"fuzz {self.target} ({self.target_version}): {seeds}, {self.sequences} sequences "
               f"({self.completed} without divergence), {self.steps} steps in {self.duration_s:.1f} s "
               f"(budget {self.budget_s:g} s{', reached' if self.budget_hit else ''})"]
        if self.error:
            out.append(f"  error: {self.error}")
        if self.rejected:
            out.append("  rejected examples: " + ", ".join(f"{k} {n}" for k, n in sorted(self.rejected.items())))
        out.append(f"  divergences: {len(self.findings)}")
        if self.known_seen:
            out.append("  known divergences (--known, not saved): " +
                       "; ".join(f"{k} x{n}" for k, n in sorted(self.known_seen.items())))
        for f in self.findings:
            where = f" -> {f.path}" if f.path else ""
            out.append(f"  - {f.signature}: {len(f.steps)} step(s), seen {f.seen}x, replay {f.confirmed or '-'}{where}")
            if f.hypothesis_steps:
                out.append("      as Hypothesis shrank it: " + "; ".join(f.hypothesis_steps))
            for step, _, _ in zip(f.steps, f.expected, f.actual):
                out.append(f"      {json.dumps(step, sort_keys=True)}")
            out.append(f"      expected {json.dumps(f.expected[-1], sort_keys=True)}")
            out.append(f"      actual   {json.dumps(f.actual[-1], sort_keys=True)}")
        if self.indefinite:
            out.append(f"  indefinite steps: {len(self.indefinite)} (first: {self.indefinite[0]['op']}: "
                       f"{self.indefinite[0]['reason']})")
        if self.broken:
            out.append(f"  harness errors: {len(self.broken)} (first: {self.broken[0]['reason']})")
        return out
