"""server.py Rules 7 and 8: plain SENDs, and reads that end inside a frame, as the Connection sees them.

Each test feeds the same reads to a broker in this process twice, once as it runs and once with the
plain-SEND path switched off (``read_send`` and ``incomplete_tail`` finding nothing, so every frame,
and every read's incomplete tail, goes through the Connection), and compares everything a client or
the admin API can see: the bytes the producer's and the consumer's connections get, whether each was
closed, and the topic's counters.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest
from hypothesis import given, settings, strategies as st

from model.names import TopicName
from reference_broker.config import BrokerConfig
from reference_broker.core import BrokerCore
from reference_broker.metadata.memory import MemoryMetadataStore
from reference_broker.protocol import NEED_DATA, Connection, Role, events as ev
from reference_broker.protocol import pulsar_api_pb2 as pb
from reference_broker.protocol.frames import encode_payload_command
from reference_broker.service import ServerCnx
from reference_broker.topics import persistent

from .in_process import BinaryClient

TOPIC = "{domain}://public/default/plain-sends"
# Stats fields the SENDs do not decide: a clock reading, a name from a process-wide counter.
UNDECIDED_FIELDS = {"connectedSince", "producerName"}


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
    "unknown producer": lambda i: send(producer_id=9, sequence_id=i),
    "ping": lambda i: client.send(ev.Ping()),
    "lookup": lambda i: client.send(ev.PartitionedMetadata(topic="persistent://public/default/x", request_id=i)),
}


def run_both_ways(monkeypatch, domain: str, frames: list[bytes], cuts: list[int], permits: int, eof: bool = False,
                  **config) -> dict:
    """What the clients and the admin API see after ``frames`` (one stream, cut into reads at
    ``cuts``, then the peer's EOF if ``eof``) arrive on the producer's connection, with and
    without Rules 7 and 8."""
    reads = cut_into_reads(b"".join(frames), cuts)
    seen = {}
    for plain_path in (True, False):
        with monkeypatch.context() as patch:
            if not plain_path:
                patch.setattr("reference_broker.server.read_send", lambda *args: None)
                patch.setattr("reference_broker.server.incomplete_tail", lambda *args: None)
            patch.setattr(persistent, "_ledger_ids", itertools.count(persistent.LEDGER_ID_BASE))
            seen[plain_path] = asyncio.run(_observe(domain, reads, permits, config, eof))
    assert seen[True] == seen[False]
    return seen[True]


def sends_the_connection_decodes(monkeypatch) -> list:
    """The SENDs that reach ServerCnx.handle_Send, the Connection path's, from now on."""
    decoded = []
    original = ServerCnx.handle_Send
    monkeypatch.setattr(ServerCnx, "handle_Send", lambda self, event: decoded.append(event) or original(self, event))
    return decoded


def cut_into_reads(stream: bytes, cuts: list[int]) -> list[bytes]:
    bounds = sorted({0, len(stream), *(cut % (len(stream) + 1) for cut in cuts)})
    return [stream[a:b] for a, b in itertools.pairwise(bounds)]


async def _observe(domain: str, reads: list[bytes], permits: int, config: dict, eof: bool = False) -> dict:
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
                break  # a transport stops reading once it starts closing (asyncio and uvloop alike)
            producer.protocol.data_received(data)
            await asyncio.sleep(0)  # anything a read scheduled runs before the next one
        if eof:
            producer.protocol.eof_received()
        await asyncio.sleep(0)
        live = producer.protocol.broker.topics.get(TopicName.parse(topic))
        stats = decided(live.stats()) if domain == "non-persistent" else {"entries": len(live.entries)}
        return {"to producer": bytes(producer.transport.data), "to consumer": bytes(consumer.transport.data),
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


LIMITS = [dict(), dict(maxConcurrentNonPersistentMessagePerConnection=0),
          dict(maxConcurrentNonPersistentMessagePerConnection=1)]


@settings(max_examples=120, deadline=None)
@given(kinds=st.lists(st.sampled_from(sorted(FRAMES)), min_size=1, max_size=8),
       cuts=st.lists(st.integers(0, 10_000), max_size=4), domain=st.sampled_from(["persistent", "non-persistent"]),
       permits=st.sampled_from([0, 2, 1000]), limits=st.sampled_from(LIMITS), eof=st.booleans())
def test_any_reads_of_any_frames_are_seen_the_same_either_way(kinds, cuts, domain, permits, limits, eof):
    with pytest.MonkeyPatch.context() as monkeypatch:
        run_both_ways(monkeypatch, domain, [FRAMES[kind](i) for i, kind in enumerate(kinds)], cuts, permits, eof,
                      maxMessageSize=100, **limits)


@settings(max_examples=60, deadline=None)
@given(count=st.integers(1, 6), cuts=st.lists(st.integers(0, 10_000), max_size=8), batch=st.booleans())
def test_sends_cut_anywhere_into_reads_all_take_the_plain_path(count, cuts, batch):
    # The point of holding a read's incomplete tail: a stream of SENDs, however the reads fall,
    # never reaches the Connection, so none pays for its decoding (Rule 8).
    frames = [FRAMES["batch" if batch else "plain"](i) for i in range(count)]
    with pytest.MonkeyPatch.context() as monkeypatch:
        decoded = sends_the_connection_decodes(monkeypatch)
        seen = asyncio.run(_observe("non-persistent", cut_into_reads(b"".join(frames), cuts), 1000, {}))
    assert decoded == []
    assert [r.sequence_id for r in pump(seen["to producer"]) if isinstance(r, ev.SendReceipt)] == list(range(count))
    assert len(pump(seen["to consumer"])) == count


def test_a_send_larger_than_a_read_takes_the_plain_path(monkeypatch):
    # uvloop reads at most 256,000 bytes at a time: a 600 KB batch always spans reads.
    frame = send(sequence_id=0, payload=b"B" * 600_000, num_messages=3)
    decoded = sends_the_connection_decodes(monkeypatch)
    seen = asyncio.run(_observe("non-persistent", cut_into_reads(frame, [256_000, 512_000]), 1000, {}))
    assert decoded == []
    [message] = pump(seen["to consumer"])
    assert message.payload == b"B" * 600_000


@pytest.mark.parametrize("cut", [1, 4, 10, 11, -1])
def test_a_send_cut_short_by_the_peers_eof_is_seen_as_the_connection_sees_it(monkeypatch, cut):
    frame = FRAMES["plain"](1)
    seen = run_both_ways(monkeypatch, "non-persistent", [FRAMES["plain"](0), frame[:cut]],
                         [len(FRAMES["plain"](0)) + 5], 1000, eof=True)
    assert [r.sequence_id for r in pump(seen["to producer"]) if isinstance(r, ev.SendReceipt)] == [0]
    assert len(pump(seen["to consumer"])) == 1


@pytest.mark.parametrize("domain", ["persistent", "non-persistent"])
def test_sends_in_one_read_are_published_delivered_and_receipted(monkeypatch, domain):
    frames = [FRAMES["plain"](i) for i in range(3)] + [FRAMES["batch"](3)]
    seen = run_both_ways(monkeypatch, domain, frames, [], 1000)
    receipts = pump(seen["to producer"])
    assert [(r.sequence_id, r.highest_sequence_id) for r in receipts] == [(0, 0), (1, 0), (2, 0), (3, 5)]
    assert [m.payload for m in pump(seen["to consumer"])] == [b"plain-0", b"plain-1", b"plain-2", b"b" * 30]


def test_with_limit_0_one_read_accepts_the_first_and_drops_the_rest(monkeypatch):
    seen = run_both_ways(monkeypatch, "non-persistent", [FRAMES["plain"](i) for i in range(3)], [], 1000,
                         maxConcurrentNonPersistentMessagePerConnection=0)
    ids = [(r.message_id.ledgerId, r.message_id.entryId) for r in pump(seen["to producer"])]
    assert ids[1:] == [(2**64 - 1, 2**64 - 1)] * 2 and ids[0] != ids[1]


def test_a_send_for_an_unknown_producer_closes_and_nothing_after_it_is_published(monkeypatch):
    frames = [FRAMES["unknown producer"](0), FRAMES["plain"](1)]
    seen = run_both_ways(monkeypatch, "non-persistent", frames, [], 1000)
    assert seen["producer closed"] and seen["to consumer"] == b""
    [error] = pump(seen["to producer"])
    assert isinstance(error, ev.SendError) and error.error == pb.NotAllowedError


def test_a_payload_that_looks_like_a_send_is_payload_wherever_a_read_ends(monkeypatch):
    inner = FRAMES["plain"](1)
    outer = send(sequence_id=0, payload=inner)
    seen = run_both_ways(monkeypatch, "non-persistent", [outer], [len(outer) - len(inner)], 1000)
    [message] = pump(seen["to consumer"])
    assert message.payload == inner


def test_a_fault_in_the_decision_is_answered_as_on_the_connection_path(monkeypatch):
    def fail(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("reference_broker.service.ServerCnx._send_non_persistent", fail)
    seen = run_both_ways(monkeypatch, "non-persistent", [FRAMES["plain"](0), FRAMES["ping"](1)], [], 1000)
    error, pong = pump(seen["to producer"])
    assert isinstance(error, ev.Error) and "Internal error handling Send: boom" in error.message
    assert isinstance(pong, ev.Pong)


def pump(data: bytes) -> list:
    """The events a connected client reads from ``data``."""
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
