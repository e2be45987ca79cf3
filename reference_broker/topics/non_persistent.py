"""Non-persistent topics (PIP-2): nothing stored, dispatch on arrival, drops counted, stats.

PIP-2's Introduction: "as soon as broker receives published message, it immediately delivers this message to
all connected subscribers without caching or persisting them into any storage."

- publish (``NonPersistentTopic.publish``) hands each message to every subscription at once and
  forgets it; receipts and message ids are (ledgerId 0, entryId 0): "the broker calls
  callback.completed(null, 0L, 0L) before dispatching ... consumers see message ids (0,0) as well
  (plus the partition index)" (Pulsar's ServerCnx.handleSend). The per-connection in-flight limit
  lives in the connection (ServerCnx, commands.py), which calls ``record_publish_drop`` for what
  it refuses.
- dispatch (``NonPersistentSubscription.send``; Pulsar's NonPersistentDispatcher*.sendMessages):
  Exclusive and Failover send to the active consumer (the first attached) only if "its
  availablePermits > 0, and its channel isWritable()"; Shared (and Key_Shared, which we dispatch
  the same way) sends while "the dispatcher's total available permits > 0", round-robin among
  consumers that have permits. Otherwise the message is dropped and its messages are counted in
  the subscription's drop rate. FLOW adds permits and sends nothing: "consumerFlow does nothing
  and nothing is ever re-read".
- "Unsubscribe when all the consumers disconnected" (NonPersistentSubscription #removeConsumer,
  ``NonPersistentSubscription.remove_consumer``); the topic keeps the out counters of removed
  subscriptions and the in counters of removed producers (testAccumulativeStats).
- stats (``NonPersistentTopic.stats``; Pulsar's NonPersistentTopicStatsImpl): field names are
  NonPersistentTopicStatsImpl's. Rates come from rates.Rate (60 s sliding window). Topic
  msgRateIn/msgRateOut sum the current publishers and subscriptions, as NonPersistentTopic#getStats
  does. Topic-level msgDropRate, which Pulsar never assigns, is reported as the sum of the
  publishers' drop rates (our choice; the spec does not judge its value).
"""

from __future__ import annotations

import datetime
import itertools
import time
from dataclasses import dataclass, field
from typing import Optional

from .persistent import Consumer, ConsumerGroup, Entry
from .rates import Rate

NON_PERSISTENT_LEDGER_ID = 0
_TYPE_NAMES = {0: "Exclusive", 1: "Shared", 2: "Failover", 3: "Key_Shared"}


def _now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Publisher:
    producer_id: int
    name: str
    address: str = ""
    client_version: str = ""
    connected_since: str = field(default_factory=_now_iso)
    rate_in: Rate = field(default_factory=Rate)
    drops: Rate = field(default_factory=Rate)

    def stats(self) -> dict:
        rate = self.rate_in.rate()
        return {
            "msgRateIn": rate, "msgThroughputIn": self.rate_in.throughput(),
            "averageMsgSize": (self.rate_in.throughput() / rate) if rate else 0.0,
            "chunkedMessageRate": 0.0, "producerId": self.producer_id, "producerName": self.name,
            "accessMode": "Shared", "msgDropRate": self.drops.rate(), "address": self.address,
            "connectedSince": self.connected_since, "clientVersion": self.client_version, "metadata": {},
        }


class NonPersistentSubscription(ConsumerGroup):
    def __init__(self, topic: "NonPersistentTopic", name: str, sub_type: int):
        super().__init__(topic, name, sub_type)
        self.drops = Rate()
        self.out = Rate()   # messages sent to consumers, all of them (msgOutCounter, msgRateOut)
        self._round_robin = itertools.count()

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer in self.consumers:
            self.consumers.remove(consumer)
        if not self.consumers:  # every consumer gone: unsubscribe
            self.topic.remove_subscription(self.name)

    # Dispatch -----------------------------------------------------------------------------------

    def _target(self) -> Optional[Consumer]:
        if self.exclusive_like:
            active = self.consumers[0] if self.consumers else None
            return active if active is not None and active.permits > 0 and active.writable() else None
        if sum(max(c.permits, 0) for c in self.consumers) <= 0:
            return None
        with_permits = [c for c in self.consumers if c.permits > 0]
        return with_permits[next(self._round_robin) % len(with_permits)]

    def send(self, entry: Entry, now: float | None = None) -> None:
        consumer = self._target()
        if consumer is None:
            self.drops.record(entry.num_messages, 0, now)
            return
        consumer.permits -= entry.num_messages
        size = len(entry.payload)
        consumer.out.record(entry.num_messages, size, now)
        self.out.record(entry.num_messages, size, now)
        consumer.deliver(consumer, 0, entry, 0)

    def dispatch(self) -> None:
        """FLOW and writability changes bring nothing: nothing is kept to send again."""

    def ack(self, consumer: Consumer, entry_id: int, cumulative: bool) -> None:
        """Acks are accepted and ignored: there is nothing to acknowledge."""

    def redeliver_unacked(self, consumer: Consumer, entry_ids=None) -> None:
        """Nothing was kept, so nothing can be redelivered."""

    def backlog(self) -> int:
        return 0

    def stats(self) -> dict:
        consumers = [{
            "consumerName": c.name, "availablePermits": max(c.permits, 0), "unackedMessages": 0,
            "msgRateOut": c.out.rate(), "msgThroughputOut": c.out.throughput(),
            "msgOutCounter": c.out.total, "bytesOutCounter": c.out.total_bytes, "msgRateRedeliver": 0.0,
            "blockedConsumerOnUnackedMsgs": False,
        } for c in self.consumers]
        return {
            "msgRateOut": self.out.rate(), "msgThroughputOut": self.out.throughput(),
            "msgOutCounter": self.out.total, "bytesOutCounter": self.out.total_bytes,
            "msgRateRedeliver": 0.0, "msgBacklog": 0, "type": _TYPE_NAMES.get(self.sub_type, "None"),
            "msgDropRate": self.drops.rate(), "consumers": consumers, "isReplicated": False,
            "isDurable": False, "blockedSubscriptionOnUnackedMsgs": False, "unackedMessages": 0,
        }


class NonPersistentTopic:
    """One loaded non-persistent topic (or partition)."""

    def __init__(self, name: str, partition_index: int = -1):
        self.name = name
        self.partition_index = partition_index
        self.ledger_id = NON_PERSISTENT_LEDGER_ID
        self.subscriptions: dict[str, NonPersistentSubscription] = {}
        self.producers: dict[tuple[int, int], str] = {}  # (connection id, producer id) -> name
        self.publishers: dict[tuple[int, int], Publisher] = {}
        self.msg_in_counter = 0
        self.bytes_in_counter = 0
        self.entries_added_counter = 0
        self._out_removed = [0, 0]  # msgOutCounter, bytesOutCounter of removed subscriptions
        self.last_active = time.monotonic()  # when it last had a user (TopicRegistry.collect_inactive)

    def is_idle(self) -> bool:
        """No producer and no subscription: nothing would notice the topic being unloaded."""
        return not self.producers and not self.subscriptions

    # producers ---------------------------------------------------------------------------------

    def add_producer(self, key: tuple[int, int], name: str, *, address: str = "", client_version: str = "") -> None:
        self.producers[key] = name
        self.publishers[key] = Publisher(key[1], name, address, client_version)

    def remove_producer(self, key: tuple[int, int]) -> None:
        self.producers.pop(key, None)
        self.publishers.pop(key, None)
        self.last_active = time.monotonic()

    # Publish ------------------------------------------------------------------------------------

    def publish(self, metadata: bytes, payload: bytes, num_messages: int,
                producer: Optional[tuple[int, int]] = None, checksum: Optional[int] = None) -> tuple[int, int]:
        self.msg_in_counter += num_messages
        self.bytes_in_counter += len(payload)
        self.entries_added_counter += 1
        now = time.monotonic()  # one clock reading for every rate this message moves
        publisher = self.publishers.get(producer) if producer is not None else None
        if publisher is not None:
            publisher.rate_in.record(num_messages, len(payload), now)
        entry = Entry(0, metadata, payload, num_messages, checksum)
        for subscription in list(self.subscriptions.values()):
            subscription.send(entry, now)
        return NON_PERSISTENT_LEDGER_ID, 0

    def record_publish_drop(self, producer: tuple[int, int], num_messages: int) -> None:
        publisher = self.publishers.get(producer)
        if publisher is not None:
            publisher.drops.record(num_messages)

    # subscriptions -----------------------------------------------------------------------------

    def subscription(self, name: str, sub_type: int, initial_earliest: bool = False) -> NonPersistentSubscription:
        """The subscription, created if needed; the initial position means nothing here (nothing is stored)."""
        existing = self.subscriptions.get(name)
        if existing is not None:
            return existing
        created = self.subscriptions[name] = NonPersistentSubscription(self, name, sub_type)
        return created

    def remove_subscription(self, name: str) -> None:
        self.last_active = time.monotonic()
        removed = self.subscriptions.pop(name, None)
        if removed is not None:
            self._out_removed[0] += removed.out.total
            self._out_removed[1] += removed.out.total_bytes

    def last_entry_id(self) -> int:
        raise NotImplementedError("getLastMessageId is not supported on non-persistent topics (Pulsar's ServerCnx.handleSend)")

    # Stats --------------------------------------------------------------------------------------

    def stats(self) -> dict:
        publishers = [p.stats() for p in self.publishers.values()]
        subscriptions = {name: s.stats() for name, s in sorted(self.subscriptions.items())}
        rate_in = sum(p["msgRateIn"] for p in publishers)
        throughput_in = sum(p["msgThroughputIn"] for p in publishers)
        return {
            "msgRateIn": rate_in, "msgThroughputIn": throughput_in,
            "msgRateOut": sum(s["msgRateOut"] for s in subscriptions.values()),
            "msgThroughputOut": sum(s["msgThroughputOut"] for s in subscriptions.values()),
            "bytesInCounter": self.bytes_in_counter, "msgInCounter": self.msg_in_counter,
            "bytesOutCounter": self._out_removed[1] + sum(s["bytesOutCounter"] for s in subscriptions.values()),
            "msgOutCounter": self._out_removed[0] + sum(s["msgOutCounter"] for s in subscriptions.values()),
            "averageMsgSize": (throughput_in / rate_in) if rate_in else 0.0,
            "msgChunkPublished": False, "storageSize": 0, "backlogSize": 0, "offloadedStorageSize": 0,
            "waitingPublishers": 0, "publishers": publishers, "subscriptions": subscriptions,
            "replication": {}, "deduplicationStatus": "Disabled",
            "msgDropRate": sum(p["msgDropRate"] for p in publishers),
        }

    def internal_stats(self) -> dict:
        # Pulsar's NonPersistentTopicStatsImpl: "only entriesAddedCounter and a cursors map with one empty entry per subscription"
        return {"entriesAddedCounter": self.entries_added_counter,
                "cursors": {name: {} for name in sorted(self.subscriptions)}}
