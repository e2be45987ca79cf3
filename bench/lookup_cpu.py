"""Broker CPU per partition-metadata lookup, in process: load on the machine barely moves this figure.

bench/lookup.py measures what a client sees (round trips through the kernel and the client library);
on a shared two-core machine its figures swing by 2x with other work. This one feeds pre-encoded
PARTITIONED_METADATA frames straight into the broker's connection object (server.BrokerProtocol with a
transport that only collects bytes) and reports the process CPU time per request, the part of a round
trip that is the reference broker's own cost. It reports both ways a lookup is answered: ``decided``,
the full path (decode, namespace and topic reads, auto-creation rules, encode), and ``remembered``,
the same request repeated, answered from the core's remembered answers (core.py Rule 5, server.py
Rule 6), which is what a client re-asking for a topic meets.

    .venv/bin/python bench/lookup_cpu.py [--requests 20000] [--batch 1]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reference_broker.config import BrokerConfig  # noqa: E402
from reference_broker.core import BrokerCore  # noqa: E402
from reference_broker.metadata.memory import MemoryMetadataStore  # noqa: E402
from reference_broker.protocol import events as ev  # noqa: E402
from reference_broker.protocol.connection import Connection, Role  # noqa: E402
from reference_broker.server import BrokerProtocol, BrokerServer  # noqa: E402

TOPIC = "persistent://public/default/bench-lookup"


class CollectingTransport:
    """The part of an asyncio transport BrokerProtocol uses; keeps only the byte count."""

    def __init__(self) -> None:
        self.written = 0

    def write(self, data: bytes) -> None:
        self.written += len(data)

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name, default=None):
        return ("127.0.0.1", 1) if name == "peername" else default

    def close(self) -> None:
        pass


async def measure(requests: int, batch: int, path: str) -> dict:
    core = BrokerCore(BrokerConfig(), MemoryMetadataStore())
    if path == "decided":
        core.remembered_partitions = lambda: None  # nothing remembered: every request takes the full path
    core.boot()
    core.set_service_urls(broker_url="pulsar://127.0.0.1:6650", web_url="http://127.0.0.1:8080")
    server = BrokerServer(core)
    protocol = BrokerProtocol(server)
    transport = CollectingTransport()
    protocol.connection_made(transport)
    client = Connection(Role.CLIENT)
    protocol.data_received(client.send(ev.Connect(client_version="bench", protocol_version=21)))
    core.create_non_partitioned_topic(TOPIC)
    frames = [client.send(ev.PartitionedMetadata(topic=TOPIC, request_id=i, metadata_auto_creation_enabled=True))
              for i in range(batch)]
    chunk = b"".join(frames)
    for _ in range(200):  # warm-up
        protocol.data_received(chunk)
    rounds = max(1, requests // batch)
    before = transport.written
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(rounds):
        protocol.data_received(chunk)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    answered = rounds * batch
    protocol.connection_lost(None)
    core.close()
    return {"path": path, "requests": answered, "batch": batch, "cpu_us_per_request": round(cpu / answered * 1e6, 1),
            "wall_us_per_request": round(wall / answered * 1e6, 1),
            "bytes_out_per_request": round((transport.written - before) / answered, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=1, help="frames per read (1 = one request per read)")
    args = parser.parse_args(argv)
    for path in ("decided", "remembered"):
        print(asyncio.run(measure(args.requests, args.batch, path)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
