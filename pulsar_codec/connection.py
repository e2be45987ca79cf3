"""Connection: the sans-IO state of one Pulsar connection, client or server side.

Bytes go in with ``receive_data``; events come out of ``next_event`` (or ``NEED_DATA``); events
go out as bytes from ``send``. No sockets, no clocks, no asyncio: the server and the wire driver
own the I/O (h11's shape).

- the client's first command is CONNECT; a server connection refuses anything else first with
  RemoteProtocolError (hint ServiceNotReady), since no request can be served before the handshake.
- the negotiated protocol version is min(our newest, the client's CONNECT.protocol_version) and
  is what CONNECTED carries (Pulsar's ServerCnx.handleConnect).
- checksums: SEND carries a CRC32C checksum when the negotiated version is at least v6; the broker
  strips the checksum from MESSAGE for clients below v11 (Pulsar's Commands and
  PulsarCommandSenderImpl). A MESSAGE for a stored entry (``Connection.message``) carries the
  producer's checksum as it came, and none when the SEND carried none: PulsarCommandSenderImpl,
  "the broker sends the stored entry as the producer wrote it".
- after a RemoteProtocolError the connection is in ERROR and yields no more events.
"""

from __future__ import annotations

import enum
from typing import Optional, Union

from . import events as ev
from . import pulsar_api_pb2 as pb
from .errors import LocalProtocolError, RemoteProtocolError
from .frames import PAYLOAD_TYPES, FrameDecoder, encode_command, encode_payload_command, max_frame_size

NEWEST_PROTOCOL_VERSION = 21


class Role(enum.Enum):
    CLIENT = "client"
    SERVER = "server"


class State(enum.Enum):
    AWAITING_CONNECT = "awaiting-connect"
    CONNECTED = "connected"
    CLOSED = "closed"
    ERROR = "error"


SEND_CHECKSUM_SINCE, MESSAGE_CHECKSUM_SINCE = 6, 11  # protocol versions that carry checksums


class _Sentinel:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


NEED_DATA = _Sentinel("NEED_DATA")
CLOSED = _Sentinel("CLOSED")

Received = Union[ev.Event, ev.InvalidCommand, _Sentinel]


class Connection:
    def __init__(self, role: Role, *, max_frame_size: int = max_frame_size(),
                 newest_protocol_version: int = NEWEST_PROTOCOL_VERSION):
        self.role = role
        self.state = State.AWAITING_CONNECT
        self.newest_protocol_version = newest_protocol_version
        self.protocol_version: Optional[int] = None  # negotiated, once known
        self.peer_protocol_version: Optional[int] = None
        self.peer_feature_flags = pb.FeatureFlags()
        self.peer_max_message_size: Optional[int] = None
        self.server_version: Optional[str] = None
        self._decoder = FrameDecoder(max_frame_size)
        self._eof = False

    # -- receiving ---------------------------------------------------------------------------

    @property
    def max_frame_size(self) -> int:
        """The largest frame this connection accepts, length prefix included."""
        return self._decoder.max_frame_size

    def receive_data(self, data: bytes) -> None:
        """Feed bytes from the peer; ``b""`` means the peer closed its side."""
        if data:
            self._decoder.feed(data)
        else:
            self._eof = True

    def next_event(self) -> Received:
        if self.state is State.ERROR:
            return CLOSED
        try:
            frame = self._decoder.next_frame()
        except RemoteProtocolError:
            self.state = State.ERROR
            raise
        if frame is None:
            if self._eof:
                self.state = State.CLOSED
                return CLOSED
            return NEED_DATA
        if frame.problem is not None or frame.command.type not in ev.EVENT_CLASSES:
            reason = frame.problem or f"Unsupported command {pb.BaseCommand.Type.Name(frame.command.type)}"
            invalid = ev.InvalidCommand(reason, frame.raw_type, _request_id_of(frame.command))
            if self.state is State.AWAITING_CONNECT and self.role is Role.SERVER:
                self.state = State.ERROR
                raise RemoteProtocolError(f"Invalid first command: {reason}", "ServiceNotReady")
            return invalid
        extra = {}
        if frame.command.type in PAYLOAD_TYPES:
            extra = {"metadata": frame.metadata, "payload": frame.payload, "checksum_valid": frame.checksum_valid,
                     "checksum": frame.checksum, "metadata_bytes": frame.metadata_bytes}
        event = ev.from_command(frame.command, **extra)
        self._track_received(event)
        return event

    def _track_received(self, event: ev.Event) -> None:
        if self.role is Role.SERVER and self.state is State.AWAITING_CONNECT:
            if not isinstance(event, ev.Connect):
                self.state = State.ERROR
                raise RemoteProtocolError(
                    f"Expected CONNECT as the first command, got {event.type_name}", "ServiceNotReady")
            self.peer_protocol_version = event.protocol_version
            self.protocol_version = min(self.newest_protocol_version, event.protocol_version)
            self.peer_feature_flags = pb.FeatureFlags()
            self.peer_feature_flags.CopyFrom(event.feature_flags)
        elif self.role is Role.CLIENT and isinstance(event, ev.Connected):
            self.state = State.CONNECTED
            self.protocol_version = event.protocol_version
            self.peer_protocol_version = event.protocol_version
            self.peer_feature_flags.CopyFrom(event.feature_flags)
            self.server_version = event.server_version
            if event.has("max_message_size"):
                self.peer_max_message_size = event.max_message_size
                self._decoder.max_frame_size = max_frame_size(event.max_message_size)

    # -- sending -----------------------------------------------------------------------------

    def send(self, event: ev.Event) -> bytes:
        self._check_sendable(event)
        command = event.to_command()
        if event.TYPE in PAYLOAD_TYPES:
            if event.metadata is None or event.payload is None:
                raise LocalProtocolError(f"{event.type_name} needs metadata and payload")
            return encode_payload_command(command, event.metadata, event.payload,
                                          checksum=self._checksum_on(event))
        return encode_command(command)

    def message(self, consumer_id: int, ledger_id: int, entry_id: int, partition: int, redelivery_count: int,
                metadata: bytes, payload: bytes, checksum: Optional[int]) -> bytes:
        """The MESSAGE that forwards a stored entry: its metadata bytes and payload as the
        producer wrote them, with the producer's ``checksum`` (None: it sent none) for a client of
        v11 or later."""
        event = ev.Message(consumer_id=consumer_id, redelivery_count=redelivery_count,
                           message_id={"ledgerId": ledger_id, "entryId": entry_id, "partition": partition})
        self._check_sendable(event)
        if (self.peer_protocol_version or 0) < MESSAGE_CHECKSUM_SINCE:
            checksum = None
        return encode_payload_command(event.to_command(), metadata, payload,
                                      checksum=checksum is not None, checksum_value=checksum)

    def _check_sendable(self, event: ev.Event) -> None:
        if self.state in (State.CLOSED, State.ERROR) and not isinstance(event, ev.Error):
            raise LocalProtocolError(f"Cannot send {event.type_name} on a {self.state.value} connection")
        self._check_role(event)
        missing = event.pb.FindInitializationErrors()
        if missing:
            raise LocalProtocolError(f"{event.type_name} is missing required fields: {', '.join(missing)}")

    def _check_role(self, event: ev.Event) -> None:
        if self.role is Role.CLIENT and isinstance(event, ev.Connect):
            self.protocol_version = event.protocol_version
        if self.role is Role.SERVER:
            if isinstance(event, ev.Connected):
                if self.state is not State.AWAITING_CONNECT or self.protocol_version is None:
                    raise LocalProtocolError("CONNECTED may only answer a received CONNECT")
                self.state = State.CONNECTED
            elif self.state is State.AWAITING_CONNECT and not isinstance(event, ev.Error):
                raise LocalProtocolError(f"Cannot send {event.type_name} before the handshake completes")

    def _checksum_on(self, event: ev.Event) -> bool:
        if isinstance(event, ev.Send):
            return (self.protocol_version or 0) >= SEND_CHECKSUM_SINCE
        return (self.peer_protocol_version or 0) >= MESSAGE_CHECKSUM_SINCE

    def connected_event(self, server_version: str, max_message_size: int, feature_flags: dict) -> ev.Connected:
        """The CONNECTED that answers the received CONNECT, with the negotiated version."""
        if self.protocol_version is None:
            raise LocalProtocolError("No CONNECT received yet")
        return ev.Connected(server_version=server_version, protocol_version=self.protocol_version,
                            max_message_size=max_message_size, feature_flags=feature_flags)


def _request_id_of(command: Optional[pb.BaseCommand]) -> Optional[int]:
    """Best effort: the request_id of a partly valid command, so its error can be addressed."""
    if command is None or not command.HasField("type") or command.type not in ev.EVENT_CLASSES:
        return None
    body = getattr(command, ev.EVENT_CLASSES[command.type].FIELD)
    for name in ("request_id",):
        if name in body.DESCRIPTOR.fields_by_name and body.HasField(name):
            return getattr(body, name)
    return None
