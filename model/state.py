"""Broker metadata as one immutable value: what exists on a single-broker Pulsar.

Every metadata change lives here; handlers in the other model modules decide *whether* a change
happens and call these methods to make it. Every method returns a new State. It has no transport
knowledge, except the broker's ``release``, which changes how APIs answer (model/releases.py:
``era`` and ``has(behaviour)`` are read from it).

Two kinds of topic existence, as in Pulsar's metadata store (Pulsar's
PersistentTopicsBase.internalGetPartitionedMetadataAsync, Pulsar's
TopicResources/NamespaceResources):

- ``partitioned``: partitioned-topic *metadata* (base name -> partition count > 0);
- ``topics``: topics that exist as such — for persistent topics a managed ledger, for
  non-persistent ones a topic loaded on the broker — both non-partitioned topics and partitions
  (``x-partition-K``). Creating metadata never creates partitions.

The initial state is Pulsar standalone's: cluster ``standalone``, tenant ``public``, namespace
``public/default`` (Testcontainers' PulsarContainer: "Standalone creates cluster `standalone`,
tenant `public`, and namespace `public/default`").
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterator, Mapping, Optional, TypeVar

from model import releases
from model.config import AutoTopicCreationOverride, BrokerConfig
from model.errors import ModelUsageError
from pulsar_naming.names import InvalidName, NamespaceName, TopicName
from model.releases import Release
STANDALONE_CLUSTER = "standalone"

K = TypeVar("K")
V = TypeVar("V")


class FrozenMap(Mapping[K, V]):
    """A hashable read-only mapping, so State stays a value."""

    __slots__ = ("_items", "_hash")

    def __init__(self, items: Optional[Mapping[K, V]] = None):
        self._items = dict(items or {})
        self._hash = None

    def __getitem__(self, key: K) -> V:
        return self._items[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._items.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"FrozenMap({self._items!r})"

    def set(self, key: K, value: V) -> "FrozenMap[K, V]":
        return FrozenMap({**self._items, key: value})

    def remove(self, key: K) -> "FrozenMap[K, V]":
        return FrozenMap({k: v for k, v in self._items.items() if k != key})


@dataclass(frozen=True)
class NamespacePolicies:
    """The namespace policies the model reads (Pulsar ``Policies`` field names)."""
    autoTopicCreationOverride: Optional[AutoTopicCreationOverride] = None
    # PIP-157 (model/buckets.py): None = not given at creation, which means 1. Never changes.
    numberOfTopicBuckets: Optional[int] = None
    # The namespace's own topic limit, which replaces the broker's maxTopicsPerNamespace when set
    # (model/autocreation.py exceeds_max_topics); None = not set.
    max_topics_per_namespace: Optional[int] = None


@dataclass(frozen=True)
class State:
    release: Optional[Release]  # None: not an Apache Pulsar release, held to the newest behaviour
    config: BrokerConfig
    clusters: frozenset[str] = frozenset({STANDALONE_CLUSTER})
    tenants: frozenset[str] = frozenset({"public"})
    namespaces: FrozenMap[NamespaceName, NamespacePolicies] = field(
        default_factory=lambda: FrozenMap({NamespaceName("public", "default"): NamespacePolicies()}))
    partitioned: FrozenMap[TopicName, int] = field(default_factory=FrozenMap)
    topics: frozenset[TopicName] = frozenset()
    # PIP-2: what the stats of a live non-persistent topic say (model/nonpersistent.py LiveStats).
    live: FrozenMap[TopicName, object] = field(default_factory=FrozenMap)
    # TenantInfo.adminRoles of the tenants that have any (model/auth.py).
    tenant_admins: FrozenMap[str, frozenset[str]] = field(default_factory=FrozenMap)

    # -- queries ---------------------------------------------------------------------------------

    @property
    def era(self) -> str:
        """``pip344`` or ``pre-pip344`` (model/releases.py era_of)."""
        return releases.era_of(self.release)

    def has(self, behaviour: str) -> bool:
        """Whether this broker's release has a behaviour of model/releases.py BEHAVIOURS."""
        return releases.has(self.release, behaviour)

    def namespace_exists(self, namespace: NamespaceName) -> bool:
        return namespace.tenant in self.tenants and namespace in self.namespaces

    def policies(self, namespace: NamespaceName) -> NamespacePolicies:
        return self.namespaces.get(namespace, NamespacePolicies())

    def partition_count(self, topic: TopicName) -> int:
        """Partitioned metadata of exactly this name; 0 when there is none (as the store reads it)."""
        return self.partitioned.get(topic, 0)

    def topic_exists(self, topic: TopicName) -> bool:
        """A managed ledger (persistent) or a loaded topic (non-persistent) of exactly this name."""
        return topic in self.topics

    def topics_in(self, namespace: NamespaceName, domain: str) -> frozenset[TopicName]:
        """``domain`` "all": both domains, as GET_TOPICS_OF_NAMESPACE's mode ALL joins the two listings
        (NamespaceService#getFullListOfTopics)."""
        return frozenset(t for t in self.topics
                         if t.namespace_name == namespace and domain in (t.domain, "all"))

    def listed_in(self, namespace: NamespaceName, domain: str) -> frozenset[TopicName]:
        """What the binary listing of the namespace shows: ``topics_in``, less the non-persistent topics
        that are not active (NamespaceService#getListOfNonPersistentTopics keeps a loaded topic only
        while NonPersistentTopic#isActive: a producer or a subscription)."""
        def active(topic: TopicName) -> bool:
            live = self.live.get(topic)
            return live is not None and bool(live.attached or live.subscriptions)
        return frozenset(t for t in self.topics_in(namespace, domain) if t.persistent or active(t))

    def partitioned_in(self, namespace: NamespaceName, domain: str) -> frozenset[TopicName]:
        return frozenset(t for t in self.partitioned if t.namespace_name == namespace and t.domain == domain)

    def namespace_is_empty(self, namespace: NamespaceName) -> bool:
        return not any(t.namespace_name == namespace for t in (*self.topics, *self.partitioned))

    # -- changes ---------------------------------------------------------------------------------

    def with_config(self, config: BrokerConfig) -> "State":
        return replace(self, config=config)

    def with_tenant(self, tenant: str, admin_roles: frozenset[str] = frozenset()) -> "State":
        admins = self.tenant_admins.set(tenant, admin_roles) if admin_roles else self.tenant_admins
        return replace(self, tenants=self.tenants | {tenant}, tenant_admins=admins)

    def with_namespace(self, namespace: NamespaceName, policies: NamespacePolicies) -> "State":
        return replace(self, namespaces=self.namespaces.set(namespace, policies))

    def without_namespace(self, namespace: NamespaceName) -> "State":
        return replace(self, namespaces=self.namespaces.remove(namespace))

    def with_override(self, namespace: NamespaceName, override: Optional[AutoTopicCreationOverride]) -> "State":
        policies = replace(self.policies(namespace), autoTopicCreationOverride=override)
        return self.with_namespace(namespace, policies)

    def with_partitioned_metadata(self, topic: TopicName, partitions: int) -> "State":
        if partitions <= 0:
            raise ValueError(f"partitioned metadata needs partitions > 0, got {partitions} for {topic}")
        return replace(self, partitioned=self.partitioned.set(topic, partitions))

    def with_topics(self, *topics: TopicName) -> "State":
        return replace(self, topics=self.topics | frozenset(topics))

    def with_live(self, topic: TopicName, stats: object) -> "State":
        return replace(self, live=self.live.set(topic, stats))

    def without_topic(self, topic: TopicName) -> "State":
        """Delete one non-partitioned topic or partition; a new one of that name starts its stats at zero."""
        return replace(self, topics=self.topics - {topic}, live=self.live.remove(topic))

    def without_partitioned_metadata(self, topic: TopicName) -> "State":
        """Delete the partitioned metadata of ``topic`` alone, as the check for inactive topics does
        when it unloads a partition (its other partitions go when they are unused themselves)."""
        return replace(self, partitioned=self.partitioned.remove(topic))

    def without_partitioned_topic(self, topic: TopicName) -> "State":
        """Delete the metadata and every partition of ``topic``."""
        count = self.partition_count(topic)
        partitions = {topic.partition(i) for i in range(count)}
        live = self.live
        for gone in partitions & set(live):  # a deleted topic is unloaded: a new one starts its stats at zero
            live = live.remove(gone)
        return replace(self, partitioned=self.partitioned.remove(topic), topics=self.topics - partitions, live=live)


def parse_topic(text: str) -> TopicName:
    """A full topic name from an operation; the model reasons about valid v2 names only."""
    try:
        return TopicName.parse(text)
    except InvalidName as exc:
        raise ModelUsageError(f"{exc}; operations carry valid v2 topic names such as persistent://public/default/t") from None


def parse_namespace(text: str) -> NamespaceName:
    try:
        return NamespaceName.parse(text)
    except InvalidName as exc:
        raise ModelUsageError(f"{exc}; operations carry namespaces as <tenant>/<namespace>") from None
