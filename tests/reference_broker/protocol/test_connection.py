"""Client and server codecs talking to each other, and the rules Connection enforces."""

import struct

import pytest
from hypothesis import given, settings, strategies as st

from reference_broker.protocol import (
    CLOSED, NEED_DATA, Connection, LocalProtocolError, RemoteProtocolError, Role, State, events as ev)
from reference_broker.protocol import pulsar_api_pb2 as pb
from reference_broker.protocol.frames import crc32c


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
    assert send.metadata_bytes == meta  # as sent, for a broker to forward (connection.py Rule 3)
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


def _frames_from_client() -> list[bytes]:
    client = Connection(Role.CLIENT)
    frames = [client.send(ev.Connect(client_version="test", protocol_version=21))]
    frames += [client.send(ev.PartitionedMetadata(topic=f"persistent://public/default/t{i}", request_id=i))
               for i in range(3)]
    return frames + [client.send(ev.Ping())]


def _frames_from_server() -> list[bytes]:
    client, server = Connection(Role.CLIENT), Connection(Role.SERVER)
    pump(client.send(ev.Connect(client_version="test", protocol_version=21)), server)
    frames = [server.send(server.connected_event("Pulsar Servertest", 5 * 1024 * 1024, {}))]
    frames += [server.send(ev.PartitionedMetadataResponse(request_id=i, partitions=i, response=0)) for i in range(3)]
    return frames + [server.send(ev.Pong())]


@settings(max_examples=300, deadline=None)
@given(role=st.sampled_from([Role.SERVER, Role.CLIENT]),
       steps=st.lists(st.one_of(st.integers(min_value=1, max_value=40),
                                 st.sampled_from(["next", "eof", "to the next frame"])), max_size=40))
def test_between_frames_holds_exactly_when_the_handshake_is_done_and_every_fed_byte_was_taken(role, steps):
    """Rule 5: the kept attribute against an oracle that knows only the frames' lengths: true exactly
    when the handshake is done, the bytes fed so far end on a frame boundary that next_event has
    reached, and the peer has not closed."""
    frames = _frames_from_client() if role is Role.SERVER else _frames_from_server()
    stream, boundaries = b"".join(frames), [0]
    for frame in frames:
        boundaries.append(boundaries[-1] + len(frame))
    conn = Connection(role)
    fed = taken = 0
    handshake_done = eof = False

    def expected() -> bool:
        return handshake_done and not eof and fed == boundaries[taken]

    assert conn.between_frames is False
    for step in steps:
        if step == "eof":
            conn.receive_data(b"")
            eof = True
        elif step == "next":
            event = conn.next_event()
            if event is NEED_DATA or event is CLOSED:
                pass
            else:
                taken += 1
                if isinstance(event, ev.Connect):
                    assert conn.between_frames is False  # CONNECTED not sent yet
                    conn.send(conn.connected_event("Pulsar Servertest", 5 * 1024 * 1024, {}))
                    handshake_done = True
                elif isinstance(event, ev.Connected):
                    handshake_done = True
        elif fed < len(stream) and not eof:  # nothing arrives after the peer closed
            end = fed + step if isinstance(step, int) else min(b for b in boundaries if b > fed)
            chunk = stream[fed:end]
            conn.receive_data(chunk)
            fed += len(chunk)
        assert conn.between_frames is expected(), (step, fed, taken)
