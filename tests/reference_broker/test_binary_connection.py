"""BrokerProtocol over real sockets (keep-alive, backpressure, connection limits): a client that never reads its
answers cannot make the broker buffer without bound or hold up others; a connection that never completes
its handshake is closed; the connection limits refuse with Pulsar's error. Figures are printed."""

import socket
import time

import httpx
import pytest

from pulsar_codec import CLOSED, NEED_DATA, Connection, Role
from pulsar_codec import events as ev
from pulsar_codec import pulsar_api_pb2 as pb

from .broker_process import running_broker, start, stop
from .probe import Prober, mib, rss_bytes
from .wire_client import raw_connect, read_event

pytestmark = pytest.mark.slow

PARTITIONS = 300
REQUESTS = 1500  # each answered with the 300 partition names: ~80 KB an answer, ~120 MB in all


def _list_request(conn: Connection, request_id: int) -> bytes:
    return conn.send(ev.GetTopicsOfNamespace(request_id=request_id, namespace="public/default",
                                             mode=pb.CommandGetTopicsOfNamespace.PERSISTENT))


STALL_WINDOW_S = 6.0


def test_a_client_that_never_reads_cannot_grow_the_broker_or_stall_others():
    process, broker_url, web_url = start()
    try:
        name = "long-" + "x" * 220
        httpx.put(f"{web_url}/admin/v2/persistent/public/default/{name}/partitions", json=PARTITIONS,
                  timeout=10).raise_for_status()
        sock, conn = raw_connect(broker_url)
        requests = b"".join(_list_request(conn, i) for i in range(1, REQUESTS + 1))
        before = rss_bytes(process.pid)
        with Prober(broker_url) as probe:
            sock.settimeout(10)
            sock.sendall(requests)  # a few tens of KB: the kernel takes them whether the broker reads or not
            time.sleep(STALL_WINDOW_S)
            grown = rss_bytes(process.pid) - before
        print(f"\nclient that never reads, {len(requests)} bytes of requests: broker grew {mib(grown)}; "
              f"other client's worst round trip {probe.worst * 1000:.1f} ms over {probe.round_trips} pings")
        answered = 0
        sock.settimeout(30)
        while answered < REQUESTS:  # once it reads, every answer comes
            event = read_event(sock, conn)
            assert isinstance(event, ev.GetTopicsOfNamespaceResponse), event
            answered += 1
        sock.close()
        assert grown < 40 * 2**20
        # a broker stalled by the client that never reads would leave the whole window unanswered;
        # half of it tells that apart from a loaded machine's slow round trip
        assert probe.worst < STALL_WINDOW_S / 2
    finally:
        stop(process)


def _first_event(sock: socket.socket, conn: Connection):
    sock.settimeout(10)
    while (event := conn.next_event()) is NEED_DATA:
        data = sock.recv(65536)
        conn.receive_data(data)
        if not data:
            return conn.next_event()
    return event


def _connect(broker_url: str) -> tuple[socket.socket, Connection, object]:
    """Connect and send CONNECT; the broker's first answer (CONNECTED or a refusal)."""
    host, port = broker_url.removeprefix("pulsar://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    conn = Connection(Role.CLIENT)
    try:
        sock.sendall(conn.send(ev.Connect(client_version="limits", protocol_version=21)))
    except OSError:
        pass  # already refused and closed
    return sock, conn, _first_event(sock, conn)


def test_connections_past_broker_max_connections_are_refused_with_pulsars_error():
    with running_broker("--set", "brokerMaxConnections=3") as (broker_url, _):
        kept = [_connect(broker_url) for _ in range(3)]
        assert all(isinstance(answer, ev.Connected) for _, _, answer in kept)
        sock, conn, refusal = _connect(broker_url)
        assert (refusal.error, refusal.message) == (pb.NotAllowedError, "Reached the maximum number of connections")
        assert read_event(sock, conn) is CLOSED
        sock.close()
        kept.pop()[0].close()
        deadline = time.monotonic() + 30  # the broker frees the place once it sees the close
        while True:
            sock, _, answer = _connect(broker_url)
            if isinstance(answer, ev.Connected) or time.monotonic() > deadline:
                break
            sock.close()
            time.sleep(0.1)
        assert isinstance(answer, ev.Connected)
        for other, _, _ in kept + [(sock, None, None)]:
            other.close()


def test_connections_past_broker_max_connections_per_ip_are_refused_naming_the_address():
    with running_broker("--set", "brokerMaxConnectionsPerIp=2") as (broker_url, _):
        kept = [_connect(broker_url) for _ in range(2)]
        sock, _, refusal = _connect(broker_url)
        port = sock.getsockname()[1]
        assert refusal.error == pb.NotAllowedError
        assert refusal.message == f"Reached the maximum number of connections on address/127.0.0.1:{port}"
        for other, _, _ in kept + [(sock, None, None)]:
            other.close()


@pytest.mark.parametrize("sent", [b"", b"\x00\x00\x00\x30\x00"], ids=["silent", "part-of-a-frame"])
def test_a_connection_that_never_completes_its_handshake_is_closed(sent):
    with running_broker("--set", "keepAliveIntervalSeconds=1") as (broker_url, _):
        host, port = broker_url.removeprefix("pulsar://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            started = time.monotonic()
            sock.sendall(sent)
            assert sock.recv(100) == b""
            closed_after = time.monotonic() - started
        print(f"\nhandshake never completed ({len(sent)} bytes sent): closed after {closed_after:.2f} s")
        assert closed_after < 5.0
