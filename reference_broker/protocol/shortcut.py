"""Shortcuts for the broker's most frequent frames: bytes built directly, no protobuf objects.

SEND_RECEIPT and MESSAGE (Rule 4); SEND, read from raw bytes (Rule 5).

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
        frame past ``limit`` or cut short) gives None and the Connection path, as for any frame it does not accept. A
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
_INT32_LIMIT = 2**31
# Below the smallest frame limit any broker configuration gives (maxMessageSize + 10 KiB), so the
# Connection path would never refuse a frame this accepts for its size.
_LARGEST_FRAME = FRAME_PADDING


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


_ONE_BYTE_VARINTS = [bytes((value,)) for value in range(0x80)]
_U64_MASK = 2**64 - 1
_MINUS_ONE = b"\xff" * 9 + b"\x01"  # -1 as an int32 or int64, 2**64 - 1 as a uint64


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
