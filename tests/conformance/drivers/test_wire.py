"""conformance/drivers/wire.py against a fake server built from the codec in SERVER role."""

import pytest

from conformance.drivers.wire import CLIENT_VERSION, PROTOCOL_VERSION, WireDriver
from conformance.errors import Indefinite, ProtocolViolation, Unsupported
from conformance.transcript import format_transcript
from model import ops
from model.outcomes import Done, LookupAnswer, Partitions, ServerError, TopicList
from pulsar_codec import events
from pulsar_codec import pulsar_api_pb2 as pb
from tests.conformance.helpers import CLOSE, SILENCE, FakePulsarServer, claiming

T = "persistent://public/c1/t"
PMR = pb.CommandPartitionedTopicMetadataResponse


def _answering(handler, **kwargs):
    server = FakePulsarServer(handler, **kwargs)
    return server, WireDriver(server.url, timeout=1.0)


@pytest.fixture
def metadata_server():
    def handler(event):
        if isinstance(event, events.PartitionedMetadata):
            if event.topic.endswith("/missing"):
                return [events.PartitionedMetadataResponse(request_id=event.request_id, response=PMR.Failed,
                                                           error=pb.TopicNotFound, message="")]
            return [events.PartitionedMetadataResponse(request_id=event.request_id, response=PMR.Success,
                                                       partitions=4)]
        return SILENCE

    server, driver = _answering(handler)
    yield server, driver
    driver.close()
    server.close()


def test_handshake_sends_pip344_flags_and_reads_connected(metadata_server):
    server, driver = metadata_server
    connected = driver.handshake()
    assert connected.server_version == "Fake Pulsar Server"
    assert connected.feature_flags.supports_get_partitioned_metadata_without_auto_creation
    connect = server.received[0]
    assert isinstance(connect, events.Connect)
    assert connect.client_version == CLIENT_VERSION and connect.protocol_version == PROTOCOL_VERSION
    assert connect.feature_flags.supports_get_partitioned_metadata_without_auto_creation


def test_field_6_is_absent_when_auto_create_is_none_and_present_otherwise(metadata_server):
    server, driver = metadata_server
    assert driver.perform(ops.GetPartitionedMetadata(T, "binary", None)) == Partitions(4)
    assert driver.perform(ops.GetPartitionedMetadata(T, "binary", False)) == Partitions(4)
    assert driver.perform(ops.GetPartitionedMetadata(T, "binary", True)) == Partitions(4)
    sent = [e for e in server.received if isinstance(e, events.PartitionedMetadata)]
    assert [e.has("metadata_auto_creation_enabled") for e in sent] == [False, True, True]
    assert [e.metadata_auto_creation_enabled for e in sent[1:]] == [False, True]
    assert len({e.request_id for e in sent}) == 3


def test_failed_response_becomes_server_error_name_and_message(metadata_server):
    _, driver = metadata_server
    answer = driver.perform(ops.GetPartitionedMetadata("persistent://public/c1/missing", "binary", False))
    assert answer == ServerError("TopicNotFound", "")


def test_transcript_holds_exact_frames_both_ways(metadata_server):
    _, driver = metadata_server
    driver.perform(ops.GetPartitionedMetadata(T, "binary", False))
    entries = driver.transcript.entries
    assert [e.direction for e in entries] == [">>", "<<", ">>", "<<"]
    assert entries[0].summary.startswith("Connect(")
    for entry in entries:
        raw = bytes.fromhex(entry.hex)
        assert int.from_bytes(raw[:4], "big") == len(raw) - 4  # one whole frame per entry
    driver.reset()
    assert not driver.transcript


def test_ping_while_waiting_is_answered_with_pong():
    def handler(event):
        if isinstance(event, events.Lookup):
            return [events.Ping(), events.LookupResponse(request_id=event.request_id, authoritative=True,
                                                         response=pb.CommandLookupTopicResponse.Connect,
                                                         brokerServiceUrl="pulsar://127.0.0.1:1")]
        return SILENCE

    server, driver = _answering(handler)
    try:
        assert driver.perform(ops.Lookup(T, "binary")) == LookupAnswer("Connect", True)
        driver.perform(ops.Lookup(T, "binary"))
        assert any(isinstance(e, events.Pong) for e in server.received)
    finally:
        driver.close()
        server.close()


def test_list_topics_and_error_frame():
    def handler(event):
        if isinstance(event, events.GetTopicsOfNamespace):
            if event.namespace == "nope/ns":
                return [events.Error(request_id=event.request_id, error=pb.MetadataError,
                                     message="Policies not found for nope/ns namespace")]
            assert event.mode == pb.CommandGetTopicsOfNamespace.NON_PERSISTENT
            return [events.GetTopicsOfNamespaceResponse(request_id=event.request_id, topics=["b", "a"])]
        return SILENCE

    server, driver = _answering(handler)
    try:
        assert driver.perform(ops.ListTopics("public/c1", "binary", "non-persistent")) == TopicList(frozenset({"a", "b"}))
        assert driver.perform(ops.ListTopics("nope/ns", "binary", "non-persistent")) == ServerError(
            "MetadataError", "Policies not found for nope/ns namespace")
    finally:
        driver.close()
        server.close()


def test_create_non_partitioned_topic_is_producer_then_close():
    def handler(event):
        if isinstance(event, events.Producer):
            return [events.ProducerSuccess(request_id=event.request_id, producer_name="p")]
        if isinstance(event, events.CloseProducer):
            return [events.Success(request_id=event.request_id)]
        return SILENCE

    server, driver = _answering(claiming(handler))
    try:
        assert driver.perform(ops.CreateNonPartitionedTopic(T)) == Done()
        kinds = [type(e).__name__ for e in server.received]
        # the LOOKUP a client sends first: Apache Pulsar serves a topic only after one
        assert kinds == ["Connect", "Lookup", "Producer", "CloseProducer"]
        assert server.received[1].topic == T and server.received[2].topic == T
    finally:
        driver.close()
        server.close()


def test_silence_is_indefinite_within_the_bound():
    server, driver = _answering(lambda event: SILENCE)
    try:
        with pytest.raises(Indefinite, match="within 1 s"):
            driver.perform(ops.GetPartitionedMetadata(T, "binary", None))
    finally:
        driver.close()
        server.close()


def test_closed_connection_is_indefinite():
    server, driver = _answering(lambda event: CLOSE)
    try:
        with pytest.raises(Indefinite, match="closed the connection"):
            driver.perform(ops.Lookup(T, "binary"))
    finally:
        driver.close()
        server.close()


def test_wrong_answer_type_is_a_protocol_violation():
    def handler(event):
        return [events.Success(request_id=event.request_id)]

    server, driver = _answering(handler)
    try:
        with pytest.raises(ProtocolViolation, match="PARTITIONED_METADATA"):
            driver.perform(ops.GetPartitionedMetadata(T, "binary", None))
    finally:
        driver.close()
        server.close()


def test_a_refusal_in_a_lookup_response_frame_is_the_refusal_as_pulsars_proxy_sends_it():
    def handler(event):
        response = pb.CommandLookupTopicResponse.Failed if event.topic.endswith("/missing") else \
            pb.CommandLookupTopicResponse.Connect
        return [events.LookupResponse(request_id=event.request_id, response=response, error=pb.TopicNotFound,
                                      message="gone")]

    server, driver = _answering(handler)
    try:
        assert driver.perform(ops.GetPartitionedMetadata(T[:-1] + "missing", "binary", False)) == \
            ServerError("TopicNotFound", "gone")
        assert "LOOKUP_RESPONSE" in format_transcript(driver.transcript)
        with pytest.raises(ProtocolViolation, match="no refusal"):
            driver.perform(ops.GetPartitionedMetadata(T, "binary", False))
    finally:
        driver.close()
        server.close()


def test_unreachable_target_is_indefinite_and_rest_ops_unsupported():
    server = FakePulsarServer(lambda e: SILENCE)
    url = server.url
    server.close()
    driver = WireDriver(url, timeout=1.0)
    with pytest.raises(Indefinite):
        driver.perform(ops.Lookup(T, "binary"))
    with pytest.raises(Unsupported):
        driver.perform(ops.GetPartitionedMetadata(T, "rest", None))
    with pytest.raises(ValueError):
        WireDriver("http://127.0.0.1:1")
