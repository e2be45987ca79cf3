"""The PIP-35 events (ours, TENTATIVE; docs/pip35-decisions.md A, C1): numbers, golden bytes written by
hand from the protobuf encoding rules (not by our codec), and a client/server codec round trip."""

import pytest

from pulsar_codec import Connection, LocalProtocolError, Role, events as ev
from pulsar_codec import pulsar_api_pb2 as pb
from pulsar_codec.frames import FrameDecoder

from .test_connection import handshake, pump

# BaseCommand{type=45 (08 2d); field 45 (tag 45<<3|2 = 362 = ea 02), 5 bytes: topics[0]="t" (0a 01 74),
# request_id=1 (10 01)}; frame = totalSize 14, commandSize 10.
GOLDEN_REQUEST = bytes.fromhex("0000000e" "0000000a" "082d" "ea02" "05" "0a0174" "1001")
# BaseCommand{type=46 (08 2e); field 46 (370 = f2 02), 14 bytes: request_id=1 (08 01), entries (12 0a):
# {topic="t" (0a 01 74), response=Connect (18 01), brokerServiceUrl="u" (22 01 75), authoritative (30 01)}}.
GOLDEN_RESPONSE = bytes.fromhex("00000017" "00000013" "082e" "f202" "0e" "0801" "120a" "0a0174" "1801" "220175" "3001")


def test_numbers_are_45_46_and_feature_flag_10():
    assert pb.BaseCommand.BATCH_LOOKUP == 45 and pb.BaseCommand.BATCH_LOOKUP_RESPONSE == 46
    fields = pb.BaseCommand.DESCRIPTOR.fields_by_name
    assert fields["batchLookupTopic"].number == 45 and fields["batchLookupTopicResponse"].number == 46
    assert pb.FeatureFlags.DESCRIPTOR.fields_by_name["supports_batch_lookup"].number == 10
    # PIP-35's request numbers are kept (topics = 1, request_id = 2); LOOKUP keeps 23/24.
    request = pb.CommandBatchLookupTopic.DESCRIPTOR.fields_by_name
    assert (request["topics"].number, request["request_id"].number, request["authoritative"].number) == (1, 2, 3)
    assert pb.BaseCommand.LOOKUP == 23 and pb.BaseCommand.LOOKUP_RESPONSE == 24
    assert ev.EVENT_CLASSES[45] is ev.BatchLookup and ev.EVENT_CLASSES[46] is ev.BatchLookupResponse


def test_golden_request_and_response_bytes():
    client, server = handshake()
    assert client.send(ev.BatchLookup(topics=["t"], request_id=1)) == GOLDEN_REQUEST
    entry = {"topic": "t", "response": pb.CommandLookupTopicResponse.Connect, "brokerServiceUrl": "u",
             "authoritative": True}
    assert server.send(ev.BatchLookupResponse(request_id=1, entries=[entry])) == GOLDEN_RESPONSE
    [request] = pump(GOLDEN_REQUEST, server)
    assert isinstance(request, ev.BatchLookup) and list(request.topics) == ["t"] and not request.authoritative
    [response] = pump(GOLDEN_RESPONSE, client)
    assert isinstance(response, ev.BatchLookupResponse) and response.entries[0].brokerServiceUrl == "u"
    assert not response.has("error") and not response.entries[0].HasField("requested")


def test_round_trip_of_every_field():
    client, server = handshake()
    [request] = pump(client.send(ev.BatchLookup(topics=["a", "b", "a"], request_id=9, authoritative=True)), server)
    assert list(request.topics) == ["a", "b", "a"] and request.request_id == 9 and request.authoritative
    entries = [
        {"topic": "persistent://public/default/p-partition-0", "requested": "p", "response": 1,
         "brokerServiceUrl": "pulsar://x:1", "brokerServiceUrlTls": "pulsar+ssl://x:2", "authoritative": True},
        {"topic": "bad//", "response": 2, "error": pb.InvalidTopicName, "message": "Invalid"},
        {"topic": "persistent://public/default/r", "response": 0, "brokerServiceUrl": "pulsar://y:1",
         "authoritative": True, "proxy_through_service_url": False},
    ]
    [answer] = pump(server.send(ev.BatchLookupResponse(request_id=9, entries=entries)), client)
    assert [e.topic for e in answer.entries] == [e["topic"] for e in entries]
    assert answer.entries[0].requested == "p" and answer.entries[0].brokerServiceUrlTls == "pulsar+ssl://x:2"
    assert answer.entries[1].error == pb.InvalidTopicName and answer.entries[1].message == "Invalid"
    assert answer.entries[2].response == pb.CommandLookupTopicResponse.Redirect
    [refusal] = pump(server.send(ev.BatchLookupResponse(request_id=10, error=pb.TooManyRequests, message="big")),
                     client)
    assert refusal.has("error") and refusal.error == pb.TooManyRequests and len(refusal.entries) == 0


def test_empty_batch_round_trips():
    client, server = handshake()
    [request] = pump(client.send(ev.BatchLookup(request_id=3)), server)
    assert list(request.topics) == []


def test_required_fields_are_checked_before_sending():
    client, server = handshake()
    with pytest.raises(LocalProtocolError, match="request_id"):
        client.send(ev.BatchLookup(topics=["t"]))
    with pytest.raises(LocalProtocolError, match="topic"):
        server.send(ev.BatchLookupResponse(request_id=1, entries=[{"response": 1}]))


def test_a_batch_without_request_id_on_the_wire_is_an_invalid_command_not_a_crash():
    client, server = handshake()
    body = pb.BaseCommand(type=45)
    body.batchLookupTopic.topics.append("t")
    data = body.SerializePartialToString()
    frame = len(data).to_bytes(4, "big")
    [invalid] = pump((len(frame + data)).to_bytes(4, "big") + frame + data, server)
    assert isinstance(invalid, ev.InvalidCommand)


def test_connected_carries_supports_batch_lookup():
    client, server = Connection(Role.CLIENT), Connection(Role.SERVER)
    pump(client.send(ev.Connect(client_version="t", protocol_version=21, feature_flags={"supports_batch_lookup": True})),
         server)
    assert server.peer_feature_flags.supports_batch_lookup
    pump(server.send(server.connected_event("s", 1 << 20, {"supports_batch_lookup": True})), client)
    assert client.peer_feature_flags.supports_batch_lookup
    encoded = pb.FeatureFlags(supports_batch_lookup=True).SerializeToString()
    assert encoded == bytes.fromhex("5001")  # field 10, varint: tag 10<<3 = 0x50


def test_decoder_reads_the_golden_frames_back_to_back():
    decoder = FrameDecoder()
    decoder.feed(GOLDEN_REQUEST + GOLDEN_RESPONSE)
    assert decoder.next_frame().command.type == 45
    assert decoder.next_frame().command.type == 46
