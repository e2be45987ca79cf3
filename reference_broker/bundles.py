"""Namespace bundles: a namespace's hash ring cut into ranges, and which range a topic falls in.

What this module owns: the bundle boundaries of a namespace, the bundle names Pulsar uses
(``0x00000000_0x40000000``), and topic -> bundle. Pure functions; no store, no I/O.

- boundaries (``default_boundaries``; Pulsar's ``PoliciesUtil.getBundles(numBundles)``,
  apache/pulsar@v4.0.7:pulsar-common/src/main/java/org/apache/pulsar/common/policies/data/PoliciesUtil.java,
  the same arithmetic as ``NamespacesBase.getBundles`` of older releases): "maxVal = 1 << 32;
  segSize = maxVal / numBundles", boundaries ``0x%08x`` of 0, segSize, 2*segSize, ... and the
  LAST boundary is ``maxVal - 1`` (0xffffffff). 4 bundles give 0x00000000_0x40000000,
  0x40000000_0x80000000, 0x80000000_0xc0000000, 0xc0000000_0xffffffff.
- ranges (``Bundle.includes_hash``; Pulsar's
  ``NamespaceBundleFactory.getBundle(namespace, bundleRange)``,
  apache/pulsar@v4.0.7:pulsar-broker/src/main/java/org/apache/pulsar/common/naming/NamespaceBundleFactory.java):
  every range is [lower, upper) except the last, which is closed at 0xffffffff, so every 32-bit
  hash lands in exactly one bundle.
- hash (``topic_hash``): Pulsar's default topic-to-bundle assignment,
  ``ConsistentHashingTopicBundleAssigner.findBundle``
  (apache/pulsar@v4.0.7:pulsar-broker/src/main/java/org/apache/pulsar/common/naming/ConsistentHashingTopicBundleAssigner.java,
  which ``NamespaceBundles.findBundle`` calls), hashes ``topicName.toString()`` with the
  ``NamespaceBundleFactory``'s ``getLongHashCode`` ("long hashCode =
  factory.getLongHashCode(topicName.toString())" in ``NamespaceBundles.findBundle`` itself before
  PR #20537), and ``NamespaceService`` builds that factory with ``Hashing.crc32()``
  (apache/pulsar@v4.0.7:pulsar-broker/src/main/java/org/apache/pulsar/broker/namespace/NamespaceService.java):
  the hash is CRC-32 (zlib's; Guava's ``Hashing.crc32`` wraps java.util.zip.CRC32) of the topic's
  FULL name in UTF-8, read as an unsigned 32-bit number (``padToLong``). Murmur3_32 is what Pulsar
  uses for message-key routing, not for bundles; docs/pip35-decisions.md (B1) explains the
  difference.
- partitions: a partition is its own topic here: ``t-partition-3`` hashes as that full name, so
  the partitions of one topic spread over the bundles (that is why PIP-35 groups by bundle).
- policies (``_policy_boundaries``): a namespace's policies may carry Pulsar's ``bundles`` object
  (``{"boundaries": [...], "numBundles": n}``); valid boundaries there win over
  ``defaultNumberOfNamespaceBundles``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from pulsar_naming.names import NamespaceName, TopicName

FULL_UPPER_BOUND = 0xFFFFFFFF  # Pulsar's NamespaceBundles.FULL_UPPER_BOUND / LAST_BOUNDARY
_MAX_VAL = 1 << 32


@dataclass(frozen=True, order=True)
class Bundle:
    """One bundle of a namespace; ``str(bundle)`` is Pulsar's ``NamespaceBundle.toString()``."""

    namespace: NamespaceName
    lower: int
    upper: int

    @property
    def range_name(self) -> str:
        """``0x00000000_0x40000000`` (NamespaceBundle.getKey's "%s/0x%08x_0x%08x" without the namespace)."""
        return f"0x{self.lower:08x}_0x{self.upper:08x}"

    def includes_hash(self, value: int) -> bool:
        if self.upper == FULL_UPPER_BOUND:
            return self.lower <= value <= self.upper  # the last range is closed
        return self.lower <= value < self.upper

    def __str__(self) -> str:
        return f"{self.namespace}/{self.range_name}"


def topic_hash(topic: TopicName | str) -> int:
    """CRC-32 of the full topic name, unsigned (NamespaceBundleFactory#getLongHashCode with crc32)."""
    return zlib.crc32(str(topic).encode("utf-8")) & 0xFFFFFFFF


def default_boundaries(num_bundles: int) -> list[int]:
    """The boundaries of ``num_bundles`` equal bundles, verbatim arithmetic of ``PoliciesUtil.getBundles``."""
    if isinstance(num_bundles, bool) or not isinstance(num_bundles, int) or not 0 < num_bundles <= _MAX_VAL:
        raise ValueError(f"number of bundles must be in the range (0, 2^32], got {num_bundles!r}")
    seg_size = _MAX_VAL // num_bundles
    boundaries = [0]
    current = seg_size
    for index in range(num_bundles):
        boundaries.append(current if index != num_bundles - 1 else _MAX_VAL - 1)
        current += seg_size
    return boundaries


def _policy_boundaries(policies: Mapping[str, Any] | None) -> list[int] | None:
    """Boundaries from a Policies ``bundles`` object when they are usable, else None."""
    bundles = (policies or {}).get("bundles") if isinstance(policies, Mapping) else None
    if not isinstance(bundles, Mapping):
        return None
    raw = bundles.get("boundaries")
    if isinstance(raw, list) and len(raw) >= 2:
        try:
            values = [int(b, 16) if isinstance(b, str) else int(b) for b in raw]
        except (TypeError, ValueError):
            return None
        if values[0] == 0 and values[-1] == FULL_UPPER_BOUND and values == sorted(set(values)):
            return values
        return None
    count = bundles.get("numBundles")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return default_boundaries(count)
    return None


def namespace_bundles(namespace: NamespaceName, default_count: int,
                      policies: Mapping[str, Any] | None = None) -> list[Bundle]:
    """The bundles of ``namespace`` in ring order."""
    boundaries = _policy_boundaries(policies) or default_boundaries(default_count)
    return [Bundle(namespace, lo, hi) for lo, hi in zip(boundaries, boundaries[1:])]


def find_bundle(bundles: Sequence[Bundle], topic: TopicName) -> Bundle:
    """The bundle whose range holds ``topic_hash(topic)`` (bisect over the sorted lower bounds)."""
    value = topic_hash(topic)
    low, high = 0, len(bundles) - 1
    while low < high:  # the last bundle whose lower bound is <= value
        middle = (low + high + 1) // 2
        if bundles[middle].lower <= value:
            low = middle
        else:
            high = middle - 1
    bundle = bundles[low]
    if not bundle.includes_hash(value):  # only possible with boundaries that do not cover the ring
        raise ValueError(f"no bundle of {bundle.namespace} holds hash 0x{value:08x}")
    return bundle
