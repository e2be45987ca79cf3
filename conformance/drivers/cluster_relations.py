"""Relations between the brokers of a cluster, for the wire and REST drivers (model/cluster.py).

A part of each driver, given the driver as its ``link``; every broker is asked on a connection (or
an HTTP client) of its own, recorded in the case's transcript, closed when the operation ends.
The brokers are the target's (``cluster_urls`` / ``cluster_admin_urls``, set by the harness,
targets/reference_cluster.py ``attach_cluster``); a target of one broker has no relation between
brokers to show, so these operations are ``Unsupported`` there and nothing is sent (``brokers``).

- ``SameMetadataEverywhere``: PARTITIONED_METADATA (wire) or GET .../partitions (REST), as the
  operation's ``auto_create`` says, asked of each broker in turn. The outcome is the answer every
  broker gave; where they differ, Agreement(False) with one line per broker (``common``).
- ``LookupAtNonOwner`` (wire): a LOOKUP as a client sends it, followed to the owner
  (``WireDriver.follow_lookup``), makes the bundle owned; then each other broker is asked LOOKUP on a
  connection of its own, and the owner once more on the driver's. Every other broker must name the
  owner with the same kind and authoritative flag, and the owner must answer Connect naming itself;
  the outcome is the others' common LookupAnswer, else Agreement(False) saying what differed.
- ``PubSubAcrossBrokers`` (wire): the consumer's connection looks the topic up at the second broker,
  the producer's (the driver's own) at the first; each follows its lookup to the owner. SUBSCRIBE
  and FLOW first, then the burst in ONE write with its receipts awaited, then the consumer's
  connection is read until it holds every accepted message, or for at most the run's bound. The
  outcome is PubSub's for that consumer and burst (pubsub.py ``summarise``).
"""

from __future__ import annotations

import itertools
import time
from typing import Optional

from conformance.drivers.wire_cluster import LOOKUP, host_port, named_broker
from conformance.drivers.pubsub import message_index, receipt_kind, summarise
from conformance.errors import Indefinite, ProtocolViolation, Unsupported
from model import ops
from model.cluster import CONSUMER, as_pub_sub
from model.outcomes import DROPPED, Agreement, LookupAnswer
from pulsar_codec import CLOSED, events
from pulsar_codec import pulsar_api_pb2 as pb

OPS = (ops.SameMetadataEverywhere, ops.LookupAtNonOwner, ops.PubSubAcrossBrokers)
ONE_BROKER = "target has one broker ({what}); the row compares the answers of several brokers of a cluster"


def brokers(urls: Optional[list], what: str) -> list[str]:
    """The target's brokers, or Unsupported when there is only one."""
    urls = list(urls or [])
    if len(urls) < 2:
        raise Unsupported("feature-not-detected", ONE_BROKER.format(what=f"{what}: {', '.join(urls) or 'one'}"))
    return urls


def common(answers: list[tuple[str, object]]):
    """The one answer every broker gave, or Agreement(False) listing each broker's."""
    if len({repr(answer) for _, answer in answers}) == 1:
        return answers[0][1]
    return Agreement(False, tuple(f"{url}: {answer!r}" for url, answer in answers))


class WireCluster:
    """``same_metadata_everywhere`` and ``lookup_at_non_owner`` for WireDriver (``link``)."""

    OPS = OPS

    def __init__(self, link):
        self.link = link

    def _other(self, url: str):
        other = type(self.link)(url, timeout=self.link.timeout, credentials=self.link.credentials)
        other.transcript = self.link.transcript
        self.link.transcript.note(f"asking {url} (a broker of the target) on a connection of its own")
        return other

    def same_metadata_everywhere(self, op: ops.SameMetadataEverywhere):
        answers = []
        for url in brokers(self.link.cluster_urls, "its service URLs"):
            other = self._other(url)
            try:
                answers.append((url, other.perform(ops.GetPartitionedMetadata(op.topic, "binary", op.auto_create))))
            finally:
                other.close()
        return common(answers)

    def lookup_at_non_owner(self, op: ops.LookupAtNonOwner):
        urls = brokers(self.link.cluster_urls, "its service URLs")
        got = self.link.follow_lookup(op.topic, "LOOKUP (a client's, which makes the bundle owned)")
        if isinstance(got, events.Error) or not got.has("response") or got.response == LOOKUP.Failed:
            return self.link.server_error(got)
        tls = self.link._tls is not None
        owner = named_broker(got, tls)
        if got.response != LOOKUP.Connect or owner is None:
            return Agreement(False, (f"the client's lookup ended with {LOOKUP.LookupType.Name(got.response)} "
                                     f"{owner}, not Connect",))
        detail, seen = [], []
        for url in urls:
            if host_port(url) == host_port(owner):
                continue
            sock, connected = self.link.open_peer(url)
            if sock is None:
                raise ProtocolViolation(f"CONNECT to {url} refused: {connected}")
            try:
                answer = self._lookup(sock, op.topic, url)
            finally:
                sock.close()
            if isinstance(answer, events.Error) or answer.response == LOOKUP.Failed:
                detail.append(f"{url} (not the owner): {self.link.server_error(answer)!r}")
                continue
            seen.append(LookupAnswer(LOOKUP.LookupType.Name(answer.response), bool(answer.authoritative)))
            named = named_broker(answer, tls)
            if named is None or host_port(named) != host_port(owner):
                detail.append(f"{url} (not the owner) named {named}, not the owner {owner}")
        if not seen and not detail:
            raise Unsupported("feature-not-detected", ONE_BROKER.format(what=f"every broker is the owner {owner}"))
        itself = self._lookup(self.link.socket, op.topic, owner)
        if isinstance(itself, events.Error) or itself.response != LOOKUP.Connect or \
                host_port(named_broker(itself, tls) or "") != host_port(owner):
            detail.append(f"the owner {owner} answered {itself!r}, not Connect naming itself")
        if len(set(seen)) > 1:
            detail.append("the other brokers answered " + ", ".join(repr(s) for s in seen))
        return Agreement(False, tuple(detail)) if detail else seen[0]

    def pub_sub_across_brokers(self, op: ops.PubSubAcrossBrokers):
        urls = brokers(self.link.cluster_urls, "its service URLs")
        consumer = self._other(urls[1])
        try:
            answer = consumer.handshake()
            if not isinstance(answer, events.Connected):
                return answer
            got = consumer.follow_lookup(op.topic, "LOOKUP at the second broker, before SUBSCRIBE")
            if isinstance(got, events.Error):
                return consumer.server_error(got)
            consumer_id, request_id = consumer.next_id(), consumer.next_id()
            name, sub_type, permits = CONSUMER
            got = consumer.exchange(consumer.socket, events.Subscribe(
                topic=op.topic, subscription=name, subType=pb.CommandSubscribe.Exclusive, consumer_id=consumer_id,
                request_id=request_id, initialPosition=pb.CommandSubscribe.Latest), request_id, (events.Success,),
                "SUBSCRIBE", f"SUCCESS for SUBSCRIBE (request_id={request_id})")
            if isinstance(got, events.Error):
                return consumer.server_error(got)
            consumer.socket.send(events.Flow(consumer_id=consumer_id, messagePermits=permits))
            receipts = self._publish(op)
            if not isinstance(receipts, list):
                return receipts  # the producer was refused
            accepted = sum(1 for kind in receipts if kind != DROPPED and not kind.startswith("send-"))
            received = self._collect(consumer, consumer_id, accepted)
            return summarise(as_pub_sub(op), receipts, {name: [received]})
        finally:
            consumer.close()

    def _publish(self, op: ops.PubSubAcrossBrokers):
        """PRODUCER through the first broker's lookup, then ``count`` SENDs in one write: the receipt
        kinds in send order, or the refusal."""
        link = self.link
        got = link.follow_lookup(op.topic, "LOOKUP at the first broker, before PRODUCER")
        if isinstance(got, events.Error):
            return link.server_error(got)
        producer_id, request_id = link.next_id(), link.next_id()
        got = link.exchange(link.socket, events.Producer(topic=op.topic, producer_id=producer_id,
                                                         request_id=request_id),
                            request_id, (events.ProducerSuccess,), "PRODUCER",
                            f"PRODUCER_SUCCESS (request_id={request_id})")
        if isinstance(got, events.Error):
            return link.server_error(got)
        sequence = list(itertools.islice(itertools.count(0), op.count))
        link.socket.send_many([_send(producer_id, got.producer_name, i) for i in sequence])
        receipts: dict[int, str] = {}
        deadline = time.monotonic() + link.timeout
        while len(receipts) < op.count:
            event = link.socket.next_event(deadline, f"receipts for sequence ids 0..{op.count - 1}")
            if isinstance(event, events.SendReceipt):
                receipts[event.sequence_id] = receipt_kind(op.topic, event.message_id.ledgerId,
                                                           event.message_id.entryId)
            elif isinstance(event, events.SendError):
                receipts[event.sequence_id] = f"send-error:{pb.ServerError.Name(event.error)}"
            else:
                link.unsolicited(event)
        return [receipts[i] for i in sequence]

    def _collect(self, consumer, consumer_id: int, accepted: int) -> list[int]:
        """The consumer's MESSAGE frames until it holds ``accepted``, within the run's bound: the
        owner dispatches from its own threads, so a message may still be on its way after the
        receipts."""
        received: list[int] = []
        deadline = time.monotonic() + consumer.timeout
        while len(received) < accepted and time.monotonic() < deadline:
            event = consumer.socket.next_event(deadline, "MESSAGE frames", quiet_ok=True)
            if event is None:
                break
            if event is CLOSED:
                raise Indefinite("the owner closed the consumer's connection while we collected messages")
            if isinstance(event, events.Message) and event.consumer_id == consumer_id:
                received.append(message_index(event.payload or b""))
            else:
                consumer.unsolicited(event)
        return received

    def _lookup(self, sock, topic: str, url: str):
        request_id = self.link.next_id()
        return self.link.exchange(sock, events.Lookup(topic=topic, request_id=request_id, authoritative=False),
                                  request_id, (events.LookupResponse,), "LOOKUP",
                                  f"LOOKUP_RESPONSE (request_id={request_id}) from {url}")


def _send(producer_id: int, producer_name: str, sequence_id: int) -> events.Send:
    """SEND of payload ``m<sequence_id>``, the payloads PubSub's outcome names (ops.PubSub)."""
    metadata = pb.MessageMetadata(producer_name=producer_name, sequence_id=sequence_id,
                                  publish_time=int(time.time() * 1000))
    return events.Send(producer_id=producer_id, sequence_id=sequence_id, num_messages=1, metadata=metadata,
                       payload=f"m{sequence_id}".encode())


class RestCluster:
    """``same_metadata_everywhere`` for RestDriver (``link``): each broker's admin URL in turn."""

    OPS = (ops.SameMetadataEverywhere,)

    def __init__(self, link):
        self.link = link

    def same_metadata_everywhere(self, op: ops.SameMetadataEverywhere):
        answers = []
        for url in brokers(self.link.cluster_admin_urls, "its admin URLs"):
            other = type(self.link)(url, timeout=self.link.timeout, credentials=self.link.credentials)
            other.transcript = self.link.transcript
            other.cluster_admin_urls = self.link.cluster_admin_urls  # a 307 to the owner is followed
            self.link.transcript.note(f"asking {url} (a broker of the target)")
            try:
                answers.append((url, other.perform(ops.GetPartitionedMetadata(op.topic, "rest", op.auto_create))))
            finally:
                other.close()
        return common(answers)
