"""A reference broker driven in this process: frames in through ``BrokerProtocol.data_received``,
frames out of a transport that keeps them. No socket and no event-loop wait, so every test using it
is deterministic."""

from __future__ import annotations

import asyncio

from reference_broker.config import BrokerConfig
from reference_broker.core import BrokerCore
from reference_broker.metadata.memory import MemoryMetadataStore
from pulsar_codec import CLOSED, NEED_DATA, Connection, Role, events as ev
from pulsar_codec import pulsar_api_pb2 as pb
from reference_broker.binary_connection import BrokerProtocol
from reference_broker.server import BrokerServer

FAILED = pb.CommandPartitionedTopicMetadataResponse.Failed


class KeepingTransport:
    """The part of an asyncio transport BrokerProtocol uses: it keeps the bytes written and closes
    as asyncio's does (it is closing from ``close()`` on)."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = False

    def write(self, data: bytes) -> None:
        self.data += data

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name, default=None):
        return ("127.0.0.1", 1) if name == "peername" else default

    # Flow control: nothing is ever pending here, so the broker is never told to pause.
    def set_write_buffer_limits(self, high=None, low=None) -> None:
        self.limits = (high, low)

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True


class BinaryClient:
    """A broker connection driven in process: frames in through data_received, answers out of the transport."""

    def __init__(self, core: BrokerCore, protocol_version: int = 21, server: BrokerServer | None = None) -> None:
        """``server``: another client's, for connections of one broker (a producer and a consumer)."""
        self.protocol = BrokerProtocol(server or BrokerServer(core))
        self.transport = KeepingTransport()
        self.protocol.connection_made(self.transport)
        self.conn = Connection(Role.CLIENT)
        self.next_request_id = 1
        assert isinstance(self.exchange(self.conn.send(ev.Connect(client_version="t",
                                                                  protocol_version=protocol_version)))[0],
                          ev.Connected)

    def exchange(self, data: bytes) -> list:
        self.transport.data.clear()
        self.protocol.data_received(data)
        if self.transport.data:  # (b"" would read as the broker hanging up)
            self.conn.receive_data(bytes(self.transport.data))
        events = []
        while (event := self.conn.next_event()) is not NEED_DATA:
            assert event is not CLOSED
            events.append(event)
        return events

    def request(self, topic: str, field6=None) -> bytes:
        self.next_request_id += 1
        fields = {} if field6 is None else {"metadata_auto_creation_enabled": field6}
        return self.conn.send(ev.PartitionedMetadata(topic=topic, request_id=self.next_request_id, **fields))

    def partitions(self, topic: str, field6=None):
        """The answer's partition count, or the error name when it failed."""
        [answer] = self.exchange(self.request(topic, field6))
        assert answer.request_id == self.next_request_id
        return pb.ServerError.Name(answer.error) if answer.response == FAILED else answer.partitions

    def close(self) -> None:
        self.protocol.connection_lost(None)


def run(test, store=None, client_version=21, **config):
    async def body():
        core = BrokerCore(BrokerConfig(**config), store or MemoryMetadataStore())
        client = BinaryClient(core, client_version)
        try:
            test(core, client)
        finally:
            client.close()
            core.close()
    asyncio.run(body())
