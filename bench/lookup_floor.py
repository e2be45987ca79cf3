"""The Python floor of a partition-metadata round trip: the project's codec on uvloop, no broker.

bench/lookup.py compares the reference broker with pulsar-lite (a native binary). This server is
the third row that tells how much of the difference is the broker's own work and how much is the
runtime: it speaks just enough of the binary protocol for the official client's
``get_topic_partitions`` (CONNECT -> CONNECTED, PARTITIONED_METADATA -> 0 partitions, PING -> PONG),
through the same sans-IO ``Connection`` and the same uvloop as the reference broker, one write per
read, with no topic, namespace, store or policy logic at all. Whatever the reference broker costs
above this row is its own; what this row costs above the ``canned`` mode below is the codec's.

    .venv/bin/python bench/lookup_floor.py [--mode codec|shortcut|canned]
        # prints READY pulsar://127.0.0.1:PORT, serves until SIGTERM

``--mode`` says how much of the work is left in (the handshake always goes through the codec):
- ``codec`` (the default): every frame through ``Connection``, as above;
- ``shortcut``: PARTITIONED_METADATA read and answered by reference_broker/protocol/shortcut.py,
  the broker's path for a remembered answer, without the broker around it;
- ``canned``: every read after the handshake is answered with one pre-encoded answer to request
  id 1, nothing decoded: what uvloop and Python alone cost per round trip. Only for a client that
  always sends request id 1 (bench/lookup_raw.py).

A measuring instrument only: it answers every other command with an ERROR and is never a target.
"""

from __future__ import annotations

import asyncio
import gc
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reference_broker.protocol import CLOSED, NEED_DATA, Connection, RemoteProtocolError, Role  # noqa: E402
from reference_broker.protocol import events as ev  # noqa: E402
from reference_broker.protocol import pulsar_api_pb2 as pb  # noqa: E402
from reference_broker.protocol.shortcut import (  # noqa: E402
    partitioned_metadata_answer, read_partitioned_metadata, varint)

SUCCESS = pb.CommandPartitionedTopicMetadataResponse.Success
CANNED_ANSWER = partitioned_metadata_answer(0, varint(1))


class FloorProtocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.conn = Connection(Role.SERVER)
        self.transport = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.conn.receive_data(data)
        out = []
        while True:
            try:
                event = self.conn.next_event()
            except RemoteProtocolError:
                self.transport.close()
                return
            if event is NEED_DATA or event is CLOSED:
                break
            out.append(self.reply(event))
        if out:
            self.transport.write(b"".join(out))

    def reply(self, event) -> bytes:
        """The frames answering ``event`` (b"" for none)."""
        return self.conn.send(self.answer(event))

    def answer(self, event) -> ev.Event:
        if isinstance(event, ev.PartitionedMetadata):
            return ev.PartitionedMetadataResponse(request_id=event.request_id, partitions=0, response=SUCCESS)
        if isinstance(event, ev.Connect):
            return self.conn.connected_event("lookup-floor", 5 * 1024 * 1024, {})
        if isinstance(event, ev.Ping):
            return ev.Pong()
        request_id = getattr(getattr(event, "pb", None), "request_id", 2**64 - 1)
        return ev.Error(request_id=request_id, error=pb.NotAllowedError,
                        message=f"lookup floor answers only PARTITIONED_METADATA, not {type(event).__name__}")


class ShortcutProtocol(FloorProtocol):
    def data_received(self, data: bytes) -> None:
        if self.conn.between_frames:
            request = read_partitioned_metadata(data)
            if request is not None and request[0] == len(data):
                self.transport.write(partitioned_metadata_answer(0, request[2]))
                return
        super().data_received(data)


class CannedProtocol(FloorProtocol):
    def data_received(self, data: bytes) -> None:
        if self.conn.between_frames:
            self.transport.write(CANNED_ANSWER)
            return
        super().data_received(data)


MODES = {"codec": FloorProtocol, "shortcut": ShortcutProtocol, "canned": CannedProtocol}


async def serve(mode: str) -> None:
    server = await asyncio.get_running_loop().create_server(MODES[mode], "127.0.0.1", 0)
    await serve_until_stopped(server)


async def serve_until_stopped(server: asyncio.AbstractServer) -> None:
    """Print ``READY pulsar://127.0.0.1:PORT`` for ``server`` and serve until SIGTERM or SIGINT
    (bench/nonpersistent_floor.py serves this way too)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    gc.collect()
    gc.freeze()  # as the reference broker does after start-up
    print(f"READY {service_url(server)}", flush=True)
    try:
        await stop.wait()
    finally:
        server.close()


def service_url(server: asyncio.AbstractServer) -> str:
    return f"pulsar://127.0.0.1:{server.sockets[0].getsockname()[1]}"


def main() -> int:
    import argparse

    import uvloop

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=sorted(MODES), default="codec")
    uvloop.run(serve(parser.parse_args().mode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
