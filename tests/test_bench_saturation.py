"""bench/saturation.py: its rates mean something only if it counts exactly the answers a server
gives, however the bytes arrive, keeps its waits bounded and says when its own loader set the pace."""

from __future__ import annotations

import argparse
import socket
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import saturation
from bench.common import Placement
from conformance.targets.registry import make_target
from reference_broker.protocol import Connection, Role
from reference_broker.protocol import events as ev
from reference_broker.protocol import pulsar_api_pb2 as pb
from tests.reference_broker.protocol.server_side import connected_server

_server = connected_server()
FRAMES = {  # (command type, frame) as a server writes them; one carries a payload
    "receipt": (pb.BaseCommand.SEND_RECEIPT, _server.send(ev.SendReceipt(producer_id=1, sequence_id=300,
                                                                         message_id=pb.MessageIdData(ledgerId=0, entryId=0)))),
    "message": (pb.BaseCommand.MESSAGE, _server.message(1, 0, 0, -1, 0, pb.MessageMetadata(
        producer_name="p", sequence_id=1, publish_time=1).SerializeToString(), b"x" * 700, None)),
    "answer": (pb.BaseCommand.PARTITIONED_METADATA_RESPONSE, _server.send(ev.PartitionedMetadataResponse(
        request_id=7, partitions=0, response=pb.CommandPartitionedTopicMetadataResponse.Success))),
    "ping": (pb.BaseCommand.PING, _server.send(ev.Ping())),
    "error": (pb.BaseCommand.ERROR, _server.send(ev.Error(request_id=1, error=pb.UnknownError, message="no"))),
}


@settings(max_examples=200, deadline=None)
@given(kinds=st.lists(st.sampled_from(sorted(FRAMES)), max_size=30), wanted=st.sampled_from(sorted(FRAMES)),
       cuts=st.lists(st.integers(min_value=0, max_value=30_000), max_size=12))
def test_the_counter_counts_the_wanted_frames_however_the_stream_is_cut(kinds, wanted, cuts):
    stream = b"".join(FRAMES[kind][1] for kind in kinds)
    counter = saturation.FrameCounter(FRAMES[wanted][0])
    points = sorted({min(cut, len(stream)) for cut in cuts} | {0, len(stream)})
    completed = sum(counter.feed(stream[a:b]) for a, b in zip(points, points[1:]))
    assert completed == counter.count == kinds.count(wanted)
    assert counter.other == len(kinds) - kinds.count(wanted)


def arguments(**overrides) -> argparse.Namespace:
    values = dict(window=8, publish_window=4, batch=10, seconds=0.3, warm_up=0.1)
    values.update(overrides)
    return argparse.Namespace(**values)


@pytest.fixture(scope="module")
def reference():
    target = make_target("reference")
    target.start()
    try:
        saturation.create_lookup_topic(target.service_url)
        yield target
    finally:
        target.stop()


@pytest.mark.parametrize("workload", saturation.WORKLOADS)
def test_each_workload_measures_the_reference_broker(reference, workload):
    pid = reference.process.pid
    result = saturation.run_round(workload, reference.service_url, arguments(), pid)
    assert result["rate"] > 1000
    assert result["unexpected_frames"] == 0  # only answers of the kind counted came back
    assert result["server_cpu_us"] > 0 and result["server_user_us"] is not None
    if workload == "publish":  # a small window never outruns the consumer: all that is accepted arrives
        assert result["published_rate"] == pytest.approx(result["rate"], rel=0.05)


def test_a_server_that_stops_answering_fails_the_round_within_the_stall_bound(monkeypatch):
    """It answers CONNECT, then reads and never answers: the round raises, it does not hang."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        peer, _ = listener.accept()
        with peer:
            conn = Connection(Role.SERVER)
            while not stop.is_set():
                data = peer.recv(65536)
                if not data:
                    return
                conn.receive_data(data)
                if isinstance(conn.next_event(), ev.Connect):
                    peer.sendall(conn.send(ev.Connected(server_version="silent", protocol_version=21)))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    monkeypatch.setattr(saturation, "STALL_S", 0.5)
    try:
        with pytest.raises(TimeoutError, match="no answer"):
            saturation.run_round("lookup", f"pulsar://127.0.0.1:{listener.getsockname()[1]}", arguments(seconds=5), None)
    finally:
        stop.set()
        listener.close()
        thread.join(5)
    assert not thread.is_alive()


def round_result(rate: float, loader: float, published: float | None = None) -> dict:
    return {"rate": rate, "published_rate": rate if published is None else published, "server_cpu_us": 2.0,
            "server_user_us": 1.5, "server_system_us": 0.5, "loader_cores": loader, "unexpected_frames": 0}


def test_the_report_says_when_the_loader_set_the_pace_and_when_a_server_dropped():
    results = {"publish": {"reference": [round_result(100.0, 0.3)] * 3,
                           "pulsar-lite": [round_result(150.0, 0.95, published=200.0)] * 3}}
    text = saturation.report(results, arguments(rounds=3), Placement(False), 0.0)
    assert "pulsar-lite: the loader used 0.95 cores" in text and "lower bound" in text
    assert "reference: the loader" not in text
    assert "pulsar-lite: delivered 75% of what it accepted" in text
    assert "ratio reference/pulsar-lite publish: 0.67x" in text and "reference slower" in text
