"""Partition-metadata lookup rate and latency with the official client: reference vs pulsar-lite.

Both brokers are started the way the harness starts them (conformance.targets), on loopback, and
get the same workload: one existing non-partitioned topic, then ``--calls`` sequential
``client.get_topic_partitions(topic)`` calls (one PARTITIONED_METADATA round trip each on a warm
connection: the client keeps no answer, so the broker sees every call) for latency, and
``--threads`` threads sharing one client for throughput. Then ``--calls // 5`` sequential lookups
of names never asked before (``fresh seq/s``: topics that do not exist, answered 0 under the
default auto-creation rules and never created), which no broker can answer from a remembered
answer: the reference broker replays an answer it gave to the same request while nothing it
depends on has changed (core.py Rule 5), so the first figure is a client re-asking. For a fresh
name it looks up the name's partitioned-metadata node and answers what its namespace's rules give
(core.py Rule 6: decided on the first such name, kept while nothing changes), as a broker caching
its namespace policies does.
Prints p50/p99 latency, calls per second, the broker's CPU per lookup (sequential calls, then fresh
names) and the reference/pulsar-lite ratios: for each figure the median of the paired rounds, with
the interval that holds the true median at 95% or more whatever the spread
(bench.common.median_interval; 7 rounds give the whole range, 15 a narrower one), and whether it
shows a difference. Every wait is bounded; both brokers are stopped at the end.

    .venv/bin/python bench/lookup.py [--calls 5000] [--threads 4] [--seconds 5] [--rounds 3] [--pin]
                                     [--floor [codec|shortcut]]

bench/lookup_cpu.py gives the reference broker's own CPU per lookup in process, a figure load barely moves.
``--pin`` keeps the brokers on the last CPU and the client on the others, as bench/nonpersistent.py --pin does.
``--floor`` adds a third row, bench/lookup_floor.py: the project's codec on uvloop answering every lookup
with no broker logic, the cost of Python and uvloop alone; ``--floor shortcut`` reads and answers the
lookups with the broker's own shortcut instead (its path for a remembered answer), the least a Python
broker on this runtime pays. Each row other than pulsar-lite gets its paired ratio to pulsar-lite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pulsar  # noqa: E402

from bench.common import (  # noqa: E402
    FloorServer, Placement, paired_ratio_text, percentile, process_cpu_seconds, quiet_logger, target_pid)
from conformance.targets.registry import make_target  # noqa: E402

TOPIC = "persistent://public/default/bench-lookup"


def measure(service_url: str, calls: int, threads: int, seconds: float, pid: int | None,
            create_topic: bool = True, fresh_prefix: str = "fresh") -> dict[str, float]:
    client = pulsar.Client(service_url, operation_timeout_seconds=10, connection_timeout_ms=5000,
                           logger=quiet_logger("bench-lookup"), concurrent_lookup_requests=50000)
    try:
        if create_topic:  # the topic exists before any lookup is timed (the floor has no topics)
            client.create_producer(TOPIC).close()
        for _ in range(100):  # warm up the connection and both sides' code paths
            client.get_topic_partitions(TOPIC)
        latencies = []
        cpu_before = process_cpu_seconds(pid)
        for _ in range(calls):
            start = time.perf_counter()
            client.get_topic_partitions(TOPIC)
            latencies.append(time.perf_counter() - start)
        cpu_after = process_cpu_seconds(pid)
        fresh_calls = max(1, calls // 5)
        fresh_began = time.perf_counter()
        for index in range(fresh_calls):
            client.get_topic_partitions(f"{TOPIC}-{fresh_prefix}-{index}")
        fresh_per_s = fresh_calls / (time.perf_counter() - fresh_began)
        cpu_fresh = process_cpu_seconds(pid)
        done = [0] * threads
        stop_at = time.perf_counter() + seconds

        def worker(index: int) -> None:
            while time.perf_counter() < stop_at:
                client.get_topic_partitions(TOPIC)
                done[index] += 1

        workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
        began = time.perf_counter()
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join(seconds + 30)
        elapsed = time.perf_counter() - began
        cpu_us = None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) / calls * 1e6
        fresh_cpu_us = None if cpu_fresh is None or cpu_after is None else (cpu_fresh - cpu_after) / fresh_calls * 1e6
        return {
            "p50_ms": percentile(latencies, 0.50) * 1000,
            "p99_ms": percentile(latencies, 0.99) * 1000,
            "mean_ms": statistics.fmean(latencies) * 1000,
            "sequential_per_s": calls / sum(latencies),
            "fresh_per_s": fresh_per_s,
            "threaded_per_s": sum(done) / elapsed,
            "broker_cpu_us": cpu_us,
            "fresh_broker_cpu_us": fresh_cpu_us,
        }
    finally:
        client.close()


def median_of(rounds: list[dict[str, float]], key: str) -> float | None:
    values = [r[key] for r in rounds if r.get(key) is not None]
    return statistics.median(values) if values else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3,
                        help="measurements per target, alternating targets so load drift hits both alike")
    parser.add_argument("--targets", default="reference,pulsar-lite")
    parser.add_argument("--pin", action="store_true",
                        help="brokers on the last CPU, the client on the others (Linux, two CPUs or more), as "
                             "bench/nonpersistent.py --pin")
    parser.add_argument("--floor", nargs="?", const="codec", choices=("codec", "shortcut"),
                        help="add the python-floor row: bench/lookup_floor.py in that mode (default codec: the "
                             "project's codec on uvloop; shortcut: the broker's request reader and answer builder) "
                             "answering with no broker logic, the least a Python broker here could cost")
    args = parser.parse_args()
    try:
        placement = Placement(args.pin)
    except ValueError as exc:
        parser.error(str(exc))

    names = args.targets.split(",") + (["python-floor"] if args.floor else [])
    targets = {name: FloorServer("lookup_floor.py", "--mode", args.floor) if name == "python-floor"
               else make_target(name) for name in names}
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    load_before = os.getloadavg()[0]
    try:
        for target in targets.values():
            target.start()
        placement.clients_here()
        for index in range(args.rounds):
            order = names if index % 2 == 0 else list(reversed(names))
            for name in order:
                target = targets[name]
                placement.broker(target_pid(target))  # again: threads it started since
                rounds[name].append(measure(target.service_url, args.calls, args.threads, args.seconds,
                                            target_pid(target), create_topic=name != "python-floor",
                                            fresh_prefix=f"fresh-{index}"))
    finally:
        for target in targets.values():
            target.stop()

    print(f"partition-metadata lookups, official client, {args.calls} sequential calls, "
          f"{args.threads} threads for {args.seconds:.0f} s; median of {args.rounds} alternating rounds, {placement.describe('client')}; "
          f"load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"{'target':<15}{'p50 ms':>9}{'p99 ms':>9}{'seq/s':>10}{'fresh seq/s':>13}{'threaded/s':>12}"
          f"{'broker CPU us/lookup':>22}{'fresh':>7}")
    results = {}
    for name in names:
        figures = {key: median_of(rounds[name], key) for key in rounds[name][0]}
        results[name] = figures
        cpu, fresh_cpu = figures["broker_cpu_us"], figures["fresh_broker_cpu_us"]
        print(f"{name:<15}{figures['p50_ms']:>9.3f}{figures['p99_ms']:>9.3f}"
              f"{figures['sequential_per_s']:>10.0f}{figures['fresh_per_s']:>13.0f}{figures['threaded_per_s']:>12.0f}"
              f"{'-' if cpu is None else f'{cpu:.1f}':>22}{'-' if fresh_cpu is None else f'{fresh_cpu:.0f}':>7}")
    for name in (n for n in names if n != "pulsar-lite" and "pulsar-lite" in results):
        print(f"ratio {name}/pulsar-lite, median of paired rounds (> 1 = {name} faster):")
        for key, label in (("sequential_per_s", "sequential"), ("fresh_per_s", "fresh names"),
                           ("threaded_per_s", "threaded")):
            paired = [r[key] / l[key] for r, l in zip(rounds[name], rounds["pulsar-lite"])]
            verdict = paired_ratio_text(paired, f"{name} faster", f"{name} slower")
            print(f"  {label:<12}{verdict}; rounds {', '.join(f'{x:.2f}' for x in paired)}")
        print(f"  p50 latency {results['pulsar-lite']['p50_ms'] / results[name]['p50_ms']:.2f}x (of the medians)")
    if {"reference", "python-floor"} <= results.keys():
        paired = [r["sequential_per_s"] / f["sequential_per_s"]
                  for r, f in zip(rounds["reference"], rounds["python-floor"])]
        print(f"ratio reference/python-floor, sequential: "
              f"{paired_ratio_text(paired, 'reference faster', 'python-floor faster')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
