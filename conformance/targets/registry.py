"""Target names -> classes, the way uvicorn picks a loop or an HTTP implementation by name.

Rule 1: ``reference`` and ``pulsar-lite`` are launched by the harness; ``url:<urls>`` is an
        already running broker. Anything else is a UsageError that lists what is known.
"""

from __future__ import annotations

from conformance.errors import UsageError
from conformance.targets.base import Target
from conformance.targets.pulsar_lite import PulsarLiteTarget
from conformance.targets.reference import ReferenceTarget
from conformance.targets.url import UrlTarget

TARGETS: dict[str, type[Target]] = {
    ReferenceTarget.kind: ReferenceTarget,
    PulsarLiteTarget.kind: PulsarLiteTarget,
}


def known_names() -> list[str]:
    return [*TARGETS, "url:pulsar://HOST:PORT[,http://HOST:PORT]"]


def make_target(spec: str, **kwargs) -> Target:
    """Build (not start) the target named by ``spec``."""
    if spec.startswith("url:"):
        return UrlTarget(spec[len("url:"):], **kwargs)
    try:
        cls = TARGETS[spec]
    except KeyError:
        raise UsageError(f"unknown target {spec!r}; known targets: {', '.join(known_names())}") from None
    return cls(**kwargs)
