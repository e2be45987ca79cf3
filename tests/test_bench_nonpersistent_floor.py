"""bench/nonpersistent_floor.py: the measuring server bench/nonpersistent.py --floor compares against.

Its figures mean something only if it does what the bench measures (publish -> deliver on a
non-persistent topic, with the official client), no less, and a bench must not leave it running.
"""

from __future__ import annotations

import time

import pulsar

from bench.common import FloorServer, quiet_logger
from reference_broker.protocol import events as ev
from reference_broker.protocol import pulsar_api_pb2 as pb
from tests.reference_broker.wire_client import raw_connect, read_event

TOPIC = "non-persistent://public/default/floor"


def request(sock, conn, event):
    sock.sendall(conn.send(event))
    return read_event(sock, conn)


def send(producer_id: int, sequence_id: int, body: bytes, num_messages: int = 1) -> ev.Send:
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=sequence_id, publish_time=1)
    return ev.Send(producer_id=producer_id, sequence_id=sequence_id, num_messages=num_messages,
                   metadata=metadata, payload=body)


def test_the_official_client_publishes_and_receives_batched_and_not_then_the_floor_stops():
    server = FloorServer("nonpersistent_floor.py")
    server.start()
    try:
        client = pulsar.Client(server.service_url, operation_timeout_seconds=5, logger=quiet_logger("floor-test"))
        try:
            consumer = client.subscribe(TOPIC, "s")
            for batched in (False, True):
                producer = client.create_producer(TOPIC, batching_enabled=batched, batching_max_publish_delay_ms=1)
                for index in range(5):
                    producer.send_async(b"m%d" % index, None)
                producer.flush()
                received = [consumer.receive(timeout_millis=5000).data() for _ in range(5)]
                assert received == [b"m%d" % index for index in range(5)], batched
                producer.close()
            consumer.close()
        finally:
            client.close()
    finally:
        server.stop()
    assert server.process.popen.poll() is not None, "the floor server outlived its stop()"


def test_a_consumer_without_permits_misses_the_message_and_the_producer_gets_0_0():
    server = FloorServer("nonpersistent_floor.py")
    server.start()
    try:
        sock, conn = raw_connect(server.service_url)
        with sock:
            assert isinstance(request(sock, conn, ev.Subscribe(topic=TOPIC, subscription="s", consumer_id=1,
                                                               request_id=1, subType=pb.CommandSubscribe.Exclusive)),
                              ev.Success)
            created = request(sock, conn, ev.Producer(topic=TOPIC, producer_id=2, request_id=2))
            assert isinstance(created, ev.ProducerSuccess)
            receipt = request(sock, conn, send(2, 0, b"missed"))  # no FLOW yet: the consumer has no permits
            assert isinstance(receipt, ev.SendReceipt)
            assert (receipt.sequence_id, receipt.message_id.ledgerId, receipt.message_id.entryId) == (0, 0, 0)
            sock.sendall(conn.send(ev.Flow(consumer_id=1, messagePermits=3)) + conn.send(send(2, 1, b"got", 3)))
            first, second = read_event(sock, conn), read_event(sock, conn)
            assert isinstance(first, ev.Message) and first.payload == b"got"
            assert isinstance(second, ev.SendReceipt) and second.sequence_id == 1
            frame = conn.send(ev.Flow(consumer_id=1, messagePermits=1)) + conn.send(send(2, 2, b"in two reads"))
            for piece in (frame[:30], frame[30:]):  # held until whole, as the broker holds it (Rule 8)
                sock.sendall(piece)
                time.sleep(0.05)
            message, receipt = read_event(sock, conn), read_event(sock, conn)
            assert isinstance(message, ev.Message) and message.payload == b"in two reads"
            assert isinstance(receipt, ev.SendReceipt) and receipt.sequence_id == 2
            refused = request(sock, conn, ev.GetLastMessageId(consumer_id=1, request_id=9))
            assert isinstance(refused, ev.Error) and refused.request_id == 9
    finally:
        server.stop()
