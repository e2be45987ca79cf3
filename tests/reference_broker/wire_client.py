"""A raw client connection for broker tests: our codec in CLIENT role over a blocking socket."""

import socket

from pulsar_codec import NEED_DATA, Connection, Role, events as ev


def raw_connect(broker_url: str, client_version: str = "broker-test"):
    """Connect and complete the handshake; returns (socket, Connection)."""
    host, port = broker_url.removeprefix("pulsar://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    conn = Connection(Role.CLIENT)
    sock.sendall(conn.send(ev.Connect(client_version=client_version, protocol_version=21)))
    assert isinstance(read_event(sock, conn), ev.Connected)
    return sock, conn


def read_event(sock, conn):
    """The next event from the broker (CLOSED once it hung up); bounded by the socket timeout."""
    while True:
        event = conn.next_event()
        if event is not NEED_DATA:
            return event
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            data = b""
        conn.receive_data(data)
        if not data:
            return conn.next_event()


def still_serving(broker_url: str) -> bool:
    """A fresh connection still gets its partition-metadata answer."""
    sock, conn = raw_connect(broker_url)
    sock.sendall(conn.send(ev.PartitionedMetadata(topic="persistent://public/default/alive", request_id=7)))
    answer = read_event(sock, conn)
    sock.close()
    return isinstance(answer, ev.PartitionedMetadataResponse) and answer.request_id == 7
