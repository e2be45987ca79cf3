"""Errors of the conformance harness: one root, split by what the verdict must be.

Rule 1: a *target's answer* is never an exception here; drivers turn answers into
        ``model.outcomes`` values. These exceptions say that no answer could be compared.
Rule 2: ``Unsupported`` means the step could not be attempted on this target (no admin API, a
        broker config the target cannot take, a feature it was detected to lack), never that its
        answer is unwelcome. It names one of conformance/reasons.py's ids, gives the verdict
        "unsupported" and never counts as passed.
Rule 3: ``Indefinite`` means we attempted it and waited, but got no answer within the bound (a
        timeout, a closed connection, an unreachable target). It is never a spec failure.
Rule 4: ``ProtocolViolation`` means the target answered with something that is not a Pulsar
        answer at all (a frame our codec rejects, a response of the wrong type). That *is* a
        spec failure: the verdict is "failed" with the violation as the actual value.
Rule 5: ``TargetError`` means a target could not be started or driven; its cases are reported
        "unsupported" with the reason "target could not start: ...".
Every message names what to do about it (STYLE R6).
"""

from __future__ import annotations


class ConformanceError(Exception):
    """Root of the harness's own errors."""


class Unsupported(ConformanceError):
    """The target cannot perform this step or take this configuration (verdict: unsupported)."""

    def __init__(self, kind: str, reason: str):
        from conformance.reasons import check
        check(kind)  # Rule 2: only reasons docs/unsupported.md justifies
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


class Indefinite(ConformanceError):
    """A bounded wait ended without an answer (verdict: indefinite)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class ProtocolViolation(ConformanceError):
    """The target answered with something no Pulsar broker may send (verdict: failed)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason

    def to_json(self) -> dict:
        return {"kind": "ProtocolViolation", "reason": self.reason}


class TargetError(ConformanceError):
    """A target could not be started, configured or stopped."""


class UsageError(ConformanceError):
    """The harness was called wrongly (unknown target name, bad option); exit code 2."""
