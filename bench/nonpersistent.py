"""PIP-2 bench: non-persistent publish->deliver throughput (reference vs pulsar-lite) and latency.

    .venv/bin/python bench/nonpersistent.py [--messages 50000] [--batched-messages 500000]
                                            [--size 64] [--latency-messages 2000] [--repeat 5] [--pin]
                                            [--floor]

Both brokers are started the way the harness starts them (conformance.targets), on loopback, run
side by side, and get the same workload with the official client (pulsar-client, C++ core), in
rounds that alternate the targets so that a busy machine slows both alike:

1. Throughput, unbatched and batched: one client consumes a fresh non-persistent topic (Exclusive,
   receiver_queue_size = the whole run, so the broker never drops for lack of permits), another
   client produces ``--messages`` (unbatched) or ``--batched-messages`` (batches of up to 1000,
   1 ms delay) payloads of ``--size`` bytes with ``send_async`` as fast as its pending queue
   allows (max_pending_messages 1000, which the broker's in-flight limit of 1000 never exceeds:
   the limit drops only "strictly greater"), without a per-message callback (a Python callback per
   receipt costs more than the broker: measured 5k/s vs 50k/s batched). The consumer takes
   messages with ``batch_receive``. The figure is messages delivered per second, from the first
   send to the last delivery; ``lost`` = sent - delivered (publish or dispatch drops; there should
   be none). Round i of one target is paired with round i of the other (they ran back to back);
   the ratio is the median of those paired ratios (with its distribution-free interval and whether
   it shows a difference, bench.common.median_interval), and each target's median and best rate and
   every round are printed. Also per round: the broker process's CPU per 1,000 delivered messages
   (/proc, every thread) and the bench process's CPU in cores (both clients live in it): with the
   clients near their limit and the broker at a few per cent, the figure is the clients' speed,
   and the per-round ratios show how much of a difference is noise.
2. Latency on the reference broker, persistent vs non-persistent: ``--latency-messages`` sends one
   at a time (each ``send`` waits for its receipt), the consumer on another client stamps arrival;
   publish latency = send -> receipt, end-to-end = send -> delivery; p50 and p99.

``--floor`` adds a third row, bench/nonpersistent_floor.py: the broker's own SEND reader and frame
builders on uvloop, delivering each SEND to the consumers with permits and nothing else (no in-flight
limit, rates, stats or layers), the least a Python broker on this runtime does per SEND. Each row
other than pulsar-lite gets its paired ratios (throughput, and the broker's CPU per message) to pulsar-lite.

``--pin`` (Linux, two CPUs or more) keeps the brokers on the last CPU and this process, with both
clients, on the others, as in a deployment, where a broker does not share its CPUs with the
clients; without it the brokers and the clients compete for the same cores, so a broker's own CPU
time is taken from the clients that set the pace. The client CPU per 1,000 messages tells whether
the clients worked harder with one broker than with the other.

Every wait is bounded; both brokers are stopped at the end. Prints a table and the ratio.
"""

from __future__ import annotations

import argparse
import os
import secrets
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

BOUND_S = 120.0
WARM_UP = 100  # messages sent before the latency samples


def client_for(url: str) -> pulsar.Client:
    return pulsar.Client(url, operation_timeout_seconds=30, connection_timeout_ms=5000, logger=quiet_logger("bench-nonpersistent"),
                         io_threads=1, message_listener_threads=1)


def throughput(url: str, messages: int, size: int, batched: bool, pid: int | None) -> dict[str, float]:
    topic = f"non-persistent://public/default/bench-{secrets.token_hex(4)}"
    consumer_client, producer_client = client_for(url), client_for(url)
    try:
        policy = pulsar.ConsumerBatchReceivePolicy(10_000, 16 * 1024 * 1024, 100)
        consumer = consumer_client.subscribe(topic, "bench", receiver_queue_size=messages + 1000,
                                             batch_receive_policy=policy)
        producer_args = dict(batching_enabled=batched, block_if_queue_full=True, max_pending_messages=1000)
        if batched:
            producer_args.update(batching_max_messages=1000, batching_max_publish_delay_ms=1,
                                 batching_max_allowed_size_in_bytes=1024 * 1024)
        producer = producer_client.create_producer(topic, **producer_args)
        payload = b"x" * size
        received = [0]
        last = [0.0]
        done = threading.Event()

        def consume() -> None:
            idle_since = None
            while received[0] < messages:
                batch = consumer.batch_receive()  # returns after 100 ms with what it has
                if len(batch) == 0:
                    idle_since = idle_since or time.perf_counter()
                    if time.perf_counter() - idle_since > 3.0:
                        break  # nothing for 3 s: the rest was dropped
                    continue
                idle_since = None
                received[0] += len(batch)
                last[0] = time.perf_counter()
            done.set()

        reader = threading.Thread(target=consume, daemon=True)
        reader.start()
        broker_cpu, client_cpu = process_cpu_seconds(pid), process_cpu_seconds(os.getpid())
        began = time.perf_counter()
        for _ in range(messages):
            producer.send_async(payload, None)
        producer.flush()
        if not done.wait(BOUND_S):
            raise RuntimeError(f"the consumer did not finish within {BOUND_S:.0f} s")
        elapsed = last[0] - began
        broker_cpu = None if broker_cpu is None else process_cpu_seconds(pid) - broker_cpu
        client_cpu = process_cpu_seconds(os.getpid()) - client_cpu
        per_thousand = 1e6 * 1000 / max(1, received[0])  # CPU microseconds per 1,000 delivered messages
        return {"delivered_per_s": received[0] / elapsed, "delivered": received[0], "lost": messages - received[0],
                "seconds": elapsed, "client_cpu_share": client_cpu / elapsed,
                "client_cpu_us_per_1000": client_cpu * per_thousand,
                "broker_cpu_us_per_1000": None if broker_cpu is None else broker_cpu * per_thousand}
    finally:
        producer_client.close()
        consumer_client.close()


def latency(url: str, domain: str, messages: int, size: int) -> dict[str, float]:
    topic = f"{domain}://public/default/bench-latency-{secrets.token_hex(4)}"
    consumer_client, producer_client = client_for(url), client_for(url)
    try:
        consumer = consumer_client.subscribe(topic, "bench", receiver_queue_size=1000)
        producer = producer_client.create_producer(topic, batching_enabled=False)
        arrived: dict[int, float] = {}

        def consume() -> None:
            while len(arrived) < WARM_UP + messages:  # the warm-up messages arrive too
                try:
                    message = consumer.receive(timeout_millis=5000)
                except pulsar.Timeout:
                    return
                arrived[int(message.data()[:10])] = time.perf_counter()
                if domain == "persistent":
                    consumer.acknowledge(message)

        reader = threading.Thread(target=consume, daemon=True)
        reader.start()
        for i in range(WARM_UP):  # warm up both connections and both sides' code paths
            producer.send(b"%010d" % (10**9 + i))
        sent, acked = {}, {}
        for i in range(messages):
            body = b"%010d" % i + b"x" * max(0, size - 10)
            sent[i] = time.perf_counter()
            producer.send(body)
            acked[i] = time.perf_counter()
        reader.join(BOUND_S)
        publish = [acked[i] - sent[i] for i in range(messages)]
        e2e = [arrived[i] - sent[i] for i in range(messages) if i in arrived]
        return {"publish_p50_ms": percentile(publish, 0.5) * 1000, "publish_p99_ms": percentile(publish, 0.99) * 1000,
                "e2e_p50_ms": percentile(e2e, 0.5) * 1000, "e2e_p99_ms": percentile(e2e, 0.99) * 1000,
                "delivered": len(e2e)}
    finally:
        producer_client.close()
        consumer_client.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--batched-messages", type=int, default=500_000)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--latency-messages", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--targets", default="reference,pulsar-lite")
    parser.add_argument("--pin", action="store_true",
                        help="brokers on the last CPU, the clients on the others (Linux, two CPUs or more)")
    parser.add_argument("--floor", action="store_true",
                        help="add the python-floor row: bench/nonpersistent_floor.py, the least a Python broker "
                             "on this runtime does per SEND")
    args = parser.parse_args()
    try:
        placement = Placement(args.pin)
    except ValueError as exc:
        parser.error(str(exc))

    names = args.targets.split(",") + (["python-floor"] if args.floor else [])
    targets = {name: FloorServer("nonpersistent_floor.py") if name == "python-floor" else make_target(name)
               for name in names}
    runs: dict[str, dict[str, list]] = {name: {"unbatched": [], "batched": []} for name in names}
    latencies: dict[str, dict] = {}
    load_before = os.getloadavg()[0]
    try:
        for target in targets.values():
            target.start()
        placement.clients_here()
        # Rounds alternate the targets (and their order), so a noisy neighbour slows both alike; round i of
        # one target is paired with round i of the other for the per-round ratios.
        for index in range(args.repeat):
            order = names if index % 2 == 0 else list(reversed(names))
            for mode, count, batched in (("unbatched", args.messages, False), ("batched", args.batched_messages, True)):
                for name in order:
                    target = targets[name]
                    placement.broker(target_pid(target))  # again: threads it started since
                    runs[name][mode].append(throughput(target.service_url, count, args.size, batched,
                                                       target_pid(target)))
        if "reference" in targets:
            for domain in ("persistent", "non-persistent"):
                latencies[domain] = latency(targets["reference"].service_url, domain, args.latency_messages, args.size)
    finally:
        for target in targets.values():
            target.stop()

    print(f"non-persistent publish->deliver, official client, {args.size}-byte payloads, "
          f"{args.repeat} alternating rounds, {placement.describe('clients')}; load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"{'target':<14}{'mode':<11}{'delivered/s':>12}{'best':>10}{'lost':>6}{'broker CPU':>12}{'client CPU':>12}"
          f"{'client CPU':>12}   all rounds")
    print(f"{'':<14}{'':<11}{'(median)':>12}{'':>10}{'':>6}{'us/1000 msg':>12}{'us/1000 msg':>12}{'cores':>12}")
    for name, modes in runs.items():
        for mode, rounds in modes.items():
            rate = statistics.median(r["delivered_per_s"] for r in rounds)
            best = max(r["delivered_per_s"] for r in rounds)
            cpu = [r["broker_cpu_us_per_1000"] for r in rounds if r["broker_cpu_us_per_1000"] is not None]
            cpu_text = f"{statistics.median(cpu):,.0f}" if cpu else "-"
            client = statistics.median(r["client_cpu_share"] for r in rounds)
            client_per_thousand = statistics.median(r["client_cpu_us_per_1000"] for r in rounds)
            every = ", ".join(f"{r['delivered_per_s']:,.0f}" for r in rounds)
            print(f"{name:<14}{mode:<11}{rate:>12,.0f}{best:>10,.0f}{sum(r['lost'] for r in rounds):>6}"
                  f"{cpu_text:>12}{client_per_thousand:>12,.0f}{client:>12.2f}   {every}")
    for name in (n for n in names if n != "pulsar-lite" and "pulsar-lite" in runs):
        for mode in ("unbatched", "batched"):
            mine, lite = runs[name][mode], runs["pulsar-lite"][mode]
            paired = [r["delivered_per_s"] / l["delivered_per_s"] for r, l in zip(mine, lite)]
            best = max(r["delivered_per_s"] for r in mine) / max(r["delivered_per_s"] for r in lite)
            print(f"ratio {name}/pulsar-lite {mode}: median of paired rounds "
                  f"{paired_ratio_text(paired, f'{name} faster', f'{name} slower')} "
                  f"(rounds: {', '.join(f'{x:.2f}' for x in paired)}), best of each {best:.2f}x")
            cpu = [r["broker_cpu_us_per_1000"] / l["broker_cpu_us_per_1000"] for r, l in zip(mine, lite)
                   if r["broker_cpu_us_per_1000"] and l["broker_cpu_us_per_1000"]]
            if cpu:
                print(f"  broker CPU per message {name}/pulsar-lite {mode}: "
                      f"{paired_ratio_text(cpu, f'{name} uses more', f'{name} uses less')}")
    if latencies:
        print(f"\nreference broker latency, {args.latency_messages} sequential sends, "
              "publish = send->receipt, e2e = send->delivery")
        print(f"{'topic':<16}{'publish p50':>12}{'p99':>8}{'e2e p50':>10}{'p99':>8}  (ms)")
        for domain, figures in latencies.items():
            print(f"{domain:<16}{figures['publish_p50_ms']:>12.3f}{figures['publish_p99_ms']:>8.3f}"
                  f"{figures['e2e_p50_ms']:>10.3f}{figures['e2e_p99_ms']:>8.3f}")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # the C++ client's threads abort a normal interpreter exit ("terminate called ...")
