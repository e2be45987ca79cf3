"""bench/lookup_floor.py: the measuring server bench/lookup.py --floor compares against.

Its figures mean something only if it answers the same lookup the reference broker answers, over
the same codec, and nothing more; and a bench must not leave it running.
"""

from __future__ import annotations

from bench.common import FloorServer
from reference_broker.protocol import events as ev
from reference_broker.protocol import pulsar_api_pb2 as pb
from tests.reference_broker.wire_client import raw_connect, read_event


def test_floor_answers_handshake_lookup_and_refuses_the_rest_then_stops():
    server = FloorServer("lookup_floor.py")
    server.start()
    try:
        sock, conn = raw_connect(server.service_url)  # asserts the CONNECTED
        with sock:
            assert conn.protocol_version == 21  # as the CONNECTED said
            sock.sendall(conn.send(ev.PartitionedMetadata(topic="persistent://public/default/t", request_id=7)))
            answer = read_event(sock, conn)
            assert isinstance(answer, ev.PartitionedMetadataResponse)
            assert (answer.request_id, answer.partitions) == (7, 0)
            assert answer.response == pb.CommandPartitionedTopicMetadataResponse.Success
            sock.sendall(conn.send(ev.Lookup(topic="persistent://public/default/t", request_id=8)))
            refused = read_event(sock, conn)
            assert isinstance(refused, ev.Error) and refused.request_id == 8
    finally:
        server.stop()
    assert server.process.popen.poll() is not None, "the floor server outlived its stop()"


def test_shortcut_and_canned_floors_answer_a_lookup_then_stop():
    for mode in ("shortcut", "canned"):
        server = FloorServer("lookup_floor.py", "--mode", mode)
        server.start()
        try:
            sock, conn = raw_connect(server.service_url)
            with sock:
                sock.sendall(conn.send(ev.PartitionedMetadata(topic="persistent://public/default/t", request_id=1)))
                answer = read_event(sock, conn)
                assert isinstance(answer, ev.PartitionedMetadataResponse), mode
                assert (answer.request_id, answer.partitions) == (1, 0)
        finally:
            server.stop()
        assert server.process.popen.poll() is not None, f"the {mode} floor outlived its stop()"
