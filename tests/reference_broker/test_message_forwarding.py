"""A MESSAGE carries the stored entry as the producer wrote it (``Connection.message``).

Pulsar's PulsarCommandSenderImpl.sendMessagesToConsumer: "After the command, the broker sends the stored entry as the producer wrote it
(magic, checksum, metadata size, metadata, payload)", except that a client below v11 gets no
checksum block. So the metadata bytes are not decoded and written again, the checksum is the
producer's, and a SEND without one is delivered without one. Each test sends a SEND whose metadata
is written in an order protobuf's own encoder never uses (fields backwards), which a broker that
re-encodes would change, through a broker in this process, and compares the delivered section.
"""

from __future__ import annotations

import struct

import pytest

from pulsar_codec import events as ev
from pulsar_codec import pulsar_api_pb2 as pb
from pulsar_codec.frames import MAGIC_CRC32C, encode_payload_command

from .in_process import BinaryClient, run

# MessageMetadata{publish_time = 1, sequence_id = 0, producer_name = "p"}, fields backwards: valid
# protobuf, but not the bytes SerializeToString would give.
BACKWARDS_METADATA = b"\x18\x01" + b"\x10\x00" + b"\x0a\x01p"
PAYLOAD = b"as written"


def payload_sections(data: bytes, command_type: int) -> list[bytes]:
    """What follows the command in each frame of ``command_type`` in ``data`` (whole frames)."""
    sections, pos = [], 0
    while pos < len(data):
        total, command_size = struct.unpack_from(">II", data, pos)
        command = pb.BaseCommand.FromString(data[pos + 8:pos + 8 + command_size])
        if command.type == command_type:
            sections.append(data[pos + 8 + command_size:pos + 4 + total])
        pos += 4 + total
    return sections


def delivered_section(domain: str, with_checksum: bool, consumer_version: int = 21) -> tuple[bytes, bytes]:
    """(the SEND's section as sent, the MESSAGE's section as delivered) for one message."""
    seen = {}

    def test(core, client: BinaryClient):
        topic = f"{domain}://public/default/forwarded"
        client.exchange(client.conn.send(ev.Subscribe(topic=topic, subscription="s", subType=0, consumer_id=1,
                                                      request_id=1)))
        client.exchange(client.conn.send(ev.Flow(consumer_id=1, messagePermits=10)))
        client.exchange(client.conn.send(ev.Producer(topic=topic, producer_id=1, request_id=2)))
        command = pb.BaseCommand(type=pb.BaseCommand.SEND, send=pb.CommandSend(producer_id=1, sequence_id=0))
        send = encode_payload_command(command, BACKWARDS_METADATA, PAYLOAD, checksum=with_checksum)
        client.transport.data.clear()
        client.protocol.data_received(send)
        [seen["sent"]] = payload_sections(send, pb.BaseCommand.SEND)
        [seen["delivered"]] = payload_sections(bytes(client.transport.data), pb.BaseCommand.MESSAGE)

    run(test, client_version=consumer_version)
    return seen["sent"], seen["delivered"]


@pytest.mark.parametrize("domain", ["persistent", "non-persistent"])
def test_metadata_and_checksum_are_delivered_as_the_producer_wrote_them(domain):
    sent, delivered = delivered_section(domain, with_checksum=True)
    assert sent[:2] == struct.pack(">H", MAGIC_CRC32C)
    assert delivered == sent


@pytest.mark.parametrize("domain", ["persistent", "non-persistent"])
def test_a_send_without_a_checksum_is_delivered_without_one(domain):
    sent, delivered = delivered_section(domain, with_checksum=False)
    assert sent == struct.pack(">I", len(BACKWARDS_METADATA)) + BACKWARDS_METADATA + PAYLOAD
    assert delivered == sent


def test_a_client_below_v11_gets_no_checksum_block():
    sent, delivered = delivered_section("persistent", with_checksum=True, consumer_version=10)
    assert delivered == sent[6:]  # the block is the magic number and the CRC: six bytes
