"""protocol/shortcut.py against the full codec: it reads only what the Connection would read the
same way, and writes exactly what the Connection writes."""

import json
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from reference_broker.protocol import Connection, LocalProtocolError, Role, events as ev
from reference_broker.protocol import pulsar_api_pb2 as pb
from reference_broker.protocol.frames import crc32c
from reference_broker.protocol.shortcut import (partitioned_metadata_answer, read_partitioned_metadata, varint,
                                               varint_value)

from .server_side import connected_server, full_decode

GOLDEN = json.loads((Path(__file__).parent / "golden" / "official_client.json").read_text())["frames"]
U64 = st.integers(min_value=0, max_value=2**64 - 1)
FIELD6 = st.sampled_from([None, True, False])
SUCCESS = pb.CommandPartitionedTopicMetadataResponse.Success


def request_frame(topic: str, request_id: int, field6, **extra) -> bytes:
    fields = {} if field6 is None else {"metadata_auto_creation_enabled": field6}
    return Connection(Role.CLIENT).send(ev.PartitionedMetadata(topic=topic, request_id=request_id, **fields, **extra))


def test_the_official_clients_request_is_read():
    frame = bytes.fromhex(GOLDEN["PARTITIONED_METADATA"])
    [event] = full_decode(frame)
    assert read_partitioned_metadata(frame) == (len(frame), event.topic.encode(), varint(event.request_id), None)


@given(topic=st.text(max_size=300), request_id=U64, field6=FIELD6)
def test_every_plain_request_is_read_as_the_connection_reads_it(topic, request_id, field6):
    frame = request_frame(topic, request_id, field6)
    assert read_partitioned_metadata(frame) == (len(frame), topic.encode(), varint(request_id), field6)


@given(request_id=U64, principal=st.text(min_size=1, max_size=20))
def test_a_request_with_any_other_field_is_left_to_the_connection(request_id, principal):
    assert read_partitioned_metadata(request_frame("persistent://t/n/x", request_id, None,
                                                   original_principal=principal)) is None


def test_other_commands_and_short_reads_are_left_to_the_connection():
    ping = Connection(Role.CLIENT).send(ev.Ping())
    frame = request_frame("persistent://t/n/x", 7, True)
    assert read_partitioned_metadata(ping) is None
    assert all(read_partitioned_metadata(frame[:cut]) is None for cut in range(len(frame)))
    assert read_partitioned_metadata(frame + ping) == (len(frame), b"persistent://t/n/x", b"\x07", True)
    assert read_partitioned_metadata(ping + frame, len(ping)) == (len(ping) + len(frame), b"persistent://t/n/x",
                                                                  b"\x07", True)


@pytest.mark.parametrize("body", [b"", b"\x0a", b"\x0a\x00", b"\x0a\x01x", b"\x0a\x01x\x10", b"\x0a\x81",
                                  b"\x0a\x01x\x10\x80", b"\x0a\x01x\x10\x01\x30"])
def test_a_request_cut_inside_its_fields_is_left_to_the_connection(body):
    command = b"\x08\x15\xaa\x01" + bytes((len(body),)) + body
    frame = struct.pack(">II", len(command) + 4, len(command)) + command
    assert read_partitioned_metadata(frame) is None
    assert read_partitioned_metadata(frame + b"\x00" * 20) is None


def test_an_id_written_longer_than_needed_is_left_to_the_connection():
    command = b"\x08\x15\xaa\x01\x06\x0a\x01x\x10\x81\x00"  # request id 1 in two bytes
    frame = struct.pack(">II", len(command) + 4, len(command)) + command
    [event] = full_decode(frame)
    assert event.request_id == 1
    assert read_partitioned_metadata(frame) is None


def test_a_topic_too_long_for_the_smallest_frame_limit_is_left_to_the_connection():
    assert read_partitioned_metadata(request_frame("x" * 11_000, 1, None)) is None


@settings(max_examples=500)
@given(data=st.data(), field6=FIELD6)
def test_damaged_frames_never_raise_and_never_read_other_than_the_connection(data, field6):
    frame = bytearray(request_frame(data.draw(st.text(max_size=40)), data.draw(U64), field6))
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        frame[data.draw(st.integers(min_value=0, max_value=len(frame) - 1))] = data.draw(st.integers(0, 255))
    frame = bytes(frame)
    read = read_partitioned_metadata(frame)
    if read is None:
        return
    end, topic, request_id, auto_creation = read
    events = full_decode(frame[:end])
    assert len(events) == 1 and isinstance(events[0], ev.PartitionedMetadata), events
    event = events[0]
    # protobuf gives bytes for a topic that is not UTF-8 (proto2 does not check); the broker
    # remembers only topics it parsed, so such bytes never match what it remembers.
    sent_topic = event.topic if isinstance(event.topic, bytes) else event.topic.encode()
    assert (varint(event.request_id), sent_topic) == (request_id, topic)
    assert (event.metadata_auto_creation_enabled if event.has("metadata_auto_creation_enabled") else None) == auto_creation


@given(blob=st.binary(max_size=80))
def test_arbitrary_bytes_never_raise(blob):
    read_partitioned_metadata(blob)


VARINT_EDGES = st.sampled_from([0, 1, 0x7F, 0x80, 0x3FFF, 0x4000, 0x1FFFFF, 0x200000, 2**63, 2**64 - 1])


@given(st.integers(0, 2**64 - 1) | VARINT_EDGES)
def test_a_varint_is_protobufs(value):
    # CommandFlow{consumer_id = value, messagePermits = 0}: tag 1, the varint, then tag 2 and 0.
    assert pb.CommandFlow(consumer_id=value, messagePermits=0).SerializeToString() == b"\x08" + varint(value) + b"\x10\x00"


@given(st.integers(0, 2**64 - 1) | VARINT_EDGES)
def test_a_request_ids_varint_reads_back_as_its_number(request_id):
    assert varint_value(varint(request_id)) == request_id


@given(partitions=st.integers(min_value=0, max_value=2**32 - 1), request_id=U64)
def test_the_answer_is_the_connections_bytes(partitions, request_id):
    expected = connected_server().send(ev.PartitionedMetadataResponse(
        request_id=request_id, partitions=partitions, response=SUCCESS))
    assert partitioned_metadata_answer(partitions, varint(request_id)) == expected


INT32 = st.integers(min_value=-2**31, max_value=2**31 - 1)


@given(producer_id=U64, sequence_id=U64, highest=U64, ledger_id=U64, entry_id=U64)
def test_a_receipt_is_the_connections_bytes(producer_id, sequence_id, highest, ledger_id, entry_id):
    server = connected_server()
    expected = server.send(ev.SendReceipt(producer_id=producer_id, sequence_id=sequence_id,
                                          highest_sequence_id=highest,
                                          message_id={"ledgerId": ledger_id, "entryId": entry_id}))
    assert server.send_receipt(producer_id, sequence_id, highest, ledger_id, entry_id) == expected


@given(consumer_id=U64, ledger_id=U64, entry_id=U64, partition=INT32,
       redelivery_count=st.integers(min_value=0, max_value=2**32 - 1),
       metadata=st.binary(max_size=300), payload=st.binary(max_size=300),
       client_version=st.sampled_from([10, 11, 21]))
def test_a_message_is_the_connections_bytes(consumer_id, ledger_id, entry_id, partition, redelivery_count,
                                            metadata, payload, client_version):
    server = connected_server(client_version)  # below v11 a MESSAGE carries no checksum (connection.py Rule 3)
    expected = server.send(ev.Message(consumer_id=consumer_id, redelivery_count=redelivery_count,
                                      message_id={"ledgerId": ledger_id, "entryId": entry_id, "partition": partition},
                                      metadata=metadata, payload=payload))
    producers_checksum = crc32c(struct.pack(">I", len(metadata)) + metadata + payload)  # a valid one, as sent
    assert server.message(consumer_id, ledger_id, entry_id, partition, redelivery_count, metadata, payload,
                          producers_checksum) == expected


@given(metadata=st.binary(max_size=50), payload=st.binary(max_size=50), client_version=st.sampled_from([10, 11, 21]))
def test_a_message_of_an_entry_sent_without_a_checksum_carries_none(metadata, payload, client_version):
    """pulsar-wire.md: the broker sends the stored entry as the producer wrote it, so no checksum
    block for any client: the bytes a client below v11 gets, whatever this client's version."""
    expected = connected_server(10).send(ev.Message(consumer_id=1, redelivery_count=0,
                                                    message_id={"ledgerId": 2, "entryId": 3, "partition": -1},
                                                    metadata=metadata, payload=payload))
    assert connected_server(client_version).message(1, 2, 3, -1, 0, metadata, payload, None) == expected


def test_a_message_forwards_the_producers_checksum_as_it_came():
    checksum = 0x01020304  # not the CRC of these bytes: the broker does not compute it again
    frame = connected_server(21).message(1, 2, 3, -1, 0, b"meta", b"payload", checksum)
    assert frame.endswith(b"\x0e\x01\x01\x02\x03\x04" + struct.pack(">I", 4) + b"meta" + b"payload")


def test_receipts_and_messages_keep_the_connections_rules():
    before_handshake = Connection(Role.SERVER)
    with pytest.raises(LocalProtocolError):
        before_handshake.send_receipt(1, 2, 2, 3, 4)
    with pytest.raises(LocalProtocolError):
        before_handshake.message(1, 3, 4, -1, 0, b"", b"x", None)
