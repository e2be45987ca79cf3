"""The reference broker over real sockets: the official pulsar-client end to end, and bad input.

Rule of these tests: a bad connection gets an error (or is closed) and every other client keeps
being served; the broker process never dies on input.
"""

import socket
import struct

import httpx
import pulsar
import pytest

from pulsar_codec import CLOSED, Connection, Role, events as ev
from pulsar_codec import pulsar_api_pb2 as pb

from .wire_client import raw_connect, read_event, still_serving as _still_serving

pytestmark = pytest.mark.slow



def admin(broker, method, path, **kwargs):
    return httpx.request(method, broker[1] + path, timeout=5, **kwargs)


def test_get_topic_partitions_non_partitioned_and_partitioned(broker, client):
    assert admin(broker, "PUT", "/admin/v2/persistent/public/default/parts4/partitions", json=4).status_code == 204
    assert client.get_topic_partitions("persistent://public/default/parts4") == [
        f"persistent://public/default/parts4-partition-{i}" for i in range(4)]
    # Absent topic, default config (allow, non-partitioned): the old API answers the topic itself.
    assert client.get_topic_partitions("persistent://public/default/plain") == ["persistent://public/default/plain"]


def test_produce_consume_ack(client):
    topic = "persistent://public/default/e2e"
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Exclusive)
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode()) for i in range(5)]
    received = []
    for _ in range(5):
        message = consumer.receive(timeout_millis=5000)
        received.append(message.data().decode())
        consumer.acknowledge(message)
    assert received == [f"m{i}" for i in range(5)]
    assert [i.entry_id() for i in ids] == list(range(5))
    producer.close()
    consumer.close()


def test_batched_produce_consume(client):
    topic = "persistent://public/default/batched"
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=10,
                                      batching_max_publish_delay_ms=50)
    for i in range(20):
        producer.send_async(f"b{i}".encode(), None)
    producer.flush()
    received = [consumer.receive(timeout_millis=5000).data().decode() for _ in range(20)]
    assert received == [f"b{i}" for i in range(20)]


def test_partitioned_topic_produce_consume(broker, client):
    assert admin(broker, "PUT", "/admin/v2/persistent/public/default/p3/partitions", json=3).status_code == 204
    topic = "persistent://public/default/p3"
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, batching_enabled=False,
                                      message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution)
    for i in range(9):
        producer.send(f"p{i}".encode())
    received = set()
    for _ in range(9):
        message = consumer.receive(timeout_millis=5000)
        received.add(message.data().decode())
        consumer.acknowledge(message)
    assert received == {f"p{i}" for i in range(9)}
    partitions = admin(broker, "GET", "/admin/v2/persistent/public/default").json()
    assert {f"persistent://public/default/p3-partition-{i}" for i in range(3)} <= set(partitions)


def test_unacked_messages_are_redelivered_to_a_new_consumer(client):
    topic = "persistent://public/default/redeliver"
    first = client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"x")
    assert first.receive(timeout_millis=5000).data() == b"x"
    first.close()  # never acked
    second = client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
    message = second.receive(timeout_millis=5000)
    assert message.data() == b"x" and message.redelivery_count() == 1


# -- bad input -------------------------------------------------------------------------------







@pytest.mark.parametrize("garbage", [
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",             # not Pulsar at all: huge totalSize
    struct.pack(">I", 6 * 1024 * 1024),                  # oversize frame announced
    struct.pack(">II", 5, 200) + b"\x08",                # commandSize beyond the frame
    b"\x00\x00\x00\x06\x00\x00\x00\x02\xff\xff",         # garbage protobuf as first command
])
def test_garbage_before_handshake_is_refused_and_broker_keeps_serving(broker, garbage):
    host, port = broker[0].removeprefix("pulsar://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    sock.sendall(garbage)
    conn = Connection(Role.CLIENT)
    conn.state = conn.state  # a client codec can read the broker's ERROR before any CONNECTED
    answer = read_event(sock, conn)
    assert answer is CLOSED or isinstance(answer, ev.Error)
    sock.close()
    assert _still_serving(broker[0])


def test_unknown_command_after_handshake_gets_error_and_connection_goes_on(broker):
    sock, conn = raw_connect(broker[0])
    sock.sendall(b"\x00\x00\x00\x06\x00\x00\x00\x02\x08\x63")  # type 99
    error = read_event(sock, conn)
    assert isinstance(error, ev.Error) and "99" in error.message
    sock.sendall(conn.send(ev.Ping()))
    assert isinstance(read_event(sock, conn), ev.Pong)
    sock.close()


def test_missing_required_field_answers_that_request(broker):
    sock, conn = raw_connect(broker[0])
    body = pb.BaseCommand(type=pb.BaseCommand.PARTITIONED_METADATA)
    body.partitionMetadata.request_id = 42  # no topic
    raw = body.SerializePartialToString()
    sock.sendall(struct.pack(">II", 4 + len(raw), len(raw)) + raw)
    error = read_event(sock, conn)
    assert isinstance(error, ev.Error) and error.request_id == 42 and "topic" in error.message
    sock.close()


def test_truncated_frame_then_disconnect_does_not_hurt(broker):
    sock, conn = raw_connect(broker[0])
    frame = conn.send(ev.PartitionedMetadata(topic="t", request_id=1))
    sock.sendall(frame[:-3])
    sock.close()
    assert _still_serving(broker[0])


def test_invalid_topic_names_get_invalid_topic_name(broker):
    sock, conn = raw_connect(broker[0])
    for request_id, name in enumerate(["", "bogus://public/default/t", "public/t", "a/b/c/d/e", "public/def ault/t"], 1):
        sock.sendall(conn.send(ev.PartitionedMetadata(topic=name, request_id=request_id)))
        answer = read_event(sock, conn)
        assert answer.response == pb.CommandPartitionedTopicMetadataResponse.Failed
        assert answer.error == pb.InvalidTopicName, name
    sock.close()


def test_bad_checksum_gets_send_error(broker):
    sock, conn = raw_connect(broker[0])
    sock.sendall(conn.send(ev.Producer(topic="persistent://public/default/crc", producer_id=1, request_id=1)))
    assert isinstance(read_event(sock, conn), ev.ProducerSuccess)
    metadata = pb.MessageMetadata(producer_name="x", sequence_id=0, publish_time=1)
    frame = bytearray(conn.send(ev.Send(producer_id=1, sequence_id=0, metadata=metadata, payload=b"data")))
    frame[-1] ^= 0x01
    sock.sendall(bytes(frame))
    answer = read_event(sock, conn)
    assert isinstance(answer, ev.SendError) and answer.error == pb.ChecksumError
    sock.close()


def test_bad_json_to_rest_is_400_with_reason(broker):
    response = admin(broker, "PUT", "/admin/v2/persistent/public/default/j/partitions",
                     content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 400 and "reason" in response.json()
    assert _still_serving(broker[0])


def test_producer_success_carries_an_empty_schema_version(broker):
    """The Java client reads schema_version without asking has_schema_version (ClientCnx @ v4.0.8)."""
    sock, conn = raw_connect(broker[0])
    sock.sendall(conn.send(ev.Producer(topic="persistent://public/default/schema-version", producer_id=1, request_id=1)))
    answer = read_event(sock, conn)
    assert isinstance(answer, ev.ProducerSuccess)
    assert answer.has("schema_version") and answer.schema_version == b""
    sock.close()
