"""The per-call cost of the client-driver protocol: a no-op request's round trip.

Starts the java-client driver (clients/java; built into the cache when missing) and times
``--calls`` ``noop`` requests, one at a time, in each of ``--rounds`` rounds after a warm-up of
``--warmup`` calls (the JIT compiles the loop first). A no-op is one JSON line each way through
two pipes, parsed and written by both sides, so its round trip is what the protocol adds to every
client call a case makes. For scale it then times one real call the same way:
``client.get_partitions`` of an existing topic on the reference broker (one PARTITIONED_METADATA
round trip inside the Java client). Prints the median, the 99th percentile and the spread of the
rounds' medians. Every wait is bounded; the driver and the broker are stopped at the end.

    .venv/bin/python bench/client_protocol.py [--calls 2000] [--rounds 5] [--warmup 2000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conformance.drivers.external import DriverProcess, round_trip  # noqa: E402
from conformance.drivers.java_build import DEFAULT_CLIENT_VERSION, driver_command  # noqa: E402
from conformance.targets.reference import ReferenceTarget  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def describe(name: str, rounds: list[list[float]]) -> None:
    medians = [statistics.median(r) * 1e6 for r in rounds]
    every = [t * 1e6 for r in rounds for t in r]
    print(f"{name}: median {statistics.median(every):.1f} us, p99 {percentile(every, 0.99):.1f} us "
          f"({len(every)} calls; round medians {min(medians):.1f}-{max(medians):.1f} us)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2000)
    parser.add_argument("--version", default=DEFAULT_CLIENT_VERSION, help="pulsar-client release of the driver")
    args = parser.parse_args()

    process = DriverProcess("java-client", lambda: driver_command("java-client", args.version))
    broker = ReferenceTarget(start_timeout=30)
    try:
        started = time.perf_counter()
        info = process.start()
        print(f"java-client driver ({info['library']} {info['library_version']}, Java {info.get('runtime')}): "
              f"started and agreed on protocol {info['protocol']} in {time.perf_counter() - started:.2f} s")
        round_trip(process, args.warmup)
        describe("no-op round trip", [round_trip(process, args.calls) for _ in range(args.rounds)])

        broker.start()
        client = process.request("client.create", {"service_url": broker.service_url, "operation_timeout_ms": 5000,
                                                   "connection_timeout_ms": 3000, "timeout_ms": 10000}, timeout=10)
        topic = "persistent://public/default/bench-client-protocol"
        request = {"client": client["handle"], "topic": topic, "auto_create": True, "timeout_ms": 10000}
        process.request("client.get_partitions", request, timeout=10)  # creates it; later calls only read

        def one_lookup() -> float:
            begun = time.perf_counter()
            process.request("client.get_partitions", request, timeout=10)
            return time.perf_counter() - begun

        for _ in range(args.warmup // 4):
            one_lookup()
        describe("client.get_partitions round trip (reference broker)",
                 [[one_lookup() for _ in range(args.calls // 4)] for _ in range(args.rounds)])
    finally:
        process.close()
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
