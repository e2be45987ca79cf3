"""The broker's Connection after a handshake, and what it makes of bytes: the reference the
shortcut tests (test_shortcut.py, test_send_shortcut.py) hold protocol/shortcut.py to."""

from __future__ import annotations

from reference_broker.protocol import NEED_DATA, Connection, Role, events as ev


def connected_server(client_version: int = 21) -> Connection:
    server = Connection(Role.SERVER)
    server.receive_data(Connection(Role.CLIENT).send(ev.Connect(client_version="test",
                                                                protocol_version=client_version)))
    server.next_event()
    server.send(server.connected_event("test", 5 * 1024 * 1024, {}))
    return server


def full_decode(frame: bytes):
    """What the broker's Connection makes of ``frame``: its events until it needs more data."""
    server = connected_server()
    server.receive_data(frame)
    events = []
    while (event := server.next_event()) is not NEED_DATA:
        events.append(event)
    return events
