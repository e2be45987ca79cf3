"""Shortcuts for the broker's most frequent frames: bytes built directly, no protobuf objects.

PARTITIONED_METADATA, read from raw bytes, and its answer; SEND_RECEIPT and MESSAGE (Rule 4);
SEND, read from raw bytes (Rule 5).

A client asks for a topic's partitions before every producer and consumer it creates, and again
whenever it re-checks them (pulsar-wire.md §3.3). A broker that already knows the answer spends
most of such a round trip decoding and encoding protobuf around a dictionary look-up
(bench/lookup.py). The first two functions let the server skip that for the common shape only;
the decision itself stays in the broker (service.py, core.py), which says which answers may be reused.

Rule 1: ``read_partitioned_metadata`` accepts exactly one shape: a command-only frame holding
        BaseCommand{type = PARTITIONED_METADATA, partitionMetadata{topic, request_id,
        [metadata_auto_creation_enabled as 0 or 1]}} with the fields in field-number order, as
        protobuf writes them, and nothing else. Any other byte (another command, an unknown or
        repeated field, a varint written longer than it needs or past 64 bits, a frame cut short)
        gives None, and the caller takes the Connection path, which decodes and checks
        everything. So it never raises and never accepts a frame the full decoder would treat
        differently.
Rule 2: the request id stays the varint bytes it came as (canonical, by Rule 1): a Success answer
        copies them rather than decoding and encoding a number; only a Failed answer, written
        through the Connection, needs the number (``varint_value``).
Rule 3: ``partitioned_metadata_answer`` writes the bytes ``Connection.send`` writes for
        PartitionedMetadataResponse{partitions, request_id, response = Success} (tests compare
        them for every size of varint).
Rule 4: ``send_receipt_frame`` and ``message_frame`` write the bytes ``Connection.send`` writes for
        the SendReceipt and Message events the broker builds: every field it sets, set even when
        zero, in field-number order, a negative int32 as ten bytes. A MESSAGE's checksum block holds
        the value it is given (the producer's, which is the CRC ``Connection.send`` would compute
        whenever the SEND's was valid) and is left out for None. A non-persistent publish is
        one SEND in, one MESSAGE per consumer and one SEND_RECEIPT out; building those two as
        events (an event, a BaseCommand, a copy, a check, a serialization) was 10 of its 50 µs
        (bench/nonpersistent.py). ``Connection.send_receipt`` and ``Connection.message`` apply
        the connection's rules around them.
Rule 5: ``read_send`` accepts exactly the SEND shape the official client writes: a payload frame
        holding BaseCommand{type = SEND, send{producer_id, sequence_id, [num_messages],
        [highest_sequence_id]}} with canonical varints in field-number order, then an optional
        checksum block, the metadata size, a MessageMetadata with every required field, and the
        payload. Anything else (another field or order, a broker-entry-metadata block, a
        num_messages the int32 field would read differently, metadata that does not decode, a
        frame past ``limit`` or cut short) gives None and the Connection path, as in Rule 1. A
        checksum that does not match is read, with ``checksum_valid`` False: refusing it is the
        broker's decision, not the reader's. A batch of 100 messages is a 7 KB frame; read this
        way it is copied once (the payload), where the FrameDecoder copies it four times and
        builds a BaseCommand, an event and a dispatch around it (bench/nonpersistent.py).
Rule 6: ``incomplete_tail`` tells a reader where the frame a read ends inside starts, and how long
        that frame will be, so the reader can hold that start until the frame is whole and read it
        with the functions above rather than hand it to a Connection (a SEND larger than one read
        always ends a read inside it). It walks the read's frames by their prefixes only; a read
        holding a frame whose prefix the frame decoder refuses (frames.py FrameDecoder) gives None,
        so the decoder refuses it as soon as it would have.
"""

from __future__ import annotations

import struct
from typing import NamedTuple, Optional

from .frames import FRAME_PADDING, PayloadProblem, command_frame, payload_frame, payload_section

_TWO_U32 = struct.Struct(">II")
_U32 = struct.Struct(">I")
# BaseCommand field 1 (type) = 21 PARTITIONED_METADATA, then field 21 (partitionMetadata) as LEN.
_REQUEST_HEAD = b"\x08\x15\xaa\x01"
# BaseCommand field 1 (type) = 22 PARTITIONED_METADATA_RESPONSE, then field 22 as LEN.
_ANSWER_HEAD = b"\x08\x16\xb2\x01"
_TOPIC_TAG, _REQUEST_ID_TAG, _AUTO_CREATION_TAG = 0x0A, 0x10, 0x30
_SUCCESS_TAIL = b"\x18\x00"  # field 3 (response) = Success
# Below the smallest frame limit any broker configuration gives (maxMessageSize + 10 KiB), so the
# Connection path would never refuse a frame this accepts for its size.
_LARGEST_FRAME = FRAME_PADDING


def read_partitioned_metadata(data: bytes, start: int = 0) -> Optional[tuple[int, bytes, bytes, Optional[bool]]]:
    """``(end, topic, request_id varint, auto_creation)`` of the frame at ``data[start:]`` (Rule 1), or None.

    ``end`` is where the next frame starts; ``auto_creation`` is field 6 as sent, None when it is
    absent (which means true: the broker that remembers an answer decides that, not this).
    """
    size = len(data)
    if size - start < 14 or data[start + 8:start + 12] != _REQUEST_HEAD:
        return None
    total, command_size = _TWO_U32.unpack_from(data, start)
    end = start + 4 + total
    if command_size != total - 4 or end > size or total + 4 > _LARGEST_FRAME:
        return None
    pos = start + 12
    length = data[pos]
    if length < 0x80:
        pos += 1
    else:
        length, pos = _two_byte_length(data, pos, end)
    if length < 2 or pos + length != end or data[pos] != _TOPIC_TAG:
        return None  # (a topic needs its tag and its length, so at least two bytes)
    pos += 1
    topic_length = data[pos]
    if topic_length < 0x80:
        pos += 1
    else:
        topic_length, pos = _two_byte_length(data, pos, end)
    topic_end = pos + topic_length
    if topic_end >= end or data[topic_end] != _REQUEST_ID_TAG:
        return None
    topic = data[pos:topic_end]
    varint_start = topic_end + 1
    stop = varint_start + 10 if varint_start + 10 < end else end
    pos = varint_start
    while pos < stop and data[pos] & 0x80:
        pos += 1
    if pos == stop:
        return None  # no last byte within ten
    pos += 1
    request_id = data[varint_start:pos]
    if (len(request_id) > 1 and request_id[-1] == 0) or (len(request_id) == 10 and request_id[-1] > 1):
        return None  # written longer than needed, or past 64 bits (Rule 1)
    if pos == end:
        return end, topic, request_id, None
    if pos + 2 != end or data[pos] != _AUTO_CREATION_TAG or data[pos + 1] > 1:
        return None
    return end, topic, request_id, data[pos + 1] == 1


class PlainSend(NamedTuple):
    """A SEND as ``read_send`` reads it (Rule 5); the defaults are the proto's."""

    end: int  # where the next frame starts
    producer_id: int
    sequence_id: int
    num_messages: int
    highest_sequence_id: int
    metadata: bytes  # the MessageMetadata as sent
    payload: bytes
    checksum: Optional[int]  # as sent; None when the frame carried no checksum block
    checksum_valid: Optional[bool]


# BaseCommand field 1 (type) = 6 SEND, then field 6 (send) as LEN.
_SEND_HEAD = b"\x08\x06\x32"
_INT32_LIMIT = 2**31


def read_send(data: bytes, start: int = 0, limit: int = _LARGEST_FRAME) -> Optional[PlainSend]:
    """The SEND frame at ``data[start:]`` (Rule 5), or None; ``limit`` is the connection's largest
    frame, length prefix included."""
    size = len(data)
    if size - start < 20 or data[start + 8:start + 11] != _SEND_HEAD:
        return None
    total, command_size = _TWO_U32.unpack_from(data, start)
    end = start + 4 + total
    if end > size or total + 4 > limit or command_size > total - 4:
        return None
    command_end = start + 8 + command_size
    length = data[start + 11]
    if length >= 0x80 or start + 12 + length != command_end or data[start + 12] != 0x08:
        return None  # (a CommandSend of the shape accepted is far below 128 bytes)
    producer_id, pos = _canonical_varint(data, start + 13, command_end)
    if pos >= command_end or data[pos] != 0x10:
        return None
    sequence_id, pos = _canonical_varint(data, pos + 1, command_end)
    num_messages, highest = 1, 0
    if pos < command_end and data[pos] == 0x18:
        num_messages, pos = _canonical_varint(data, pos + 1, command_end)
        if num_messages >= _INT32_LIMIT:
            return None  # an int32: protobuf reads such a varint as a negative or truncated number
    if pos < command_end and data[pos] == 0x30:
        highest, pos = _canonical_varint(data, pos + 1, command_end)
    if pos != command_end:
        return None  # another field, another order, or a varint that is not canonical
    try:
        section = payload_section(data, command_end, end)  # what the frame decoder reads, read the same way
    except PayloadProblem:
        return None
    return PlainSend(end, producer_id, sequence_id, num_messages, highest, section.metadata_bytes,
                     section.payload, section.checksum, section.checksum_valid)


def incomplete_tail(data: bytes, limit: int = _LARGEST_FRAME) -> Optional[tuple[int, int]]:
    """Where the frame ``data`` ends inside starts, and the length that frame needs, prefix
    included (4 while the prefix itself is incomplete); None when ``data`` ends between frames,
    or holds a frame a frame decoder refuses from its prefix alone (past ``limit``, or too small
    to hold a commandSize), which it should see at once (Rule 6)."""
    pos, end = 0, len(data)
    while end - pos >= 4:
        size = _U32.unpack_from(data, pos)[0] + 4
        if size < 8 or size > limit:
            return None
        if pos + size > end:
            return pos, size
        pos += size
    return (pos, 4) if pos < end else None


def _canonical_varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it; a position past ``end`` when it is cut
    short, longer than it needs to be or past 64 bits (the caller then refuses the frame)."""
    value = shift = 0
    stop = min(pos + 10, end)
    while pos < stop:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if (byte == 0 and shift) or (shift == 63 and byte > 1):
                return 0, end + 1
            return value, pos
        shift += 7
    return 0, end + 1


def _two_byte_length(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The two-byte varint length at ``pos`` and the position after it; a length past ``end``
    when it is not one, which the caller refuses."""
    if pos + 1 >= end or data[pos + 1] >= 0x80 or data[pos + 1] == 0:
        return end, end
    return (data[pos] & 0x7F) | (data[pos + 1] << 7), pos + 2


def partitioned_metadata_answer(partitions: int, request_id: bytes) -> bytes:
    """The frame answering the request whose id is the varint ``request_id`` with Success and
    ``partitions`` (Rule 3). All but the id depends only on the count and the id's length, so
    that head is built once per pair: 0.3 µs an answer instead of 1.0 (the lookup's hot path)."""
    head = _answer_heads.get((partitions, len(request_id)))
    if head is None:
        head = _answer_heads[(partitions, len(request_id))] = _answer_head(partitions, len(request_id))
    return head + request_id + _SUCCESS_TAIL


_answer_heads: dict[tuple[int, int], bytes] = {}
_ONE_BYTE_VARINTS = [bytes((value,)) for value in range(0x80)]
_U64_MASK = 2**64 - 1
_MINUS_ONE = b"\xff" * 9 + b"\x01"  # -1 as an int32 or int64, 2**64 - 1 as a uint64


def _answer_head(partitions: int, request_id_size: int) -> bytes:
    if len(_answer_heads) > 1024:
        _answer_heads.clear()
    fields_before_id = b"\x08" + varint(partitions) + b"\x10"
    body_size = len(fields_before_id) + request_id_size + len(_SUCCESS_TAIL)
    command_head = _ANSWER_HEAD + varint(body_size) + fields_before_id
    command_size = len(command_head) + request_id_size + len(_SUCCESS_TAIL)
    return _TWO_U32.pack(command_size + 4, command_size) + command_head


def varint(value: int) -> bytes:
    """``value`` (0 <= value < 2**64) as a protobuf varint. A MESSAGE and its SEND_RECEIPT write
    fourteen of them, nearly all below 2**21 (ids, sequence ids, sizes): those take no loop."""
    if value < 0x80:
        return _ONE_BYTE_VARINTS[value]
    if value < 0x4000:
        return bytes(((value & 0x7F) | 0x80, value >> 7))
    if value < 0x200000:
        return bytes(((value & 0x7F) | 0x80, ((value >> 7) & 0x7F) | 0x80, value >> 14))
    if value == _U64_MASK:
        return _MINUS_ONE  # the partition of every MESSAGE from an unpartitioned topic
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint_value(data: bytes) -> int:
    """The number a whole varint (as ``read_partitioned_metadata`` gives a request id) stands for."""
    value = 0
    for shift, byte in enumerate(data):
        value |= (byte & 0x7F) << (7 * shift)
    return value


_SEND_RECEIPT_HEAD = b"\x08\x07\x3a"  # type = SEND_RECEIPT (7), then field 7 (send_receipt) as LEN
_MESSAGE_HEAD = b"\x08\x09\x4a"  # type = MESSAGE (9), then field 9 (message) as LEN


def send_receipt_frame(producer_id: int, sequence_id: int, highest_sequence_id: int,
                       ledger_id: int, entry_id: int) -> bytes:
    """SEND_RECEIPT{producer_id, sequence_id, message_id{ledgerId, entryId}, highest_sequence_id} (Rule 4)."""
    message_id = b"\x08" + varint(ledger_id) + b"\x10" + varint(entry_id)
    receipt = (b"\x08" + varint(producer_id) + b"\x10" + varint(sequence_id)
               + b"\x1a" + varint(len(message_id)) + message_id + b"\x20" + varint(highest_sequence_id))
    return command_frame(_SEND_RECEIPT_HEAD + varint(len(receipt)) + receipt)


def message_frame(consumer_id: int, ledger_id: int, entry_id: int, partition: int, redelivery_count: int,
                  metadata: bytes, payload: bytes, checksum: Optional[int]) -> bytes:
    """MESSAGE{consumer_id, message_id{ledgerId, entryId, partition}, redelivery_count} with the
    entry's serialized metadata and payload, and the checksum block holding ``checksum`` unless it
    is None (Rule 4)."""
    message_id = (b"\x08" + varint(ledger_id) + b"\x10" + varint(entry_id)
                  + b"\x18" + varint(partition & _U64_MASK))  # int32: a negative one as its 64-bit form
    message = (b"\x08" + varint(consumer_id) + b"\x12" + varint(len(message_id)) + message_id
               + b"\x18" + varint(redelivery_count))
    return payload_frame(_MESSAGE_HEAD + varint(len(message)) + message, metadata, payload,
                         checksum=checksum is not None, checksum_value=checksum)
