"""PIP-2 operations of the wire driver: PubSub and BadCommand, with exact frames.

A part of ``WireDriver`` (wire.py), given the driver as its ``link``: the connection, request ids,
the transcript and bounded waits. What holds is in wire.py's docstring (PubSub, BadCommand). Frames
built by hand (a SUBSCRIBE with an unknown subType) bypass the codec, which refuses to encode a
command with a required field missing.
"""

from __future__ import annotations

import itertools
import time
from typing import Callable, Optional

from conformance import timing
from conformance.drivers.pubsub import message_index, quiet_period, receipt_kind, settled, summarise
from conformance.errors import Indefinite, ProtocolViolation
from model import ops
from model.outcomes import DROPPED, ConnectionClosed, Done
from pulsar_codec import CLOSED, events
from pulsar_codec import pulsar_api_pb2 as pb

SUB_TYPES = {"Exclusive": pb.CommandSubscribe.Exclusive, "Shared": pb.CommandSubscribe.Shared,
             "Failover": pb.CommandSubscribe.Failover, "Key_Shared": pb.CommandSubscribe.Key_Shared}
POSITIONS = {"Latest": pb.CommandSubscribe.Latest, "Earliest": pb.CommandSubscribe.Earliest}
UINT32_MINUS_ONE = 0xFFFFFFFF  # a uint32 on the wire; Java reads it as the int -1
UNKNOWN_SUB_TYPE = 7
DRAIN_IDLE_S = 0.3  # ends the collection after the barrier (wire.py, PubSub); decides nothing
STATS_POLL_S = 0.05  # between reads of the broker's counters while messages are still on the way
PERSISTENT_DRAIN_IDLE_S = 2.0  # a persistent dispatcher reads the ledger: a longer quiet period


class _Collector:
    """Routes what arrives during a PubSub: receipts by sequence id, messages by consumer id."""

    def __init__(self, topic: str):
        self.topic = topic
        self.receipts: dict[int, str] = {}
        self.received: dict[int, list[int]] = {}

    def take(self, event) -> bool:
        """True when ``event`` was a PubSub event and has been recorded."""
        if isinstance(event, events.SendReceipt):
            mid = event.message_id
            self.receipts[event.sequence_id] = receipt_kind(self.topic, mid.ledgerId, mid.entryId)
            return True
        if isinstance(event, events.SendError):
            self.receipts[event.sequence_id] = f"send-error:{pb.ServerError.Name(event.error)}"
            return True
        if isinstance(event, events.Message):
            if event.consumer_id in self.received:
                self.received[event.consumer_id].append(message_index(event.payload or b""))
            return True
        return False


class WirePip2:
    """``pub_sub`` and ``bad_command`` for WireDriver (``link``)."""

    def __init__(self, link):
        self.link = link

    # -- waiting -------------------------------------------------------------------------------

    def _wait_for(self, done: Callable[[object], bool], what: str, collector: Optional[_Collector] = None,
                  closed_ok: bool = False):
        """Read until ``done(event)``; PubSub events go to ``collector``, PING gets PONG."""
        deadline = time.monotonic() + self.link.timeout
        while True:
            event = self.link.socket.next_event(deadline, what, closed_ok=closed_ok)
            if event is CLOSED:
                return CLOSED
            taken = collector is not None and collector.take(event)
            if done(event):
                return event
            if not taken:
                self.link.unsolicited(event)

    def _answer(self, event, request_id: int, answers: tuple, what: str, collector: _Collector):
        self.link.socket.send(event)
        request_id_of = self.link.request_id_of
        got = self._wait_for(lambda e: request_id_of(e) == request_id and isinstance(e, (events.Error, *answers)),
                             f"answer to {what} (request_id={request_id})", collector)
        return got

    def _barrier(self, collector: _Collector, consumers: list[tuple[int, str]]) -> None:
        """PING/PONG, then collect until every subscription holds every accepted message, or the
        broker's counters show it has sent nothing more, or the line is quiet (wire.py, PubSub)."""
        pinged = time.monotonic()
        self.link.socket.send(events.Ping())
        self._wait_for(lambda e: isinstance(e, events.Pong), "PONG (barrier)", collector)
        round_trip = time.monotonic() - pinged
        bound = sum(1 for kind in collector.receipts.values() if kind != DROPPED and not kind.startswith("send-"))

        def per_subscription() -> dict[str, int]:
            counts: dict[str, int] = {}
            for consumer_id, name in consumers:
                counts[name] = counts.get(name, 0) + len(collector.received[consumer_id])
            return counts

        def full() -> bool:
            return all(n >= bound for n in per_subscription().values())

        deadline = time.monotonic() + self.link.timeout
        while consumers and not full():
            done = settled(self.link.admin_url, collector.topic, per_subscription(), self.link.timeout,
                           self.link.credentials)
            if done:
                return  # the broker's counters say everything it will send has arrived
            wait = STATS_POLL_S if done is not None else quiet_period(
                PERSISTENT_DRAIN_IDLE_S if collector.topic.startswith("persistent://") else DRAIN_IDLE_S,
                round_trip, self.link.timeout)
            event = self.link.socket.next_event(min(deadline, time.monotonic() + wait), "more MESSAGE frames",
                                            quiet_ok=True)
            if event is None:
                if done is None:
                    timing.spent(timing.QUIET, wait, "wire")
                if done is None or time.monotonic() >= deadline:
                    return  # quiet (no counters to ask), or the bound
                continue
            if event is CLOSED:
                raise Indefinite("the target closed the connection while we collected messages")
            if not collector.take(event):
                self.link.unsolicited(event)

    # -- PubSub --------------------------------------------------------------------------------

    def pub_sub(self, op: ops.PubSub):
        collector = _Collector(op.topic)
        self.link.claim(op.topic)
        producer_id, request_id = self.link.next_id(), self.link.next_id()
        got = self._answer(events.Producer(topic=op.topic, producer_id=producer_id, request_id=request_id),
                           request_id, (events.ProducerSuccess,), "PRODUCER", collector)
        if isinstance(got, events.Error):
            return self.link.server_error(got)
        while got.has("producer_ready") and not got.producer_ready:
            got = self._wait_for(lambda e: self.link.request_id_of(e) == request_id, "ready PRODUCER_SUCCESS",
                                 collector)
            if isinstance(got, events.Error):
                return self.link.server_error(got)
        producer_name = got.producer_name
        sequence = itertools.count(0)

        def burst(size: int) -> None:
            ids = [next(sequence) for _ in range(size)]
            self.link.socket.send_many([_send(producer_id, producer_name, i) for i in ids])  # ONE write
            self._wait_for(lambda e: all(i in collector.receipts for i in ids),
                           f"receipts for sequence ids {ids[0]}..{ids[-1]}", collector)
            if not all(i in collector.receipts for i in ids):
                raise ProtocolViolation("receipt bookkeeping lost a sequence id")

        for _ in range(op.sends_before):
            burst(1)
        consumers: list[tuple[int, str]] = []
        for name, kind, permits in op.consumers:
            consumer_id, request_id = self.link.next_id(), self.link.next_id()
            collector.received[consumer_id] = []
            got = self._answer(events.Subscribe(
                topic=op.topic, subscription=name, subType=SUB_TYPES[kind], consumer_id=consumer_id,
                request_id=request_id, initialPosition=POSITIONS[op.initial_position]),
                request_id, (events.Success,), "SUBSCRIBE", collector)
            if isinstance(got, events.Error):
                return self.link.server_error(got)
            consumers.append((consumer_id, name))
            if permits > 0:
                self.link.socket.send(events.Flow(consumer_id=consumer_id, messagePermits=permits))
        for size in op.bursts:
            burst(size)
        if op.flow_after:
            self.link.socket.send_many([events.Flow(consumer_id=c, messagePermits=op.flow_after) for c, _ in consumers])
        self._barrier(collector, consumers)
        total = op.sends_before + sum(op.bursts)
        receipts = [collector.receipts[i] for i in range(total)]
        received: dict[str, list[list[int]]] = {}
        for consumer_id, name in consumers:
            # A copy: the outcome is what step 6 collected. Closing a persistent Shared consumer
            # redelivers its unacknowledged messages to the others while we close them; those
            # arrive after the collection and are not part of it (ops.PubSub steps 6 and 7).
            received.setdefault(name, []).append(list(collector.received[consumer_id]))
        if op.close_after:
            self._close_some(producer_id, consumers, collector)
        elif getattr(op, "close_producer", False) or getattr(op, "close_consumers", ()):
            self._close_some(producer_id if op.close_producer else None,
                             [consumers[i] for i in op.close_consumers], collector)
        return summarise(op, receipts, received)

    def _close_some(self, producer_id, consumers, collector: _Collector) -> None:
        """Close the producer (unless None) and these consumers: all of them for close_after, those
        named by close_producer and close_consumers otherwise (ops.PubSub), the rest staying attached."""
        if producer_id is not None:
            request_id = self.link.next_id()
            self._answer(events.CloseProducer(producer_id=producer_id, request_id=request_id), request_id,
                         (events.Success,), "CLOSE_PRODUCER", collector)
        for consumer_id, _ in consumers:
            request_id = self.link.next_id()
            self._answer(events.CloseConsumer(consumer_id=consumer_id, request_id=request_id), request_id,
                         (events.Success,), "CLOSE_CONSUMER", collector)

    # -- BadCommand ----------------------------------------------------------------------------

    def bad_command(self, op: ops.BadCommand):
        collector = _Collector(op.topic)
        self.link.claim(op.topic)
        if op.command == "send-after-close-producer":
            producer_id, request_id = self.link.next_id(), self.link.next_id()
            got = self._answer(events.Producer(topic=op.topic, producer_id=producer_id, request_id=request_id),
                               request_id, (events.ProducerSuccess,), "PRODUCER", collector)
            if isinstance(got, events.Error):
                return self.link.server_error(got)
            close_id = self.link.next_id()
            self._answer(events.CloseProducer(producer_id=producer_id, request_id=close_id), close_id,
                         (events.Success,), "CLOSE_PRODUCER", collector)
            self.link.socket.send(_send(producer_id, got.producer_name, 0))
        elif op.command in ("flow-negative-permits", "flow-zero-permits"):
            consumer_id, request_id = self.link.next_id(), self.link.next_id()
            got = self._answer(events.Subscribe(topic=op.topic, subscription="bad", subType=pb.CommandSubscribe.Exclusive,
                                                consumer_id=consumer_id, request_id=request_id),
                               request_id, (events.Success,), "SUBSCRIBE", collector)
            if isinstance(got, events.Error):
                return self.link.server_error(got)
            permits = UINT32_MINUS_ONE if op.command == "flow-negative-permits" else 0
            self.link.socket.send(events.Flow(consumer_id=consumer_id, messagePermits=permits))
        elif op.command == "subscribe-unknown-subtype":
            request_id = self.link.next_id()
            frame = _subscribe_with_sub_type(op.topic, self.link.next_id(), request_id, UNKNOWN_SUB_TYPE)
            self.link.socket.send_raw(frame, f"SUBSCRIBE with subType={UNKNOWN_SUB_TYPE} (hand-built, request_id={request_id})")
        else:
            raise ProtocolViolation(f"unknown BadCommand {op.command!r}")
        self.link.socket.send(events.Ping())
        answer = self._wait_for(
            lambda e: isinstance(e, (events.Pong, events.Error, events.SendError)), "PONG or an error", closed_ok=True)
        if answer is CLOSED:
            self.link.close()  # our side of the dead connection; the next op reconnects
            self._check_still_serving()
            return ConnectionClosed()
        if isinstance(answer, events.Pong):
            return Done()
        # An error frame; a broker may close right after it, which is also "closed".
        follow = self._wait_for(lambda e: isinstance(e, events.Pong), "PONG after the error", closed_ok=True)
        if follow is CLOSED:
            self.link.close()
            self._check_still_serving()
            return ConnectionClosed()
        return self.link.server_error(answer)

    def _check_still_serving(self) -> None:
        """A closed connection counts only if the broker still takes a new one (wire.py, BadCommand).
        The bad command was sent already, so a new connection that cannot be made is no answer, but
        not ``NoContact`` either."""
        try:
            answer = self.link.handshake()
        except Indefinite as exc:
            raise Indefinite(f"after closing the connection the target took no new one: {exc.reason}") from None
        if not isinstance(answer, events.Connected):
            raise Indefinite(f"after closing the connection the target refused a new one: {answer!r}")


def _send(producer_id: int, producer_name: str, sequence_id: int) -> events.Send:
    metadata = pb.MessageMetadata(producer_name=producer_name, sequence_id=sequence_id,
                                  publish_time=int(time.time() * 1000))
    return events.Send(producer_id=producer_id, sequence_id=sequence_id, num_messages=1,
                       metadata=metadata, payload=f"m{sequence_id}".encode())


def _subscribe_with_sub_type(topic: str, consumer_id: int, request_id: int, sub_type: int) -> bytes:
    """A SUBSCRIBE frame whose required ``subType`` holds a number no SubType has."""
    body = pb.CommandSubscribe(topic=topic, subscription="bad", consumer_id=consumer_id, request_id=request_id)
    field = pb.CommandSubscribe.DESCRIPTOR.fields_by_name["subType"].number
    inner = body.SerializePartialToString() + _varint(field << 3) + _varint(sub_type)
    command = pb.BaseCommand(type=pb.BaseCommand.SUBSCRIBE)
    outer_field = pb.BaseCommand.DESCRIPTOR.fields_by_name["subscribe"].number
    raw = command.SerializePartialToString() + _varint(outer_field << 3 | 2) + _varint(len(inner)) + inner
    return (4 + len(raw)).to_bytes(4, "big") + len(raw).to_bytes(4, "big") + raw


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)

