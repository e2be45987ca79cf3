"""What a persistent topic keeps (``PersistentTopic.trim``, topics/storage.py): acknowledged entries
are freed unless retention keeps them, a topic without subscriptions keeps its current ledger, a deleted
topic frees everything, and the backlog quota refuses producers with Pulsar's error or evicts."""

import pytest

from pulsar_codec import events as ev
from pulsar_codec import pulsar_api_pb2 as pb
from reference_broker.config import BrokerConfig
from reference_broker.topics import Consumer, PersistentTopic, TopicRegistry
from reference_broker.topics.storage import QUOTA_EXCEEDED_MESSAGE, StoragePolicy

from .in_process import run

KIB = b"x" * 1024
NAME = "persistent://public/default/t"


def topic(**config) -> PersistentTopic:
    """A topic freed entry by entry (segments of one entry) unless the test says otherwise."""
    config.setdefault("managedLedgerMaxEntriesPerLedger", 1)
    return PersistentTopic(NAME, policy=StoragePolicy(BrokerConfig(**config)))


def consume(subscription, permits=10**6) -> Consumer:
    """A consumer that takes everything; the entry ids it got are in ``delivered``."""
    consumer = Consumer(1, "c", deliver=lambda c, entry_id, entry, count: consumer.delivered.append(entry_id))
    consumer.delivered = []
    consumer.permits = permits
    subscription.add_consumer(consumer)
    subscription.dispatch()
    return consumer


def publish(live: PersistentTopic, count: int) -> None:
    for _ in range(count):
        live.publish(b"m", KIB, 1)


def test_acknowledged_entries_are_freed_and_individual_acks_wait_for_the_gap():
    live = topic()
    subscription = live.subscription("s", 0, initial_earliest=True)
    consumer = consume(subscription)
    publish(live, 5)
    subscription.ack(consumer, 1, cumulative=False)
    assert (live.first_entry_id, len(live.entries)) == (0, 5)  # entry 0 is still unacknowledged
    subscription.ack(consumer, 0, cumulative=False)
    assert (live.first_entry_id, len(live.entries), subscription.acked) == (2, 3, set())
    subscription.ack(consumer, 4, cumulative=True)
    assert (len(live.entries), live.storage_size(), live.last_entry_id()) == (0, 0, 4)


def test_the_slowest_subscription_keeps_what_it_needs():
    live = topic()
    fast = live.subscription("fast", 0, True)
    slow = live.subscription("slow", 0, True)
    publish(live, 4)
    fast.ack(consume(fast), 3, cumulative=True)
    assert len(live.entries) == 4 and live.backlog_size() == 4 * (1 + 1024)
    slow.ack(consume(slow), 1, cumulative=True)
    assert live.first_entry_id == 2
    live.remove_subscription("slow")
    assert len(live.entries) == 0


@pytest.mark.parametrize("minutes, size_mb, kept", [(0, 0, 0), (-1, -1, 10), (-1, 0, 0), (0, -1, 0), (10, 1, 10)])
def test_retention_keeps_acknowledged_entries_only_within_both_limits(minutes, size_mb, kept):
    live = topic(defaultRetentionTimeInMinutes=minutes, defaultRetentionSizeInMB=size_mb)
    subscription = live.subscription("s", 0, True)
    publish(live, 10)
    subscription.ack(consume(subscription), 9, cumulative=True)
    assert len(live.entries) == kept
    if kept:
        late = live.subscription("late", 0, initial_earliest=True)  # retention serves a late Earliest reader
        assert len(consume(late).delivered) == kept


def test_retention_by_size_frees_the_oldest_beyond_the_quota_and_by_time_once_expired():
    live = topic(defaultRetentionTimeInMinutes=1, defaultRetentionSizeInMB=1)
    subscription = live.subscription("s", 0, True)
    publish(live, 1500)  # 1.5 MiB
    subscription.ack(consume(subscription), 1499, cumulative=True)
    assert 2**20 <= live.storage_size() < 2**20 + 1025  # "totalSizeOfML - sizeToDelete >= retention"
    kept = len(live.entries)
    assert live.trim(now=live.entries[-1].published_at + 61) == kept > 0
    assert len(live.entries) == 0


def test_a_topic_without_subscriptions_keeps_its_current_segment_for_a_later_earliest_reader():
    live = topic(managedLedgerMaxEntriesPerLedger=100)
    publish(live, 250)
    assert (live.first_entry_id, len(live.entries)) == (200, 50)
    reader = live.subscription("r", 0, initial_earliest=True)
    assert consume(reader).delivered == list(range(200, 250))


def test_acknowledged_entries_are_freed_a_whole_segment_at_a_time():
    live = topic(managedLedgerMaxEntriesPerLedger=100)
    subscription = live.subscription("s", 0, True)
    publish(live, 250)
    consumer = consume(subscription)
    subscription.ack(consumer, 149, cumulative=True)
    assert live.first_entry_id == 100
    subscription.ack(consumer, 249, cumulative=True)
    assert (live.first_entry_id, len(live.entries)) == (200, 50)  # the current segment stays


def test_an_unloaded_topic_frees_its_whole_log():
    registry = TopicRegistry(StoragePolicy(BrokerConfig(managedLedgerMaxEntriesPerLedger=10)))
    from pulsar_naming.names import TopicName
    live = registry.get_or_load(TopicName.parse(NAME))
    live.subscription("s", 0, True)
    publish(live, 100)
    registry.unload(NAME)
    assert len(live.entries) == 0 and live.storage_size() == 0


@pytest.mark.parametrize("policy, error", [("producer_request_hold", "ProducerBlockedQuotaExceededError"),
                                           ("producer_exception", "ProducerBlockedQuotaExceededException")])
def test_a_producer_is_refused_with_pulsars_error_while_the_backlog_is_over_quota(policy, error):
    def test(core, client):
        frames = client.conn.send(ev.Subscribe(topic=NAME, subscription="s", subType=0, consumer_id=1,
                                               request_id=2))
        frames += client.conn.send(ev.Producer(topic=NAME, producer_id=1, request_id=3))
        frames += b"".join(client.conn.send(ev.Send(producer_id=1, sequence_id=i, num_messages=1,
                                                    metadata=pb.MessageMetadata(producer_name="p", sequence_id=i,
                                                                                publish_time=1),
                                                    payload=KIB)) for i in range(3))
        client.exchange(frames)
        [refusal] = client.exchange(client.conn.send(ev.Producer(topic=NAME, producer_id=2, request_id=4)))
        assert (pb.ServerError.Name(refusal.error), refusal.message) == (error, QUOTA_EXCEEDED_MESSAGE)
        assert QUOTA_EXCEEDED_MESSAGE.endswith("Cannot create producer on topic with backlog quota exceeded")
    run(test, backlogQuotaDefaultLimitBytes=2048, backlogQuotaDefaultRetentionPolicy=policy)


def test_the_quota_check_disconnects_producers_or_evicts_the_slowest_backlog():
    live = topic(backlogQuotaDefaultLimitBytes=5000, backlogQuotaDefaultRetentionPolicy="consumer_backlog_eviction")
    subscription = live.subscription("s", 0, True)
    publish(live, 10)
    assert live.policy.enforce(live, disconnect_producers=None)
    assert live.backlog_size() < 5000 and subscription.backlog_from() == live.first_entry_id == 6
    assert consume(subscription).delivered == [6, 7, 8, 9]
    held = topic(backlogQuotaDefaultLimitBytes=5000, backlogQuotaDefaultLimitSecond=-1)
    held.subscription("s", 0, True)
    publish(held, 10)
    disconnected = []
    assert held.policy.enforce(held, disconnected.append) and disconnected == [held]
    assert len(held.entries) == 10  # the backlog stays; only the producers go


def test_the_time_quota_counts_the_oldest_unacknowledged_entry():
    live = topic(backlogQuotaDefaultLimitSecond=30)
    live.subscription("s", 0, True)
    publish(live, 2)
    assert not live.policy.quota_exceeded(live)
    assert live.policy.quota_exceeded(live, now=live.entries[0].published_at + 31)


@pytest.mark.slow
def test_broker_memory_stays_flat_through_acknowledged_consumption_and_comes_back_after_delete():
    """100,000 messages of 1 KiB through one subscription that acknowledges as it goes, then 60,000
    left unconsumed and the topic deleted; the broker's growth at each point is printed."""
    import httpx
    import pulsar

    from .broker_process import QUIET, start, stop
    from .probe import mib, rss_bytes

    # Segments of 5,000 entries (Pulsar's ledger size key), so what is kept is at most one segment.
    process, broker_url, web_url = start("--set", "managedLedgerMaxEntriesPerLedger=5000")
    client = pulsar.Client(broker_url, operation_timeout_seconds=30, logger=QUIET)
    try:
        consumer = client.subscribe("flat", "s", consumer_type=pulsar.ConsumerType.Exclusive, receiver_queue_size=2000)
        producer = client.create_producer("flat", batching_enabled=False, max_pending_messages=5000,
                                          block_if_queue_full=True)
        baseline = rss_bytes(process.pid)
        for _ in range(10):
            for _ in range(10_000):
                producer.send_async(KIB, None)
            producer.flush()
            for _ in range(10_000):
                consumer.acknowledge(consumer.receive(timeout_millis=30_000))
        after_consumption = rss_bytes(process.pid) - baseline
        consumer.close()
        for _ in range(6):
            for _ in range(10_000):
                producer.send_async(KIB, None)
            producer.flush()
        with_backlog = rss_bytes(process.pid) - baseline
        producer.close()
        httpx.delete(f"{web_url}/admin/v2/persistent/public/default/flat", params={"force": "true"},
                     timeout=30).raise_for_status()
        after_delete = rss_bytes(process.pid) - baseline
        print(f"\npersistent topic, broker growth: after 100,000 acknowledged messages of 1 KiB {mib(after_consumption)}; "
              f"with 60,000 unconsumed {mib(with_backlog)}; after delete {mib(after_delete)}")
        assert after_consumption < 40 * 2**20
        assert with_backlog > 50 * 2**20  # a backlog is kept ...
        assert after_delete < 40 * 2**20  # ... and given back
    finally:
        client.close()
        stop(process)
