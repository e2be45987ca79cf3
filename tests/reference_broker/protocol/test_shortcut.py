"""protocol/shortcut.py against the full codec: it writes exactly what the Connection writes."""

import struct

import pytest
from hypothesis import given, strategies as st

from reference_broker.protocol import Connection, LocalProtocolError, Role, events as ev
from reference_broker.protocol import pulsar_api_pb2 as pb
from reference_broker.protocol.frames import crc32c
from reference_broker.protocol.shortcut import varint

from .server_side import connected_server

U64 = st.integers(min_value=0, max_value=2**64 - 1)
VARINT_EDGES = st.sampled_from([0, 1, 0x7F, 0x80, 0x3FFF, 0x4000, 0x1FFFFF, 0x200000, 2**63, 2**64 - 1])


@given(st.integers(0, 2**64 - 1) | VARINT_EDGES)
def test_a_varint_is_protobufs(value):
    # CommandFlow{consumer_id = value, messagePermits = 0}: tag 1, the varint, then tag 2 and 0.
    assert pb.CommandFlow(consumer_id=value, messagePermits=0).SerializeToString() == b"\x08" + varint(value) + b"\x10\x00"


INT32 = st.integers(min_value=-2**31, max_value=2**31 - 1)


@given(producer_id=U64, sequence_id=U64, highest=U64, ledger_id=U64, entry_id=U64)
def test_a_receipt_is_the_connections_bytes(producer_id, sequence_id, highest, ledger_id, entry_id):
    server = connected_server()
    expected = server.send(ev.SendReceipt(producer_id=producer_id, sequence_id=sequence_id,
                                          highest_sequence_id=highest,
                                          message_id={"ledgerId": ledger_id, "entryId": entry_id}))
    assert server.send_receipt(producer_id, sequence_id, highest, ledger_id, entry_id) == expected


@given(consumer_id=U64, ledger_id=U64, entry_id=U64, partition=INT32,
       redelivery_count=st.integers(min_value=0, max_value=2**32 - 1),
       metadata=st.binary(max_size=300), payload=st.binary(max_size=300),
       client_version=st.sampled_from([10, 11, 21]))
def test_a_message_is_the_connections_bytes(consumer_id, ledger_id, entry_id, partition, redelivery_count,
                                            metadata, payload, client_version):
    server = connected_server(client_version)  # below v11 a MESSAGE carries no checksum (connection.py Rule 3)
    expected = server.send(ev.Message(consumer_id=consumer_id, redelivery_count=redelivery_count,
                                      message_id={"ledgerId": ledger_id, "entryId": entry_id, "partition": partition},
                                      metadata=metadata, payload=payload))
    producers_checksum = crc32c(struct.pack(">I", len(metadata)) + metadata + payload)  # a valid one, as sent
    assert server.message(consumer_id, ledger_id, entry_id, partition, redelivery_count, metadata, payload,
                          producers_checksum) == expected


@given(metadata=st.binary(max_size=50), payload=st.binary(max_size=50), client_version=st.sampled_from([10, 11, 21]))
def test_a_message_of_an_entry_sent_without_a_checksum_carries_none(metadata, payload, client_version):
    """pulsar-wire.md: the broker sends the stored entry as the producer wrote it, so no checksum
    block for any client: the bytes a client below v11 gets, whatever this client's version."""
    expected = connected_server(10).send(ev.Message(consumer_id=1, redelivery_count=0,
                                                    message_id={"ledgerId": 2, "entryId": 3, "partition": -1},
                                                    metadata=metadata, payload=payload))
    assert connected_server(client_version).message(1, 2, 3, -1, 0, metadata, payload, None) == expected


def test_a_message_forwards_the_producers_checksum_as_it_came():
    checksum = 0x01020304  # not the CRC of these bytes: the broker does not compute it again
    frame = connected_server(21).message(1, 2, 3, -1, 0, b"meta", b"payload", checksum)
    assert frame.endswith(b"\x0e\x01\x01\x02\x03\x04" + struct.pack(">I", 4) + b"meta" + b"payload")


def test_receipts_and_messages_keep_the_connections_rules():
    before_handshake = Connection(Role.SERVER)
    with pytest.raises(LocalProtocolError):
        before_handshake.send_receipt(1, 2, 2, 3, 4)
    with pytest.raises(LocalProtocolError):
        before_handshake.message(1, 3, 4, -1, 0, b"", b"x", None)
