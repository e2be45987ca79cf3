"""Target names -> classes, the way uvicorn picks a loop or an HTTP implementation by name.

``make_target``: ``reference``, ``reference-cluster`` (three reference brokers, PIP-35) and
``pulsar-lite`` are launched by the harness as processes (``reference-zk``: the reference broker
on a real ZooKeeper whose znodes the harness reads, PIP-157); ``pulsar-standalone[:VERSION]`` runs
Apache Pulsar's own standalone from the release's Maven jars in a JVM (default:
standalone.DEFAULT_VERSION); ``pulsar-container[:TAG]`` runs Apache Pulsar's image
``apachepulsar/pulsar:TAG`` in Docker (default tag: the 4.0 LTS line's latest); ``url:<urls>`` is
an already running broker; ``pulsar-proxy:PROXY/BROKER`` runs Apache Pulsar's proxy of release PROXY (its Maven
jars) in front of a pulsar-standalone of release BROKER, the harness on the proxy's ports
(targets/proxy.py); ``pulsar-cluster[:VERSION]`` runs Apache Pulsar as a cluster of two brokers, one bookie and
ZooKeeper from the release's Maven jars (targets/cluster.py). Anything else is a UsageError that lists what is known.

``--pulsar-versions 3.0.2,4.0.7`` is shorthand for one ``pulsar-standalone:<v>`` per version
(``pulsar_version_targets``).
"""

from __future__ import annotations

from conformance.errors import UsageError
from conformance.targets.base import Target
from conformance.targets.cluster import PulsarClusterTarget
from conformance.targets.container import ContainerTarget
from conformance.targets.pulsar_lite import PulsarLiteTarget
from conformance.targets.reference import ReferenceTarget
from conformance.targets.reference_cluster import ReferenceClusterTarget
from conformance.targets.reference_zk import ReferenceZkTarget
from conformance.targets.standalone import DEFAULT_VERSION, PulsarStandaloneTarget
from conformance.targets.maven import check_version
from conformance.targets.proxy import PulsarProxyTarget, parse_pair
from conformance.targets.url import UrlTarget

TARGETS: dict[str, type[Target]] = {
    ReferenceTarget.kind: ReferenceTarget,
    PulsarLiteTarget.kind: PulsarLiteTarget,
    ReferenceClusterTarget.kind: ReferenceClusterTarget,  # PIP-35: 3 brokers, one store
}
TARGETS[ReferenceZkTarget.kind] = ReferenceZkTarget  # PIP-157: on a real ZooKeeper, store exposed


def known_names() -> list[str]:
    return [*TARGETS, f"{PulsarStandaloneTarget.kind}[:VERSION]", f"{ContainerTarget.kind}[:TAG]",
            "url:pulsar://HOST:PORT[,http://HOST:PORT]", f"{PulsarProxyTarget.kind}:PROXY_VERSION/BROKER_VERSION",
            f"{PulsarClusterTarget.kind}[:VERSION]"]


def make_target(spec: str, **kwargs) -> Target:
    """Build (not start) the target named by ``spec``."""
    if spec.startswith("url:"):
        return UrlTarget(spec[len("url:"):], **kwargs)
    kind, colon, tag = spec.partition(":")
    if kind == PulsarStandaloneTarget.kind:
        if colon and not tag:
            raise UsageError(f"target {spec!r} has an empty version; use {PulsarStandaloneTarget.kind}:"
                             f"{DEFAULT_VERSION} or {PulsarStandaloneTarget.kind} for the default")
        return PulsarStandaloneTarget(check_version(tag) if tag else None, **kwargs)
    if kind == PulsarClusterTarget.kind:
        if colon and not tag:
            raise UsageError(f"target {spec!r} has an empty version; use {PulsarClusterTarget.kind}:"
                             f"{DEFAULT_VERSION} or {PulsarClusterTarget.kind} for the default")
        return PulsarClusterTarget(check_version(tag) if tag else None, **kwargs)
    if kind == PulsarProxyTarget.kind:
        return PulsarProxyTarget(*parse_pair(tag), **kwargs)  # a UsageError for anything but P/B
    if kind == ContainerTarget.kind:
        if colon and not tag:
            raise UsageError(f"target {spec!r} has an empty tag; use {ContainerTarget.kind}:4.0.13 or "
                             f"{ContainerTarget.kind} for the default")
        return ContainerTarget(tag or None, **kwargs)
    try:
        cls = TARGETS[spec]
    except KeyError:
        raise UsageError(f"unknown target {spec!r}; known targets: {', '.join(known_names())}") from None
    return cls(**kwargs)


def pulsar_version_targets(versions: str) -> list[str]:
    """``"3.0.2,4.0.7"`` -> ``["pulsar-standalone:3.0.2", "pulsar-standalone:4.0.7"]``."""
    releases = [part.strip() for part in versions.split(",")]
    if not any(releases) or not all(releases):
        raise UsageError(f"--pulsar-versions {versions!r}: expected comma-separated releases such as "
                         "3.0.2,4.0.7,4.2.4")
    return [f"{PulsarStandaloneTarget.kind}:{check_version(release)}" for release in releases]
