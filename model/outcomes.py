"""Outcomes: what an operation answered, as plain values (never exceptions).

The model computes an Outcome for every operation; drivers turn what a live target answered into
the same values, so ``expected == actual`` is the whole comparison. Each outcome serialises to a
JSON object with a ``kind`` key; result records store that JSON.

Per-API shapes (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync, Pulsar's ServerCnx.handlePartitionMetadataRequest, Pulsar's BinaryProtoLookupService, Pulsar's PersistentTopicsBase/ServerCnx):
- ``Partitions(n)``        REST 200 ``{"partitions": n}`` / binary Success with ``partitions = n``
- ``PartitionList(names)`` the official client's ``get_topic_partitions``
- ``TopicList(names)``     listings, compared as sets (order is not specified by Pulsar)
- ``Done()``               an admin call that succeeded (2xx, no body that matters)
- ``RestError(status, reason)``  REST error: HTTP status and the ``{"reason": ...}`` text
- ``OverrideShown(body)``  GET of the namespace's autoTopicCreation override, as canonical JSON
- ``ServerError(error, message)`` binary ``Failed``/``ERROR`` with the ServerError name and message;
  a message that quotes an error of Pulsar's own client keeps its text and has the request id and
  socket addresses that client adds replaced (``normalise_message``), since no model knows them
- ``ClientError(exception)``      the official client raised ``pulsar.<exception>`` (Java: its class)
- ``LookupAnswer(response, authoritative)`` binary LOOKUP or REST lookup; the broker URL itself
  is normalised away by drivers (a single-broker target always answers itself)
- ``FeatureFlag(name, advertised)`` what CONNECTED's FeatureFlags say about one flag
- ``Delivered(payloads)``  what a consumer received, in message-index order: Pulsar orders
                           messages per partition only, so across a partitioned topic's
                           partitions the order of arrival is not part of the answer (observed
                           on 4.0.7: m1, m0, m2 over two partitions)

PIP-2 (model/nonpersistent.py), normalised so that ``==`` is still the whole comparison:
- ``PubSubResult(receipts, delivered, in_order)`` a PubSub with every receipt and delivery fixed
- ``PubSubBounds(...)``    the timing-free facts of a PubSub whose drops timing may move
- ``ConnectionClosed()``   the broker closed the connection instead of answering (ERROR frames it
  may send first are in the transcript, not in the outcome); it still serves new connections
- ``TopicStatsView`` / ``PartitionedStatsView`` / ``InternalStatsView``: the parts of the stats
  JSON the spec fixes (counters, the sign of each msgDropRate, names, subscription types, the
  values a topic that stores nothing must show), plus the Pulsar field names the JSON lacks
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

# How Pulsar's own client (the broker's internal one) formats a server error it relays:
# {"errorMsg":"<text>","reqId":<id>, "remote":"<address>", "local":"<address>"}
_CLIENT_ERROR_PARTS = (
    (re.compile(r'"reqId":-?\d+'), '"reqId":<id>'),
    (re.compile(r'"remote":"[^"]*"'), '"remote":"<address>"'),
    (re.compile(r'"local":"[^"]*"'), '"local":"<address>"'),
)


def normalise_message(message: str) -> str:
    """A broker's error message with the parts no model can know replaced by placeholders."""
    for pattern, placeholder in _CLIENT_ERROR_PARTS:
        message = pattern.sub(placeholder, message)
    return message


def relayed_client_error(text: str) -> str:
    """``normalise_message``'s form of Pulsar's client error ``text``, as a broker relays it."""
    return '{"errorMsg":"%s","reqId":<id>, "remote":"<address>", "local":"<address>"}' % text


@dataclass(frozen=True)
class Partitions:
    partitions: int


@dataclass(frozen=True)
class PartitionList:
    topics: tuple[str, ...]


@dataclass(frozen=True)
class TopicList:
    topics: frozenset[str]

    def to_json(self) -> dict:
        return {"kind": "TopicList", "topics": sorted(self.topics)}


@dataclass(frozen=True)
class Done:
    pass


@dataclass(frozen=True)
class RestError:
    status: int
    reason: str


@dataclass(frozen=True)
class OverrideShown:
    """GET .../autoTopicCreation: the stored override as the broker prints it, in one canonical
    JSON text (keys sorted, no spaces), or "" when none is set (Pulsar answers an empty body)."""
    body: str

    @classmethod
    def of(cls, value) -> "OverrideShown":
        """From the parsed JSON answer, or None for an empty one."""
        return cls("" if value is None else json.dumps(value, sort_keys=True, separators=(",", ":")))


@dataclass(frozen=True)
class ServerError:
    error: str  # ServerError enum name, e.g. "TopicNotFound"
    message: str


@dataclass(frozen=True)
class ClientError:
    # The Python client: a class name in pulsar.exceptions ("TopicNotFound"); the Java clients: the
    # nested class as Java source names it ("PulsarClientException.NotFoundException").
    exception: str


@dataclass(frozen=True)
class LookupAnswer:
    response: str  # "Connect" | "Redirect"
    authoritative: bool


@dataclass(frozen=True)
class FeatureFlag:
    name: str  # FeatureFlags field name, as in the real proto
    advertised: bool


@dataclass(frozen=True)
class Delivered:
    payloads: tuple[str, ...]


# -- PIP-2 -------------------------------------------------------------------------------------------

# Receipt kinds (Pulsar's ServerCnx.handleSend): what a SEND_RECEIPT's message id says, per send.
ACCEPTED = "0:0"      # non-persistent, accepted: "the receipt message id is ledgerId 0, entryId 0"
DROPPED = "-1:-1"     # non-persistent, dropped: "ledgerId = -1, entryId = -1" (2^64-1 on the wire)
STORED = "stored"     # any other id: the message was written to a log (persistent topics)
# A SEND_ERROR is "send-error:<ServerError name>"; a client exception "client-error:<class name>".


def run_length(kinds) -> tuple[tuple[str, int], ...]:
    """("0:0", "-1:-1", "-1:-1") -> (("0:0", 1), ("-1:-1", 2)): short, ordered, comparable."""
    runs: list[list] = []
    for kind in kinds:
        if runs and runs[-1][0] == kind:
            runs[-1][1] += 1
        else:
            runs.append([kind, 1])
    return tuple((kind, count) for kind, count in runs)


def payload_ranges(indices) -> tuple[str, ...]:
    """Sorted message indices as payload ranges: [0, 1, 2, 5] -> ("m0..m2", "m5").

    A repeated index breaks a range (``m0..m3``, ``m3``), so a duplicate delivery stays visible.
    """
    runs: list[list[int]] = []
    for i in sorted(indices):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return tuple(f"m{a}" if a == b else f"m{a}..m{b}" for a, b in runs)


@dataclass(frozen=True)
class PubSubResult:
    """A PubSub (model/ops.py) whose receipts and deliveries the sources fix exactly.

    ``receipts``: run-length kinds of every receipt in send order (ACCEPTED, DROPPED, STORED...).
    ``delivered``: per subscription (sorted by name), the payloads its consumers received, merged
    in send order and written as ranges (``payload_ranges``); a Shared subscription's consumers
    split messages between them, so the union is what is fixed. ``in_order``: every consumer received its messages in send order, each once.
    """
    receipts: tuple[tuple[str, int], ...]
    delivered: tuple[tuple[str, tuple[str, ...]], ...]
    in_order: bool = True

    def to_json(self) -> dict:
        return {"kind": "PubSubResult", "receipts": [list(r) for r in self.receipts],
                "delivered": {name: list(p) for name, p in self.delivered}, "in_order": self.in_order}


@dataclass(frozen=True)
class PubSubBounds:
    """The facts of a PubSub that hold whatever the timing (testProducerRateLimit, Pulsar's NonPersistentTopicTest).

    ``send_errors``: sends that failed (a drop is not a failure); ``pip2_ids_only``: every receipt
    is ACCEPTED or DROPPED; ``first_accepted``: the first send is accepted (nothing is in flight
    yet); ``delivered_accepted``: every subscription received exactly the accepted messages, in
    order (meaningful only when each has permits for every send).
    """
    send_errors: int
    pip2_ids_only: bool
    first_accepted: bool
    delivered_accepted: bool


@dataclass(frozen=True)
class ConnectionClosed:
    pass


ZERO, POSITIVE = "zero", "positive"  # the sign of a rate: what a spec can fix about it
TRUE, FALSE = "true", "false"        # a JSON boolean as the stats views read it
MISSING = "missing"                  # a field the JSON lacks


@dataclass(frozen=True)
class TopicStatsView:
    """GET .../stats as the spec reads it (Pulsar's NonPersistentTopicStatsImpl).

    ``missing``: names from TOPIC_STATS_FIELDS the JSON lacks (``publishers[].msgDropRate`` style
    paths); ``msg_rate_out``: the sign of the topic's msgRateOut (testTopicStats); ``publishers``:
    the sign of each publisher's msgDropRate, sorted; ``subscriptions``: (name, sign of
    msgDropRate, msgOutCounter, type, the sum of its consumers' unackedMessages), sorted by name;
    ``fixed``: (path, value) for each FIXED_STATS_FIELDS path that has an instance in the JSON, in
    that order: a number as its sign (ZERO, POSITIVE), a boolean as TRUE or FALSE, an absent field
    as MISSING, and ``mixed: a | b`` when the instances of a path disagree.
    """
    missing: tuple[str, ...]
    msg_in_counter: int
    msg_out_counter: int
    msg_rate_out: str
    publishers: tuple[str, ...]
    subscriptions: tuple[tuple[str, str, int, str, int], ...]
    fixed: tuple[tuple[str, str], ...]

    def to_json(self) -> dict:
        return {"kind": "TopicStatsView", "missing": list(self.missing), "msg_in_counter": self.msg_in_counter,
                "msg_out_counter": self.msg_out_counter, "msg_rate_out": self.msg_rate_out,
                "publishers": list(self.publishers),
                "subscriptions": [list(s) for s in self.subscriptions], "fixed": dict(self.fixed)}


@dataclass(frozen=True)
class StatsDetailView:
    """GET .../stats read for what one subscription and one consumer show (``GetTopicStats`` with
    ``detail``; testTopicStats and testAccumulativeStats, Pulsar's NonPersistentTopicTest).

    ``missing``: names from DETAIL_STATS_FIELDS the JSON lacks; ``bytes_in_counter`` and
    ``bytes_out_counter``: the signs of the topic's byte counters; ``subscriptions``: per
    subscription, sorted by name, (name, its number of consumers, the signs of its msgRateOut,
    msgThroughputOut and bytesOutCounter, and per consumer the signs of its msgRateOut and
    msgThroughputOut, sorted). Rates as TopicStatsView reads them: positive if any read across the
    broker's stats updates shows them positive.
    """
    missing: tuple[str, ...]
    bytes_in_counter: str
    bytes_out_counter: str
    subscriptions: tuple[tuple[str, int, str, str, str, tuple[tuple[str, str], ...]], ...]

    def to_json(self) -> dict:
        return {"kind": "StatsDetailView", "missing": list(self.missing), "bytes_in_counter": self.bytes_in_counter,
                "bytes_out_counter": self.bytes_out_counter,
                "subscriptions": [[name, n, rate, throughput, out, [list(c) for c in consumers]]
                                  for name, n, rate, throughput, out, consumers in self.subscriptions]}


@dataclass(frozen=True)
class TopicLoaded:
    """AwaitTopicGC: whether the broker still has the topic loaded (its stats answer) when the wait
    ends, or unloaded it (404)."""
    loaded: bool


@dataclass(frozen=True)
class PartitionedStatsView:
    """GET .../partitioned-stats?perPartition=true: metadata.partitions and the summed counters."""
    missing: tuple[str, ...]
    partitions: int
    msg_in_counter: int
    msg_out_counter: int


@dataclass(frozen=True)
class InternalStatsView:
    """GET .../internalStats: "only entriesAddedCounter and a cursors map with one empty entry per
    subscription" (Pulsar's NonPersistentTopicStatsImpl)."""
    entries_added_counter: int
    cursors: tuple[str, ...]


# -- PIP-157 (model/buckets.py) -----------------------------------------------------------------------


@dataclass(frozen=True)
class TopicBuckets:
    """GET .../numberOfTopicBuckets: the namespace's bucket count (1 when not set)."""
    buckets: int


@dataclass(frozen=True)
class LedgerPaths:
    """White-box: every metadata-store path holding the topic's managed ledger, sorted; one for an
    existing persistent topic, none for an absent or non-persistent one."""
    paths: tuple[str, ...]

    def __post_init__(self) -> None:  # a JSON list read back compares equal to the tuple
        object.__setattr__(self, "paths", tuple(sorted(self.paths)))


# -- PIP-35 (model/batch_lookup.py; TENTATIVE) ----------------------------------------------------------


@dataclass(frozen=True)
class BatchLookupResult:
    """A batch lookup's answer, normalised so that any broker of a cluster gives the same value.

    ``entries``: one ``(topic, requested, response, authoritative, error)`` per entry. ``response``
    is the FINAL answer after the driver followed each Redirect entry once (one authoritative
    follow-up batch per owner, docs/pip35-decisions.md C9): ``Connect`` (the owner answered; for REST,
    the entry is the owner's LookupData), ``Redirect`` (the owner redirected again) or ``Failed``.
    Broker URLs are normalised away. ``authoritative`` is None for Failed entries; ``error`` is the
    ServerError name of a Failed entry, else None. Binary entries keep the answer's order; REST
    entries (a JSON object, unordered by RFC 8259) are sorted by topic.
    """
    entries: tuple[tuple, ...]

    def __post_init__(self) -> None:  # a JSON list of lists read back compares equal
        object.__setattr__(self, "entries", tuple(tuple(e) for e in self.entries))


@dataclass(frozen=True)
class Agreement:
    """A metamorphic relation's verdict as an outcome: ``agree``, and where not, one line per topic
    saying what the two sides answered (model/batch_lookup.py builds both the model's and the
    drivers' lines, so a predicted disagreement compares equal too)."""
    agree: bool
    detail: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "detail", tuple(self.detail))


# The Pulsar field names a stats answer must carry (Pulsar's NonPersistentTopicStatsImpl: "the usual TopicStats fields plus
# msgDropRate"; publishers, subscriptions and replication each with msgDropRate). Paths: "x" at the
# top level, "publishers[].x" in every publisher, "subscriptions.*.x" in every subscription.
TOPIC_STATS_FIELDS: tuple[str, ...] = (
    "msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut", "averageMsgSize",
    "msgInCounter", "bytesInCounter", "msgOutCounter", "bytesOutCounter", "msgDropRate",
    "publishers", "subscriptions", "replication",
    "publishers[].msgRateIn", "publishers[].msgThroughputIn", "publishers[].producerId",
    "publishers[].producerName", "publishers[].msgDropRate",
    "subscriptions.*.msgRateOut", "subscriptions.*.msgThroughputOut", "subscriptions.*.msgOutCounter",
    "subscriptions.*.type", "subscriptions.*.consumers", "subscriptions.*.msgDropRate",
)
# Fields whose value a non-persistent topic fixes whatever its traffic (the model's values:
# model/nonpersistent.py, NON_PERSISTENT_FIXED). Paths as above, and
# "subscriptions.*.consumers[].x" in every consumer of every subscription.
FIXED_STATS_FIELDS: tuple[str, ...] = (
    "storageSize", "backlogSize", "offloadedStorageSize", "msgChunkPublished", "waitingPublishers",
    "publishers[].chunkedMessageRate",
    "subscriptions.*.msgBacklog", "subscriptions.*.isDurable", "subscriptions.*.isReplicated",
    "subscriptions.*.msgRateRedeliver", "subscriptions.*.blockedSubscriptionOnUnackedMsgs",
    "subscriptions.*.unackedMessages",
    "subscriptions.*.consumers[].msgRateRedeliver", "subscriptions.*.consumers[].blockedConsumerOnUnackedMsgs",
)
# What a StatsDetailView reads, paths as above.
DETAIL_STATS_FIELDS: tuple[str, ...] = (
    "bytesInCounter", "bytesOutCounter", "subscriptions.*.msgRateOut", "subscriptions.*.msgThroughputOut",
    "subscriptions.*.bytesOutCounter", "subscriptions.*.consumers",
    "subscriptions.*.consumers[].msgRateOut", "subscriptions.*.consumers[].msgThroughputOut",
)
PARTITIONED_STATS_FIELDS: tuple[str, ...] = (
    "msgRateIn", "msgRateOut", "msgInCounter", "msgOutCounter", "msgDropRate", "publishers",
    "subscriptions", "metadata", "partitions",
)


Outcome = (Partitions | PartitionList | TopicList | Done | RestError | ServerError | ClientError | LookupAnswer
           | FeatureFlag | Delivered | PubSubResult | PubSubBounds | ConnectionClosed | TopicStatsView
           | PartitionedStatsView | InternalStatsView)

OUTCOME_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (Partitions, PartitionList, TopicList, Done, RestError, ServerError, ClientError, LookupAnswer,
                FeatureFlag, Delivered, PubSubResult, PubSubBounds, ConnectionClosed, TopicStatsView,
                PartitionedStatsView, InternalStatsView)
}
OUTCOME_TYPES.update({cls.__name__: cls for cls in (TopicBuckets, LedgerPaths)})  # PIP-157
OUTCOME_TYPES.update({cls.__name__: cls for cls in (BatchLookupResult, Agreement)})  # PIP-35
OUTCOME_TYPES[OverrideShown.__name__] = OverrideShown  # the namespace override's GET
OUTCOME_TYPES[StatsDetailView.__name__] = StatsDetailView  # PIP-2: one subscription's and one consumer's stats
OUTCOME_TYPES[TopicLoaded.__name__] = TopicLoaded  # PIP-2: the check for inactive topics


def outcome_to_json(outcome) -> dict:
    if hasattr(outcome, "to_json"):
        return outcome.to_json()
    data = asdict(outcome)
    return {"kind": type(outcome).__name__, **{k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}}


def outcome_from_json(data: dict):
    data = dict(data)
    cls = OUTCOME_TYPES[data.pop("kind")]
    if cls is TopicList:
        return TopicList(frozenset(data["topics"]))
    if cls in (PartitionList, Delivered):
        key = "topics" if cls is PartitionList else "payloads"
        return cls(tuple(data[key]))
    if cls is PubSubResult:
        return PubSubResult(tuple((k, n) for k, n in data["receipts"]),
                            tuple((name, tuple(p)) for name, p in data["delivered"].items()), data["in_order"])
    if cls is TopicStatsView:
        return TopicStatsView(tuple(data["missing"]), data["msg_in_counter"], data["msg_out_counter"],
                              data["msg_rate_out"], tuple(data["publishers"]),
                              tuple(tuple(s) for s in data["subscriptions"]), tuple(data["fixed"].items()))
    if cls is StatsDetailView:
        return StatsDetailView(tuple(data["missing"]), data["bytes_in_counter"], data["bytes_out_counter"],
                               tuple((name, n, rate, throughput, out, tuple(tuple(c) for c in consumers))
                                     for name, n, rate, throughput, out, consumers in data["subscriptions"]))
    if cls in (PartitionedStatsView, InternalStatsView):
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})
    return cls(**data)
