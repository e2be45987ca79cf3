"""PIP-2 driver operations: conformance/drivers/pubsub.py, wire_pip2.py and the REST stats views.

The wire driver runs against fake codec servers that behave in one chosen way each; the official
client and the real broker are exercised in tests/reference_broker/test_nonpersistent.py.
"""

import httpx
import pytest

from conformance.drivers import wire_pip2
from conformance.drivers.pubsub import U64_MINUS_ONE, message_index, receipt_kind, summarise
from conformance.drivers.rest import (
    RestDriver, fixed_values, merge_detail_views, missing_fields, sign, stats_detail_view, topic_stats_view,
)
from conformance.drivers.wire import WireDriver
from conformance.errors import Indefinite
from model import ops
from model.outcomes import (
    ACCEPTED, DROPPED, FALSE, FIXED_STATS_FIELDS, MISSING, POSITIVE, STORED, TOPIC_STATS_FIELDS, TRUE, ZERO,
    ConnectionClosed, Done, InternalStatsView, PartitionedStatsView, PubSubBounds, PubSubResult, RestError, ServerError, TopicStatsView,
    StatsDetailView, TopicLoaded,
)
from pulsar_codec import Connection, Role, events
from pulsar_codec import pulsar_api_pb2 as pb
from tests.conformance.helpers import CLOSE, SILENCE, FakePulsarServer, claiming

NP = "non-persistent://public/c1/t"
P = "persistent://public/c1/t"


# -- pubsub.py --------------------------------------------------------------------------------------


def test_receipt_kinds_per_domain():
    assert receipt_kind(NP, 0, 0) == ACCEPTED
    assert receipt_kind(NP, U64_MINUS_ONE, U64_MINUS_ONE) == DROPPED  # the wire's uint64
    assert receipt_kind(NP, -1, -1) == DROPPED  # the client's int64
    assert receipt_kind(NP, 7, 3) == "7:3"
    assert receipt_kind(P, 0, 0) == STORED and receipt_kind(P, 1000, 4) == STORED
    assert receipt_kind(P, -1, -1) == DROPPED


def test_message_index_marks_foreign_payloads():
    assert message_index(b"m12") == 12
    assert message_index(b"hello") == -1


def test_summarise_exact_merges_consumers_and_sees_disorder():
    op = ops.PubSub(NP, (("s", "Shared", 5), ("s", "Shared", 5)), (4,))
    assert summarise(op, [ACCEPTED] * 4, {"s": [[0, 2], [1, 3]]}) == PubSubResult(
        ((ACCEPTED, 4),), (("s", ("m0..m3",)),), True)
    assert summarise(op, [ACCEPTED] * 4, {"s": [[2, 0], [1, 3]]}).in_order is False
    assert summarise(op, [ACCEPTED] * 4, {"s": [[0, 1, 1], [2, 3]]}).delivered == (("s", ("m0..m1", "m1..m3")),)


def test_summarise_bounds_judges_only_timing_free_facts():
    op = ops.PubSub(NP, (("s", "Exclusive", 20),), (4,), view="bounds")
    receipts = [ACCEPTED, ACCEPTED, DROPPED, ACCEPTED]
    assert summarise(op, receipts, {"s": [[0, 1, 3]]}) == PubSubBounds(0, True, True, True)
    assert summarise(op, receipts, {"s": [[0, 1]]}).delivered_accepted is False
    assert summarise(op, ["send-error:NotAllowedError"] + receipts[1:], {"s": [[1, 3]]}) == PubSubBounds(
        1, False, False, True)


# -- wire driver against fakes ----------------------------------------------------------------------


class NonPersistentFake:
    """A tiny non-persistent broker: receipts (0,0) or (-1,-1) past ``limit`` per read, dispatch on permits."""

    def __init__(self, limit=1000):
        self.limit = limit
        self.permits = {}
        self.consumers = []
        self.sends = 0

    def __call__(self, event):
        if isinstance(event, events.Producer):
            return [events.ProducerSuccess(request_id=event.request_id, producer_name="fake")]
        if isinstance(event, events.Subscribe):
            self.permits[event.consumer_id] = 0
            self.consumers.append(event.consumer_id)
            return [events.Success(request_id=event.request_id)]
        if isinstance(event, events.Flow):
            self.permits[event.consumer_id] += event.messagePermits
            return []
        if isinstance(event, events.Send):
            dropped = self.sends > self.limit
            self.sends += 1
            out = []
            if not dropped:
                for consumer_id in self.consumers:
                    if self.permits[consumer_id] > 0:
                        self.permits[consumer_id] -= 1
                        out.append(events.Message(consumer_id=consumer_id, message_id={"ledgerId": 0, "entryId": 0},
                                                  metadata=event.metadata, payload=event.payload))
            ids = (U64_MINUS_ONE, U64_MINUS_ONE) if dropped else (0, 0)
            out.append(events.SendReceipt(producer_id=event.producer_id, sequence_id=event.sequence_id,
                                          message_id={"ledgerId": ids[0], "entryId": ids[1]}))
            return out
        if isinstance(event, events.Ping):
            return [events.Pong()]
        if isinstance(event, (events.CloseProducer, events.CloseConsumer)):
            return [events.Success(request_id=event.request_id)]
        return SILENCE


def _run(handler, op):
    server = FakePulsarServer(claiming(handler))
    driver = WireDriver(server.url, timeout=2.0)
    try:
        return driver.perform(op), server, driver
    finally:
        driver.close()
        server.close()


def test_pub_sub_collects_receipts_and_messages_and_writes_a_burst_at_once(monkeypatch):
    writes = []
    real = wire_pip2.WirePip2.pub_sub

    def counting(self, op):
        original = self.link.socket.send_raw

        def send_raw(data, description):
            writes.append(data)
            return original(data, description)
        self.link.socket.send_raw = send_raw
        return real(self, op)

    monkeypatch.setattr(wire_pip2.WirePip2, "pub_sub", counting)
    fake = NonPersistentFake(limit=1)
    got, server, _ = _run(fake, ops.PubSub(NP, (("s", "Exclusive", 1),), (5,), flow_after=3))
    assert got == PubSubResult(((ACCEPTED, 2), (DROPPED, 3)), (("s", ("m0",)),))
    sends = [e for e in server.received if isinstance(e, events.Send)]
    assert [e.sequence_id for e in sends] == [0, 1, 2, 3, 4]
    burst_writes = [w for w in writes if w.count(b"m") >= 5]
    assert len(burst_writes) == 1  # all five SEND frames in one sendall
    flows = [e.messagePermits for e in server.received if isinstance(e, events.Flow)]
    assert flows == [1, 3]


def test_pub_sub_returns_the_refusal_of_producer_or_subscribe():
    def refuse(event):
        if isinstance(event, events.Producer):
            return [events.Error(request_id=event.request_id, error=pb.NotAllowedError,
                                 message="Broker is unable to load persistent topic")]
        return SILENCE

    got, _, _ = _run(refuse, ops.PubSub(NP, (), (1,)))
    assert got == ServerError("NotAllowedError", "Broker is unable to load persistent topic")


def test_pub_sub_close_after_closes_everything():
    fake = NonPersistentFake()
    got, server, _ = _run(fake, ops.PubSub(NP, (("s", "Exclusive", 9),), (2,), close_after=True))
    assert got.delivered == (("s", ("m0..m1",)),)
    assert any(isinstance(e, events.CloseProducer) for e in server.received)
    assert any(isinstance(e, events.CloseConsumer) for e in server.received)


class RedeliveringFake(NonPersistentFake):
    """Closing a consumer hands its messages to the other consumers, as a persistent Shared
    subscription redelivers unacknowledged messages."""

    def __call__(self, event):
        if isinstance(event, events.CloseConsumer) and event.consumer_id in self.consumers:
            self.consumers.remove(event.consumer_id)
            out = [events.Message(consumer_id=other, message_id={"ledgerId": 0, "entryId": 0},
                                  metadata=pb.MessageMetadata(producer_name="fake", sequence_id=0, publish_time=1),
                                  payload=b"m0") for other in self.consumers]
            return out + [events.Success(request_id=event.request_id)]
        return super().__call__(event)


def test_pub_sub_outcome_is_collected_before_close_after():
    """What arrives while closing (a redelivery to the consumer still open) is not part of the outcome."""
    fake = RedeliveringFake()
    op = ops.PubSub(NP, (("s", "Shared", 9), ("s", "Shared", 0)), (1,), flow_after=1, close_after=True)
    got, server, _ = _run(fake, op)
    assert sum(isinstance(e, events.CloseConsumer) for e in server.received) == 2
    assert got.delivered == (("s", ("m0",)),)  # m0 once, by the first consumer; not again by the second


def _bad(handler, command):
    return _run(handler, ops.BadCommand(NP, command))


def test_bad_command_closed_connection_is_connection_closed_if_the_broker_still_serves():
    def closing(event):
        if isinstance(event, events.Subscribe):
            return [events.Success(request_id=event.request_id)]
        if isinstance(event, events.Flow):
            return CLOSE
        return SILENCE

    got, server, _ = _bad(closing, "flow-negative-permits")
    assert got == ConnectionClosed()
    flow = next(e for e in server.received if isinstance(e, events.Flow))
    assert flow.messagePermits == 0xFFFFFFFF
    assert sum(isinstance(e, events.Connect) for e in server.received) == 2  # the second proves it serves


def test_bad_command_ignored_is_done_and_an_error_frame_is_the_answer():
    def ignoring(event):
        if isinstance(event, events.Producer):
            return [events.ProducerSuccess(request_id=event.request_id, producer_name="p")]
        if isinstance(event, (events.CloseProducer,)):
            return [events.Success(request_id=event.request_id)]
        if isinstance(event, events.Ping):
            return [events.Pong()]
        return SILENCE

    got, _, _ = _bad(ignoring, "send-after-close-producer")
    assert got == Done()

    def erroring(event):
        if isinstance(event, events.Ping):
            return [events.Pong()]
        if hasattr(event, "reason"):  # the hand-built SUBSCRIBE arrives as InvalidCommand
            return [events.Error(request_id=event.request_id, error=pb.UnknownError, message=event.reason)]
        return SILENCE

    got, server, _ = _bad(erroring, "subscribe-unknown-subtype")
    assert got == ServerError("UnknownError", "SUBSCRIBE is missing required fields: subscribe.subType")


def test_hand_built_subscribe_carries_an_unknown_sub_type_our_codec_refuses():
    frame = wire_pip2._subscribe_with_sub_type(NP, 3, 4, 7)
    server = Connection(Role.SERVER)
    client = Connection(Role.CLIENT)
    server.receive_data(client.send(events.Connect(client_version="t", protocol_version=21)) + frame)
    assert isinstance(server.next_event(), events.Connect)
    server.send(server.connected_event("x", 5242880, {}))
    invalid = server.next_event()
    assert invalid.raw_type == pb.BaseCommand.SUBSCRIBE and invalid.request_id == 4
    assert "subType" in invalid.reason


def test_bad_command_on_a_broker_that_stops_serving_is_indefinite():
    def closing(event):
        if isinstance(event, events.Subscribe):
            return [events.Success(request_id=event.request_id)]
        return CLOSE

    server = FakePulsarServer(claiming(closing))
    driver = WireDriver(server.url, timeout=1.0)
    try:
        driver.perform(ops.Handshake())
        server.close()  # no new connection will be accepted
        with pytest.raises(Indefinite):
            driver.perform(ops.BadCommand(NP, "flow-zero-permits"))
    finally:
        driver.close()


# -- REST stats views --------------------------------------------------------------------------------


def _rest(body, status=200):
    return RestDriver("http://broker:8080", timeout=2,
                      transport=httpx.MockTransport(lambda r: httpx.Response(status, json=body)))


STATS = {
    "msgRateIn": 1.5, "msgThroughputIn": 10.0, "msgRateOut": 0.5, "msgThroughputOut": 3.0, "averageMsgSize": 6.6,
    "msgInCounter": 3, "bytesInCounter": 6, "msgOutCounter": 2, "bytesOutCounter": 4, "msgDropRate": 0.0,
    "publishers": [{"msgRateIn": 1.0, "msgThroughputIn": 2.0, "producerId": 1, "producerName": "p",
                    "msgDropRate": 0.05}],
    "subscriptions": {"s": {"msgRateOut": 0.1, "msgThroughputOut": 1.0, "msgOutCounter": 2, "type": "Exclusive",
                            "consumers": [], "msgDropRate": 0.0}},
    "replication": {},
}


def test_topic_stats_view_reads_counters_signs_and_missing_fields():
    assert _rest(STATS).perform(ops.GetTopicStats(NP)) == TopicStatsView(
        (), 3, 2, POSITIVE, (POSITIVE,), (("s", ZERO, 2, "Exclusive", 0),),
        (("storageSize", MISSING), ("backlogSize", MISSING), ("offloadedStorageSize", MISSING),
         ("msgChunkPublished", MISSING), ("waitingPublishers", MISSING),
         ("publishers[].chunkedMessageRate", MISSING),
         ("subscriptions.*.msgBacklog", MISSING), ("subscriptions.*.isDurable", MISSING),
         ("subscriptions.*.isReplicated", MISSING), ("subscriptions.*.msgRateRedeliver", MISSING),
         ("subscriptions.*.blockedSubscriptionOnUnackedMsgs", MISSING), ("subscriptions.*.unackedMessages", MISSING)))
    broken = {**STATS, "msgDropRate": "0", "subscriptions": {"s": {"msgOutCounter": 1}}}
    view = _rest(broken).perform(ops.GetTopicStats(NP))
    assert "msgDropRate" in view.missing and "subscriptions.*.msgDropRate" in view.missing
    assert view.subscriptions == (("s", "not a number: None", 1, "not a string: None", 0),)


def test_fixed_values_one_per_path_over_every_instance():
    consumer = {"msgRateRedeliver": 0.0, "blockedConsumerOnUnackedMsgs": False, "unackedMessages": 2}
    body = {
        "storageSize": 0, "backlogSize": 5, "msgChunkPublished": False, "waitingPublishers": 0,
        "publishers": [{"chunkedMessageRate": 0.0}, {"chunkedMessageRate": 0}],
        "subscriptions": {
            "a": {"msgBacklog": 0, "isDurable": False, "consumers": [consumer, {**consumer, "unackedMessages": 1}]},
            "b": {"msgBacklog": 0, "isDurable": True, "consumers": [{**consumer, "blockedConsumerOnUnackedMsgs": 0}]}},
    }
    fixed = dict(fixed_values(body))
    assert fixed["storageSize"] == ZERO and fixed["backlogSize"] == POSITIVE
    assert fixed["offloadedStorageSize"] == MISSING and fixed["msgChunkPublished"] == FALSE
    assert fixed["publishers[].chunkedMessageRate"] == ZERO  # 0 and 0.0 alike
    assert fixed["subscriptions.*.isDurable"] == f"mixed: {FALSE} | {TRUE}"
    assert fixed["subscriptions.*.consumers[].blockedConsumerOnUnackedMsgs"] == f"mixed: {FALSE} | {ZERO}"
    assert topic_stats_view(body).subscriptions[0][4] == 3  # the consumers' unacked messages summed
    # no publisher, no consumer: their paths are left out rather than judged
    assert [path for path, _ in fixed_values({"subscriptions": {"a": {"consumers": []}}})] == [
        path for path in FIXED_STATS_FIELDS if not path.startswith(("publishers[]", "subscriptions.*.consumers[]"))]


def test_missing_fields_and_sign_helpers():
    assert missing_fields(STATS, TOPIC_STATS_FIELDS) == ()
    assert missing_fields({}, ("a", "publishers[].b")) == ("a",)  # no publishers: nothing to lack
    assert sign(0) == ZERO and sign(0.1) == POSITIVE and sign(True).startswith("not a number")


def test_partitioned_and_internal_stats_views_and_errors():
    body = {**STATS, "metadata": {"partitions": 2}, "partitions": {}}
    assert _rest(body).perform(ops.GetPartitionedStats(NP)) == PartitionedStatsView((), 2, 3, 2)
    internal = {"entriesAddedCounter": 4, "cursors": {"b": {}, "a": {}}}
    assert _rest(internal).perform(ops.GetInternalStats(NP)) == InternalStatsView(4, ("a", "b"))
    assert _rest({"reason": "Topic x not found"}, 404).perform(ops.GetTopicStats(NP)) == RestError(
        404, "Topic x not found")


def test_the_detail_view_reads_byte_counters_subscriptions_and_consumers():
    consumers = [{"msgRateOut": 0.0, "msgThroughputOut": 0.0}, {"msgRateOut": 2.0, "msgThroughputOut": 9.0}]
    body = {**STATS, "subscriptions": {"s": {**STATS["subscriptions"]["s"], "bytesOutCounter": 4, "consumers": consumers}}}
    assert _rest(body).perform(ops.GetTopicStats(NP, detail=True)) == StatsDetailView(
        (), POSITIVE, POSITIVE, (("s", 2, POSITIVE, POSITIVE, POSITIVE, ((POSITIVE, POSITIVE), (ZERO, ZERO))),))
    bare = stats_detail_view({"subscriptions": {"s": {"consumers": [{}]}}})
    assert "bytesInCounter" in bare.missing and "subscriptions.*.consumers[].msgRateOut" in bare.missing
    # a rate positive at any read of the window counts; a read with other consumers is left out
    zero = StatsDetailView((), ZERO, ZERO, (("s", 1, ZERO, ZERO, ZERO, ((ZERO, ZERO),)),))
    positive = StatsDetailView((), ZERO, ZERO, (("s", 1, POSITIVE, POSITIVE, ZERO, ((POSITIVE, ZERO),)),))
    other = StatsDetailView((), ZERO, ZERO, (("s", 2, POSITIVE, POSITIVE, ZERO, ((POSITIVE, ZERO), (ZERO, ZERO))),))
    assert merge_detail_views([positive, other, zero]) == StatsDetailView(
        (), ZERO, ZERO, (("s", 1, POSITIVE, POSITIVE, ZERO, ((POSITIVE, ZERO),)),))


def test_delete_subscription_and_await_topic_gc():
    seen = []

    def app(request):
        seen.append((request.method, request.url.raw_path.decode()))
        return httpx.Response(204)
    driver = RestDriver("http://broker:8080", timeout=2, transport=httpx.MockTransport(app))
    assert driver.perform(ops.DeleteSubscription(NP, "a/b")) == Done()
    assert seen == [("DELETE", "/admin/v2/non-persistent/public/c1/t/subscription/a%2Fb")]
    answers = iter([200, 200, 404])
    gone = RestDriver("http://broker:8080", timeout=2,
                      transport=httpx.MockTransport(lambda r: httpx.Response(next(answers), json={"reason": "x"})))
    assert gone.perform(ops.AwaitTopicGC(NP, 5)) == TopicLoaded(False)
    assert _rest(STATS).perform(ops.AwaitTopicGC(NP, 0)) == TopicLoaded(True)
    assert _rest({"reason": "no"}, 500).perform(ops.AwaitTopicGC(NP, 5)) == RestError(500, "no")


# -- rates read across stats updates (rest.py) -------------------------------------------------------


def _view(rate_out, publisher, subscription, out=3, storage=ZERO):
    return TopicStatsView((), 3, out, rate_out, (publisher,), (("s", subscription, out, "Shared", 0),),
                          (("storageSize", storage), ("msgChunkPublished", FALSE)))


def test_a_rate_seen_positive_in_any_read_of_the_window_is_positive():
    from conformance.drivers.rest import merge_rate_views

    reads = [_view(ZERO, ZERO, ZERO, 2), _view(POSITIVE, ZERO, POSITIVE, 3, POSITIVE), _view(ZERO, ZERO, ZERO, 3)]
    assert merge_rate_views(reads) == _view(POSITIVE, ZERO, POSITIVE, 3, POSITIVE)
    assert merge_rate_views([_view(ZERO, ZERO, ZERO)]) == _view(ZERO, ZERO, ZERO)
    # a read with another set of subscriptions does not lend its rates to the last one
    other = TopicStatsView((), 3, 3, POSITIVE, (POSITIVE,), (("t", POSITIVE, 3, "Shared", 0),), ())
    assert merge_rate_views([other, _view(ZERO, ZERO, ZERO)]) == _view(ZERO, ZERO, ZERO)


def test_stats_window_spans_two_updates():
    from conformance.drivers.rest import stats_window

    assert stats_window(None) == 0.0 and stats_window(0) == 0.0
    assert stats_window(1.0) == 2.5


def test_stats_are_read_until_the_rate_shows_and_a_slow_updater_is_indefinite():
    reads = iter([0.0, 0.0, 5.0] + [0.0] * 100)
    runtime = {"statsUpdateFrequencyInSecs": "0.2"}

    def app(request):
        if request.url.path.endswith("/runtime"):
            return httpx.Response(200, json=runtime)
        rate = next(reads)
        return httpx.Response(200, json={
            "msgInCounter": 1, "msgOutCounter": 1, "msgRateOut": rate,
            "publishers": [{"msgDropRate": 0.0}], "subscriptions": {"s": {"msgDropRate": 0.0, "msgOutCounter": 1}}})

    driver = RestDriver("http://broker", transport=httpx.MockTransport(app))
    got = driver.perform(ops.GetTopicStats(NP))
    assert got.msg_rate_out == POSITIVE
    runtime["statsUpdateFrequencyInSecs"] = "60"
    with pytest.raises(Indefinite, match="statsUpdateFrequencyInSecs=1"):
        RestDriver("http://broker", transport=httpx.MockTransport(app)).perform(ops.GetTopicStats(NP))


def test_the_wire_driver_sends_every_mode_of_get_topics_of_namespace():
    # GET_TOPICS_OF_NAMESPACE's modes are the listing's domains, "all" for ALL (rows pip2-list-003/004)
    from conformance.drivers import wire
    assert sorted(wire._MODES.values()) == sorted(pb.CommandGetTopicsOfNamespace.Mode.values())
    assert wire._MODES["all"] == pb.CommandGetTopicsOfNamespace.ALL
