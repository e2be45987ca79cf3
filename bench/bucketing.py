"""PIP-157 bench: N topics in one namespace on a REAL ZooKeeper, unbucketed vs bucketed.

    .venv/bin/python bench/bucketing.py [--n N] [--buckets B] [--name-len L] [--zk zk:HOST:PORT]

What it does, for each of two namespaces (``public/flat``: numberOfTopicBuckets 1, ``public/bucketed``:
numberOfTopicBuckets B), created through the broker core:
1. writes N managed-ledger znodes in bulk (ZooKeeper multi-op transactions, pipelined) at the paths the
   broker itself computes (``layout.managed_ledger_path(topic, buckets)``); creating 1M topics through
   the REST API would take hours;
2. lists them through the broker's own listing code (``BrokerCore.list_topics``: one getChildren per
   bucket) and, alternately, with a bare kazoo ``get_children`` of the same folders on a client of its
   own: the physical limit of reading those znodes from Python. Each is timed ``--repeats`` times and
   the medians give the ratio; the goal is listing through the broker at most 1.5x the bare read;
3. reports each getChildren reply's size as a Java client measures it (ZooKeeper's jute.maxbuffer and Pulsar's bin/pulsar), for ``getChildren``
   and for ``getChildren2`` (+68 bytes of Stat), against ZooKeeper's default ``jute.maxbuffer`` of
   1,048,575 bytes, and (unless ``--no-java-check``) asks the real Java ZooKeeper client to list the
   biggest folder of each layout with its default jute.maxbuffer, to show whether it really fails with
   "Packet len N is out of range!".

The ZooKeeper is started with the shared helper (conformance/targets/zookeeper.py, forceSync=no)
unless ``--zk`` names one; everything it creates is under a fresh chroot and the server is stopped after.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kazoo.client import KazooClient  # noqa: E402

from pulsar_naming.names import PERSISTENT, NamespaceName, TopicName  # noqa: E402
from reference_broker.config import BrokerConfig  # noqa: E402
from reference_broker.core import BrokerCore  # noqa: E402
from reference_broker.metadata import layout  # noqa: E402
from reference_broker.metadata.zookeeper import (  # noqa: E402
    JUTE_MAXBUFFER_DEFAULT,
    ZooKeeperMetadataStore,
    get_children_reply_bytes,
)
from conformance.targets.zookeeper import ZooKeeperServer, find_classpath, missing_reason  # noqa: E402

GOAL_RATIO = 1.5


def topic_names(n: int, length: int) -> list[str]:
    """Deterministic names of about ``length`` characters: ``topic-00000042-xxxx...``."""
    names = []
    for i in range(n):
        base = f"topic-{i:08d}"
        names.append(base + ("-" + "x" * (length - len(base) - 1) if length > len(base) + 1 else ""))
    return names


def java_ls(address_with_chroot: str, path: str) -> str:
    """The real Java client (default jute.maxbuffer) listing ``path``: 'ok' or the refusal it logs."""
    classpath, java = find_classpath(), shutil.which("java")
    if not classpath or not java:
        return "skipped (no java/ZooKeeper jars)"
    result = subprocess.run(
        [java, "-cp", classpath, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
         "org.apache.zookeeper.ZooKeeperMain", "-server", address_with_chroot, "ls", path],
        capture_output=True, text=True, timeout=120)
    for line in result.stderr.splitlines():
        if "out of range" in line:
            return "REFUSED: " + line.strip().removeprefix("java.io.IOException: ")
    return "ok" if result.stdout.rstrip().endswith("]") else f"unclear (exit {result.returncode})"


def bare_listing(client: KazooClient, folders: list[str]) -> int:
    """The same znodes read with nothing but kazoo: one get_children per folder, names counted."""
    return sum(len(client.get_children(folder)) for folder in folders)


def run_layout(core: BrokerCore, store: ZooKeeperMetadataStore, bare: KazooClient, namespace: str,
               buckets: int, names: list[str], java_target: str | None, repeats: int) -> dict:
    ns = NamespaceName.parse(namespace)
    core.create_namespace(namespace, None if buckets == 1 else {"numberOfTopicBuckets": buckets})
    paths = [layout.managed_ledger_path(TopicName(PERSISTENT, ns.tenant, ns.namespace, name), buckets)
             for name in names]
    started = time.monotonic()
    created = store.create_many(paths, layout.encode_json({}))
    create_seconds = time.monotonic() - started

    folders = layout.topic_dirs(ns, PERSISTENT, buckets)
    broker_times, bare_times = [], []
    for _ in range(repeats):  # alternated, so a busy moment of the machine weighs on both alike
        started = time.monotonic()
        bare_count = bare_listing(bare, folders)
        bare_times.append(time.monotonic() - started)
        started = time.monotonic()
        listed = core.list_topics(namespace, PERSISTENT)  # the broker's listing path, one getChildren per bucket
        broker_times.append(time.monotonic() - started)
        assert len(listed) == len(names) == created == bare_count, (len(listed), len(names), created, bare_count)
    list_seconds, bare_seconds = statistics.median(broker_times), statistics.median(bare_times)

    replies = []
    for folder in folders:
        children = store.children(folder)
        replies.append((folder, len(children), get_children_reply_bytes(children),
                        get_children_reply_bytes(children, with_stat=True)))
    biggest = max(replies, key=lambda r: r[3])
    result = {
        "namespace": namespace, "buckets": buckets, "topics": len(listed),
        "create_s": round(create_seconds, 2), "create_per_s": round(created / max(create_seconds, 1e-9)),
        "list_s": round(list_seconds, 3), "bare_list_s": round(bare_seconds, 3),
        "list_ratio": round(list_seconds / max(bare_seconds, 1e-9), 2),
        "getChildren_calls": len(replies),
        "per_bucket_topics_min": min(r[1] for r in replies), "per_bucket_topics_max": max(r[1] for r in replies),
        "reply_bytes_max": max(r[2] for r in replies), "reply_bytes_total": sum(r[2] for r in replies),
        "reply2_bytes_max": biggest[3],
        "replies_over_jute_maxbuffer": sum(1 for r in replies if r[3] > JUTE_MAXBUFFER_DEFAULT),
    }
    if java_target:
        result["java_client_ls_biggest"] = java_ls(java_target, biggest[0])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="topics per namespace (default 100000)")
    parser.add_argument("--buckets", type=int, default=16, help="numberOfTopicBuckets of the bucketed namespace")
    parser.add_argument("--name-len", type=int, default=40, help="characters per topic local name (default 40)")
    parser.add_argument("--zk", default=None, help="use this ZooKeeper (zk:HOST:PORT) instead of starting one")
    parser.add_argument("--heap", default=None, help="JVM heap of the started ZooKeeper (default by N)")
    parser.add_argument("--no-java-check", action="store_true", help="skip the real Java client's ls")
    parser.add_argument("--repeats", type=int, default=3, help="timed listings of each kind (medians compared)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args(argv)

    wall = time.monotonic()
    server = None
    if args.zk is None:
        reason = missing_reason()
        if reason:
            print(f"bench/bucketing.py: {reason}", file=sys.stderr)
            return 2
        heap = args.heap or ("1g" if args.n <= 200_000 else "6g")
        server = ZooKeeperServer(force_sync=False, heap=heap).start()
        zk_address = server.address
    else:
        zk_address = args.zk.removeprefix("zk:").removeprefix("//").partition("/")[0]
    chroot = f"/bench-{uuid.uuid4().hex[:8]}"
    try:
        store = ZooKeeperMetadataStore(f"zk:{zk_address}{chroot}", request_timeout=300)
        bare = KazooClient(hosts=f"{zk_address}{chroot}", timeout=10.0)
        bare.start(timeout=10.0)
        try:
            core = BrokerCore(BrokerConfig(), store)
            names = topic_names(args.n, args.name_len)
            java_target = None if args.no_java_check else f"{zk_address}{chroot}"
            results = [run_layout(core, store, bare, namespace, buckets, names, java_target, args.repeats)
                       for namespace, buckets in (("public/flat", 1), ("public/bucketed", args.buckets))]
            store.delete_recursive("/")
        finally:
            bare.stop()
            bare.close()
            store.close()
    finally:
        if server is not None:
            server.stop()
    summary = {"n": args.n, "name_len": args.name_len, "jute_maxbuffer_default": JUTE_MAXBUFFER_DEFAULT,
               "zookeeper": "started by the bench" if server else zk_address, "layouts": results,
               "wall_s": round(time.monotonic() - wall, 1)}
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"PIP-157 bench: {args.n} topics of {args.name_len} chars per namespace, real ZooKeeper "
          f"({summary['zookeeper']}); jute.maxbuffer default {JUTE_MAXBUFFER_DEFAULT:,} bytes")
    for r in results:
        over = r["replies_over_jute_maxbuffer"]
        print(f"\n{r['namespace']} (numberOfTopicBuckets={r['buckets']})")
        print(f"  bulk create      {r['topics']:>10,} znodes in {r['create_s']} s ({r['create_per_s']:,}/s)")
        print(f"  list_topics      {r['list_s']} s, {r['getChildren_calls']} getChildren call(s), "
              f"{r['per_bucket_topics_min']:,}..{r['per_bucket_topics_max']:,} topics per call")
        print(f"  bare kazoo       {r['bare_list_s']} s (get_children of the same folders)")
        print(f"  ratio            {r['list_ratio']}x the bare read (goal <= {GOAL_RATIO}x: "
              f"{'met' if r['list_ratio'] <= GOAL_RATIO else 'NOT met'}), median of {args.repeats}")
        print(f"  reply bytes      max {r['reply_bytes_max']:,} (getChildren), {r['reply2_bytes_max']:,} "
              f"(getChildren2, Pulsar's), total {r['reply_bytes_total']:,}")
        print(f"  over 1,048,575?  {'YES' if over else 'no'} ({over} of {r['getChildren_calls']} replies)")
        if "java_client_ls_biggest" in r:
            print(f"  Java client ls   {r['java_client_ls_biggest']}")
    print(f"\nwall time {summary['wall_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
