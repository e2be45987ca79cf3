"""A small blocking lookup client over our own codec, for bench/batch_lookup.py and the cluster tests.

What this module owns: single LOOKUPs that follow Redirects, and PIP-35 batch lookups that send one
follow-up batch per owning broker (docs/pip35-decisions.md part C). It counts round trips. It is a
measuring tool, not the harness driver (that one comes with the PIP-35 spec rows).

- one connection per broker URL, opened on first use and reused (``Pool``).
- a round trip is one request frame and its answer; ``send_all`` writes several requests to
  different brokers before reading any answer, so the follow-ups of a batch overlap in time (one
  round trip per owning broker, not one after another).
- a broker that cannot be reached, or that closes the connection while a request is pending, turns
  every topic of that request into a per-topic failure (``UNREACHABLE``), never an exception out
  of ``batch_lookup``.
- redirects are followed at most ``max_redirects`` times (the Java client's ``maxLookupRedirects``
  idea, Pulsar's TopicLookupBase.lookupTopicAsync), then the topic fails with "Too many
  redirects".
"""

from __future__ import annotations

import itertools
import socket
import urllib.parse

from pulsar_codec import CLOSED, NEED_DATA, Connection, Role
from pulsar_codec import events as ev
from pulsar_codec import pulsar_api_pb2 as pb

LOOKUP = pb.CommandLookupTopicResponse
CONNECT, REDIRECT = LOOKUP.Connect, LOOKUP.Redirect
UNREACHABLE = "ServiceNotReady"


class BrokerUnreachable(Exception):
    """The broker did not accept the connection or closed it with a request pending."""


class Resolved:
    """Where a topic is served, or why it is not: ``error`` is a ServerError name or None.

    A plain slotted class: a batch makes one per topic, and the batch's time is what bench/batch_lookup.py measures."""

    __slots__ = ("topic", "broker_url", "error", "message", "requested")

    def __init__(self, topic: str, broker_url: str | None = None, error: str | None = None,
                 message: str = "", requested: str = ""):
        self.topic, self.broker_url, self.error, self.message, self.requested = \
            topic, broker_url, error, message, requested

    def __eq__(self, other) -> bool:
        return isinstance(other, Resolved) and all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    def __repr__(self) -> str:
        return "Resolved(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"


class WireClient:
    """One connection to one broker, CONNECT done in the constructor."""

    def __init__(self, url: str, timeout: float = 10.0):
        parts = urllib.parse.urlsplit(url)
        self.url = url
        try:
            self.sock = socket.create_connection((parts.hostname, parts.port), timeout=timeout)
        except OSError as exc:
            raise BrokerUnreachable(f"{url}: {exc}") from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn = Connection(Role.CLIENT)
        self.ids = itertools.count(1)
        self.round_trips = 0
        self.sock.sendall(self.conn.send(ev.Connect(client_version="pulsar-conformance-bench", protocol_version=21,
                                                    feature_flags={"supports_batch_lookup": True})))
        self.connected = self._read_until(lambda e: isinstance(e, ev.Connected))

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def write(self, event) -> int:
        """Send a request; returns its request_id."""
        try:
            self.sock.sendall(self.conn.send(event))
        except OSError as exc:
            raise BrokerUnreachable(f"{self.url}: {exc}") from None
        return event.request_id

    def read_answer(self, request_id: int):
        self.round_trips += 1
        return self._read_until(lambda e: getattr(getattr(e, "pb", None), "request_id", None) == request_id
                                and not isinstance(e, ev.Connected))

    def request(self, event):
        return self.read_answer(self.write(event))

    def _read_until(self, wanted):
        while True:
            event = self.conn.next_event()
            if event is NEED_DATA:
                try:
                    data = self.sock.recv(1 << 20)
                except OSError as exc:
                    raise BrokerUnreachable(f"{self.url}: {exc}") from None
                if not data:
                    raise BrokerUnreachable(f"{self.url}: connection closed by the broker")
                self.conn.receive_data(data)
                continue
            if event is CLOSED:
                raise BrokerUnreachable(f"{self.url}: connection closed by the broker")
            if isinstance(event, ev.Ping):
                self.sock.sendall(self.conn.send(ev.Pong()))
            elif wanted(event):
                return event


class Pool:
    """One WireClient per broker URL, opened on first use and reused."""

    def __init__(self, timeout: float = 10.0):
        self.timeout = timeout
        self.clients: dict[str, WireClient] = {}

    def get(self, url: str) -> WireClient:
        client = self.clients.get(url)
        if client is None:
            client = self.clients[url] = WireClient(url, self.timeout)
        return client

    def drop(self, url: str) -> None:
        client = self.clients.pop(url, None)
        if client is not None:
            client.close()

    @property
    def round_trips(self) -> int:
        return sum(c.round_trips for c in self.clients.values())

    def close(self) -> None:
        for url in list(self.clients):
            self.drop(url)


def single_lookup(pool: Pool, service_url: str, topic: str, max_redirects: int = 20) -> Resolved:
    """LOOKUP ``topic`` at ``service_url``, following Redirects (authoritative) to the owner."""
    url, authoritative = service_url, False
    for _ in range(max_redirects + 1):
        client = pool.get(url)
        answer = client.request(ev.Lookup(topic=topic, request_id=next(client.ids), authoritative=authoritative))
        if answer.response == LOOKUP.Connect:
            return Resolved(topic, answer.brokerServiceUrl)
        if answer.response == LOOKUP.Redirect:
            url, authoritative = answer.brokerServiceUrl, answer.authoritative
            continue
        return Resolved(topic, error=pb.ServerError.Name(answer.error), message=answer.message)
    return Resolved(topic, error="ServiceNotReady", message=f"Too many redirects: {max_redirects}")


def send_all(pool: Pool, requests: dict[str, list[str]], authoritative: bool):
    """One BATCH_LOOKUP per broker, all written before any answer is read.

    Returns ``{url: BatchLookupResponse | BrokerUnreachable}``."""
    pending, answers = {}, {}
    for url, topics in requests.items():
        try:
            client = pool.get(url)
            pending[url] = (client, client.write(ev.BatchLookup(request_id=next(client.ids), topics=topics,
                                                                authoritative=authoritative)))
        except BrokerUnreachable as exc:
            pool.drop(url)
            answers[url] = exc
    for url, (client, request_id) in pending.items():
        try:
            answers[url] = client.read_answer(request_id)
        except BrokerUnreachable as exc:
            pool.drop(url)
            answers[url] = exc
    return answers


def batch_lookup(pool: Pool, service_url: str, topics: list[str], max_redirects: int = 20) -> dict[str, Resolved]:
    """PIP-35: one batch to ``service_url``, then one follow-up batch per broker named in Redirects.

    Keys are the entries' topics (partitions for a partitioned name); a whole-request refusal is
    returned under the key ``""`` (the only non-topic key)."""
    results: dict[str, Resolved] = {}
    requested: dict[str, str] = {}
    requests, authoritative = {service_url: list(topics)}, False
    for _ in range(max_redirects + 1):
        if not requests:
            return results
        follow: dict[str, list[str]] = {}
        for url, answer in send_all(pool, requests, authoritative).items():
            if isinstance(answer, BrokerUnreachable):  # a per-topic failure, never an exception
                for topic in requests[url]:
                    results[topic] = Resolved(topic, error=UNREACHABLE, message=str(answer),
                                              requested=requested.get(topic, topic))
                continue
            if answer.has("error"):
                results[""] = Resolved("", error=pb.ServerError.Name(answer.error), message=answer.message)
                continue
            for entry in answer.entries:  # the hot loop of a 1,000-topic batch: keep it lean
                topic, kind = entry.topic, entry.response
                if kind == REDIRECT:
                    url = entry.brokerServiceUrl
                    queue = follow.get(url)
                    if queue is None:
                        queue = follow[url] = []
                    queue.append(topic)
                    if topic not in requested:
                        requested[topic] = entry.requested or topic  # absent: same as topic
                    continue
                origin = requested.get(topic) or entry.requested or topic
                if kind == CONNECT:
                    results[topic] = Resolved(topic, entry.brokerServiceUrl, None, "", origin)
                else:
                    results[topic] = Resolved(topic, None, pb.ServerError.Name(entry.error), entry.message, origin)
        requests, authoritative = follow, True
    for topics_left in requests.values():  # past max_redirects
        for topic in topics_left:
            results[topic] = Resolved(topic, error="ServiceNotReady", message=f"Too many redirects: {max_redirects}",
                                      requested=requested.get(topic, topic))
    return results
