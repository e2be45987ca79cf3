"""Broker CPU per partition-metadata lookup, in process: load on the machine barely moves this figure.

bench/lookup.py measures what a client sees (round trips through the kernel and the client library);
on a shared two-core machine its figures swing by 2x with other work. This one feeds pre-encoded
PARTITIONED_METADATA frames straight into the broker's connection object (server.BrokerProtocol with a
transport that only collects bytes) and reports the time per request, the part of a round trip that
is the reference broker's own cost. It reports the four ways a lookup is answered:
- ``first``: a name never asked before each time (bench/lookup.py's ``fresh`` column), in a
  namespace where such names are answered 0: after the first, the core answers them for their
  namespace (core.py Rule 6) from one store look-up;
- ``first-decided``: the same names with nothing remembered, each read by the server and decided
  by ``ServerCnx.partitioned_metadata`` (server.py Rule 6): name parse, namespace and topic reads,
  auto-creation rules; what a first lookup costs where Rule 6 does not apply;
- ``decided``: one existing topic asked again and again with nothing remembered, the same decision;
- ``remembered``: the same request repeated, answered from the core's remembered answers (core.py
  Rule 5), which is what a client re-asking for a topic meets.

``--cold`` evicts the CPU caches (it writes 16 MB) before each read and times only the read, as in
a live broker, where the client runs between two requests and leaves little of the broker in the
caches: a live lookup costs several times its warm figure, and about this one. It moves by a third
from run to run on a shared machine (the eviction competes for memory bandwidth), so compare
cold figures only within one run.

    .venv/bin/python bench/lookup_cpu.py [--requests 20000] [--batch 1] [--cold]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
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


PATHS = ("first", "first-decided", "decided", "remembered")
_EVICTION_BYTES = 16 * 1024 * 1024  # more than the last-level cache of the machines this runs on


async def measure(requests: int, batch: int, path: str, cold: bool = False) -> dict:
    core = BrokerCore(BrokerConfig(), MemoryMetadataStore())
    if path in ("first-decided", "decided"):
        core.remembered_answers = None  # nothing remembered: every request is decided
    core.set_service_urls(broker_url="pulsar://127.0.0.1:6650", web_url="http://127.0.0.1:8080")
    server = BrokerServer(core)
    protocol = BrokerProtocol(server)
    transport = CollectingTransport()
    protocol.connection_made(transport)
    client = Connection(Role.CLIENT)
    protocol.data_received(client.send(ev.Connect(client_version="bench", protocol_version=21)))
    core.create_non_partitioned_topic(TOPIC)
    rounds = max(1, requests // batch)
    names = (f"{TOPIC}-first-{i}" for i in itertools.count()) if path.startswith("first") else itertools.repeat(TOPIC)

    def reads(count: int) -> list[bytes]:
        return [b"".join(client.send(ev.PartitionedMetadata(topic=next(names), request_id=i,
                                                            metadata_auto_creation_enabled=True))
                         for i in range(batch))
                for _ in range(count)]

    for chunk in reads(200):  # warm-up
        protocol.data_received(chunk)
    chunks = reads(rounds)
    caches = bytearray(_EVICTION_BYTES) if cold else None
    before = transport.written
    cpu, wall = time.process_time(), 0.0
    for chunk in chunks:
        if cold:
            caches[::64] = bytes(len(caches) // 64)  # one write per cache line
        began = time.perf_counter()
        protocol.data_received(chunk)
        wall += time.perf_counter() - began
    cpu = time.process_time() - cpu
    answered = rounds * batch
    protocol.connection_lost(None)
    core.close()
    return {"path": path, "cold": cold, "requests": answered, "batch": batch,
            # with --cold the process time includes the evictions, so only the timed reads count
            "cpu_us_per_request": None if cold else round(cpu / answered * 1e6, 1),
            "wall_us_per_request": round(wall / answered * 1e6, 1),
            "bytes_out_per_request": round((transport.written - before) / answered, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=1, help="frames per read (1 = one request per read)")
    parser.add_argument("--cold", action="store_true", help="evict the CPU caches before each read")
    args = parser.parse_args(argv)
    for path in PATHS:
        print(asyncio.run(measure(args.requests, args.batch, path, args.cold)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
