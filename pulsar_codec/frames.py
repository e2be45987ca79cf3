"""Pulsar frame encoding and decoding (Pulsar's Commands and PulsarDecoder), bytes only.

Simple command:   [totalSize u32][commandSize u32][BaseCommand]
Payload command:  [totalSize u32][commandSize u32][BaseCommand]
                  ([0x0e02][size u32][BrokerEntryMetadata])?     broker -> client only
                  ([0x0e01][crc32c u32])?
                  [metadataSize u32][MessageMetadata][payload]

- all sizes are unsigned 32-bit big-endian; totalSize counts every byte after itself.
- the checksum is CRC-32C over [metadataSize][metadata][payload] and nothing else (Pulsar's
  Commands.serializeCommandSendWithSize).
- a frame whose totalSize exceeds the limit is refused before its body is read, as Netty's
  LengthFieldBasedFrameDecoder does; the limit counts the 4-byte length prefix
  (Commands.MESSAGE_SIZE_FRAME_PADDING: maxMessageSize + 10 KiB = 5,253,120 bytes by default).
- ``FrameDecoder`` never raises for a well-delimited frame whose protobuf is bad: it yields a
  ``RawFrame`` with ``problem`` set, so the connection can answer and carry on. Only framing that
  loses sync (bad sizes, oversize) raises RemoteProtocolError.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Optional

import crc32c as _crc32c
from google.protobuf.message import DecodeError

from . import pulsar_api_pb2 as pb
from .errors import RemoteProtocolError

MAGIC_CRC32C = 0x0E01
MAGIC_BROKER_ENTRY_METADATA = 0x0E02
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
FRAME_PADDING = 10 * 1024
PAYLOAD_TYPES = (pb.BaseCommand.SEND, pb.BaseCommand.MESSAGE)

_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")


def crc32c(data: bytes, seed: int = 0) -> int:
    return _crc32c.crc32c(data, value=seed)


def max_frame_size(max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> int:
    """Largest frame accepted, length prefix included."""
    return max_message_size + FRAME_PADDING


@dataclass
class RawFrame:
    command: Optional[pb.BaseCommand]
    metadata: Optional[pb.MessageMetadata] = None
    payload: Optional[bytes] = None
    checksum_valid: Optional[bool] = None  # None: the frame carried no checksum
    checksum: Optional[int] = None  # the CRC32C it carried, as sent
    metadata_bytes: Optional[bytes] = None  # the MessageMetadata as sent
    broker_entry_metadata: Optional[pb.BrokerEntryMetadata] = None
    problem: Optional[str] = None  # why the command could not be used, when it cannot
    raw_type: Optional[int] = None  # the type number as sent, even when unknown to us
    size: int = 0


def encode_command(command: pb.BaseCommand) -> bytes:
    body = command.SerializeToString()
    return _U32.pack(4 + len(body)) + _U32.pack(len(body)) + body


def encode_payload_command(
    command: pb.BaseCommand,
    metadata: pb.MessageMetadata | bytes,
    payload: bytes,
    *,
    checksum: bool = True,
    checksum_value: Optional[int] = None,
    broker_entry_metadata: Optional[pb.BrokerEntryMetadata] = None,
) -> bytes:
    """A payload command; with ``checksum``, the CRC32C block holds ``checksum_value`` when given
    (a producer's, forwarded with the bytes it covers), else the CRC of those bytes ([metadataSize][metadata][payload])."""
    body = command.SerializeToString()
    meta = metadata if isinstance(metadata, bytes) else metadata.SerializeToString()
    frame = _U32.pack(len(body)) + body
    if broker_entry_metadata is not None:
        bem = broker_entry_metadata.SerializeToString()
        frame += _U16.pack(MAGIC_BROKER_ENTRY_METADATA) + _U32.pack(len(bem)) + bem
    section = _U32.pack(len(meta)) + meta + payload
    if checksum:
        frame += _U16.pack(MAGIC_CRC32C) + _U32.pack(crc32c(section) if checksum_value is None else checksum_value)
    frame += section
    return _U32.pack(len(frame)) + frame


class FrameDecoder:
    """Accumulates bytes and cuts them into frames."""

    def __init__(self, max_frame_size: int = max_frame_size()):
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()

    def feed(self, data: bytes) -> None:
        self._buffer += data

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def next_frame(self) -> Optional[RawFrame]:
        if len(self._buffer) < 4:
            return None
        (total,) = _U32.unpack_from(self._buffer, 0)
        if total + 4 > self.max_frame_size:
            raise RemoteProtocolError(
                f"Frame of {total + 4} bytes exceeds the maximum frame size {self.max_frame_size}"
                " (maxMessageSize + 10 KiB)", "NotAllowedError")
        if total < 4:
            raise RemoteProtocolError(f"Frame totalSize {total} is too small to hold a commandSize", "UnknownError")
        if len(self._buffer) < 4 + total:
            return None
        frame = bytes(self._buffer[4:4 + total])
        del self._buffer[:4 + total]
        return _parse_frame(frame)


def _parse_frame(frame: bytes) -> RawFrame:
    (command_size,) = _U32.unpack_from(frame, 0)
    if command_size > len(frame) - 4:
        raise RemoteProtocolError(
            f"commandSize {command_size} exceeds the frame's remaining {len(frame) - 4} bytes", "UnknownError")
    body = frame[4:4 + command_size]
    result = RawFrame(command=None, size=len(frame) + 4)
    try:
        command = pb.BaseCommand.FromString(body)
    except DecodeError as exc:
        result.raw_type = _peek_type(body)
        result.problem = f"Malformed BaseCommand protobuf: {exc}"
        return result
    result.command = command
    if command.HasField("type"):
        result.raw_type = command.type
    else:  # absent, or a number proto2 keeps among the unknown fields: read it from the bytes
        result.raw_type = _peek_type(body)
        result.problem = (f"Unknown command type {result.raw_type}" if result.raw_type is not None
                          else "BaseCommand without a type")
        return result
    missing = command.FindInitializationErrors()
    if missing:
        result.problem = f"{pb.BaseCommand.Type.Name(command.type)} is missing required fields: {', '.join(missing)}"
        return result
    rest = frame[4 + command_size:]
    if command.type in PAYLOAD_TYPES:
        _parse_payload_section(rest, result)
    elif rest:
        result.problem = f"{len(rest)} unexpected bytes after a {pb.BaseCommand.Type.Name(command.type)} command"
    return result


def _parse_payload_section(rest: bytes, result: RawFrame) -> None:
    """The optional broker entry metadata, the checksum block, the metadata and the payload."""
    pos = 0
    if len(rest) >= 2 and _U16.unpack_from(rest, 0)[0] == MAGIC_BROKER_ENTRY_METADATA:
        if len(rest) < 6:
            result.problem = "Truncated broker entry metadata"
            return
        (size,) = _U32.unpack_from(rest, 2)
        try:
            result.broker_entry_metadata = pb.BrokerEntryMetadata.FromString(rest[6:6 + size])
        except DecodeError as exc:
            result.problem = f"Malformed BrokerEntryMetadata: {exc}"
            return
        pos = 6 + size
    if len(rest) - pos >= 2 and _U16.unpack_from(rest, pos)[0] == MAGIC_CRC32C:
        if len(rest) - pos < 6:
            result.problem = "Truncated checksum block"
            return
        (result.checksum,) = _U32.unpack_from(rest, pos + 2)
        pos += 6
    if len(rest) - pos < 4:
        result.problem = "Payload command without a metadataSize field"
        return
    (meta_size,) = _U32.unpack_from(rest, pos)
    if meta_size > len(rest) - pos - 4:
        result.problem = f"metadataSize {meta_size} exceeds the frame"
        return
    metadata_end = pos + 4 + meta_size
    result.metadata_bytes = rest[pos + 4:metadata_end]
    try:
        result.metadata = pb.MessageMetadata.FromString(result.metadata_bytes)
    except DecodeError as exc:
        result.problem = f"Malformed MessageMetadata: {exc}"
        return
    if not result.metadata.IsInitialized():
        result.problem = ("MessageMetadata is missing required fields: "
                          f"{', '.join(result.metadata.FindInitializationErrors())}")
        return
    result.payload = rest[metadata_end:]
    if result.checksum is not None:  # CRC-32C over [metadataSize][metadata][payload]
        result.checksum_valid = crc32c(rest[pos:]) == result.checksum


def _peek_type(body: bytes) -> Optional[int]:
    """Read field 1 (type) as a varint without trusting the rest of the message."""
    if len(body) < 2 or body[0] != 0x08:
        return None
    value, shift = 0, 0
    for byte in body[1:11]:
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value
        shift += 7
    return None


# -- batches (Commands.serializeSingleMessageInBatchWithPayload) ----------------------------------------

def encode_batch(items: list[tuple[pb.SingleMessageMetadata, bytes]]) -> bytes:
    out = bytearray()
    for single, data in items:
        single.payload_size = len(data)
        meta = single.SerializeToString()
        out += _U32.pack(len(meta)) + meta + data
    return bytes(out)


def decode_batch(payload: bytes, count: int) -> list[tuple[pb.SingleMessageMetadata, bytes]]:
    """Split an uncompressed batch payload into its ``count`` items; ValueError when malformed."""
    items, pos = [], 0
    for index in range(count):
        if len(payload) - pos < 4:
            raise ValueError(f"Batch item {index} is truncated")
        (size,) = _U32.unpack_from(payload, pos)
        pos += 4
        try:
            single = pb.SingleMessageMetadata.FromString(payload[pos:pos + size])
        except DecodeError as exc:
            raise ValueError(f"Batch item {index} has malformed metadata: {exc}") from None
        pos += size
        if single.FindInitializationErrors() or single.payload_size > len(payload) - pos:
            raise ValueError(f"Batch item {index} declares a payload larger than the batch")
        items.append((single, payload[pos:pos + single.payload_size]))
        pos += single.payload_size
    return items
