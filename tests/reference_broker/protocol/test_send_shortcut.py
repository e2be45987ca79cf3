"""protocol/shortcut.py ``read_send`` (Rule 5) against the full codec: a SEND it reads is read
exactly as the Connection reads it, and any other frame is left to the Connection."""

import json
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from reference_broker.protocol import Connection, RemoteProtocolError, Role, events as ev
from reference_broker.protocol import pulsar_api_pb2 as pb
from reference_broker.protocol.frames import FrameDecoder, encode_payload_command, max_frame_size
from reference_broker.protocol.shortcut import PlainSend, incomplete_tail, read_send

from .server_side import full_decode

GOLDEN = json.loads((Path(__file__).parent / "golden" / "official_client.json").read_text())["frames"]
U64 = st.integers(min_value=0, max_value=2**64 - 1)
INT32 = st.integers(min_value=-2**31, max_value=2**31 - 1)
LIMIT = max_frame_size()


def as_the_connection_reads(frame: bytes) -> PlainSend:
    """The one SEND event the Connection makes of ``frame``, in ``read_send``'s terms."""
    [event] = full_decode(frame)
    assert isinstance(event, ev.Send), event
    return PlainSend(len(frame), event.producer_id, event.sequence_id, event.num_messages,
                     event.highest_sequence_id, event.metadata_bytes, event.payload, event.checksum,
                     event.checksum_valid)


def send_frame(producer_id=1, sequence_id=0, num_messages=None, highest=None, payload=b"x", checksum=True,
               metadata=None, **extra) -> bytes:
    fields = dict(producer_id=producer_id, sequence_id=sequence_id, **extra)
    if num_messages is not None:
        fields["num_messages"] = num_messages
    if highest is not None:
        fields["highest_sequence_id"] = highest
    command = pb.BaseCommand(type=pb.BaseCommand.SEND, send=pb.CommandSend(**fields))
    metadata = metadata if metadata is not None else pb.MessageMetadata(producer_name="p", sequence_id=sequence_id,
                                                                        publish_time=1)
    return encode_payload_command(command, metadata, payload, checksum=checksum)


@pytest.mark.parametrize("name", ["SEND", "SEND_BATCH"])
def test_the_official_clients_sends_are_read(name):
    frame = bytes.fromhex(GOLDEN[name])
    read = read_send(frame, 0, LIMIT)
    assert read == as_the_connection_reads(frame)
    assert read.checksum_valid is True and (read.num_messages > 1) == (name == "SEND_BATCH")


@settings(max_examples=300)
@given(producer_id=U64, sequence_id=U64, num_messages=st.none() | INT32, highest=st.none() | U64,
       payload=st.binary(max_size=300), checksum=st.booleans(),
       producer_name=st.text(max_size=20), batch=st.none() | st.integers(0, 1000))
def test_every_plain_send_is_read_as_the_connection_reads_it(producer_id, sequence_id, num_messages, highest,
                                                             payload, checksum, producer_name, batch):
    metadata = pb.MessageMetadata(producer_name=producer_name, sequence_id=sequence_id, publish_time=2)
    if batch is not None:
        metadata.num_messages_in_batch = batch
    frame = send_frame(producer_id, sequence_id, num_messages, highest, payload, checksum, metadata)
    read = read_send(frame, 0, LIMIT)
    if num_messages is not None and num_messages < 0:
        assert read is None  # an int32 written as ten bytes: left to protobuf
    else:
        assert read == as_the_connection_reads(frame)


@pytest.mark.parametrize("extra", [dict(txnid_least_bits=1), dict(txnid_most_bits=0), dict(is_chunk=False),
                                   dict(marker=True), dict(message_id={"ledgerId": 1, "entryId": 2})])
def test_a_send_with_any_other_field_is_left_to_the_connection(extra):
    frame = send_frame(**extra)
    assert as_the_connection_reads(frame).producer_id == 1
    assert read_send(frame, 0, LIMIT) is None


def test_fields_out_of_order_or_written_longer_than_needed_are_left_to_the_connection():
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1).SerializeToString()
    for body in (b"\x10\x00\x08\x01",  # sequence_id before producer_id
                 b"\x08\x81\x00\x10\x00",  # producer id 1 in two bytes
                 b"\x08\x01\x10\x00\x30\x05\x18\x02",  # highest_sequence_id before num_messages
                 b"\x08\x01\x10\x00\x18\x02\x18\x03"):  # num_messages twice
        command = b"\x08\x06\x32" + bytes((len(body),)) + body
        section = struct.pack(">I", len(metadata)) + metadata + b"x"
        frame = struct.pack(">II", 4 + len(command) + len(section), len(command)) + command + section
        [event] = full_decode(frame)
        assert isinstance(event, ev.Send)
        assert read_send(frame, 0, LIMIT) is None


def test_short_reads_and_neighbouring_frames():
    frame, ping = send_frame(num_messages=3, payload=b"abc"), Connection(Role.CLIENT).send(ev.Ping())
    assert all(read_send(frame[:cut], 0, LIMIT) is None for cut in range(len(frame)))
    assert read_send(frame + ping, 0, LIMIT) == as_the_connection_reads(frame)
    assert read_send(ping + frame, len(ping), LIMIT) == as_the_connection_reads(frame)._replace(
        end=len(ping) + len(frame))
    assert read_send(ping, 0, LIMIT) is None


def test_a_damaged_checksum_is_read_as_invalid_and_left_for_the_broker_to_refuse():
    frame = bytearray(send_frame(payload=b"payload"))
    frame[-1] ^= 0xFF
    read = read_send(bytes(frame), 0, LIMIT)
    assert read == as_the_connection_reads(bytes(frame)) and read.checksum_valid is False


def test_metadata_the_connection_refuses_is_left_to_it():
    incomplete = pb.MessageMetadata(producer_name="p", sequence_id=0)  # no publish_time (required)
    command = pb.BaseCommand(type=pb.BaseCommand.SEND, send=pb.CommandSend(producer_id=1, sequence_id=0))
    for metadata in (incomplete.SerializePartialToString(), b"\x0a\x05p"):  # missing field; cut short
        frame = encode_payload_command(command, metadata, b"x")
        [event] = full_decode(frame)
        assert isinstance(event, ev.InvalidCommand)
        assert read_send(frame, 0, LIMIT) is None


def test_frames_past_the_limit_and_broker_entry_metadata_are_left_to_the_connection():
    frame = send_frame(payload=b"x" * 100)
    assert read_send(frame, 0, len(frame)) is not None
    assert read_send(frame, 0, len(frame) - 1) is None
    command = pb.BaseCommand(type=pb.BaseCommand.SEND, send=pb.CommandSend(producer_id=1, sequence_id=0))
    with_entry_metadata = encode_payload_command(command, pb.MessageMetadata(producer_name="p", sequence_id=0,
                                                                             publish_time=1), b"x",
                                                 broker_entry_metadata=pb.BrokerEntryMetadata(index=1))
    assert read_send(with_entry_metadata, 0, LIMIT) is None


@settings(max_examples=500)
@given(data=st.data())
def test_damaged_frames_never_raise_and_never_read_other_than_the_connection(data):
    frame = bytearray(send_frame(data.draw(U64), data.draw(U64), data.draw(st.none() | st.integers(0, 2**31 - 1)),
                                 data.draw(st.none() | U64), data.draw(st.binary(max_size=40)),
                                 data.draw(st.booleans())))
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        frame[data.draw(st.integers(min_value=0, max_value=len(frame) - 1))] = data.draw(st.integers(0, 255))
    frame = bytes(frame)
    read = read_send(frame, 0, LIMIT)
    if read is not None:
        assert read == as_the_connection_reads(frame[:read.end])


@given(blob=st.binary(max_size=120), start=st.integers(0, 10))
def test_arbitrary_bytes_never_raise(blob, start):
    read_send(b"\x00\x00\x00\x40\x00\x00\x00\x08\x08\x06\x32" + blob, 0, LIMIT)
    read_send(blob, start, LIMIT)


# -- Rule 6: the frame a read ends inside ---------------------------------------------------------------

def _prefixed(total: int) -> bytes:
    return struct.pack(">I", total) + b"\0" * total


@settings(max_examples=300, deadline=None)
@given(totals=st.lists(st.integers(4, 60), min_size=1, max_size=6), cut=st.integers(0, 400))
def test_the_tail_a_read_ends_inside_is_found_from_the_frames_lengths(totals, cut):
    stream = b"".join(_prefixed(total) for total in totals)
    data = stream[:cut % (len(stream) + 1)]
    starts, pos = [], 0
    for total in totals:  # the oracle: where each frame starts and ends
        starts.append((pos, pos + 4 + total))
        pos += 4 + total
    inside = [(start, end - start) for start, end in starts if start < len(data) < end]
    expected = None if not inside else (inside[0][0], inside[0][1] if len(data) - inside[0][0] >= 4 else 4)
    assert incomplete_tail(data, 1000) == expected


@pytest.mark.parametrize("refused_total", [0, 3, 997])
def test_a_read_holding_a_prefix_the_decoder_refuses_has_no_tail_to_hold(refused_total):
    # The decoder refuses these from their prefix alone (limit 1000 counts the prefix too), so
    # whoever holds them back would delay that refusal.
    data = _prefixed(10) + struct.pack(">I", refused_total) + b"\0"
    decoder = FrameDecoder(1000)
    decoder.feed(data)
    decoder.next_frame()
    with pytest.raises(RemoteProtocolError):
        decoder.next_frame()
    assert incomplete_tail(data, 1000) is None
    assert incomplete_tail(_prefixed(10) + struct.pack(">I", 996) + b"\0", 1000) == (14, 1000)
