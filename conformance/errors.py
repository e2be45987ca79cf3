"""Errors of the conformance harness: one root, split by what the verdict must be.

A target's answer is never an exception here: drivers turn answers into ``model.outcomes`` values.
These exceptions say that no answer could be compared, and why; the step executor
(conformance/executor.py, ``TROUBLE``) is the one place that turns each into a step's status.

- ``Unsupported``: the step cannot be attempted on this target (no admin API, a broker config the
  target cannot take, a feature it was detected to lack), never that its answer is unwelcome. It
  names one of conformance/reasons.py's ids.
- ``Indefinite``: the step was attempted and a bounded wait ended without an answer (a timeout, a
  closed connection). ``NoContact`` is the part of it where the request never reached the broker,
  which is why any step may be tried again after it.
- ``ProtocolViolation``: the target answered with something that is not a Pulsar answer at all (a
  frame the codec rejects, a response of the wrong type). That is a finding about the target.
- ``TargetError``: a target could not be started, configured or driven.

Every message names what to do about it.
"""

from __future__ import annotations


class ConformanceError(Exception):
    """Root of the harness's own errors."""


class Unsupported(ConformanceError):
    """The target cannot perform this step or take this configuration (verdict: unsupported)."""

    def __init__(self, kind: str, reason: str):
        from conformance.reasons import check
        check(kind)  # only reasons docs/unsupported.md justifies
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


class Indefinite(ConformanceError):
    """A bounded wait ended without an answer (verdict: indefinite)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class NoContact(Indefinite):
    """The step's request never reached the broker: a connection that could not be made within its
    bound, or a driver process that was busy, gone or not started before it sent anything. Since
    nothing happened on the broker, the step may be performed again whatever it does."""


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
