"""Operations: what a case, a generated sequence or a driver can do to a broker.

Every operation is a frozen dataclass with Pulsar's vocabulary. The same value is applied to the
model (``model.machine.apply``) and performed on a live target by a driver, and the two outcomes
are compared. Operations carry *which API* performs them where the spec says APIs differ:

- ``api="rest"``   the admin REST v2 API (``/admin/v2/...``, ``/lookup/v2/...``)
- ``api="binary"`` the binary protocol through our own wire codec (exact frames)
- ``api="client"`` the official ``pulsar-client``; ``transport`` says whether it was given a
  ``pulsar://`` (binary lookups) or an ``http://`` (HTTP lookups) service URL.

Topic names inside operations are full names (``persistent://t/ns/x``) once a case is bound to
its per-case namespace; spec rows write them relative to ``{ns}`` (see spec/README.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

Api = Literal["rest", "binary", "client"]
Transport = Literal["binary", "http"]


@dataclass(frozen=True)
class SetBrokerConfig:
    """Dynamic broker configuration, by Pulsar's broker.conf key name."""
    key: str
    value: str


@dataclass(frozen=True)
class CreateTenant:
    tenant: str


@dataclass(frozen=True)
class CreateNamespace:
    namespace: str  # "tenant/ns"
    # Policies body of the create call, as (key, JSON value) pairs so the op stays hashable.
    policies: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class DeleteNamespace:
    namespace: str


@dataclass(frozen=True)
class SetAutoTopicCreation:
    """POST /admin/v2/namespaces/{t}/{ns}/autoTopicCreation (the namespace override)."""
    namespace: str
    allow_auto_topic_creation: bool
    topic_type: str  # "partitioned" | "non-partitioned" (anything else must be refused)
    default_num_partitions: Optional[int] = None


@dataclass(frozen=True)
class RemoveAutoTopicCreation:
    namespace: str


@dataclass(frozen=True)
class CreatePartitionedTopic:
    topic: str
    partitions: int


@dataclass(frozen=True)
class CreateNonPartitionedTopic:
    topic: str


@dataclass(frozen=True)
class DeletePartitionedTopic:
    topic: str


@dataclass(frozen=True)
class GetPartitionedMetadata:
    """PIP-344's lookup.

    REST: GET .../{topic}/partitions with ``checkAllowAutoCreation=auto_create`` (omitted when None,
    which means Pulsar's default false). Binary: PARTITIONED_METADATA with field 6
    ``metadata_auto_creation_enabled=auto_create`` (omitted when None, which means the proto
    default true).
    """
    topic: str
    api: Api
    auto_create: Optional[bool] = None


@dataclass(frozen=True)
class GetPartitionsForTopic:
    """The official client's ``get_topic_partitions(topic)`` (the pre-PIP-344 API: auto-create on)."""
    topic: str
    transport: Transport = "binary"


@dataclass(frozen=True)
class ListTopics:
    """Non-partitioned topics and partitions of a namespace (REST GET /admin/v2/{domain}/{t}/{ns},
    binary GET_TOPICS_OF_NAMESPACE)."""
    namespace: str
    api: Api = "rest"
    domain: str = "persistent"


@dataclass(frozen=True)
class ListPartitionedTopics:
    """REST GET /admin/v2/{domain}/{t}/{ns}/partitioned."""
    namespace: str
    domain: str = "persistent"


@dataclass(frozen=True)
class Lookup:
    """Topic lookup: binary LOOKUP or REST GET /lookup/v2/topic/{domain}/{t}/{ns}/{topic}."""
    topic: str
    api: Api = "binary"


@dataclass(frozen=True)
class Handshake:
    """CONNECT / CONNECTED: whether the broker advertises ``feature`` (a FeatureFlags field name)."""
    feature: str = "supports_get_partitioned_metadata_without_auto_creation"


@dataclass(frozen=True)
class ProduceConsume:
    """Produce ``count`` messages with the official client and consume them back on a new
    Exclusive subscription created before producing; outcome lists the received payloads."""
    topic: str
    count: int = 3
    transport: Transport = "binary"


Operation = (
    SetBrokerConfig | CreateTenant | CreateNamespace | DeleteNamespace | SetAutoTopicCreation
    | RemoveAutoTopicCreation | CreatePartitionedTopic | CreateNonPartitionedTopic
    | DeletePartitionedTopic | GetPartitionedMetadata | GetPartitionsForTopic | ListTopics
    | ListPartitionedTopics | Lookup | Handshake | ProduceConsume
)

OPERATION_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        SetBrokerConfig, CreateTenant, CreateNamespace, DeleteNamespace, SetAutoTopicCreation,
        RemoveAutoTopicCreation, CreatePartitionedTopic, CreateNonPartitionedTopic,
        DeletePartitionedTopic, GetPartitionedMetadata, GetPartitionsForTopic, ListTopics,
        ListPartitionedTopics, Lookup, Handshake, ProduceConsume,
    )
}


def op_to_json(op) -> dict:
    from dataclasses import asdict
    return {"op": type(op).__name__, **asdict(op)}


def op_from_json(data: dict):
    data = dict(data)
    cls = OPERATION_TYPES[data.pop("op")]
    if cls is CreateNamespace and "policies" in data:
        data["policies"] = tuple((k, v) for k, v in dict(data["policies"]).items())
    return cls(**data)
