"""Framing against bytes we did not write: the official client's frames and the fact sheet's example."""

import json
import struct
from pathlib import Path

import pytest

from pulsar_codec import RemoteProtocolError
from pulsar_codec import pulsar_api_pb2 as pb
from pulsar_codec.frames import (
    FrameDecoder, crc32c, decode_batch, encode_batch, encode_command, encode_payload_command, max_frame_size)

GOLDEN = json.loads((Path(__file__).parent / "golden" / "official_client.json").read_text())["frames"]

# A worked SEND frame, its CRC-32C checked with crcmod's crc-32c.
FACT_SEND = bytes.fromhex("00000020" "00000008" "0806320408011000" "0e01" "16f2f2f7" "00000008" "0a0170100018e807" "6869")


def decode_one(data: bytes):
    decoder = FrameDecoder()
    decoder.feed(data)
    frame = decoder.next_frame()
    assert decoder.buffered == 0
    return frame


def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283


def test_crc32c_seeding_equals_one_pass():
    assert crc32c(b"def", crc32c(b"abc")) == crc32c(b"abcdef")


def test_ping_frame_matches_the_wire_sheet():
    command = pb.BaseCommand(type=pb.BaseCommand.PING)
    command.ping.SetInParent()
    assert encode_command(command).hex() == "00000009000000050812920100"


def test_send_example_from_the_fact_sheet_encodes_byte_for_byte():
    command = pb.BaseCommand(type=pb.BaseCommand.SEND, send=pb.CommandSend(producer_id=1, sequence_id=0))
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1000)
    assert encode_payload_command(command, metadata, b"hi") == FACT_SEND


def test_send_example_decodes_with_valid_checksum():
    frame = decode_one(FACT_SEND)
    assert frame.command.type == pb.BaseCommand.SEND
    assert frame.checksum_valid is True
    assert frame.metadata.producer_name == "p" and frame.payload == b"hi"


def test_official_client_connect():
    frame = decode_one(bytes.fromhex(GOLDEN["CONNECT"]))
    connect = frame.command.connect
    assert frame.problem is None
    assert connect.client_version.startswith("Pulsar-CPP-")
    assert connect.protocol_version >= 20
    assert connect.auth_method_name == "none"
    assert connect.feature_flags.supports_auth_refresh


def test_official_client_partitioned_metadata_omits_field_6():
    # apache/pulsar-client-cpp#496: the C++ client has not implemented PIP-344 and never sends field 6,
    # so the broker must read the proto default, true.
    frame = decode_one(bytes.fromhex(GOLDEN["PARTITIONED_METADATA"]))
    request = frame.command.partitionMetadata
    assert request.topic == "persistent://public/default/golden"
    assert not request.HasField("metadata_auto_creation_enabled")
    assert request.metadata_auto_creation_enabled is True


def test_official_client_lookup_and_producer():
    lookup = decode_one(bytes.fromhex(GOLDEN["LOOKUP"])).command.lookupTopic
    assert lookup.topic == "persistent://public/default/golden" and lookup.authoritative is False
    producer = decode_one(bytes.fromhex(GOLDEN["PRODUCER"])).command.producer
    assert producer.producer_name == "golden-p" and producer.topic == lookup.topic


def test_official_client_send_checksum_verifies():
    frame = decode_one(bytes.fromhex(GOLDEN["SEND"]))
    assert frame.checksum_valid is True
    assert frame.payload == b"hi"
    assert frame.metadata.producer_name == "capture-0"


def test_corrupted_payload_fails_the_checksum_but_keeps_the_frame():
    data = bytearray(FACT_SEND)
    data[-1] ^= 0xFF
    frame = decode_one(bytes(data))
    assert frame.problem is None and frame.checksum_valid is False


def test_frame_split_across_reads():
    decoder = FrameDecoder()
    for byte in FACT_SEND[:-1]:
        decoder.feed(bytes([byte]))
        assert decoder.next_frame() is None
    decoder.feed(FACT_SEND[-1:])
    assert decoder.next_frame().payload == b"hi"


def test_oversize_frame_is_refused_before_its_body_arrives():
    decoder = FrameDecoder(max_frame_size())
    decoder.feed(struct.pack(">I", max_frame_size()))  # + 4-byte prefix = one byte over
    with pytest.raises(RemoteProtocolError, match="exceeds the maximum frame size"):
        decoder.next_frame()


def test_largest_allowed_frame_size_is_maxMessageSize_plus_10KiB():
    assert max_frame_size() == 5 * 1024 * 1024 + 10 * 1024 == 5_253_120


def test_command_size_larger_than_frame_loses_sync():
    decoder = FrameDecoder()
    decoder.feed(struct.pack(">II", 8, 100) + b"\0\0\0\0")
    with pytest.raises(RemoteProtocolError, match="commandSize"):
        decoder.next_frame()


def test_garbage_protobuf_in_a_delimited_frame_is_a_problem_not_a_crash():
    frame = decode_one(struct.pack(">II", 6, 2) + b"\xff\xff")
    assert frame.command is None and "Malformed" in frame.problem


def test_unknown_command_type_is_reported_with_its_number():
    frame = decode_one(struct.pack(">II", 6, 2) + b"\x08\x63")
    assert frame.raw_type == 99 and "Unknown command type 99" in frame.problem


def test_missing_required_field_is_named():
    body = pb.BaseCommand(type=pb.BaseCommand.PARTITIONED_METADATA)
    body.partitionMetadata.topic = "t"
    raw = body.SerializePartialToString()  # what a broken peer could send
    frame = decode_one(struct.pack(">II", 4 + len(raw), len(raw)) + raw)
    assert "request_id" in frame.problem


def test_batch_roundtrip():
    items = [(pb.SingleMessageMetadata(payload_size=0, sequence_id=i), f"m{i}".encode()) for i in range(3)]
    decoded = decode_batch(encode_batch(items), 3)
    assert [data for _, data in decoded] == [b"m0", b"m1", b"m2"]
    assert [single.sequence_id for single, _ in decoded] == [0, 1, 2]


def test_truncated_batch_is_a_value_error():
    items = [(pb.SingleMessageMetadata(payload_size=0), b"abc")]
    with pytest.raises(ValueError):
        decode_batch(encode_batch(items)[:-1], 1)
