"""bench/lookup_floor.py: the measuring server bench/lookup.py --floor compares against.

Its figures mean something only if it answers the same lookup the reference broker answers, over
the same codec, and nothing more; and a bench must not leave it running.
"""

from __future__ import annotations

import socket

from bench.lookup import FloorServer
from reference_broker.protocol import NEED_DATA, Connection, Role
from reference_broker.protocol import events as ev
from reference_broker.protocol import pulsar_api_pb2 as pb


def exchange(sock: socket.socket, conn: Connection, event: ev.Event) -> ev.Event:
    sock.sendall(conn.send(event))
    while True:
        received = conn.next_event()
        if received is not NEED_DATA:
            return received
        data = sock.recv(65536)
        assert data, "the floor server closed the connection"
        conn.receive_data(data)


def test_floor_answers_handshake_lookup_and_refuses_the_rest_then_stops():
    server = FloorServer()
    server.start()
    try:
        host, port = server.service_url.removeprefix("pulsar://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.settimeout(5)
            conn = Connection(Role.CLIENT)
            connected = exchange(sock, conn, ev.Connect(client_version="test", protocol_version=21))
            assert isinstance(connected, ev.Connected) and connected.protocol_version == 21
            answer = exchange(sock, conn, ev.PartitionedMetadata(topic="persistent://public/default/t", request_id=7))
            assert isinstance(answer, ev.PartitionedMetadataResponse)
            assert (answer.request_id, answer.partitions) == (7, 0)
            assert answer.response == pb.CommandPartitionedTopicMetadataResponse.Success
            refused = exchange(sock, conn, ev.Lookup(topic="persistent://public/default/t", request_id=8))
            assert isinstance(refused, ev.Error) and refused.request_id == 8
    finally:
        server.stop()
    assert server.process.popen.poll() is not None, "the floor server outlived its stop()"
