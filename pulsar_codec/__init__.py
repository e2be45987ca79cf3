"""Sans-IO Pulsar binary protocol codec: bytes in, events out (see connection.py).

The reference broker (server role), the harness's wire drivers and the benches (client role) all
speak Pulsar's binary protocol through it. It imports only protobuf, crc32c and the standard
library, and nothing of the project (tests/test_import_order.py).
"""

from . import events
from .connection import CLOSED, NEED_DATA, NEWEST_PROTOCOL_VERSION, Connection, Role, State
from .errors import LocalProtocolError, ProtocolError, RemoteProtocolError
from .frames import DEFAULT_MAX_MESSAGE_SIZE, FRAME_PADDING, max_frame_size

__all__ = [
    "events", "Connection", "Role", "State", "NEED_DATA", "CLOSED", "NEWEST_PROTOCOL_VERSION",
    "ProtocolError", "LocalProtocolError", "RemoteProtocolError", "DEFAULT_MAX_MESSAGE_SIZE",
    "FRAME_PADDING", "max_frame_size",
]
