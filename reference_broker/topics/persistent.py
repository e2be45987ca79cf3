"""Persistent topics: an ordered log of entries, subscriptions with cursors, and dispatch.

The log lives in memory (the managed-ledger *metadata* lives in the metadata store, see core);
message data surviving a broker restart is not part of any behaviour this project specifies.

- entries (``Entry``): an entry is what one SEND carried (a single message or a whole batch); its
  id is (ledgerId, entryId) with a fixed ledger per topic and entryId counting from 0.
- permits (``Subscription.dispatch``): a subscription remembers a read position and the entries
  dispatched but not acked; entries go to a consumer only while it has permits (one permit per
  message, a batch costs its num_messages_in_batch), as Pulsar's dispatchers do.
- subscription types (``Subscription._next_consumer``): Exclusive and Failover deliver to one
  active consumer (the first attached); Shared and Key_Shared deliver round-robin among
  consumers with permits.
- redelivery (``Subscription.remove_consumer``): when a consumer goes away, what it had unacked
  is delivered again to the others (redelivery_count + 1).
- what the log keeps (``PersistentTopic.trim``): only what some subscription still needs, or
  what retention keeps (storage.py), freed in segments as ManagedLedgerImpl #internalTrimLedgers
  frees whole ledgers: entries are grouped in segments of ``managedLedgerMaxEntriesPerLedger``,
  Pulsar's ledger size (message ids keep one ledger id per topic); a segment is freed once every
  subscription's mark-delete position (the last entry up to which everything is acknowledged) is
  past its end and retention does not keep it; the current segment, like Pulsar's current ledger,
  is never freed, so a later Earliest subscription still reads it. Without subscriptions every
  full segment may go ("if (!cursors.hasDurableCursors()) slowestReaderLedgerId =
  currentLedger.getId() + 1"). A deleted or unloaded topic frees everything (``release``).
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Optional

from . import persistent_stats
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
    published_at: float = 0.0  # time.monotonic() when stored (retention and backlog age)
    offset: int = 0  # bytes stored in the topic before this entry (backlog sizes by subtraction)

    @property
    def size(self) -> int:
        return len(self.metadata) + len(self.payload)


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
        self.mark_delete = start_at - 1  # every entry up to here is acknowledged
        self.acked: set[int] = set()  # acknowledged entries after mark_delete
        self.redeliver: deque[tuple[int, int]] = deque()  # (entry_id, redelivery_count)
        self.out = Rate()  # messages dispatched (stats)
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
            if i > self.mark_delete:
                self.acked.add(i)
        self._advance_mark_delete()

    def _advance_mark_delete(self) -> None:
        moved = False
        while self.mark_delete + 1 in self.acked:
            self.mark_delete += 1
            self.acked.discard(self.mark_delete)
            moved = True
        if moved:
            self.topic.trim()

    def skip_to(self, entry_id: int) -> None:
        """Everything up to ``entry_id`` counts as acknowledged (backlog eviction); not re-read."""
        if entry_id <= self.mark_delete:
            return
        self.mark_delete = entry_id
        self.acked = {i for i in self.acked if i > entry_id}
        self.read_position = max(self.read_position, entry_id + 1)
        self.redeliver = deque(item for item in self.redeliver if item[0] > entry_id)
        self._advance_mark_delete()
        self.topic.trim()

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
        topic = self.topic
        while self.consumers:
            if self.redeliver:
                entry_id, count = self.redeliver[0]
            elif self.read_position < topic.next_entry_id:
                if self.read_position < topic.first_entry_id:  # freed while unread: evicted
                    self.read_position = topic.first_entry_id
                    continue
                entry_id, count = self.read_position, 0
            else:
                return
            entry = topic.entry(entry_id)
            consumer = self._next_consumer(entry.num_messages) if entry is not None else None
            if consumer is None and entry is not None:
                return
            if self.redeliver:
                self.redeliver.popleft()
            else:
                self.read_position += 1
            if entry is None or entry_id <= self.mark_delete or entry_id in self.acked:
                continue
            consumer.permits -= entry.num_messages
            consumer.unacked.add(entry_id)
            consumer.out.record(entry.num_messages, len(entry.payload))
            self.out.record(entry.num_messages, len(entry.payload))
            consumer.deliver(consumer, entry_id, entry, count)

    def backlog(self) -> int:
        return self.topic.next_entry_id - self.read_position + len(self.redeliver)

    def backlog_from(self) -> int:
        """The first entry this subscription still needs (the entry after its mark-delete position)."""
        return self.mark_delete + 1


class PersistentTopic:
    def __init__(self, name: str, partition_index: int = -1, policy=None):
        self.name = name
        self.partition_index = partition_index
        self.ledger_id = next(_ledger_ids)
        # What the log keeps: the stored entries, entry ids first_entry_id .. next_entry_id - 1.
        self.entries: deque[Entry] = deque()
        self.first_entry_id = 0
        self.stored_bytes = 0  # bytes of every entry ever stored: Entry.offset of the next one
        self.policy = policy  # storage.StoragePolicy: retention and backlog quota; None keeps all
        self.subscriptions: dict[str, Subscription] = {}
        self.producers: dict[tuple[int, int], str] = {}  # (connection id, producer id) -> name
        self.msg_in_counter = 0
        self.bytes_in_counter = 0
        self.rate_in = Rate()
        self.removed_out = [0, 0]  # msgOutCounter, bytesOutCounter of removed subscriptions

    @property
    def next_entry_id(self) -> int:
        return self.first_entry_id + len(self.entries)

    def entry(self, entry_id: int) -> Optional[Entry]:
        index = entry_id - self.first_entry_id
        return self.entries[index] if 0 <= index < len(self.entries) else None

    def add_producer(self, key: tuple[int, int], name: str, **_info) -> None:
        self.producers[key] = name

    def remove_producer(self, key: tuple[int, int]) -> None:
        self.producers.pop(key, None)

    def publish(self, metadata: bytes, payload: bytes, num_messages: int, producer=None,
                checksum: Optional[int] = None) -> tuple[int, int]:
        entry = Entry(self.next_entry_id, metadata, payload, num_messages, checksum, time.monotonic(),
                      self.stored_bytes)
        self.entries.append(entry)
        self.stored_bytes += entry.size
        self.msg_in_counter += num_messages
        self.bytes_in_counter += len(payload)
        self.rate_in.record(num_messages, len(payload))
        for subscription in list(self.subscriptions.values()):
            subscription.dispatch()
        if not self.subscriptions and self.policy is not None and entry.entry_id % self.policy.segment_entries == 0:
            self.trim()  # a segment just filled up
        return self.ledger_id, entry.entry_id

    def subscription(self, name: str, sub_type: int, initial_earliest: bool) -> Subscription:
        existing = self.subscriptions.get(name)
        if existing is not None:
            return existing
        start = self.first_entry_id if initial_earliest else self.next_entry_id
        created = Subscription(self, name, sub_type, start)
        self.subscriptions[name] = created
        return created

    def remove_subscription(self, name: str) -> None:
        removed = self.subscriptions.pop(name, None)
        if removed is not None:
            self.removed_out[0] += removed.out.total
            self.removed_out[1] += removed.out.total_bytes
        self.trim()

    def stats(self) -> dict:
        return persistent_stats.topic_stats(self)

    def internal_stats(self) -> dict:
        return persistent_stats.internal_stats(self)

    def last_entry_id(self) -> int:
        return self.next_entry_id - 1

    # What the log keeps ------------------------------------------------------------------------

    def needed_from(self) -> int:
        """The first entry some subscription still needs (the next one when there is none)."""
        if self.subscriptions:
            return min(s.backlog_from() for s in self.subscriptions.values())
        return self.next_entry_id

    def trim(self, now: Optional[float] = None) -> int:
        """Free the segments no subscription needs and retention does not keep; how many entries were freed."""
        if self.policy is None:
            return 0
        segment = self.policy.segment_entries
        limit = self.needed_from() // segment * segment  # whole segments only; never the current one
        freed = 0
        now = time.monotonic() if now is None else now
        while self.entries and self.first_entry_id < limit:
            oldest = self.entries[0]
            if self.policy.retains(oldest, self.stored_bytes - self.entries[0].offset, now):
                break
            self.entries.popleft()
            self.first_entry_id += 1
            freed += 1
        return freed

    def backlog_size(self) -> int:
        """Bytes stored from the slowest subscription's first needed entry on (Pulsar's backlogSize)."""
        if not self.subscriptions:
            return 0
        first = self.entry(max(self.needed_from(), self.first_entry_id))
        return self.stored_bytes - first.offset if first is not None else 0

    def storage_size(self) -> int:
        return self.stored_bytes - self.entries[0].offset if self.entries else 0

    def oldest_backlog_entry(self) -> Optional[Entry]:
        return self.entry(max(self.needed_from(), self.first_entry_id)) if self.subscriptions else None

    def release(self) -> None:
        """Free the whole log (the topic is deleted or unloaded)."""
        self.first_entry_id = self.next_entry_id
        self.entries.clear()
        for subscription in self.subscriptions.values():
            subscription.redeliver.clear()
            subscription.acked.clear()
