"""Client and server codecs talking to each other, and the rules Connection enforces."""

import struct

import pytest
from hypothesis import given, settings, strategies as st

from pulsar_codec import (
    CLOSED, NEED_DATA, Connection, LocalProtocolError, RemoteProtocolError, Role, State, events as ev)
from pulsar_codec import pulsar_api_pb2 as pb
from pulsar_codec.frames import crc32c


def pump(source: bytes, target: Connection):
    target.receive_data(source)
    out = []
    while (event := target.next_event()) is not NEED_DATA:
        out.append(event)
    return out


def handshake(client_version=21, flags=None):
    client, server = Connection(Role.CLIENT), Connection(Role.SERVER)
    [connect] = pump(client.send(ev.Connect(client_version="test", protocol_version=client_version,
                                            feature_flags=flags or {})), server)
    connected = server.connected_event("Pulsar Servertest", 5 * 1024 * 1024,
                                       {"supports_get_partitioned_metadata_without_auto_creation": True})
    pump(server.send(connected), client)
    return client, server


def test_negotiated_version_is_the_smaller_one():
    client, server = handshake(client_version=15)
    assert server.protocol_version == client.protocol_version == 15
    client, server = handshake(client_version=99)
    assert server.protocol_version == 21


def test_client_learns_feature_flag_5_and_frame_limit():
    client, _ = handshake()
    assert client.state is State.CONNECTED
    assert client.peer_feature_flags.supports_get_partitioned_metadata_without_auto_creation


def test_field_6_presence_survives_the_roundtrip():
    client, server = handshake()
    [absent] = pump(client.send(ev.PartitionedMetadata(topic="t", request_id=1)), server)
    [false] = pump(client.send(ev.PartitionedMetadata(topic="t", request_id=2,
                                                      metadata_auto_creation_enabled=False)), server)
    assert not absent.has("metadata_auto_creation_enabled") and absent.metadata_auto_creation_enabled
    assert false.has("metadata_auto_creation_enabled") and not false.metadata_auto_creation_enabled


def test_send_has_checksum_from_v6_and_message_keeps_it_from_v11():
    client, server = handshake(client_version=6)
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1)
    [send] = pump(client.send(ev.Send(producer_id=1, sequence_id=0, metadata=metadata, payload=b"x")), server)
    assert send.checksum_valid is True
    meta = metadata.SerializeToString()
    assert send.metadata_bytes == meta  # as sent, for a broker to forward (``Connection.message``)
    assert send.checksum == crc32c(struct.pack(">I", len(meta)) + meta + b"x")
    [message] = pump(server.send(ev.Message(consumer_id=1, message_id={"ledgerId": 1, "entryId": 0},
                                            metadata=metadata, payload=b"x")), client)
    assert message.checksum_valid is None  # stripped: the client speaks v6 < v11
    client, server = handshake(client_version=5)
    [send] = pump(client.send(ev.Send(producer_id=1, sequence_id=0, metadata=metadata, payload=b"x")), server)
    assert send.checksum_valid is None and send.checksum is None


def test_drop_receipt_ids_travel_as_uint64_max():
    client, server = handshake()
    minus_one = 2**64 - 1
    [receipt] = pump(server.send(ev.SendReceipt(producer_id=1, sequence_id=0,
                                                message_id={"ledgerId": minus_one, "entryId": minus_one})), client)
    assert receipt.message_id.ledgerId == minus_one


def test_first_command_must_be_connect():
    server = Connection(Role.SERVER)
    server.receive_data(Connection(Role.CLIENT).send(ev.Ping()))
    with pytest.raises(RemoteProtocolError) as info:
        server.next_event()
    assert info.value.server_error == "ServiceNotReady"
    assert server.next_event() is CLOSED


def test_server_cannot_answer_before_handshake():
    with pytest.raises(LocalProtocolError):
        Connection(Role.SERVER).send(ev.Pong())


def test_missing_required_field_is_refused_on_send():
    client, _ = handshake()
    with pytest.raises(LocalProtocolError, match="request_id"):
        client.send(ev.PartitionedMetadata(topic="t"))


def test_invalid_command_after_handshake_keeps_the_connection():
    client, server = handshake()
    [invalid] = pump(b"\x00\x00\x00\x06\x00\x00\x00\x02\x08\x63", server)
    assert isinstance(invalid, ev.InvalidCommand) and invalid.raw_type == 99
    [ping] = pump(client.send(ev.Ping()), server)
    assert isinstance(ping, ev.Ping)


def test_eof_closes():
    _, server = handshake()
    server.receive_data(b"")
    assert server.next_event() is CLOSED


# Invariant: any bytes after a valid handshake give events, InvalidCommand or RemoteProtocolError
# (and nothing else: no other exception type escapes the codec).
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_any_bytes_give_events_or_protocol_error(data):
    _, server = handshake()
    server.receive_data(data)
    try:
        for _ in range(100):
            if server.next_event() in (NEED_DATA, CLOSED):
                break
    except RemoteProtocolError:
        assert server.state is State.ERROR


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=40), max_size=8))
def test_fuzz_framed_garbage_never_desyncs(bodies):
    import struct
    _, server = handshake()
    stream = b"".join(struct.pack(">II", 4 + len(b), len(b)) + b for b in bodies)
    stream += Connection(Role.CLIENT).send(ev.Ping())
    server.receive_data(stream)
    received = []
    while (event := server.next_event()) is not NEED_DATA:
        received.append(event)
    assert isinstance(received[-1], ev.Ping)  # the framing stayed in sync through the garbage


# -- Connection.message: a stored entry forwarded as the producer wrote it ---------------------------


def server_of(client_version: int) -> Connection:
    return handshake(client_version=client_version)[1]


@given(metadata=st.binary(max_size=50), payload=st.binary(max_size=50), client_version=st.sampled_from([10, 11, 21]))
def test_a_message_with_the_producers_valid_checksum_is_the_events_frame(metadata, payload, client_version):
    server = server_of(client_version)
    expected = server.send(ev.Message(consumer_id=1, redelivery_count=0,
                                      message_id={"ledgerId": 2, "entryId": 3, "partition": -1},
                                      metadata=metadata, payload=payload))
    producers = crc32c(struct.pack(">I", len(metadata)) + metadata + payload)
    assert server.message(1, 2, 3, -1, 0, metadata, payload, producers) == expected


@given(metadata=st.binary(max_size=50), payload=st.binary(max_size=50), client_version=st.sampled_from([10, 11, 21]))
def test_a_message_of_an_entry_sent_without_a_checksum_carries_none(metadata, payload, client_version):
    """Pulsar's PulsarCommandSenderImpl.sendMessagesToConsumer: the broker sends the stored entry as the producer wrote it, so no checksum
    block for any client: the bytes a client below v11 gets, whatever this client's version."""
    expected = server_of(10).send(ev.Message(consumer_id=1, redelivery_count=0,
                                             message_id={"ledgerId": 2, "entryId": 3, "partition": -1},
                                             metadata=metadata, payload=payload))
    assert server_of(client_version).message(1, 2, 3, -1, 0, metadata, payload, None) == expected


def test_a_message_forwards_the_producers_checksum_as_it_came():
    checksum = 0x01020304  # not the CRC of these bytes: the broker does not compute it again
    frame = server_of(21).message(1, 2, 3, -1, 0, b"meta", b"payload", checksum)
    assert frame.endswith(b"\x0e\x01\x01\x02\x03\x04" + struct.pack(">I", 4) + b"meta" + b"payload")


def test_a_message_is_refused_before_the_handshake_and_after_an_error():
    with pytest.raises(LocalProtocolError):
        Connection(Role.SERVER).message(1, 3, 4, -1, 0, b"", b"x", None)
    _, server = handshake()
    with pytest.raises(RemoteProtocolError):
        pump(struct.pack(">I", 2), server)  # a totalSize too small to hold a commandSize
    with pytest.raises(LocalProtocolError):
        server.message(1, 3, 4, -1, 0, b"", b"x", None)
