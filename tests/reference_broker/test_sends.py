"""SENDs through a broker in this process: published, delivered and receipted, however reads fall.

Each test feeds a stream of frames to the producer's connection, cut into reads, and looks at
everything a client or the admin API can see: the frames the producer's and the consumer's
connections get, whether the producer's was closed, and the topic's counters.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest
from hypothesis import given, settings, strategies as st

from pulsar_naming.names import TopicName
from reference_broker.config import BrokerConfig
from reference_broker.core import BrokerCore
from reference_broker.metadata.memory import MemoryMetadataStore
from pulsar_codec import NEED_DATA, Connection, Role, events as ev
from pulsar_codec import pulsar_api_pb2 as pb
from pulsar_codec.frames import encode_payload_command
from reference_broker.topics import persistent

from .in_process import BinaryClient

TOPIC = "{domain}://public/default/sends"
# Stats fields the SENDs do not decide: a clock reading, a name from a process-wide counter.
UNDECIDED_FIELDS = {"connectedSince", "producerName"}
U64_MINUS_ONE = 2**64 - 1


def send(producer_id=1, sequence_id=0, payload=b"m", checksum=True, num_messages=None, damaged=False,
         complete=True, **extra) -> bytes:
    fields = dict(producer_id=producer_id, sequence_id=sequence_id, **extra)
    if num_messages is not None:
        fields.update(num_messages=num_messages, highest_sequence_id=sequence_id + num_messages - 1)
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=sequence_id)
    if complete:
        metadata.publish_time = 1
    command = pb.BaseCommand(type=pb.BaseCommand.SEND, send=pb.CommandSend(**fields))
    frame = encode_payload_command(command, metadata.SerializePartialToString(), payload, checksum=checksum)
    return frame[:-1] + bytes((frame[-1] ^ 0xFF,)) if damaged else frame


client = Connection(Role.CLIENT)
FRAMES = {
    "plain": lambda i: send(sequence_id=i, payload=b"plain-%d" % i),
    "batch": lambda i: send(sequence_id=i, payload=b"b" * 30, num_messages=3),
    "no checksum": lambda i: send(sequence_id=i, checksum=False),
    "damaged checksum": lambda i: send(sequence_id=i, payload=b"damaged", damaged=True),
    "too large": lambda i: send(sequence_id=i, payload=b"L" * 200),
    "send in its payload": lambda i: send(sequence_id=i, payload=send(sequence_id=i + 100)),
    "incomplete metadata": lambda i: send(sequence_id=i, complete=False),
    "with a transaction": lambda i: send(sequence_id=i, txnid_least_bits=7),
    "ping": lambda i: client.send(ev.Ping()),
    "lookup": lambda i: client.send(ev.PartitionedMetadata(topic="persistent://public/default/x", request_id=i)),
}


def cut_into_reads(stream: bytes, cuts: list[int]) -> list[bytes]:
    bounds = sorted({0, len(stream), *(cut % (len(stream) + 1) for cut in cuts)})
    return [stream[a:b] for a, b in itertools.pairwise(bounds)]


def observe(domain: str, reads: list[bytes], permits: int = 1000, eof: bool = False, **config) -> dict:
    """What the clients and the admin API see after ``reads`` arrive on the producer's connection."""
    with pytest.MonkeyPatch.context() as patch:  # the same ledger ids in every run
        patch.setattr(persistent, "_ledger_ids", itertools.count(persistent.LEDGER_ID_BASE))
        return asyncio.run(_observe(domain, reads, permits, config, eof))


async def _observe(domain: str, reads: list[bytes], permits: int, config: dict, eof: bool) -> dict:
    core = BrokerCore(BrokerConfig(**config), MemoryMetadataStore())
    topic = TOPIC.format(domain=domain)
    consumer = BinaryClient(core)
    producer = BinaryClient(core, server=consumer.protocol.broker)
    try:
        consumer.exchange(consumer.conn.send(ev.Subscribe(topic=topic, subscription="s", subType=0, consumer_id=1,
                                                          request_id=1)))
        if permits:
            consumer.exchange(consumer.conn.send(ev.Flow(consumer_id=1, messagePermits=permits)))
        [ready] = producer.exchange(producer.conn.send(ev.Producer(topic=topic, producer_id=1, request_id=2)))
        assert isinstance(ready, ev.ProducerSuccess)
        consumer.transport.data.clear()
        producer.transport.data.clear()
        for data in reads:
            if producer.transport.closed:
                break  # a transport stops reading once it starts closing
            producer.protocol.data_received(data)
            await asyncio.sleep(0)  # anything a read scheduled runs before the next one
        if eof:
            producer.protocol.eof_received()
        await asyncio.sleep(0)
        live = producer.protocol.broker.topics.get(TopicName.parse(topic))
        stats = decided(live.stats()) if domain == "non-persistent" else {"entries": len(live.entries)}
        return {"to producer": pump(bytes(producer.transport.data)), "to consumer": pump(bytes(consumer.transport.data)),
                "producer closed": producer.transport.closed, "stats": stats}
    finally:
        producer.close()
        consumer.close()
        core.close()


def decided(stats):
    if isinstance(stats, dict):
        return {key: decided(value) for key, value in stats.items() if key not in UNDECIDED_FIELDS}
    if isinstance(stats, list):
        return [decided(value) for value in stats]
    return stats


def pump(data: bytes) -> list:
    """The events a connected client reads from ``data``."""
    if not data:
        return []  # (b"" would read as the broker hanging up)
    reader, server = Connection(Role.CLIENT), Connection(Role.SERVER)
    server.receive_data(reader.send(ev.Connect(client_version="t", protocol_version=21)))
    server.next_event()
    reader.receive_data(server.send(server.connected_event("t", 5 << 20, {})))
    assert isinstance(reader.next_event(), ev.Connected)
    reader.receive_data(data)
    events = []
    while (event := reader.next_event()) is not NEED_DATA:
        events.append(event)
    return events


@settings(max_examples=60, deadline=None)
@given(kinds=st.lists(st.sampled_from(sorted(FRAMES)), min_size=1, max_size=8),
       cuts=st.lists(st.integers(0, 10_000), max_size=4), domain=st.sampled_from(["persistent", "non-persistent"]),
       permits=st.sampled_from([0, 2, 1000]))
def test_how_reads_fall_changes_nothing_that_is_published_or_answered(kinds, cuts, domain, permits):
    # Under the in-flight limit, cutting the stream elsewhere may only move a non-persistent receipt
    # to the end of another read: the frames each side gets are the same, in the same order per kind.
    stream = b"".join(FRAMES[kind](i) for i, kind in enumerate(kinds))
    whole = observe(domain, [stream], permits, maxMessageSize=100)
    cut = observe(domain, cut_into_reads(stream, cuts), permits, maxMessageSize=100)
    assert cut["to consumer"] == whole["to consumer"] and cut["stats"] == whole["stats"]
    for kind in (ev.SendReceipt, ev.SendError, ev.Error, ev.Pong, ev.PartitionedMetadataResponse):
        assert [e for e in cut["to producer"] if isinstance(e, kind)] == \
               [e for e in whole["to producer"] if isinstance(e, kind)]


def test_a_send_larger_than_a_read_is_delivered_whole():
    frame = send(sequence_id=0, payload=b"B" * 600_000, num_messages=3)
    seen = observe("non-persistent", cut_into_reads(frame, [256_000, 512_000]))
    [message] = seen["to consumer"]
    assert message.payload == b"B" * 600_000
    [receipt] = seen["to producer"]
    assert (receipt.sequence_id, receipt.highest_sequence_id) == (0, 2)


@pytest.mark.parametrize("cut", [1, 4, 10, 11, -1])
def test_a_send_cut_short_by_the_peers_eof_is_not_published(cut):
    first, second = FRAMES["plain"](0), FRAMES["plain"](1)
    seen = observe("non-persistent", [first, second[:cut]], eof=True)
    assert [r.sequence_id for r in seen["to producer"] if isinstance(r, ev.SendReceipt)] == [0]
    assert len(seen["to consumer"]) == 1


@pytest.mark.parametrize("domain", ["persistent", "non-persistent"])
def test_sends_in_one_read_are_published_delivered_and_receipted(domain):
    frames = [FRAMES["plain"](i) for i in range(3)] + [FRAMES["batch"](3)]
    seen = observe(domain, [b"".join(frames)])
    assert [(r.sequence_id, r.highest_sequence_id) for r in seen["to producer"]] == [(0, 0), (1, 0), (2, 0), (3, 5)]
    assert [m.payload for m in seen["to consumer"]] == [b"plain-0", b"plain-1", b"plain-2", b"b" * 30]


def test_with_limit_0_one_read_accepts_the_first_and_drops_the_rest():
    seen = observe("non-persistent", [b"".join(FRAMES["plain"](i) for i in range(3))],
                   maxConcurrentNonPersistentMessagePerConnection=0)
    ids = [(r.message_id.ledgerId, r.message_id.entryId) for r in seen["to producer"]]
    assert ids[1:] == [(U64_MINUS_ONE, U64_MINUS_ONE)] * 2 and ids[0] != ids[1]


def test_sends_in_separate_reads_never_overlap():
    seen = observe("non-persistent", [FRAMES["plain"](i) for i in range(3)],
                   maxConcurrentNonPersistentMessagePerConnection=0)
    assert [(r.message_id.ledgerId, r.message_id.entryId) for r in seen["to producer"]] == [(0, 0)] * 3


def test_a_send_for_an_unknown_producer_closes_and_nothing_after_it_is_published():
    seen = observe("non-persistent", [send(producer_id=9, sequence_id=0) + FRAMES["plain"](1)])
    assert seen["producer closed"] and seen["to consumer"] == []
    [error] = seen["to producer"]
    assert isinstance(error, ev.SendError) and error.error == pb.NotAllowedError


def test_a_payload_that_looks_like_a_send_is_payload_wherever_a_read_ends():
    inner = FRAMES["plain"](1)
    outer = send(sequence_id=0, payload=inner)
    seen = observe("non-persistent", cut_into_reads(outer, [len(outer) - len(inner)]))
    [message] = seen["to consumer"]
    assert message.payload == inner


def test_a_fault_in_a_send_is_answered_with_unknown_error_and_the_connection_goes_on(monkeypatch):
    def fail(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("reference_broker.commands.ServerCnx._send_non_persistent", fail)
    seen = observe("non-persistent", [FRAMES["plain"](0) + FRAMES["ping"](1)])
    error, pong = seen["to producer"]
    assert isinstance(error, ev.Error) and "Internal error handling Send: boom" in error.message
    assert isinstance(pong, ev.Pong)
