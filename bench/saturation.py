"""The most a server sustains on one CPU: lookups and batched non-persistent messages, broker-bound.

bench/lookup.py and bench/nonpersistent.py load the brokers with the official client, which spends
more per request than any of them (about 10 us of CPU per batched message against a broker's 0.5-0.7),
so on a 2-core machine they measure the client, and every server ties. Here the server runs alone on
the last CPU and a loader on the others keeps a window of requests outstanding at every moment,
written from pre-encoded frames and counted by their size prefix, so the server sets the pace:

- ``lookup``: one connection keeps up to ``--window`` PARTITIONED_METADATA requests for one existing
  topic in flight; the rate is answers per second;
- ``lookup-fresh``: the same with a name never asked before in every request (one namespace);
- ``publish``: a producer connection keeps up to ``--publish-window`` SENDs in flight, each a batch of ``--batch``
  64-byte messages, on a fresh non-persistent topic; a consumer connection (Exclusive, permits for
  the whole round) counts what is delivered; the rate is messages delivered per second, and
  ``published/s`` (receipts times the batch) shows whether anything was dropped on the way.

The loader writes more requests only once half the window has come back, so every server reads
requests in chunks of half a window or more, whether it answers each request with its own write
(pulsar-lite does) or a read's answers with one (the reference broker does, server.py Rule 5); a
loader that refilled per answer would hand a server that writes per answer one request per read.

Servers: ``reference`` and ``pulsar-lite``, started as the harness starts them. The Python floors of
the other benches are left out: they answer each request with its own write, so under a window they
are no floor. Each round measures ``--seconds`` after ``--warm-up`` on new connections; rounds
alternate the order of the servers, and round i of one is paired with round i of the other (median of
the paired ratios, with its distribution-free interval: bench.common.paired_ratio_text). Per row: the
server's CPU per request (user + system, every thread, /proc) and the loader's CPU in cores. A loader
near 1.0 core set the pace itself, so that row's rate is a lower bound for the server, and the bench
says so.

    .venv/bin/python bench/saturation.py [--workloads lookup,lookup-fresh,publish] [--rounds 7]
        [--seconds 2] [--warm-up 0.5] [--window 256] [--publish-window 16] [--batch 100]

Needs Linux and two CPUs or more (the server and the loader each get their own). Every wait is
bounded (no answer for ``STALL_S`` fails the round); every server is stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import secrets
import selectors
import socket
import statistics
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Placement, paired_ratio_text, process_cpu_seconds, process_cpu_times, target_pid  # noqa: E402
from bench.lookup import TOPIC, median_of  # noqa: E402
from bench.lookup_client import WireClient  # noqa: E402
from conformance.targets.registry import make_target  # noqa: E402
from reference_broker.protocol import events as ev  # noqa: E402
from reference_broker.protocol import pulsar_api_pb2 as pb  # noqa: E402
from reference_broker.protocol.frames import encode_batch  # noqa: E402

WORKLOADS = ("lookup", "lookup-fresh", "publish")
SERVERS = ("reference", "pulsar-lite")
STALL_S = 5.0  # no answer for this long fails the round
LOADER_BOUND = 0.9  # the loader's cores at or above which the row's rate is only a lower bound
PERMITS = 2**31 - 1  # the most a FLOW may grant (Pulsar reads permits as a Java int)
PAYLOAD_SIZE = 64
FRESH_PREFIX = b"persistent://public/default/fresh-"

_SIZE = struct.Struct(">I")
Type = pb.BaseCommand.Type


class FrameCounter:
    """Counts the whole frames of one command type in a byte stream fed in arbitrary pieces.

    A frame is ``[total size][command size][BaseCommand]...``; protobuf writes a BaseCommand's field
    1, its type, first, so a type below 128 is the frame's tenth byte (after the tag 0x08). Other
    frames (a PING, an ERROR) are skipped, not counted."""

    __slots__ = ("wanted", "count", "other", "_pending")

    def __init__(self, wanted: int) -> None:
        self.wanted = wanted
        self.count = 0   # frames of the wanted type so far
        self.other = 0   # frames of any other type so far
        self._pending = b""

    def feed(self, data: bytes) -> int:
        """Takes the next bytes; returns how many wanted frames they completed."""
        if self._pending:
            data = self._pending + data
        pos, end, found, wanted = 0, len(data), 0, self.wanted
        while end - pos >= 10:
            frame_end = pos + 4 + _SIZE.unpack_from(data, pos)[0]
            if frame_end > end:
                break
            if data[pos + 9] == wanted:
                found += 1
            else:
                self.other += 1
            pos = frame_end
        self._pending = data[pos:]
        self.count += found
        return found


@dataclass
class Load:
    """One round's sockets, set up and handshaken: ``writer`` gets ``frames(n)`` (n more requests)
    each time its answers (``refill``) come back; ``counted`` frames times ``per_frame`` are the rate."""

    writer: socket.socket
    frames: Callable[[int], bytes]
    refill: FrameCounter
    counted_socket: socket.socket
    counted: FrameCounter
    per_frame: int
    clients: list[WireClient]

    def close(self) -> None:
        for client in self.clients:
            client.close()


def lookup_load(url: str, fresh: bool) -> Load:
    client = WireClient(url, timeout=STALL_S)
    if fresh:  # a template: every name the same length, so the frame's sizes never change
        run = secrets.token_hex(4).encode()
        head, tail = _split_template(client.conn.send(ev.PartitionedMetadata(
            topic=(FRESH_PREFIX + run + b"-" + b"0" * 10).decode(), request_id=1)), FRESH_PREFIX + run + b"-")
        counter = iter(range(10**10))

        def frames(n: int) -> bytes:
            return b"".join(head + b"%010d" % next(counter) + tail for _ in range(n))
    else:
        request = client.conn.send(ev.PartitionedMetadata(topic=TOPIC, request_id=1))

        def frames(n: int) -> bytes:
            return request * n
    answers = FrameCounter(Type.PARTITIONED_METADATA_RESPONSE)
    return Load(client.sock, frames, answers, client.sock, answers, 1, [client])


def _split_template(frame: bytes, name_head: bytes) -> tuple[bytes, bytes]:
    """The frame's bytes before and after the 10-digit counter that follows ``name_head``."""
    at = frame.index(name_head) + len(name_head)
    return frame[:at], frame[at + 10:]


def publish_load(url: str, batch: int) -> Load:
    topic = f"non-persistent://public/default/saturation-{secrets.token_hex(4)}"
    consumer, producer = WireClient(url, timeout=STALL_S), WireClient(url, timeout=STALL_S)
    try:
        _expect(consumer.request(ev.Subscribe(topic=topic, subscription="bench", consumer_id=1, request_id=1,
                                              subType=pb.CommandSubscribe.Exclusive)), ev.Success, "SUBSCRIBE")
        consumer.sock.sendall(consumer.conn.send(ev.Flow(consumer_id=1, messagePermits=PERMITS)))
        created = _expect(producer.request(ev.Producer(topic=topic, producer_id=1, request_id=1)),
                          ev.ProducerSuccess, "PRODUCER")
        items = [(pb.SingleMessageMetadata(payload_size=PAYLOAD_SIZE, sequence_id=i), b"x" * PAYLOAD_SIZE)
                 for i in range(batch)]
        metadata = pb.MessageMetadata(producer_name=created.producer_name, sequence_id=0,
                                      publish_time=int(time.time() * 1000), num_messages_in_batch=batch)
        send = producer.conn.send(ev.Send(producer_id=1, sequence_id=0, highest_sequence_id=batch - 1,
                                          num_messages=batch, metadata=metadata, payload=encode_batch(items)))
    except BaseException:
        consumer.close()
        producer.close()
        raise
    return Load(producer.sock, lambda n: send * n, FrameCounter(Type.SEND_RECEIPT), consumer.sock,
                FrameCounter(Type.MESSAGE), batch, [consumer, producer])


def _expect(answer, kind: type, what: str):
    if not isinstance(answer, kind):
        raise RuntimeError(f"{what} was answered {answer!r}")
    return answer


def drive(load: Load, window: int, warm_up: float, seconds: float, server_pid: Optional[int]) -> dict:
    """Keep up to ``window`` requests in flight for ``warm_up + seconds``; measure the last ``seconds``.

    More are written once half the window has been answered (module docstring), as one write."""
    selector = selectors.DefaultSelector()
    selector.register(load.writer, selectors.EVENT_READ, load.refill)
    if load.counted_socket is not load.writer:
        selector.register(load.counted_socket, selectors.EVENT_READ, load.counted)
    refill_at = max(1, window // 2)
    load.writer.sendall(load.frames(window))
    answered = 0  # since the last refill
    measure_from, start = time.perf_counter() + warm_up, None
    try:
        while True:
            ready = selector.select(timeout=STALL_S)
            if not ready:
                raise TimeoutError(f"no answer for {STALL_S:.0f} s")
            for key, _ in ready:
                data = key.fileobj.recv(1 << 20)
                if not data:
                    raise ConnectionError("the server closed the connection")
                completed = key.data.feed(data)
                if key.data is load.refill:
                    answered += completed
                    if answered >= refill_at:
                        load.writer.sendall(load.frames(answered))
                        answered = 0
            now = time.perf_counter()
            if start is None:
                if now >= measure_from:
                    start = _snapshot(load, server_pid, now)
            elif now - start["at"] >= seconds:
                end = _snapshot(load, server_pid, now)
                break
    finally:
        selector.close()
    elapsed = end["at"] - start["at"]
    counted = (end["counted"] - start["counted"]) * load.per_frame
    user_us = system_us = None
    if start["server"] is not None and end["server"] is not None and counted:
        user_us, system_us = ((end["server"][i] - start["server"][i]) / counted * 1e6 for i in (0, 1))
    return {"rate": counted / elapsed, "published_rate": (end["refilled"] - start["refilled"]) * load.per_frame / elapsed,
            "server_cpu_us": None if user_us is None else user_us + system_us,
            "server_user_us": user_us, "server_system_us": system_us,
            "loader_cores": (end["loader"] - start["loader"]) / elapsed,
            "unexpected_frames": load.refill.other + (load.counted.other if load.counted is not load.refill else 0)}


def _snapshot(load: Load, server_pid: Optional[int], now: float) -> dict:
    return {"at": now, "counted": load.counted.count, "refilled": load.refill.count,
            "server": process_cpu_times(server_pid), "loader": process_cpu_seconds(os.getpid())}


def run_round(workload: str, url: str, args, server_pid: Optional[int]) -> dict:
    load = (publish_load(url, args.batch) if workload == "publish"
            else lookup_load(url, fresh=workload == "lookup-fresh"))
    try:
        window = args.publish_window if workload == "publish" else args.window
        return drive(load, window, args.warm_up, args.seconds, server_pid)
    finally:
        load.close()


def create_lookup_topic(url: str) -> None:
    """The topic bench/lookup.py looks up exists before any lookup (a producer creates it)."""
    client = WireClient(url, timeout=STALL_S)
    try:
        _expect(client.request(ev.Producer(topic=TOPIC, producer_id=1, request_id=1)), ev.ProducerSuccess, "PRODUCER")
    finally:
        client.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--targets", default=",".join(SERVERS))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--warm-up", type=float, default=0.5)
    parser.add_argument("--window", type=int, default=256, help="lookups kept in flight, at most")
    parser.add_argument("--publish-window", type=int, default=16, help="SENDs kept in flight, at most")
    parser.add_argument("--batch", type=int, default=100, help="messages per SEND in the publish workload")
    args = parser.parse_args()
    workloads, names = args.workloads.split(","), args.targets.split(",")
    for given, known, what in ((workloads, WORKLOADS, "workload"), (names, SERVERS, "server")):
        unknown = sorted(set(given) - set(known))
        if unknown:
            parser.error(f"unknown {what}(s) {', '.join(unknown)}; known: {', '.join(known)}")
    if min(args.rounds, args.window, args.publish_window, args.batch) < 1 or args.seconds <= 0 or args.warm_up < 0:
        parser.error("--rounds, --window, --publish-window and --batch must be at least 1, --seconds above 0, "
                     "--warm-up not negative")
    try:
        placement = Placement(True)
    except ValueError as exc:
        parser.error(str(exc))

    load_before = os.getloadavg()[0]
    results: dict[str, dict[str, list[dict]]] = {w: {n: [] for n in names} for w in workloads}
    for workload in workloads:
        servers = {name: make_target(name) for name in names}
        try:
            for name, server in servers.items():
                server.start()
                if workload.startswith("lookup"):
                    create_lookup_topic(server.service_url)
            placement.clients_here()
            for index in range(args.rounds):
                for name in names if index % 2 == 0 else list(reversed(names)):
                    server = servers[name]
                    placement.broker(target_pid(server))  # again: threads it started since
                    results[workload][name].append(run_round(workload, server.service_url, args, target_pid(server)))
        finally:
            for server in servers.values():
                server.stop()
    print(report(results, args, placement, load_before))
    return 0


def report(results: dict[str, dict[str, list[dict]]], args, placement: Placement, load_before: float) -> str:
    lines = [f"broker-bound rates, {args.rounds} alternating rounds of {args.seconds:g} s after {args.warm_up:g} s, "
             f"windows {args.window} lookups and {args.publish_window} SENDs of {args.batch} x {PAYLOAD_SIZE} B; "
             f"{placement.describe('the loader')}; load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}",
             f"{'workload':<14}{'server':<14}{'rate/s':>12}{'best':>12}{'published/s':>13}"
             f"{'server CPU us':>15}{'user':>7}{'system':>8}{'loader cores':>14}   all rounds"]
    for workload, by_server in results.items():
        unit = "per message" if workload == "publish" else "per lookup"
        for name, rounds in by_server.items():
            rate = statistics.median(r["rate"] for r in rounds)
            published = statistics.median(r["published_rate"] for r in rounds) if workload == "publish" else None
            loader = statistics.median(r["loader_cores"] for r in rounds)
            lines.append(f"{workload:<14}{name:<14}{rate:>12,.0f}{max(r['rate'] for r in rounds):>12,.0f}"
                         f"{'-' if published is None else f'{published:,.0f}':>13}"
                         f"{_median_text(rounds, 'server_cpu_us'):>15}{_median_text(rounds, 'server_user_us'):>7}"
                         f"{_median_text(rounds, 'server_system_us'):>8}{loader:>14.2f}   "
                         + ", ".join(f"{r['rate']:,.0f}" for r in rounds))
            if loader >= LOADER_BOUND:
                lines.append(f"  {name}: the loader used {loader:.2f} cores: it set the pace, so this rate is a "
                             "lower bound for the server")
            if published is not None and published > rate * 1.01:
                lines.append(f"  {name}: delivered {rate / published:.0%} of what it accepted (median rounds): "
                             "it dropped the rest, as a non-persistent topic may for a consumer that cannot keep up")
            unexpected = sum(r["unexpected_frames"] for r in rounds)
            if unexpected:
                lines.append(f"  {name}: {unexpected} frames of another type than the answers counted (ERROR, PING, ...)")
        lines.append(f"  (server CPU: user + system microseconds {unit}, medians of the rounds)")
        if "pulsar-lite" in by_server:
            for name in (n for n in by_server if n != "pulsar-lite"):
                paired = [r["rate"] / l["rate"] for r, l in zip(by_server[name], by_server["pulsar-lite"])]
                lines.append(f"ratio {name}/pulsar-lite {workload}: "
                             f"{paired_ratio_text(paired, f'{name} faster', f'{name} slower')}")
                cpu = [r["server_cpu_us"] / l["server_cpu_us"] for r, l in zip(by_server[name], by_server["pulsar-lite"])
                       if r["server_cpu_us"] and l["server_cpu_us"]]
                if cpu:
                    lines.append(f"  server CPU {unit} {name}/pulsar-lite: "
                                 f"{paired_ratio_text(cpu, f'{name} uses more', f'{name} uses less')}")
    return "\n".join(lines)


def _median_text(rounds: list[dict], key: str) -> str:
    value = median_of(rounds, key)
    return "-" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    sys.exit(main())
