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

from dataclasses import dataclass
from typing import Literal, Optional

from spec.operations import OPERATIONS as REGISTRY, WITH_CREDENTIALS

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
    # TenantInfo.adminRoles: roles that may administer the tenant's namespaces and topics when
    # authorization is on (model/auth.py).
    admin_roles: tuple[str, ...] = ()


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
    """POST /admin/v2/namespaces/{t}/{ns}/autoTopicCreation (the namespace override).

    Either the three fields, sent as the override's JSON object, or ``body``: the JSON text sent
    verbatim, for bodies the fields cannot write (not an object, a field of another JSON type, a
    field left out; model/override_body.py says what Pulsar makes of them).
    """
    namespace: str
    allow_auto_topic_creation: Optional[bool] = None
    topic_type: Optional[str] = None  # "partitioned" | "non-partitioned" (anything else must be refused)
    default_num_partitions: Optional[int] = None
    body: Optional[str] = None


@dataclass(frozen=True)
class GetAutoTopicCreation:
    """GET /admin/v2/namespaces/{t}/{ns}/autoTopicCreation: the override as stored."""
    namespace: str


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
class DeleteTopic:
    """DELETE /admin/v2/{domain}/{t}/{ns}/{topic} with ``force`` left at its default (false): a
    non-partitioned topic or one partition."""
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
    binary GET_TOPICS_OF_NAMESPACE with the mode of ``domain``: PERSISTENT, NON_PERSISTENT, and
    ALL for "all", which only the binary request has)."""
    namespace: str
    api: Api = "rest"
    domain: str = "persistent"  # "persistent", "non-persistent" or "all"


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


# -- PIP-2: publish and dispatch on live topics (model/nonpersistent.py) ----------------------------

SUB_TYPES = ("Exclusive", "Shared", "Failover", "Key_Shared")
INITIAL_POSITIONS = ("Latest", "Earliest")


@dataclass(frozen=True)
class PubSub:
    """One publish/dispatch scenario on one topic: what PIP-2 is about.

    In this order, on ONE connection (``api="binary"``, the wire driver) or ONE official client
    (``api="client"``, which opens one connection per broker):

    1. a producer attaches to ``topic``;
    2. ``sends_before`` messages are sent one at a time, each receipt awaited, before any consumer;
    3. each ``consumers`` entry ``(subscription, subType, permits)`` subscribes in order at
       ``initial_position`` and grants ``permits`` (wire: one FLOW; client: ``receiver_queue_size``);
    4. each entry of ``bursts`` is a burst of that many SENDs: the wire driver writes a burst's
       frames in ONE socket write and awaits all its receipts before the next burst; the client
       calls ``send_async`` that many times, flushes, and awaits every callback (no entries: the
       producer sends nothing);
    5. wire only: ``flow_after`` more permits per consumer (a persistent subscription then gets its
       backlog; a non-persistent one has none);
    6. a barrier (wire: PING/PONG; client: a partitions lookup on the same connection), then every
       consumer's received messages are collected.

    Payloads are ``m0, m1, ...`` in send order over steps 2 and 4. Producers and consumers stay
    attached until the case ends (``close_after=False``) so a later stats observation sees them;
    with ``close_after=True`` they are closed (CLOSE_PRODUCER / CLOSE_CONSUMER) at the end, after
    step 6: what arrives while closing (a persistent Shared subscription redelivers a closed
    consumer's unacknowledged messages to the others) is not part of the outcome. Without
    ``close_after``, ``close_producer`` closes the producer alone and ``close_consumers`` the
    consumers of those indices of ``consumers`` alone, the same way (wire driver only): what the
    others leave attached is what a later observation sees.

    ``view`` picks the outcome: ``"exact"`` (PubSubResult) where the sources fix every receipt and
    delivery, ``"bounds"`` (PubSubBounds) where timing may move drops (concurrent client sends
    against a small in-flight limit); the model refuses "exact" where timing decides.
    """
    topic: str
    consumers: tuple[tuple[str, str, int], ...] = ()
    bursts: tuple[int, ...] = (1,)
    sends_before: int = 0
    flow_after: int = 0
    initial_position: str = "Latest"
    close_after: bool = False
    view: str = "exact"
    close_producer: bool = False
    close_consumers: tuple[int, ...] = ()
    api: Api = "binary"
    transport: Transport = "binary"


BAD_COMMANDS = ("send-after-close-producer", "flow-negative-permits", "flow-zero-permits",
                "subscribe-unknown-subtype")


@dataclass(frozen=True)
class BadCommand:
    """A malformed or out-of-place command on a live connection (wire driver only).

    - ``send-after-close-producer``: PRODUCER, CLOSE_PRODUCER, then a SEND for that producer id;
    - ``flow-negative-permits``: SUBSCRIBE, then FLOW with messagePermits 0xFFFFFFFF (a uint32 on
      the wire that Java reads as the int -1);
    - ``flow-zero-permits``: SUBSCRIBE, then FLOW with messagePermits 0;
    - ``subscribe-unknown-subtype``: SUBSCRIBE whose required subType is 7 (no such SubType).
    """
    topic: str
    command: str
    api: Api = "binary"


@dataclass(frozen=True)
class GetTopicStats:
    """REST GET /admin/v2/{domain}/{t}/{ns}/{topic}/stats, read as a TopicStatsView, or with
    ``detail`` as a StatsDetailView: the byte counters, and what each subscription and each consumer
    shows."""
    topic: str
    detail: bool = False


@dataclass(frozen=True)
class DeleteSubscription:
    """REST DELETE /admin/v2/{domain}/{t}/{ns}/{topic}/subscription/{subscription} (force left at
    its default, false)."""
    topic: str
    subscription: str


@dataclass(frozen=True)
class AwaitTopicGC:
    """Wait up to ``seconds`` for the broker's check for inactive topics (BrokerService#checkGC)
    to unload ``topic``: REST GET .../stats until it answers 404, read as TopicLoaded. A topic that
    stays loaded is read again until the end of the wait, a bounded quiet period; 0 reads once."""
    topic: str
    seconds: int = 0


@dataclass(frozen=True)
class GetPartitionedStats:
    """REST GET /admin/v2/{domain}/{t}/{ns}/{topic}/partitioned-stats?perPartition=true."""
    topic: str


@dataclass(frozen=True)
class GetInternalStats:
    """REST GET /admin/v2/{domain}/{t}/{ns}/{topic}/internalStats."""
    topic: str


# -- PIP-157: topic buckets (model/buckets.py, docs/pip157-decisions.md) ----------------------------
# The count itself is given in CreateNamespace's Policies body ("numberOfTopicBuckets": n).


@dataclass(frozen=True)
class GetNumberOfTopicBuckets:
    """REST GET /admin/v2/namespaces/{t}/{ns}/numberOfTopicBuckets."""
    namespace: str


@dataclass(frozen=True)
class SetNumberOfTopicBuckets:
    """REST POST /admin/v2/namespaces/{t}/{ns}/numberOfTopicBuckets with JSON body ``buckets``
    (any JSON value: the endpoint exists only to refuse a change)."""
    namespace: str
    buckets: object = None


@dataclass(frozen=True)
class RemoveNumberOfTopicBuckets:
    """REST DELETE /admin/v2/namespaces/{t}/{ns}/numberOfTopicBuckets."""
    namespace: str


@dataclass(frozen=True)
class ReadTopicLayout:
    """White-box: the paths under ``/managed-ledgers/{t}/{ns}/{domain}`` (directly or in any bucket
    folder) that hold ``topic``'s managed ledger, read from the target's metadata store by the
    ``metadata`` driver (conformance/drivers/metadata.py)."""
    topic: str
    api: str = "metadata"


# -- PIP-35: batch lookup (model/batch_lookup.py, spec/pip35.md; TENTATIVE, never upstream) -----------


@dataclass(frozen=True)
class BatchLookup:
    """Binary BATCH_LOOKUP (type 45) or REST POST /lookup/v2/topics, with ``topics`` sent as written
    (full names, or anything else for the invalid-name rows). The wire driver follows Redirect
    entries with one authoritative follow-up batch per owner (docs/pip35-decisions.md C9)."""
    topics: tuple[str, ...] = ()
    api: Api = "binary"


@dataclass(frozen=True)
class BatchEqualsSingles:
    """Metamorphic: one batch lookup of ``topics`` and one single lookup (LOOKUP or REST GET
    /lookup/v2/topic/...) per entry of its answer name the same owner or the same error."""
    topics: tuple[str, ...] = ()
    api: Api = "binary"


@dataclass(frozen=True)
class SameOwnerEverywhere:
    """Metamorphic: every broker of the target, asked by batch and by single lookups (following each
    redirect once), names the same owner (or the same error) for each entry of ``topics``."""
    topics: tuple[str, ...] = ()
    api: Api = "binary"


# -- a cluster of several brokers (model/cluster.py) ------------------------------------------------


@dataclass(frozen=True)
class SameMetadataEverywhere:
    """GetPartitionedMetadata (its ``api``, ``auto_create``) asked of EVERY broker of the target in
    turn: their common answer, or Agreement(False) naming what each broker answered."""
    topic: str
    api: Api = "binary"
    auto_create: Optional[bool] = None


@dataclass(frozen=True)
class LookupAtNonOwner:
    """LOOKUP ``topic`` as a client does (its bundle then has an owner), then ask every OTHER broker
    of the target: each must name the owner, and the owner must answer Connect naming itself. The
    outcome is the other brokers' common answer (kind and authoritative flag), or Agreement(False)
    saying where a broker named another or answered otherwise."""
    topic: str
    api: Api = "binary"


@dataclass(frozen=True)
class PubSubAcrossBrokers:
    """PIP-2 on a cluster: a consumer subscribes (Exclusive, at Latest, 1000 permits) on a connection
    that looked ``topic`` up at the target's SECOND broker, a producer attaches on one that looked it up
    at the first; each follows its lookup to the owner, as a client does. The producer sends ``count``
    messages in one burst; the outcome is what PubSub with that consumer and burst gives (PubSubResult)."""
    topic: str
    count: int = 3
    api: Api = "binary"


# -- PIP-344 through the official Java client and admin client (model/java_client.py) --------------


@dataclass(frozen=True)
class JavaGetPartitionsForTopic:
    """``PulsarClient.getPartitionsForTopic(topic, metadataAutoCreationEnabled)`` of the Java client,
    built on a ``pulsar://`` (transport "binary") or ``http://`` (transport "http") service URL.
    ``auto_create`` None is the one-argument form, deprecated by PIP-344. ``library``: the client
    library that makes the call, ``java`` or another of model/client_libraries.py, as the case's api says."""
    topic: str
    auto_create: Optional[bool] = None
    transport: Transport = "binary"
    library: str = "java"


@dataclass(frozen=True)
class JavaProduceConsume:
    """With the Java client: subscribe (``sub_type``) on a new subscription, produce ``count``
    messages, receive and acknowledge each; then subscribe again on the same subscription, where
    nothing acknowledged may come back. The outcome lists every payload received, in order."""
    topic: str
    sub_type: str = "Exclusive"
    count: int = 3
    transport: Transport = "binary"
    library: str = "java"


@dataclass(frozen=True)
class JavaGetPartitionedTopicMetadata:
    """``PulsarAdmin.topics().getPartitionedTopicMetadata(topic)`` of the Java admin client, or the
    admin call of another ``library`` (model/client_libraries.py)."""
    topic: str
    library: str = "java"


# -- token authentication and authorization (model/auth.py; ours: not in the PIPs) ----------------


@dataclass(frozen=True)
class WithCredentials:
    """``operation`` performed by a client that presents other credentials than the harness's own:
    none at all (``role`` None), or a JWT whose role claim is ``role``, ``token`` saying which
    kind: ``valid``, ``forged`` (signed with a key the broker does not know) or ``expired``."""
    operation: object
    role: Optional[str] = None
    token: str = "valid"

    def describe(self) -> str:
        return "no credentials" if self.role is None else f"a {self.token} token of role {self.role!r}"

    @property
    def api(self) -> Optional[str]:
        """The inner operation's API, so routing and drivers see through the credentials."""
        return getattr(self.operation, "api", "binary" if isinstance(self.operation, Handshake) else None)


Operation = (
    SetBrokerConfig | CreateTenant | CreateNamespace | DeleteNamespace | SetAutoTopicCreation
    | GetAutoTopicCreation | RemoveAutoTopicCreation | CreatePartitionedTopic | CreateNonPartitionedTopic
    | DeletePartitionedTopic | DeleteTopic | GetPartitionedMetadata | GetPartitionsForTopic | ListTopics
    | ListPartitionedTopics | Lookup | Handshake | ProduceConsume | PubSub | BadCommand
    | GetTopicStats | DeleteSubscription | AwaitTopicGC | GetPartitionedStats | GetInternalStats | GetNumberOfTopicBuckets | SetNumberOfTopicBuckets
    | RemoveNumberOfTopicBuckets | ReadTopicLayout | BatchLookup | BatchEqualsSingles | SameOwnerEverywhere
    | SameMetadataEverywhere | LookupAtNonOwner | PubSubAcrossBrokers
    | JavaGetPartitionsForTopic | JavaProduceConsume | JavaGetPartitionedTopicMetadata | WithCredentials
)

# Every operation of spec/operations.py's registry is the dataclass of the same name above, and
# WithCredentials wraps any of them (model/auth.py); an entry without its class fails here, at import.
OPERATION_TYPES: dict[str, type] = {name: globals()[name] for name in (*REGISTRY, WITH_CREDENTIALS)}


def repeatable(op) -> bool:
    """Whether performing ``op`` twice in a row answers the same and leaves the broker as once does
    (the registry's ``repeatable``): a step whose answer was lost may then be performed again
    (conformance/executor.py); creating, deleting, setting and publishing may not."""
    if isinstance(op, WithCredentials):
        return repeatable(op.operation)
    return REGISTRY[type(op).__name__].repeatable


def op_to_json(op) -> dict:
    from dataclasses import asdict
    if isinstance(op, WithCredentials):
        return {"op": "WithCredentials", "operation": op_to_json(op.operation), "role": op.role, "token": op.token}
    return {"op": type(op).__name__, **asdict(op)}


def op_from_json(data: dict):
    data = dict(data)
    cls = OPERATION_TYPES[data.pop("op")]
    if cls is WithCredentials:
        data["operation"] = op_from_json(data["operation"])
    if cls is CreateTenant and "admin_roles" in data:
        data["admin_roles"] = tuple(data["admin_roles"])
    if cls is CreateNamespace and "policies" in data:
        data["policies"] = tuple((k, v) for k, v in dict(data["policies"]).items())
    if cls in (BatchLookup, BatchEqualsSingles, SameOwnerEverywhere) and "topics" in data:
        data["topics"] = tuple(data["topics"])  # JSON and YAML give lists
    if cls is PubSub:
        # JSON and YAML give lists; the op stays hashable with tuples.
        if "consumers" in data:
            data["consumers"] = tuple(tuple(c) for c in data["consumers"])
        if "bursts" in data:
            data["bursts"] = tuple(data["bursts"])
        if "close_consumers" in data:
            data["close_consumers"] = tuple(data["close_consumers"])
    return cls(**data)
