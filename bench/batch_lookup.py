"""PIP-35 batch lookup vs sequential single lookups on a 3-broker reference cluster.

Starts ``reference-broker --brokers 3`` (one process, one shared metadata store), creates a
partitioned topic of ``--partitions`` (1,000) partitions over REST, and resolves every partition
two ways with our own wire codec (bench/lookup_client.py):

* sequential: one LOOKUP per partition to the first broker, following each Redirect to the owner
  with a second LOOKUP (authoritative), one request at a time;
* batch: one BATCH_LOOKUP of the partitioned name to the first broker, then one follow-up batch
  per other owning broker (written together, read together).

Connections to every broker are opened before timing (a connection is not a lookup). Each mode
runs ``--runs`` times after a warm-up; the medians give the ratio. Both modes must agree on every
partition's broker. Goal from the issue: batch >= 50x faster, in one round trip per owning broker.
Every wait is bounded; the cluster is stopped at the end.

    .venv/bin/python bench/batch_lookup.py [--partitions 1000] [--brokers 3] [--runs 5]
"""

from __future__ import annotations

import argparse
import collections
import select
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench.lookup_client import Pool, batch_lookup, single_lookup  # noqa: E402

GOAL = 50.0


def start_cluster(brokers: int, extra: list[str], timeout: float = 30.0):
    process = subprocess.Popen(
        [sys.executable, "-m", "reference_broker", "--brokers", str(brokers), "--broker-port", "0",
         "--web-port", "0", *extra], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if select.select([process.stdout], [], [], 0.1)[0]:
            line = process.stdout.readline()
            if line.startswith("READY "):
                _, broker_urls, web_urls = line.split()
                return process, broker_urls.split(","), web_urls.split(",")
            if not line and process.poll() is not None:
                break
    stop_cluster(process)
    raise SystemExit(f"the cluster did not report READY: {process.stderr.read()[-2000:]}")


def stop_cluster(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(15)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each mode (medians are compared)")
    parser.add_argument("--metadata-store", default=None, help="e.g. sqlite:/tmp/cluster.db (default memory:)")
    args = parser.parse_args()

    extra = ["--metadata-store", args.metadata_store] if args.metadata_store else []
    process, brokers, webs = start_cluster(args.brokers, extra)
    try:
        base = "persistent://public/default/bench-batch-lookup"
        created = httpx.put(f"{webs[0]}/admin/v2/persistent/public/default/bench-batch-lookup/partitions",
                            json=args.partitions, timeout=30)
        if created.status_code != 204:
            raise SystemExit(f"creating the partitioned topic failed: {created.status_code} {created.text}")
        partitions = [f"{base}-partition-{i}" for i in range(args.partitions)]
        pool = Pool()
        for url in brokers:
            pool.get(url)  # connections first: both modes then measure lookups only

        def sequential():
            return {t: single_lookup(pool, brokers[0], t).broker_url for t in partitions}

        def batch():
            return {t: r.broker_url for t, r in batch_lookup(pool, brokers[0], [base]).items()}

        expected = sequential()  # warm-up; also assigns the bundles
        if batch() != expected:
            raise SystemExit("batch and sequential lookups disagree on some partition's broker")
        owners = collections.Counter(expected.values())

        timings: dict[str, list[float]] = {"sequential": [], "batch": []}
        trips: dict[str, int] = {}
        for _ in range(args.runs):
            for name, run in (("sequential", sequential), ("batch", batch)):
                before = pool.round_trips
                began = time.perf_counter()
                answer = run()
                timings[name].append(time.perf_counter() - began)
                trips[name] = pool.round_trips - before
                if answer != expected or None in answer.values():
                    raise SystemExit(f"{name} lookup answered differently from the warm-up")
        pool.close()
    finally:
        stop_cluster(process)

    seq, bat = statistics.median(timings["sequential"]), statistics.median(timings["batch"])
    ratio = seq / bat
    print(f"PIP-35 batch lookup: {args.partitions} partitions on a {args.brokers}-broker reference cluster, "
          f"service URL {brokers[0]}, median of {args.runs} runs")
    print("partitions per owner: " + ", ".join(f"{url} {n}" for url, n in sorted(owners.items())))
    print(f"{'mode':<12}{'wall ms':>10}{'round trips':>13}")
    print(f"{'sequential':<12}{seq * 1000:>10.1f}{trips['sequential']:>13}")
    print(f"{'batch':<12}{bat * 1000:>10.2f}{trips['batch']:>13}")
    print(f"ratio sequential/batch: {ratio:.1f}x (goal >= {GOAL:.0f}x: {'met' if ratio >= GOAL else 'NOT met'}); "
          f"batch round trips = 1 + one per other owning broker = {1 + len(set(owners) - {brokers[0]})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
