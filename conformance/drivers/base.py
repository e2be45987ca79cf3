"""Driver protocol: how the harness performs one ``model.ops`` operation on a live target.

``perform(op)`` returns a ``model.outcomes`` value built from exactly what the target answered,
so the verdict is ``expected == actual`` and nothing else. It raises ``Unsupported`` when this
driver cannot perform the op (wrong API, no admin URL), ``Indefinite`` when a bounded wait ends
without an answer, and ``ProtocolViolation`` when the answer is not a Pulsar answer
(conformance/errors.py). Every wait is bounded by ``timeout`` (default ``DEFAULT_TIMEOUT``
seconds).

``reset()`` starts a new case: fresh transcript, no state carried over from the last one (the
wire driver also drops its connection, so each case's transcript opens with CONNECT).
"""

from __future__ import annotations

from typing import Protocol

from conformance.transcript import Transcript

DEFAULT_TIMEOUT = 10.0

# Pulsar's own defaults for the timeouts we hand to the official clients would be 30 s; a
# conformance run wants a broker that does not answer to cost seconds, not minutes. Both are the
# run's own bound (--timeout): a real broker creating a ledger, or any broker answering CONNECT on
# a busy machine, can take seconds, and a shorter client timeout would report that as no answer.
def client_operation_timeout_s(timeout: float) -> int:
    return max(1, int(round(timeout)))


def client_connection_timeout_ms(timeout: float) -> int:
    return max(1000, int(timeout * 1000))


class Driver(Protocol):
    """What the runner needs from a driver."""

    name: str  # "rest" | "wire" | "client"
    transcript: Transcript

    def can_perform(self, op) -> bool:
        """True when this driver knows how to perform ``op`` (its type and, if any, its api)."""

    def perform(self, op):
        """Perform ``op`` on the target and return the outcome value built from its answer; raise
        Unsupported, Indefinite or ProtocolViolation when there is no such value."""

    def reset(self) -> None:
        """Start a new case: a fresh transcript, nothing carried over from the last one."""

    def close(self) -> None:
        """Release sockets and clients; the driver may not be used afterwards."""


def op_api(op) -> str | None:
    """The API an operation names for itself (``GetPartitionedMetadata.api``...), if any."""
    return getattr(op, "api", None)
