"""Persistent topics: an ordered log of entries, subscriptions with cursors, and dispatch.

The log lives in memory (the managed-ledger *metadata* lives in the metadata store, see core);
message data surviving a broker restart is not part of any behaviour this project specifies.

Rule 1: an entry is what one SEND carried (a single message or a whole batch); its id is
        (ledgerId, entryId) with a fixed ledger per topic and entryId counting from 0.
Rule 2: a subscription remembers a read position and the entries dispatched but not acked;
        entries go to a consumer only while it has permits (one permit per message, a batch
        costs its num_messages_in_batch), as Pulsar's dispatchers do.
Rule 3: Exclusive and Failover deliver to one active consumer (the first attached); Shared and
        Key_Shared deliver round-robin among consumers with permits.
Rule 4: when a consumer goes away, what it had unacked is delivered again to the others
        (redelivery_count + 1).
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Optional

from .rates import Rate

LEDGER_ID_BASE = 1000

SUB_EXCLUSIVE, SUB_SHARED, SUB_FAILOVER, SUB_KEY_SHARED = 0, 1, 2, 3
_ledger_ids = itertools.count(LEDGER_ID_BASE)


@dataclass
class Entry:
    entry_id: int
    metadata: bytes  # serialized MessageMetadata, forwarded as the producer wrote it
    payload: bytes
    num_messages: int
    checksum: Optional[int] = None  # the producer's CRC32C over both, forwarded too; None: it sent none


@dataclass
class Consumer:
    consumer_id: int
    name: str
    # deliver(entry_index_in_topic, entry, redelivery_count) writes a MESSAGE on the connection.
    deliver: Callable[["Consumer", int, Entry, int], None]
    permits: int = 0
    unacked: set[int] = field(default_factory=set)
    writable: Callable[[], bool] = lambda: True
    out: Rate = field(default_factory=Rate)  # messages sent to this consumer (stats, PIP-2)


class ConsumerGroup:
    """What every subscription shares, persistent or not: its consumers and the type's attach rule.

    Exclusive and Failover dispatch to one consumer (the first attached, ``exclusive_like``);
    Exclusive refuses a second consumer, the others take any number.
    """

    def __init__(self, topic, name: str, sub_type: int):
        self.topic, self.name, self.sub_type = topic, name, sub_type
        self.consumers: list[Consumer] = []
        self.exclusive_like = sub_type in (SUB_EXCLUSIVE, SUB_FAILOVER)  # a subscription keeps its type

    def add_consumer(self, consumer: Consumer) -> Optional[str]:
        """Attach; answers an error text when the subscription's type forbids it."""
        if self.sub_type == SUB_EXCLUSIVE and self.consumers:
            return "Exclusive consumer is already connected"
        self.consumers.append(consumer)
        return None


class Subscription(ConsumerGroup):
    def __init__(self, topic: "PersistentTopic", name: str, sub_type: int, start_at: int):
        super().__init__(topic, name, sub_type)
        self.read_position = start_at
        self.acked: set[int] = set()
        self.redeliver: deque[tuple[int, int]] = deque()  # (entry_id, redelivery_count)
        self._round_robin = 0

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer in self.consumers:
            self.consumers.remove(consumer)
            for entry_id in sorted(consumer.unacked):
                self.redeliver.append((entry_id, 1))
            consumer.unacked.clear()
        self.dispatch()

    def ack(self, consumer: Consumer, entry_id: int, cumulative: bool) -> None:
        ids = [i for i in consumer.unacked if i <= entry_id] if cumulative else [entry_id]
        for i in ids:
            consumer.unacked.discard(i)
            self.acked.add(i)

    def redeliver_unacked(self, consumer: Consumer, entry_ids: Optional[list[int]] = None) -> None:
        chosen = sorted(consumer.unacked if not entry_ids else set(entry_ids) & consumer.unacked)
        for entry_id in chosen:
            consumer.unacked.discard(entry_id)
            self.redeliver.append((entry_id, 1))
        self.dispatch()

    def _next_consumer(self, cost: int) -> Optional[Consumer]:
        candidates = self.consumers[:1] if self.exclusive_like else self.consumers
        for offset in range(len(candidates)):
            consumer = candidates[(self._round_robin + offset) % len(candidates)]
            if consumer.permits >= 1 and consumer.writable():
                self._round_robin = (self._round_robin + offset + 1) % max(len(candidates), 1)
                return consumer
        return None

    def dispatch(self) -> None:
        entries = self.topic.entries
        while self.consumers:
            if self.redeliver:
                entry_id, count = self.redeliver[0]
            elif self.read_position < len(entries):
                entry_id, count = self.read_position, 0
            else:
                return
            entry = entries[entry_id]
            consumer = self._next_consumer(entry.num_messages)
            if consumer is None:
                return
            if self.redeliver:
                self.redeliver.popleft()
            else:
                self.read_position += 1
            if entry_id in self.acked:
                continue
            consumer.permits -= entry.num_messages
            consumer.unacked.add(entry_id)
            consumer.deliver(consumer, entry_id, entry, count)

    def backlog(self) -> int:
        return len(self.topic.entries) - self.read_position + len(self.redeliver)


class PersistentTopic:
    def __init__(self, name: str, partition_index: int = -1):
        self.name = name
        self.partition_index = partition_index
        self.ledger_id = next(_ledger_ids)
        self.entries: list[Entry] = []
        self.subscriptions: dict[str, Subscription] = {}
        self.producers: dict[tuple[int, int], str] = {}  # (connection id, producer id) -> name
        self.msg_in_counter = 0
        self.bytes_in_counter = 0

    def add_producer(self, key: tuple[int, int], name: str, **_info) -> None:
        self.producers[key] = name

    def remove_producer(self, key: tuple[int, int]) -> None:
        self.producers.pop(key, None)

    def publish(self, metadata: bytes, payload: bytes, num_messages: int, producer=None,
                checksum: Optional[int] = None) -> tuple[int, int]:
        entry = Entry(len(self.entries), metadata, payload, num_messages, checksum)
        self.entries.append(entry)
        self.msg_in_counter += num_messages
        self.bytes_in_counter += len(payload)
        for subscription in list(self.subscriptions.values()):
            subscription.dispatch()
        return self.ledger_id, entry.entry_id

    def subscription(self, name: str, sub_type: int, initial_earliest: bool) -> Subscription:
        existing = self.subscriptions.get(name)
        if existing is not None:
            return existing
        start = 0 if initial_earliest else len(self.entries)
        created = Subscription(self, name, sub_type, start)
        self.subscriptions[name] = created
        return created

    def last_entry_id(self) -> int:
        return len(self.entries) - 1
