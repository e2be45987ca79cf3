"""PIP-2 in the model: non-persistent topics, publish drops, dispatch drops, stats and isolation.

PIP-2's Introduction: "as soon as broker receives published message, it immediately delivers this
message to all connected subscribers without caching or persisting them into any storage."

- nothing stored: a message reaches only the consumers attached when it is published.
  FLOW later brings nothing, and a subscription at Earliest sees nothing earlier. Rows:
  pip2-deliver-*, pip2-late-*.
- publish side (Pulsar's ServerCnx#handleSend): "if nonPersistentPendingMessages >
  maxNonPersistentPendingMessages (strictly greater), the broker drops the message" and
  answers SEND_RECEIPT (-1, -1); otherwise the message is in flight until its receipt
  (0, 0) is written. A burst written in ONE socket write is read whole before any receipt
  is written, so the k-th SEND of a burst finds the burst's accepted SENDs still in flight:
  the first ``limit + 1`` are accepted, the rest dropped. "With the limit = 0, the first
  message in flight is accepted and any message overlapping it is dropped." Sends awaited
  one at a time never overlap. Rows: pip2-publish-*.
- dispatch side (Pulsar's NonPersistentDispatcher*.sendMessages): Exclusive and Failover deliver "only if there is an active
  consumer, its availablePermits > 0, and its channel isWritable()"; Shared delivers while
  "the dispatcher's total available permits > 0"; otherwise the message is dropped and
  counted. One permit per message (no batches here). Rows: pip2-dispatch-*.
- persistent contrast: a persistent topic stores every message (receipt STORED), a
  subscription reads from its start position whenever it has permits, so FLOW brings the
  backlog. Rows: pip2-contrast-*.
- stats (Pulsar's NonPersistentTopicStatsImpl and testAccumulativeStats): msgInCounter counts accepted messages and
  msgOutCounter delivered ones, both cumulative (they survive producer and consumer
  removal); a publisher's msgDropRate is positive iff it had publish drops, a
  subscription's iff it had dispatch drops, as the first stats update after them shows it
  (Pulsar recomputes rates every statsUpdateFrequencyInSecs over the interval just ended,
  BrokerService#updateRates; the REST driver reads across that update); internal stats
  hold entriesAddedCounter (accepted
  SENDs) and one cursor per subscription. "Unsubscribe when all the consumers
  disconnected" (NonPersistentSubscription#removeConsumer, from 3.1: releases before keep
  the subscription, model/releases.py). A subscription's type is the subType its
  consumers subscribed with (NonPersistentSubscription#getTypeString); what nothing stored
  implies is NON_PERSISTENT_FIXED. Unacked messages: none, except on releases without
  "np-unacked-not-counted", where a Shared or Key_Shared consumer counts what it was sent.
  Rows: pip2-stats-*.
- isolation: with the topic's domain disabled, PRODUCER and SUBSCRIBE fail with
  NotAllowedError "Broker is unable to load persistent topic" (BrokerService#getTopic uses
  that text for both domains). A lookup still answers Connect: a standalone runs
  NoopLoadManager (conf/standalone.conf), whose getLeastLoaded always names the local
  broker (pulsar-broker/src/main/java/org/apache/pulsar/broker/loadbalance/NoopLoadManager.java
  at v4.0.7); only the load managers of a cluster skip a broker whose domain is disabled
  (LoadManagerShared#applyNamespacePolicies). Observed: Connect on
  3.0.7, 4.0.7 and 4.2.4. Rows: pip2-isolation-*.
- bad input (ServerCnx): a SEND for a producer that is not registered ("Received message,
  but the producer is not ready ... Closing the connection."), a FLOW with permits <= 0
  (Consumer#flowPermits: checkArgument(additionalNumberOfMessages > 0), which reaches
  exceptionCaught and ctx.close()) and a SUBSCRIBE with an unknown subType (LightProto drops
  the unknown enum, then "Some required fields are missing") all close the connection.
  Rows: pip2-bad-*.

The model refuses (ModelUsageError) what the sources do not settle: which sends a concurrent
client burst loses (use view "bounds"), a second Exclusive consumer, mixed
subscription types, Failover consumers with different permits, a second Key_Shared consumer (the
sticky-key selector splits keys by hash). What an attach on the wire is refused with is
model/attach.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from model import lookups
from model.attach import wire_attach
from model.client import attach, attach_targets, client_exception, client_partition_metadata
from model.errors import ModelUsageError
from pulsar_naming.names import TopicName
from model.ops import (
    BAD_COMMANDS, INITIAL_POSITIONS, SUB_TYPES, AwaitTopicGC, BadCommand, DeleteSubscription, GetInternalStats,
    GetPartitionedStats, GetTopicStats, Lookup, PubSub,
)
from model.outcomes import (
    ACCEPTED, DROPPED, FALSE, POSITIVE, STORED, ZERO, ConnectionClosed, Done, InternalStatsView, Partitions,
    PartitionedStatsView, PubSubBounds, PubSubResult, RestError, ServerError, StatsDetailView, TopicLoaded,
    TopicStatsView,
    payload_ranges, relayed_client_error, run_length,
)
from model.state import State, parse_topic

# BrokerService#getTopic, newest text, for either disabled domain (Pulsar's BrokerService.getTopic).
UNABLE_TO_LOAD = "Broker is unable to load persistent topic"
# Releases without "domain-checked-before-topic-policies" (model/releases.py): their texts.
NP_UNABLE_TO_LOAD_BEFORE = "Broker is not unable to load non-persistent topic"


def _policies_first_refusal(topic: TopicName) -> str:
    """What a release that reads topic policies before the domain check answers for a persistent
    topic on a broker that cannot load the persistent system topic holding them."""
    return ("Topic creation encountered an exception by initialize topic policies service. "
            f"topic_name={topic} error_message={relayed_client_error(UNABLE_TO_LOAD)}")


# Stats: what a topic that stores nothing shows whatever its traffic (FIXED_STATS_FIELDS).
# NonPersistentTopic#asyncGetStats never assigns storageSize, backlogSize, offloadedStorageSize or
# msgChunkPublished, and NonPersistentSubscription#getStats never assigns msgBacklog, isDurable,
# isReplicated, blockedSubscriptionOnUnackedMsgs or unackedMessages (its addUnAckedMessages is
# "// No-op"), so they keep TopicStatsImpl's and SubscriptionStatsImpl's defaults (v3.0.2, v3.0.7,
# v4.0.7, v4.2.4). isDurable is false even where 3.0.x keeps a consumer's subscription as durable:
# the stats never copy that flag. waitingPublishers counts producers waiting for exclusive access,
# the rates redeliveries and chunks; a PubSub makes none of them, and its consumers stay below
# maxUnackedMessagesPerConsumer, so none is blocked. Observed on 3.0.2, 3.0.7, 3.2.3, 4.0.7, 4.2.4.
NON_PERSISTENT_FIXED: dict[str, str] = {
    "storageSize": ZERO, "backlogSize": ZERO, "offloadedStorageSize": ZERO, "msgChunkPublished": FALSE,
    "waitingPublishers": ZERO,
    "publishers[].chunkedMessageRate": ZERO,
    "subscriptions.*.msgBacklog": ZERO, "subscriptions.*.isDurable": FALSE, "subscriptions.*.isReplicated": FALSE,
    "subscriptions.*.msgRateRedeliver": ZERO, "subscriptions.*.blockedSubscriptionOnUnackedMsgs": FALSE,
    "subscriptions.*.unackedMessages": ZERO,
    "subscriptions.*.consumers[].msgRateRedeliver": ZERO,
    "subscriptions.*.consumers[].blockedConsumerOnUnackedMsgs": FALSE,
}


@dataclass(frozen=True)
class LiveStats:
    """What GET .../stats and .../internalStats say about a non-persistent topic (the module's stats).

    ``subscriptions``: (name, sign of msgDropRate, msgOutCounter, type, unacked messages of its
    consumers, or None where the release counts them and timing decides which acks arrived)."""
    msg_in: int = 0
    msg_out: int = 0
    entries_added: int = 0
    publishers: tuple[str, ...] = ()
    subscriptions: tuple[tuple[str, str, int, str, Optional[int]], ...] = ()
    producers: int = 0      # producers and consumers of earlier PubSubs still attached
    consumers: int = 0
    known: bool = True      # False after a "bounds" PubSub: timing decided the counters
    # Per subscription: how many consumers it has attached, and the messages each was sent by the
    # last PubSub (attach order), or None where the sources do not fix which consumer gets what (a
    # Shared or Key_Shared subscription of several consumers). Read by GetTopicStats with detail.
    consumer_counts: tuple[tuple[str, int, Optional[tuple[int, ...]]], ...] = ()

    @property
    def attached(self) -> bool:
        return self.producers + self.consumers > 0


def domain_enabled(state: State, topic: TopicName) -> bool:
    config = state.config
    return config.enablePersistentTopics if topic.persistent else config.enableNonPersistentTopics


# -- attaching producers and consumers ---------------------------------------------------------------


def _attach(state: State, topic: TopicName, command: str = "PRODUCER"):
    """(state, refusal or None) for ``command`` (PRODUCER or SUBSCRIBE) sent on the wire for exactly
    ``topic``: the isolation of domains, then model/attach.py."""
    if not domain_enabled(state, topic):
        if state.has("domain-checked-before-topic-policies"):
            refusal = ServerError("NotAllowedError", UNABLE_TO_LOAD)
        elif topic.persistent:
            refusal = ServerError("ServiceNotReady", _policies_first_refusal(topic))
        else:
            refusal = ServerError("NotAllowedError", NP_UNABLE_TO_LOAD_BEFORE)
        return state, refusal
    if not state.namespace_exists(topic.namespace_name):
        raise ModelUsageError(f"{topic}: attaching in a missing namespace is not modelled; rows attach in their namespace")
    return wire_attach(state, topic, command)


def _targets(state: State, topic: TopicName, op):
    """(state, refusal or None, topics the producer and consumers attach to)."""
    if op.api == "binary":
        state, refusal = _attach(state, topic)
        return state, refusal, (topic,)
    if op.api != "client":
        raise ModelUsageError(f"{type(op).__name__}(api={op.api!r}): use binary (the wire driver) or client")
    if not domain_enabled(state, topic):
        raise ModelUsageError("the client looks a disabled domain up and retries ServiceNotReady until its "
                              "timeout; isolation rows use api binary")
    state, answer = client_partition_metadata(state, topic, op.transport)
    if not isinstance(answer, Partitions):
        return state, client_exception(op.transport, answer), ()
    targets = attach_targets(topic, answer.partitions)
    if op.transport == "http":
        # The client looks each topic up over HTTP before it connects; a refused lookup ends it.
        for target in targets:
            _, found = lookups.lookup(state, Lookup(str(target), "rest"))
            if isinstance(found, RestError):
                return state, client_exception("http", found), ()
    state, refusal = attach(state, topic, answer.partitions)
    return state, refusal, (() if refusal is not None else targets)


# -- the scenario ------------------------------------------------------------------------------------


@dataclass
class _Sub:
    kind: str
    position: int                     # persistent: next log index to read
    permits: list[int] = field(default_factory=list)  # per consumer, attach order
    delivered: list[int] = field(default_factory=list)
    drops: int = 0
    sent: list[int] = field(default_factory=list)     # per consumer, attach order: messages sent to it

    def take_permit(self) -> bool:
        """Dispatch side: Exclusive/Failover ask the active consumer, Shared the subscription's total;
        Key_Shared (one consumer, _check) asks its consumer, as NonPersistentStickyKeyDispatcherMultipleConsumers
        #sendMessages does: "if (consumer.getAvailablePermits() > 0 && consumer.isWritable())"."""
        candidates = self.permits[:1] if self.kind in ("Exclusive", "Failover") else self.permits
        for i, permits in enumerate(candidates):
            if permits > 0:
                self.permits[i] -= 1
                self.sent[i] += 1
                return True
        return False

    def counts(self) -> Optional[tuple[int, ...]]:
        """What each consumer was sent, where the sources fix it: one consumer, or the single active
        consumer of Exclusive and Failover (the stats sort consumers, so which one it was does not matter)."""
        if len(self.sent) > 1 and self.kind in ("Shared", "Key_Shared"):
            return None
        return tuple(self.sent)


def _check(op: PubSub) -> None:
    if op.view not in ("exact", "bounds"):
        raise ModelUsageError(f"PubSub view {op.view!r}: use exact or bounds")
    if op.initial_position not in INITIAL_POSITIONS:
        raise ModelUsageError(f"PubSub initial_position {op.initial_position!r}: use {' or '.join(INITIAL_POSITIONS)}")
    if any(n < 1 for n in op.bursts) or op.sends_before < 0 or op.flow_after < 0:
        raise ModelUsageError("PubSub: bursts hold sizes >= 1; sends_before and flow_after are >= 0")
    failover: dict[str, set[int]] = {}
    for entry in op.consumers:
        if len(entry) != 3:
            raise ModelUsageError(f"PubSub consumer {entry!r}: write [subscription, subType, permits]")
        name, kind, permits = entry
        if kind not in SUB_TYPES:
            raise ModelUsageError(f"PubSub subType {kind!r}: PIP-2 rows use {', '.join(SUB_TYPES)}")
        if not isinstance(permits, int) or permits < 0:
            raise ModelUsageError(f"PubSub permits {permits!r}: an int >= 0")
        if op.api == "client" and permits < 1:
            raise ModelUsageError("the client's permits are its receiver_queue_size, which must be >= 1 here")
        if kind == "Failover":
            failover.setdefault(name, set()).add(permits)
    if any(len(p) > 1 for p in failover.values()):
        raise ModelUsageError("Failover consumers with different permits: which one is active is not modelled")
    key_shared = [name for name, kind, _ in op.consumers if kind == "Key_Shared"]
    if len(key_shared) != len(set(key_shared)):
        raise ModelUsageError("a second Key_Shared consumer on a subscription: which keys each gets is the sticky-key "
                              "selector's hash, not modelled")
    if op.api == "client" and op.flow_after:
        raise ModelUsageError("flow_after is a wire-driver step; the client grants permits as it receives")
    if op.close_producer or op.close_consumers:
        if op.api != "binary":
            raise ModelUsageError("close_producer and close_consumers are wire-driver steps (api binary)")
        if op.close_after:
            raise ModelUsageError("close_after closes everything already; close_producer and close_consumers "
                                  "close some of it")
        if len(set(op.close_consumers)) != len(op.close_consumers) or any(
                not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(op.consumers)
                for i in op.close_consumers):
            raise ModelUsageError(f"close_consumers {op.close_consumers!r}: distinct indices of consumers")


def _simulate(state: State, op: PubSub, persistent: bool):
    limit = state.config.maxConcurrentNonPersistentMessagePerConnection
    receipts: list[str] = []
    log: list[int] = []
    subs: dict[str, _Sub] = {}
    counters = {"in": 0, "drops": 0}
    index = 0

    def deliver_backlog(sub: _Sub) -> None:  # persistent contrast: FLOW brings the backlog
        while sub.position < len(log) and sub.take_permit():
            sub.delivered.append(log[sub.position])
            sub.position += 1

    def accept(i: int) -> None:
        counters["in"] += 1
        if persistent:
            log.append(i)
            for sub in subs.values():
                deliver_backlog(sub)
            return
        for sub in subs.values():  # only the subscriptions attached now, each as its dispatcher allows
            if sub.take_permit():
                sub.delivered.append(i)
            else:
                sub.drops += 1

    for _ in range(op.sends_before):
        receipts.append(STORED if persistent else ACCEPTED)
        accept(index)
        index += 1
    for name, kind, permits in op.consumers:
        sub = subs.get(name)
        if sub is None:
            start = 0 if (persistent and op.initial_position == "Earliest") else len(log)
            sub = subs[name] = _Sub(kind, start)
        elif sub.kind != kind:
            raise ModelUsageError(f"subscription {name!r} with two types is not modelled (ConsumerBusy)")
        elif kind == "Exclusive":
            raise ModelUsageError(f"a second consumer on Exclusive subscription {name!r} is not modelled")
        sub.permits.append(permits)
        sub.sent.append(0)
        if persistent:
            deliver_backlog(sub)
    for burst in op.bursts:
        in_flight = 0  # publish side: the previous burst's receipts were all awaited
        for _ in range(burst):
            if not persistent and in_flight > limit:
                receipts.append(DROPPED)
                counters["drops"] += 1
            else:
                receipts.append(STORED if persistent else ACCEPTED)
                in_flight += 1
                accept(index)
            index += 1
    if op.flow_after or (op.api == "client" and persistent):
        # The client keeps granting permits while it drains; the wire grants flow_after once.
        extra = op.flow_after if op.api == "binary" else index
        for sub in subs.values():
            sub.permits = [p + extra for p in sub.permits]
            if persistent:
                deliver_backlog(sub)
    return receipts, subs, counters


def pub_sub(state: State, op: PubSub):
    _check(op)
    topic = parse_topic(op.topic)
    state, refusal, targets = _targets(state, topic, op)
    if refusal is not None:
        return state, refusal
    for target in targets:
        previous = state.live.get(target)
        if previous is not None and target.persistent:
            # Its log holds the earlier PubSub's messages, named m0, m1, ... like this one's, and
            # any of its consumers still attached compete for the same subscriptions.
            raise ModelUsageError(f"{target}: a second PubSub on a persistent topic is not modelled; use another topic")
        if previous is not None and previous.attached:
            raise ModelUsageError(f"{target}: an earlier PubSub's producers and consumers are still attached; "
                                  "set close_after on it or use another topic")
    persistent = topic.persistent
    sends = op.sends_before + sum(op.bursts)
    if op.view == "bounds":
        return _bounds(state, op, topic, targets, persistent, sends)
    if op.api == "client" and not persistent:
        limit = state.config.maxConcurrentNonPersistentMessagePerConnection
        if any(burst - 1 > limit for burst in op.bursts):
            raise ModelUsageError("concurrent client sends beyond the in-flight limit: timing decides which are "
                                  "dropped; use view bounds, or the wire api (one write per burst)")
    if op.api == "client" and len(targets) > 1:
        short = [p for _, _, p in op.consumers if p < sends]
        if short:
            raise ModelUsageError("a partitioned client consumer splits permits across partitions; give every "
                                  "consumer permits >= the number of sends")
    receipts, subs, counters = _simulate(state, op, persistent)
    delivered = tuple((name, payload_ranges(subs[name].delivered)) for name in sorted(subs))
    outcome = PubSubResult(run_length(receipts), delivered, True)
    if persistent:
        for target in targets:  # only marks the topic used (above); persistent stats are not modelled
            state = state.with_live(target, LiveStats(known=False, **_left_attached(op)))
    else:
        state = _record_live(state, op, targets, subs, counters)
    return state, outcome


def _bounds(state: State, op: PubSub, topic: TopicName, targets, persistent: bool, sends: int):
    if persistent:
        raise ModelUsageError("view bounds is for non-persistent topics, where timing may move drops")
    after = sum(op.bursts)
    totals: dict[str, int] = {}
    for name, kind, permits in op.consumers:
        totals[name] = permits if kind in ("Exclusive", "Failover") else totals.get(name, 0) + permits
    if any(total < after for total in totals.values()):
        raise ModelUsageError("view bounds needs every subscription to have permits for every send")
    for target in targets:
        state = state.with_live(target, replace(state.live.get(target, LiveStats()), known=False,
                                                **_left_attached(op)))
    return state, PubSubBounds(send_errors=0, pip2_ids_only=True, first_accepted=True, delivered_accepted=True)


def _record_live(state: State, op: PubSub, targets, subs: dict, counters: dict) -> State:
    if len(targets) != 1:
        # A partitioned client producer routes to one partition chosen at random: which one is not fixed.
        for target in targets:
            state = state.with_live(target, LiveStats(known=False, **_left_attached(op)))
        return state
    target = targets[0]
    before = state.live.get(target, LiveStats())
    out = sum(len(s.delivered) for s in subs.values())
    attached = not op.close_after
    publishers = ((POSITIVE if counters["drops"] else ZERO),) if attached else ()
    subscriptions = tuple((name, POSITIVE if subs[name].drops else ZERO, len(subs[name].delivered), subs[name].kind,
                           _unacked(state, op, subs[name])) for name in sorted(subs)) if attached else ()
    if not attached and not state.has("np-subscription-ends-with-its-consumers"):
        # Older releases keep a consumer's subscription after its last consumer left, with what it
        # delivered (NonPersistentSubscription#removeConsumer before 3.1), its type (its dispatcher
        # stays) and no consumer to count unacked messages.
        kept = {name: (sign, out, kind) for name, sign, out, kind, _ in before.subscriptions}
        for name, sub in subs.items():
            kept[name] = (POSITIVE if sub.drops else ZERO, kept.get(name, (ZERO, 0, sub.kind))[1] + len(sub.delivered),
                          sub.kind)
        subscriptions = tuple((name, sign, out, kind, 0) for name, (sign, out, kind) in sorted(kept.items()))
    accepted_sends = counters["in"]  # one message per SEND here
    consumer_counts = tuple((name, len(subs[name].sent), subs[name].counts()) if attached else (name, 0, ())
                            for name in sorted(subs))
    if not attached and not state.has("np-subscription-ends-with-its-consumers"):
        consumer_counts = tuple((name, 0, ()) for name, *_ in subscriptions)  # kept, with no consumer
    live = LiveStats(
        msg_in=before.msg_in + counters["in"], msg_out=before.msg_out + out,
        entries_added=before.entries_added + accepted_sends, publishers=publishers,
        subscriptions=subscriptions, known=before.known, consumer_counts=consumer_counts, **_left_attached(op))
    if attached and (op.close_producer or op.close_consumers):
        live = _close_some(state, op, live, subs)
    return state.with_live(target, live)


def _close_some(state: State, op: PubSub, live: LiveStats, subs: dict) -> LiveStats:
    """What ``close_producer`` and ``close_consumers`` leave: the producer gone from the publishers,
    and each subscription with the consumers it keeps. A subscription whose consumers all closed ends
    with them from 3.1 (NonPersistentSubscription#removeConsumer: "Unsubscribe when all the consumers
    disconnected"), and stays with none before (model/releases.py np-subscription-ends-with-its-consumers);
    its counters stay with the topic either way."""
    closing = set(op.close_consumers)
    keeps = {name: [i for i, (n, _, _) in enumerate(op.consumers) if n == name and i not in closing] for name in subs}
    sent = {name: list(subs[name].sent) for name in subs}
    counts = {}
    for name in subs:
        remaining = keeps[name]
        ordinal = [i for i, (n, _, _) in enumerate(op.consumers) if n == name]
        if remaining and len(remaining) < len(ordinal) and any(sent[name]):
            raise ModelUsageError(f"closing some consumers of subscription {name!r} after messages: which counters "
                                  "leave with them is not modelled; close them all, or send nothing")
        left = tuple(sent[name][ordinal.index(i)] for i in remaining)
        counts[name] = (len(left), left if (len(left) <= 1 or subs[name].kind not in ("Shared", "Key_Shared")) else None)
    ends = state.has("np-subscription-ends-with-its-consumers")
    subscriptions = tuple(
        (name, sign, out, kind, unacked if counts[name][0] else 0) for name, sign, out, kind, unacked in live.subscriptions
        if counts[name][0] or not ends)
    consumer_counts = tuple((name, *counts[name]) for name, *_ in subscriptions)
    return replace(live, publishers=() if op.close_producer else live.publishers,
                   subscriptions=subscriptions, consumer_counts=consumer_counts,
                   producers=0 if op.close_producer else live.producers,
                   consumers=sum(n for _, n, _ in consumer_counts))


def _left_attached(op: PubSub) -> dict:
    """What a PubSub leaves attached to each topic it used: its producer and its consumers, every
    one of them counted as PersistentTopic#currentUsageCount counts, unless it closed them."""
    attached = not op.close_after
    return {"producers": 1 if attached and not op.close_producer else 0,
            "consumers": len(op.consumers) - len(op.close_consumers) if attached else 0}


def _unacked(state: State, op: PubSub, sub: _Sub) -> Optional[int]:
    """Stats: the unacked messages of a subscription's consumers after this PubSub."""
    if state.has("np-unacked-not-counted") or sub.kind not in ("Shared", "Key_Shared"):
        return 0
    if op.api != "binary":
        return None  # the official clients acknowledge, and when the acks arrive is timing
    return len(sub.delivered)  # the wire driver never acknowledges


# -- bad input ----------------------------------------------------------------------------------------


def bad_command(state: State, op: BadCommand):
    if op.command not in BAD_COMMANDS:
        raise ModelUsageError(f"BadCommand {op.command!r}: one of {', '.join(BAD_COMMANDS)}")
    if op.api != "binary":
        raise ModelUsageError("BadCommand needs exact frames: api binary (the wire driver)")
    topic = parse_topic(op.topic)
    if op.command != "subscribe-unknown-subtype":  # the SUBSCRIBE never parses, so nothing attaches
        command = "PRODUCER" if op.command == "send-after-close-producer" else "SUBSCRIBE"
        state, refusal = _attach(state, topic, command)
        if refusal is not None:
            return state, refusal
    return state, ConnectionClosed()


# -- isolation of lookups ----------------------------------------------------------------------------


def lookup(state: State, op: Lookup):
    # isolation: a disabled domain does not change the answer of a standalone's lookup.
    return lookups.lookup(state, op)


# -- stats ------------------------------------------------------------------------------------------


def _live(state: State, topic: TopicName) -> LiveStats:
    if topic.persistent:
        raise ModelUsageError(f"{topic}: stats are modelled for non-persistent topics (PIP-2)")
    if not state.namespace_exists(topic.namespace_name) or not state.topic_exists(topic):
        raise ModelUsageError(f"{topic}: stats of a topic that is not loaded are not modelled (404 text [I])")
    live = state.live.get(topic, LiveStats())
    if not live.known:
        raise ModelUsageError(f"{topic}: timing decided this topic's counters (a bounds PubSub); no exact stats")
    return live


def get_topic_stats(state: State, op: GetTopicStats):
    topic = parse_topic(op.topic)
    live = _live(state, topic)
    if op.detail:
        return state, _stats_detail(topic, live)
    if any(sub[4] is None for sub in live.subscriptions):
        raise ModelUsageError(f"{topic}: this release counts unacked messages and the official client's acks "
                              "arrive when they do; read its stats after a PubSub of api binary")
    # msgRateOut sums the attached subscriptions' rates (NonPersistentTopic#getStats), so it is
    # positive while a subscription that delivered in this case is attached.
    # A subscription's rate is its consumers' (NonPersistentSubscription#getStats): one whose consumers
    # all left delivers nothing more, whatever it delivered before.
    rate_out = POSITIVE if live.attached and any(sub[2] > 0 for sub in live.subscriptions) else ZERO
    # The JSON holds a publishers[] or consumers[] path only where there is one to hold it.
    present = {"": True, "publishers[]": bool(live.publishers), "subscriptions.*": bool(live.subscriptions),
               "subscriptions.*.consumers[]": live.attached and bool(live.subscriptions)}
    fixed = tuple((path, value) for path, value in NON_PERSISTENT_FIXED.items() if present[path.rpartition(".")[0]])
    return state, TopicStatsView((), live.msg_in, live.msg_out, rate_out, tuple(sorted(live.publishers)),
                                 live.subscriptions, fixed)


def _stats_detail(topic: TopicName, live: LiveStats) -> StatsDetailView:
    """The byte counters and what each subscription and consumer shows (testTopicStats,
    testAccumulativeStats). A byte counter is positive once a message went through it: every payload
    here has bytes (NonPersistentTopic#publishMessage adds the message's size to bytesInCounter; the
    dispatcher's consumers add what they were sent to bytesOutCounter). A consumer's msgRateOut and
    msgThroughputOut are positive when the last PubSub sent it something and it is still attached
    (Consumer#updateRates over the interval just ended); a subscription's are its consumers' sums
    (NonPersistentSubscription#getStats), its bytesOutCounter its consumers' and its removed
    consumers' bytes."""
    counts = {name: sent for name, _, sent in live.consumer_counts}
    subscriptions = []
    for name, _sign, out, _kind, _unacked in live.subscriptions:
        sent = counts.get(name, ())
        if sent is None:
            raise ModelUsageError(f"{topic}: which consumer of Shared or Key_Shared subscription {name!r} got which "
                                  "message is not fixed; read the detail view with one consumer per such subscription")
        consumers = tuple(sorted((_positive(n), _positive(n)) for n in sent))
        rate = POSITIVE if any(n > 0 for n in sent) else ZERO
        subscriptions.append((name, len(sent), rate, rate, _positive(out), consumers))
    return StatsDetailView((), _positive(live.msg_in), _positive(live.msg_out), tuple(subscriptions))


def _positive(count: int) -> str:
    return POSITIVE if count > 0 else ZERO


def delete_subscription(state: State, op: DeleteSubscription):
    """PersistentTopicsBase#internalDeleteSubscriptionAsync for a non-persistent, non-partitioned name:
    the topic the broker has loaded (else 404, AdminResource#getTopicNotFoundErrorMessage), its
    subscription (else 404, #getSubNotFoundErrorMessage), which NonPersistentSubscription#delete
    fences and removes, its dispatcher closing and so disconnecting its consumers, its counters
    kept with the topic (NonPersistentTopic#unsubscribe). Read at v4.0.7."""
    topic = parse_topic(op.topic)
    if topic.persistent or topic.is_partition:
        raise ModelUsageError(f"{topic}: deleting a subscription is modelled for non-partitioned non-persistent topics")
    if not state.namespace_exists(topic.namespace_name):
        raise ModelUsageError(f"{topic}: deleting a subscription in a missing namespace is not modelled")
    if not state.topic_exists(topic):
        return state, RestError(404, f"Topic {topic} not found")
    live = state.live.get(topic, LiveStats())
    if not live.known:
        raise ModelUsageError(f"{topic}: timing decided this topic's counters (a bounds PubSub)")
    if op.subscription not in {name for name, *_ in live.subscriptions}:
        return state, RestError(404, f"Subscription {op.subscription} not found for topic {topic}")
    gone = sum(n for name, n, _ in live.consumer_counts if name == op.subscription)
    return state.with_live(topic, replace(
        live, subscriptions=tuple(s for s in live.subscriptions if s[0] != op.subscription),
        consumer_counts=tuple(c for c in live.consumer_counts if c[0] != op.subscription),
        consumers=live.consumers - gone)), Done()


# The check for inactive topics: BrokerService#checkGC runs every brokerDeleteInactiveTopicsFrequencySeconds
# (F) and NonPersistentTopic#checkGC deletes a topic inactive for more than its max inactive duration,
# which defaults to F (ServiceConfiguration#getBrokerDeleteInactiveTopicsMaxInactiveDurationSeconds);
# a topic's last activity is the last check that found it active, so it goes at most 2F after it became
# inactive. The wait a row gives must cover that and a margin.
GC_MARGIN_S = 2


def await_topic_gc(state: State, op: AwaitTopicGC):
    """Whether the topic is still loaded when the wait ends. NonPersistentTopic#isActive (a V2 name is
    global to it): a producer, or any subscription, keeps it; from 3.1 a subscription goes with its last
    consumer, before it stays and keeps the topic (np-subscription-ends-with-its-consumers). With
    brokerDeleteInactivePartitionedTopicMetadataEnabled, unloading a partition deletes its base name's
    partitioned metadata (NonPersistentTopic#tryToDeletePartitionedMetadata at v4.0.7)."""
    topic = parse_topic(op.topic)
    if topic.persistent:
        raise ModelUsageError(f"{topic}: the check for inactive topics is modelled for non-persistent topics")
    if op.seconds < 0:
        raise ModelUsageError(f"AwaitTopicGC(seconds={op.seconds}): a wait of 0 seconds or more")
    if not state.topic_exists(topic):
        return state, TopicLoaded(False)
    live = state.live.get(topic, LiveStats())
    config = state.config
    if live.attached or live.subscriptions or not config.brokerDeleteInactiveTopicsEnabled:
        return state, TopicLoaded(True)
    needed = 2 * config.brokerDeleteInactiveTopicsFrequencySeconds + GC_MARGIN_S
    if op.seconds < needed:
        raise ModelUsageError(f"{topic} is inactive, but within {op.seconds} s the check (every "
                              f"{config.brokerDeleteInactiveTopicsFrequencySeconds} s) may not have unloaded it yet: "
                              f"wait {needed} s or more")
    state = state.without_topic(topic)
    base = topic.partitioned_base if topic.is_partition else None
    if base is not None and config.brokerDeleteInactivePartitionedTopicMetadataEnabled and state.partition_count(base):
        state = state.without_partitioned_metadata(base)
    return state, TopicLoaded(False)


def get_partitioned_stats(state: State, op: GetPartitionedStats):
    topic = parse_topic(op.topic)
    count = state.partition_count(topic)
    if count <= 0:
        raise ModelUsageError(f"{topic} has no partitioned metadata: partitioned-stats of it is not modelled")
    parts = [_live(state, topic.partition(i)) for i in range(count)]
    return state, PartitionedStatsView((), count, sum(p.msg_in for p in parts), sum(p.msg_out for p in parts))


def get_internal_stats(state: State, op: GetInternalStats):
    live = _live(state, parse_topic(op.topic))
    return state, InternalStatsView(live.entries_added, tuple(sub[0] for sub in live.subscriptions))
