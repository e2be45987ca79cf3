"""Keep-alive over real sockets (``BrokerProtocol._keepalive_tick``), with ``keepAliveIntervalSeconds=1``: a silent
peer is pinged after one to two intervals and closed one interval after an unanswered PING; a peer
that talks, or answers, stays connected."""

import socket
import time

import pytest

from pulsar_codec import CLOSED, events as ev

from .broker_process import running_broker
from .wire_client import raw_connect, read_event

pytestmark = pytest.mark.slow

INTERVAL = 1.0
SLACK = 15.0  # a loaded machine runs timers late, never early: the lower bounds are the test


@pytest.fixture(scope="module")
def broker_url():
    with running_broker("--set", f"keepAliveIntervalSeconds={int(INTERVAL)}") as (url, _):
        yield url


def test_a_silent_connection_is_pinged_then_closed_when_the_ping_goes_unanswered(broker_url):
    sock, conn = raw_connect(broker_url)
    connected = time.monotonic()
    with sock:
        assert isinstance(read_event(sock, conn), ev.Ping)
        pinged = time.monotonic()
        assert INTERVAL <= pinged - connected <= 2 * INTERVAL + SLACK
        assert read_event(sock, conn) is CLOSED  # no PONG sent
        assert INTERVAL - 0.1 <= time.monotonic() - pinged <= INTERVAL + SLACK


def test_a_connection_that_answers_its_pings_stays_open(broker_url):
    sock, conn = raw_connect(broker_url)
    pings = 0
    with sock:
        sock.settimeout(0.2)
        deadline = time.monotonic() + 4 * INTERVAL
        while time.monotonic() < deadline:
            try:
                event = read_event(sock, conn)
            except socket.timeout:
                continue
            assert event is not CLOSED
            if isinstance(event, ev.Ping):
                pings += 1
                sock.sendall(conn.send(ev.Pong()))
        sock.settimeout(5)
        sock.sendall(conn.send(ev.PartitionedMetadata(topic="persistent://public/default/kept", request_id=9)))
        answer = read_event(sock, conn)
    assert pings >= 1
    assert isinstance(answer, ev.PartitionedMetadataResponse) and answer.request_id == 9


def test_a_connection_that_keeps_talking_is_not_pinged(broker_url):
    sock, conn = raw_connect(broker_url)
    with sock:
        received = []
        deadline = time.monotonic() + 3 * INTERVAL
        while time.monotonic() < deadline:
            sock.sendall(conn.send(ev.Ping()))  # traffic of any kind; the broker answers PONG
            received.append(read_event(sock, conn))
            time.sleep(INTERVAL / 4)
    assert received and all(isinstance(event, ev.Pong) for event in received)
