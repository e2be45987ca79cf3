"""Partition-metadata round trips from a raw socket: how much of a lookup is the server's, user and kernel.

bench/lookup.py measures through the official client, whose own threads cost more than either
broker. Here the client is a blocking socket in this process sending one pre-encoded
PARTITIONED_METADATA (request id 1, one existing topic) and reading its answer, ``--calls`` times per
round on a warm connection, so the round trip is the two kernels' work and the server's. For each
server it prints the round trip and the server process's user and system CPU per call (/proc).

Servers: ``reference`` and ``pulsar-lite`` (started as the harness starts them), and the three modes
of bench/lookup_floor.py: ``floor-codec`` (the project's codec, no broker logic),
``floor-shortcut`` (reference_broker/protocol/shortcut.py, the broker's path for a remembered
answer, no broker around it) and ``floor-canned`` (pre-encoded bytes written back, nothing decoded:
uvloop and Python alone).

    .venv/bin/python bench/lookup_raw.py [--calls 20000] [--rounds 3] [--targets reference,pulsar-lite,...]

Rounds alternate the order of the servers; medians are printed. Every wait is bounded (socket
timeout 5 s); every server is stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pulsar  # noqa: E402

from bench.common import FloorServer, process_cpu_times, quiet_logger, target_pid  # noqa: E402
from bench.lookup import TOPIC  # noqa: E402
from bench.lookup_client import WireClient  # noqa: E402
from conformance.targets.registry import make_target  # noqa: E402
from reference_broker.protocol import events as ev  # noqa: E402

SERVERS = ("reference", "pulsar-lite", "floor-codec", "floor-shortcut", "floor-canned")
WARM_UP = 2000


def start(name: str):
    server = (FloorServer("lookup_floor.py", "--mode", name.removeprefix("floor-")) if name.startswith("floor-")
              else make_target(name))
    server.start()
    return server


def round_trips(sock: socket.socket, request: bytes, answer_size: int, calls: int) -> None:
    for _ in range(calls):
        sock.sendall(request)
        got = 0
        while got < answer_size:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("the server hung up")
            got += len(data)


def measure(url: str, pid: int | None, calls: int) -> dict[str, float | None]:
    client = WireClient(url, timeout=5)  # handshake done
    request = client.conn.send(ev.PartitionedMetadata(topic=TOPIC, request_id=1))
    with client.sock as sock:
        sock.sendall(request)
        answer_size = len(sock.recv(65536))  # one small frame: it arrives whole on loopback
        round_trips(sock, request, answer_size, WARM_UP)
        before, began = process_cpu_times(pid), time.perf_counter()
        round_trips(sock, request, answer_size, calls)
        elapsed, after = time.perf_counter() - began, process_cpu_times(pid)
    user = sys_ = None
    if before is not None and after is not None:
        user, sys_ = ((after[i] - before[i]) / calls * 1e6 for i in (0, 1))
    return {"rtt_us": elapsed / calls * 1e6, "user_us": user, "sys_us": sys_}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--targets", default=",".join(SERVERS))
    args = parser.parse_args()
    names = args.targets.split(",")
    unknown = sorted(set(names) - set(SERVERS))
    if unknown:
        parser.error(f"unknown server(s) {', '.join(unknown)}; known: {', '.join(SERVERS)}")

    servers, rounds = {}, {name: [] for name in names}
    load_before = os.getloadavg()[0]
    try:
        for name in names:
            servers[name] = start(name)
            if not name.startswith("floor-"):  # the topic exists before any lookup, as in bench/lookup.py
                client = pulsar.Client(servers[name].service_url, logger=quiet_logger("bench-lookup-raw"))
                try:
                    client.create_producer(TOPIC).close()
                finally:
                    client.close()
        for index in range(args.rounds):
            for name in names if index % 2 == 0 else list(reversed(names)):
                server = servers[name]
                rounds[name].append(measure(server.service_url, target_pid(server), args.calls))
    finally:
        for server in servers.values():
            server.stop()

    print(f"raw-socket PARTITIONED_METADATA round trips, {args.calls} per round, median of {args.rounds} "
          f"alternating rounds; load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"{'server':<16}{'round trip us':>15}{'user us':>10}{'sys us':>9}   rounds (round trip us)")
    for name in names:
        def median(key):
            values = [r[key] for r in rounds[name] if r[key] is not None]
            return f"{statistics.median(values):.1f}" if values else "-"
        print(f"{name:<16}{median('rtt_us'):>15}{median('user_us'):>10}{median('sys_us'):>9}   "
              + ", ".join(f"{r['rtt_us']:.1f}" for r in rounds[name]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
