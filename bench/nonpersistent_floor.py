"""The Python floor of non-persistent publish -> deliver: the project's codec on uvloop, no broker.

bench/nonpersistent.py compares the reference broker with pulsar-lite (a native binary). This
server is the third row (``--floor``) that tells how much of the difference is the broker's own
work and how much is the runtime. It speaks just enough of the binary protocol for the bench's
official clients: CONNECT, PARTITIONED_METADATA (0 partitions), LOOKUP (this server), PRODUCER,
SUBSCRIBE, FLOW, CLOSE_PRODUCER, CLOSE_CONSUMER, PING, through bench/lookup_floor.py's codec floor,
which it extends; ACKs are ignored and every other command gets an ERROR. A SEND is read from the
socket's bytes by the reference broker's own reader (reference_broker/protocol/shortcut.py Rule 5),
a read's incomplete last frame held back until the next reads complete it, as the broker holds it
(server.py Rule 8), and handled with the least a non-persistent topic needs: each consumer of the
topic with permits gets the MESSAGE (built by the broker's own frame builder, with the producer's
metadata, payload and checksum) and pays the batch's messages in permits; a consumer without permits
misses it; the producer gets its receipt (0, 0). No in-flight limit, rates, stats, subscriptions,
policies or store: what any Python broker on this runtime pays per SEND at the least.

    .venv/bin/python bench/nonpersistent_floor.py   # prints READY pulsar://127.0.0.1:PORT, serves until SIGTERM

A measuring instrument only: not a broker and never a conformance target.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lookup_floor import FloorProtocol as CodecFloorProtocol  # noqa: E402
from bench.lookup_floor import serve_until_stopped, service_url  # noqa: E402
from reference_broker.protocol import events as ev  # noqa: E402
from reference_broker.protocol import pulsar_api_pb2 as pb  # noqa: E402
from reference_broker.protocol.shortcut import incomplete_tail, message_frame, read_send, send_receipt_frame  # noqa: E402

LOOKUP_CONNECT = pb.CommandLookupTopicResponse.Connect
NO_PARTITION = -1  # the MESSAGE's partition for an unpartitioned topic


class FloorConsumer:
    __slots__ = ("connection", "consumer_id", "permits")

    def __init__(self, connection: "FloorProtocol", consumer_id: int) -> None:
        self.connection, self.consumer_id, self.permits = connection, consumer_id, 0


class FloorTopics:
    """The topics of one server: name -> the consumers connected to it now."""

    def __init__(self) -> None:
        self.consumers: dict[str, list[FloorConsumer]] = {}
        self.url = ""


class FloorProtocol(CodecFloorProtocol):
    """lookup_floor's codec floor, with the SEND shortcut in front and the commands a producer and a
    consumer need."""

    def __init__(self, topics: FloorTopics) -> None:
        super().__init__()
        self.topics = topics
        self.producers: dict[int, list[FloorConsumer]] = {}  # producer id -> its topic's consumers
        self.consumers: dict[int, tuple[str, FloorConsumer]] = {}
        self.held: bytearray | None = None  # the start of the frame the last read ended inside
        self.held_size = 0

    def connection_lost(self, exc) -> None:
        for topic, consumer in self.consumers.values():
            self.topics.consumers[topic].remove(consumer)

    def data_received(self, data: bytes) -> None:
        if self.held is not None:
            self.held += data
            if len(self.held) < self.held_size:
                return
            data, self.held = bytes(self.held), None
        if self.conn.between_frames:
            data = self._publish_plain_sends(data)
        if data:
            super().data_received(data)

    def _publish_plain_sends(self, data: bytes) -> bytes:
        limit = self.conn.max_frame_size  # the broker's frame limit, not the reader's default (10 KiB)
        pos, send = 0, read_send(data, 0, limit)
        receipts = []
        while send is not None:
            receipts.append(self._publish(send.producer_id, send.sequence_id, send.highest_sequence_id,
                                          send.num_messages, send.metadata, send.payload, send.checksum))
            pos = send.end
            send = read_send(data, pos, limit)
        if receipts:
            self.transport.write(b"".join(receipts))
        rest = data[pos:]
        tail = incomplete_tail(rest, limit) if rest else None
        if tail is not None:
            start, self.held_size = tail
            self.held, rest = bytearray(rest[start:]), rest[:start]
        return rest

    def _publish(self, producer_id: int, sequence_id: int, highest_sequence_id: int, num_messages: int,
                 metadata: bytes, payload: bytes, checksum: int | None) -> bytes:
        """Deliver to the consumers with permits now; returns the receipt."""
        for consumer in self.producers.get(producer_id, ()):
            if consumer.permits > 0:
                consumer.permits -= num_messages
                consumer.connection.transport.write(message_frame(
                    consumer.consumer_id, 0, 0, NO_PARTITION, 0, metadata, payload, checksum))
        return send_receipt_frame(producer_id, sequence_id, highest_sequence_id, 0, 0)

    def reply(self, event) -> bytes:
        if isinstance(event, ev.Send):  # one the shortcut did not read (another shape): published alike
            return self._publish(event.producer_id, event.sequence_id, event.highest_sequence_id,
                                 event.num_messages, event.metadata_bytes, event.payload, event.checksum)
        answer = self.answer(event)
        return b"" if answer is None else self.conn.send(answer)

    def answer(self, event) -> ev.Event | None:
        if isinstance(event, ev.Lookup):
            return ev.LookupResponse(request_id=event.request_id, response=LOOKUP_CONNECT,
                                     brokerServiceUrl=self.topics.url, authoritative=True)
        if isinstance(event, ev.Producer):
            self.producers[event.producer_id] = self.topics.consumers.setdefault(event.topic, [])
            return ev.ProducerSuccess(request_id=event.request_id, producer_name=f"floor-{event.producer_id}",
                                      last_sequence_id=-1)
        if isinstance(event, ev.Subscribe):
            consumer = FloorConsumer(self, event.consumer_id)
            self.topics.consumers.setdefault(event.topic, []).append(consumer)
            self.consumers[event.consumer_id] = (event.topic, consumer)
            return ev.Success(request_id=event.request_id)
        if isinstance(event, ev.Flow):
            registered = self.consumers.get(event.consumer_id)
            if registered is not None:
                registered[1].permits += event.messagePermits
            return None
        if isinstance(event, ev.CloseProducer):
            self.producers.pop(event.producer_id, None)
            return ev.Success(request_id=event.request_id)
        if isinstance(event, ev.CloseConsumer):
            registered = self.consumers.pop(event.consumer_id, None)
            if registered is not None:
                self.topics.consumers[registered[0]].remove(registered[1])
            return ev.Success(request_id=event.request_id)
        if isinstance(event, ev.Ack):
            return None  # nothing is kept, so nothing to acknowledge
        return super().answer(event)  # CONNECT, PARTITIONED_METADATA, PING; an ERROR for the rest


async def serve() -> None:
    topics = FloorTopics()
    server = await asyncio.get_running_loop().create_server(lambda: FloorProtocol(topics), "127.0.0.1", 0)
    topics.url = service_url(server)
    await serve_until_stopped(server)


def main() -> int:
    import uvloop

    uvloop.run(serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
