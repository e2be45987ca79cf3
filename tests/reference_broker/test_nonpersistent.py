"""PIP-2 on the reference broker: the official client and raw frames against a real broker process,
plus the dispatcher and rate rules that no socket test can reach deterministically (writability).

Rule of these tests: every wait is bounded, and a drop is provoked by construction (one write, a
small limit, few permits), never by racing threads.
"""


import httpx
import pulsar
import pytest
from hypothesis import given, settings, strategies as st

from pulsar_codec import CLOSED, events as ev
from pulsar_codec import pulsar_api_pb2 as pb
from reference_broker.topics import Consumer, NonPersistentTopic
from reference_broker.topics.rates import RATE_WINDOW_S, Rate

from .broker_process import QUIET, running_broker
from .wire_client import raw_connect, read_event, still_serving as _still_serving

U64 = 2**64 - 1
NS = "public/default"


# -- helpers ---------------------------------------------------------------------------------------






def read_until(sock, conn, done, collected):
    while True:
        event = read_event(sock, conn)
        collected.append(event)
        if event is CLOSED or done(event):
            return event


def request(sock, conn, event):
    sock.sendall(conn.send(event))
    return read_event(sock, conn)


def send_event(producer_id, name, sequence_id):
    metadata = pb.MessageMetadata(producer_name=name, sequence_id=sequence_id, publish_time=1)
    return ev.Send(producer_id=producer_id, sequence_id=sequence_id, metadata=metadata,
                   payload=f"m{sequence_id}".encode())


def admin(broker, path, **params):
    return httpx.get(broker[1] + path, params=params, timeout=5)




@pytest.fixture(scope="module")
def limit0():
    with running_broker("--set", "maxConcurrentNonPersistentMessagePerConnection=0") as urls:
        yield urls


def drain(consumer, timeout_ms=300):
    got = []
    while True:
        try:
            message = consumer.receive(timeout_millis=timeout_ms)
        except pulsar.Timeout:
            return got
        got.append(message.data().decode())


# -- the official client ----------------------------------------------------------------------------


@pytest.mark.slow
def test_client_connected_consumer_gets_all_late_one_gets_nothing_ids_are_zero(client):
    topic = f"non-persistent://{NS}/client-basic"
    producer = client.create_producer(topic, batching_enabled=False)
    early = producer.send(b"early")
    consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    ids = [producer.send(f"m{i}".encode()) for i in range(5)]
    client.get_topic_partitions(topic)  # barrier: same connection, answered after the dispatch
    assert drain(consumer) == [f"m{i}" for i in range(5)]
    assert {(m.ledger_id(), m.entry_id()) for m in [early, *ids]} == {(0, 0)}


@pytest.mark.slow
def test_client_receiver_queue_maxes_out(client):
    topic = f"non-persistent://{NS}/client-queue"
    consumer = client.subscribe(topic, "s", receiver_queue_size=10)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(50):
        producer.send(f"m{i}".encode())
    client.get_topic_partitions(topic)
    assert drain(consumer) == [f"m{i}" for i in range(10)]


@pytest.mark.slow
def test_client_batches_cost_their_message_count_and_arrive_whole(client):
    topic = f"non-persistent://{NS}/client-batch"
    consumer = client.subscribe(topic, "s", receiver_queue_size=100)
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=10,
                                      batching_max_publish_delay_ms=1000)
    for i in range(10):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    client.get_topic_partitions(topic)
    assert drain(consumer) == [f"m{i}" for i in range(10)]


@pytest.mark.slow
def test_client_with_limit_0_never_fails_a_send(limit0):
    client = pulsar.Client(limit0[0], operation_timeout_seconds=5, logger=QUIET)
    try:
        topic = f"non-persistent://{NS}/client-limit0"
        consumer = client.subscribe(topic, "s", receiver_queue_size=100)
        producer = client.create_producer(topic, batching_enabled=False)
        results = []
        for i in range(20):
            producer.send_async(f"m{i}".encode(), lambda res, mid: results.append((res, mid.entry_id())))
        producer.flush()
        client.get_topic_partitions(topic)
        assert len(results) == 20 and all(res == pulsar.Result.Ok for res, _ in results)
        accepted = sorted(i for i, (_, entry) in enumerate(results) if entry == 0)
        assert {entry for _, entry in results} <= {0, -1}
        assert drain(consumer) == [f"m{i}" for i in accepted]  # exactly the accepted ones, in order
    finally:
        client.close()


# -- raw frames: the publish side --------------------------------------------------------------------


def test_one_write_with_limit_0_accepts_the_first_and_drops_the_rest_as_uint64(limit0):
    sock, conn = raw_connect(limit0[0])
    topic = f"non-persistent://{NS}/wire-limit0"
    assert isinstance(request(sock, conn, ev.Subscribe(topic=topic, subscription="s", subType=0,
                                                       consumer_id=1, request_id=1)), ev.Success)
    sock.sendall(conn.send(ev.Flow(consumer_id=1, messagePermits=100)))
    producer = request(sock, conn, ev.Producer(topic=topic, producer_id=1, request_id=2))
    sock.sendall(b"".join(conn.send(send_event(1, producer.producer_name, i)) for i in range(10)))
    seen = []
    read_until(sock, conn, lambda e: sum(isinstance(x, ev.SendReceipt) for x in seen) == 10, seen)
    receipts = {e.sequence_id: (e.message_id.ledgerId, e.message_id.entryId) for e in seen
                if isinstance(e, ev.SendReceipt)}
    assert receipts[0] == (0, 0)
    assert all(receipts[i] == (U64, U64) for i in range(1, 10))
    assert [e.payload for e in seen if isinstance(e, ev.Message)] == [b"m0"]
    assert not any(isinstance(e, ev.SendError) for e in seen)
    stats = admin(limit0, f"/admin/v2/non-persistent/{NS}/wire-limit0/stats").json()
    assert stats["publishers"][0]["msgDropRate"] == pytest.approx(9 / RATE_WINDOW_S)
    assert stats["msgInCounter"] == 1
    sock.close()


def test_awaited_sends_with_limit_0_are_all_accepted(limit0):
    sock, conn = raw_connect(limit0[0])
    producer = request(sock, conn, ev.Producer(topic=f"non-persistent://{NS}/wire-awaited", producer_id=1,
                                               request_id=1))
    for i in range(3):
        receipt = request(sock, conn, send_event(1, producer.producer_name, i))
        assert (receipt.message_id.ledgerId, receipt.message_id.entryId) == (0, 0)
    sock.close()


# -- raw frames: the dispatch side and stats ----------------------------------------------------------


def test_dispatch_drops_are_never_queued_and_show_in_stats(broker):
    sock, conn = raw_connect(broker[0])
    topic = f"non-persistent://{NS}/wire-dispatch"
    request(sock, conn, ev.Subscribe(topic=topic, subscription="few", subType=0, consumer_id=1, request_id=1))
    request(sock, conn, ev.Subscribe(topic=topic, subscription="none", subType=1, consumer_id=2, request_id=2))
    sock.sendall(conn.send(ev.Flow(consumer_id=1, messagePermits=2)))
    producer = request(sock, conn, ev.Producer(topic=topic, producer_id=1, request_id=3))
    sock.sendall(b"".join(conn.send(send_event(1, producer.producer_name, i)) for i in range(5)))
    sock.sendall(conn.send(ev.Flow(consumer_id=1, messagePermits=10)) + conn.send(ev.Flow(consumer_id=2, messagePermits=10)))
    sock.sendall(conn.send(ev.Ping()))
    seen = []
    read_until(sock, conn, lambda e: isinstance(e, ev.Pong), seen)
    messages = [(e.consumer_id, e.payload) for e in seen if isinstance(e, ev.Message)]
    assert messages == [(1, b"m0"), (1, b"m1")]
    assert {(e.message_id.ledgerId, e.message_id.entryId) for e in seen if isinstance(e, ev.Message)} == {(0, 0)}
    stats = admin(broker, f"/admin/v2/non-persistent/{NS}/wire-dispatch/stats").json()
    subs = stats["subscriptions"]
    assert subs["few"]["msgDropRate"] == pytest.approx(3 / RATE_WINDOW_S) and subs["few"]["msgOutCounter"] == 2
    assert subs["none"]["msgDropRate"] == pytest.approx(5 / RATE_WINDOW_S) and subs["none"]["type"] == "Shared"
    assert stats["publishers"][0]["msgDropRate"] == 0.0 and stats["msgInCounter"] == 5
    assert stats["msgOutCounter"] == 2 and stats["replication"] == {}
    internal = admin(broker, f"/admin/v2/non-persistent/{NS}/wire-dispatch/internalStats").json()
    assert internal == {"entriesAddedCounter": 5, "cursors": {"few": {}, "none": {}}}
    listed = httpx.get(f"{broker[1]}/admin/v2/non-persistent/{NS}", timeout=5).json()
    assert topic in listed
    # counters survive the consumers and the producer (testAccumulativeStats); subscriptions go
    sock.close()
    for _ in range(50):
        stats = admin(broker, f"/admin/v2/non-persistent/{NS}/wire-dispatch/stats").json()
        if not stats["publishers"] and not stats["subscriptions"]:
            break
    assert (stats["msgInCounter"], stats["msgOutCounter"], stats["subscriptions"]) == (5, 2, {})


def test_stats_of_an_unknown_topic_is_404_and_partitioned_stats_sum(broker):
    assert admin(broker, f"/admin/v2/non-persistent/{NS}/never-used/stats").status_code == 404
    assert httpx.put(f"{broker[1]}/admin/v2/non-persistent/{NS}/pstats/partitions", json=2, timeout=5).status_code == 204
    sock, conn = raw_connect(broker[0])
    for index, count in ((0, 3), (1, 2)):
        producer = request(sock, conn, ev.Producer(topic=f"non-persistent://{NS}/pstats-partition-{index}",
                                                   producer_id=index + 1, request_id=index + 1))
        for i in range(count):
            request(sock, conn, send_event(index + 1, producer.producer_name, i))
    body = admin(broker, f"/admin/v2/non-persistent/{NS}/pstats/partitioned-stats").json()
    assert body["metadata"] == {"partitions": 2} and body["msgInCounter"] == 5
    assert len(body["partitions"]) == 2 and len(body["publishers"]) == 2
    body = admin(broker, f"/admin/v2/non-persistent/{NS}/pstats/partitioned-stats", perPartition="false").json()
    assert "partitions" not in body
    sock.close()


# -- bad input ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("permits", [0, 0xFFFFFFFF])
def test_flow_with_non_positive_permits_closes_the_connection(broker, permits):
    sock, conn = raw_connect(broker[0])
    request(sock, conn, ev.Subscribe(topic=f"non-persistent://{NS}/bad-flow", subscription=f"s{permits}",
                                     subType=0, consumer_id=1, request_id=1))
    sock.sendall(conn.send(ev.Flow(consumer_id=1, messagePermits=permits)))
    error = read_event(sock, conn)
    assert isinstance(error, ev.Error) and "permits must be > 0" in error.message
    assert read_event(sock, conn) is CLOSED
    assert _still_serving(broker[0])


def test_send_after_close_producer_closes_the_connection(broker):
    sock, conn = raw_connect(broker[0])
    producer = request(sock, conn, ev.Producer(topic=f"non-persistent://{NS}/bad-send", producer_id=1, request_id=1))
    assert isinstance(request(sock, conn, ev.CloseProducer(producer_id=1, request_id=2)), ev.Success)
    answer = request(sock, conn, send_event(1, producer.producer_name, 0))
    assert isinstance(answer, ev.SendError) and answer.error == pb.NotAllowedError
    assert read_event(sock, conn) is CLOSED
    assert _still_serving(broker[0])


def test_subscribe_with_unknown_sub_type_closes_the_connection(broker):
    from conformance.drivers.wire_pip2 import _subscribe_with_sub_type

    sock, conn = raw_connect(broker[0])
    sock.sendall(_subscribe_with_sub_type(f"non-persistent://{NS}/bad-sub", 1, 9, 7))
    error = read_event(sock, conn)
    assert isinstance(error, ev.Error) and error.request_id == 9 and "subType" in error.message
    assert read_event(sock, conn) is CLOSED
    assert _still_serving(broker[0])


# -- isolation ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("disabled, refused, served", [
    ("enableNonPersistentTopics", "non-persistent", "persistent"),
    ("enablePersistentTopics", "persistent", "non-persistent"),
])
def test_a_disabled_domain_is_refused_and_the_other_served(disabled, refused, served):
    with running_broker("--set", f"{disabled}=false") as urls:
        sock, conn = raw_connect(urls[0])
        answer = request(sock, conn, ev.Producer(topic=f"{refused}://{NS}/iso", producer_id=1, request_id=1))
        assert isinstance(answer, ev.Error) and answer.error == pb.NotAllowedError
        assert answer.message == "Broker is unable to load persistent topic"
        lookup = request(sock, conn, ev.Lookup(topic=f"{refused}://{NS}/iso", request_id=2))
        assert lookup.response == pb.CommandLookupTopicResponse.Connect  # a standalone still owns the bundle
        ok = request(sock, conn, ev.Producer(topic=f"{served}://{NS}/iso", producer_id=2, request_id=3))
        assert isinstance(ok, ev.ProducerSuccess)
        sock.close()
        rest = httpx.get(f"{urls[1]}/lookup/v2/topic/{refused}/{NS}/iso", timeout=5)
        assert rest.status_code == 200


# -- rules no socket test reaches deterministically -----------------------------------------------------


def _consumer(permits, writable=True, sink=None):
    return Consumer(1, "c", deliver=lambda c, entry_id, entry, n: sink.append(entry.payload) if sink is not None else None,
                    permits=permits, writable=lambda: writable)


def test_a_consumer_whose_channel_is_not_writable_loses_the_message():
    topic = NonPersistentTopic("non-persistent://public/default/w")
    sink = []
    subscription = topic.subscription("s", 0)
    subscription.add_consumer(_consumer(10, writable=False, sink=sink))
    topic.publish(b"", b"m0", 1)
    assert sink == [] and subscription.drops.total == 1
    subscription.consumers[0].writable = lambda: True
    subscription.dispatch()  # a writable channel later brings nothing back
    topic.publish(b"", b"m1", 1)
    assert sink == [b"m1"]


def test_shared_round_robins_over_consumers_with_permits_and_batches_cost_their_count():
    topic = NonPersistentTopic("non-persistent://public/default/rr")
    a, b = [], []
    subscription = topic.subscription("s", 1)
    subscription.add_consumer(_consumer(1, sink=a))
    subscription.add_consumer(_consumer(5, sink=b))
    for i in range(4):
        topic.publish(b"", f"m{i}".encode(), 1)
    assert len(a) + len(b) == 4 and len(a) == 1
    topic.publish(b"", b"batch", 10)  # total permits 2 > 0: sent, permits go negative
    assert subscription.drops.total == 0
    topic.publish(b"", b"late", 1)
    assert subscription.drops.total == 1


def test_rate_window_is_sixty_seconds_sliding():
    now = [1000.0]
    rate = Rate(clock=lambda: now[0])
    rate.record(6, 60)
    assert rate.rate() == pytest.approx(6 / 60) and rate.throughput() == pytest.approx(1.0)
    now[0] += 59.5
    assert rate.rate() > 0
    now[0] += 1.0
    assert rate.rate() == 0.0 and rate.total == 6


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["record", "record at", "read"]),
                          st.floats(min_value=0, max_value=90), st.integers(min_value=0, max_value=5)),
                max_size=40))
def test_rate_reads_what_a_list_of_every_event_would(steps):
    """``Rate``'s window against the plainest oracle: every event kept with its second, the rate the sum of
    those in the last 60 seconds over 60, whatever the order of records, reads and clock steps."""
    now = [1000.0]
    rate, events = Rate(clock=lambda: now[0]), []
    for action, step, count in steps + [("read", 0.0, 0)]:
        now[0] += step
        if action == "record":
            rate.record(count, 10 * count)
        elif action == "record at":  # the caller's own reading, as NonPersistentTopic.publish passes
            rate.record(count, 10 * count, now[0])
        if action != "read":
            events.append((int(now[0]), count))
            continue  # (a read prunes: records are also checked without one in between)
        in_window = [n for second, n in events if second > int(now[0]) - 60]
        assert rate.rate() == pytest.approx(sum(in_window) / 60)
        assert rate.throughput() == pytest.approx(10 * sum(in_window) / 60)
        assert rate.total == sum(n for _, n in events)


# -- inactive topics (TopicRegistry.collect_inactive) ------------------------------------------------


def test_registry_collects_only_idle_non_persistent_topics_after_a_whole_period():
    from pulsar_naming.names import TopicName
    from reference_broker.topics.registry import TopicRegistry

    registry = TopicRegistry()
    idle = registry.get_or_load(TopicName.parse("non-persistent://public/default/idle"))
    used = registry.get_or_load(TopicName.parse("non-persistent://public/default/used"))
    registry.get_or_load(TopicName.parse("persistent://public/default/kept"))
    used.add_producer((1, 1), "p")
    start = idle.last_active
    assert registry.collect_inactive(max_idle=60, now=start + 59) == []  # not a whole period yet
    assert registry.collect_inactive(max_idle=60, now=start + 60) == ["non-persistent://public/default/idle"]
    used.remove_producer((1, 1))  # idle from now on: a period starts again
    assert registry.collect_inactive(max_idle=60, now=used.last_active + 30) == []
    assert registry.collect_inactive(max_idle=60, now=used.last_active + 60) == ["non-persistent://public/default/used"]
    assert registry.names() == ["persistent://public/default/kept"]


@pytest.mark.slow
def test_an_unused_non_persistent_topic_stops_being_listed_and_its_stats_are_gone():
    import time

    with running_broker("--set", "brokerDeleteInactiveTopicsFrequencySeconds=1") as urls:
        client = pulsar.Client(urls[0], operation_timeout_seconds=5, logger=QUIET)
        try:
            topic = "non-persistent://public/default/np-gc"
            producer = client.create_producer(topic)
            listing = urls[1] + "/admin/v2/non-persistent/public/default"
            assert topic in httpx.get(listing, timeout=5).json()
            time.sleep(2.2)  # a producer keeps it loaded through whole periods
            assert topic in httpx.get(listing, timeout=5).json()
            producer.close()
            deadline = time.monotonic() + 5  # bounded: at most two periods after the close
            while topic in httpx.get(listing, timeout=5).json() and time.monotonic() < deadline:
                time.sleep(0.2)
            assert topic not in httpx.get(listing, timeout=5).json()
            stats = httpx.get(urls[1] + "/admin/v2/non-persistent/public/default/np-gc/stats", timeout=5)
            assert stats.status_code == 404
        finally:
            client.close()
