"""A finding replayed once more as an ordinary case, before it is saved under spec/generated/.

``replay_finding`` turns the finding into a generated case document (generated.to_document:
seed, steps, expected and actual outcomes, signature) and runs it like any case of the target
(TargetSession.run_case), expectations recomputed by the model; only a case that fails again is
saved, so a divergence that does not reproduce is reported, never kept.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from conformance import generated
from conformance.execute import TargetSession
from conformance.fuzz.context import Finding
from conformance.fuzz.vocabulary import ERA


def replay_finding(session: TargetSession, finding: Finding, *, seed: int, era: str = ERA):
    """The finding run once more as a generated case: (case, document, verdict)."""
    target = session.target
    doc = generated.to_document(target=target.name, target_version=target.version or "unknown", seed=seed, era=era,
                                steps=finding.steps, expected=finding.expected, actual=finding.actual,
                                signature=finding.signature,
                                found_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    case = generated.from_document(doc, Path(f"<{doc['id']}>"))
    run = session.run_case(case)
    return case, doc, run.verdict
