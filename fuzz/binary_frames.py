"""Mutated binary frames against a reference broker process, with another client served throughout.

    python fuzz/binary_frames.py [--frames 1000000] [--seed 26] [--budget 1500] [--batch 2000]

What it owns: starting one reference broker (127.0.0.1, ephemeral ports, its own temporary log file),
sending it well-formed commands of every kind the broker handles with their bytes mutated, and judging
the broker by four figures, printed at the end:

- crashes: the broker process exited;
- hangs: the other client (a PING every 10 ms on its own connection) waited more than 2 s for a PONG,
  or a fuzzing connection got no answer to its closing PING within 2 s;
- internal errors: an ERROR answer "Internal error handling ..." or an "internal error" log line;
- memory: the broker's resident size after the first tenth of the frames and at the end.

Invariant: whatever bytes arrive, the broker answers, refuses or closes that connection, and keeps
serving the others. Frames are built with pulsar_codec; the broker is reached only over its socket.

- mutations (``mutate``): most touch only the command's body and keep its frame's sizes right, so
  the connection stays in sync and the next frames are read; one frame in fifty has its sizes or
  its length changed, which ends that connection's framing (a new connection takes over).
- every wait is bounded; the run stops at ``--frames`` or ``--budget`` seconds, whichever first.
- topics are pre-created and auto-creation is off, so mutated names cannot create metadata without
  bound; a backlog quota with eviction bounds what never-acknowledging subscriptions keep.
- confirmed frames (``marker``): only frames the broker is known to have handled count: every
  ``MARK_EVERY`` frames comes an unmutated PARTITIONED_METADATA whose request id no mutation makes;
  its answer confirms the frames before it. A connection the broker closes (as Pulsar does for
  some bad commands) leaves its unconfirmed frames uncounted.
"""

from __future__ import annotations

import argparse
import os
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pulsar_codec import CLOSED, NEED_DATA, Connection, RemoteProtocolError, Role  # noqa: E402
from pulsar_codec import events as ev  # noqa: E402
from pulsar_codec import pulsar_api_pb2 as pb  # noqa: E402

HANG_SECONDS = 2.0
MARK_EVERY = 10
MARK_BASE = 10**15
FRAMING = "framing"  # the kind of mutation that ends a connection's framing (1 frame in 50)
TOPICS = ("persistent://public/default/fuzz", "non-persistent://public/default/fuzz")
BROKER_SETTINGS = ("allowAutoTopicCreation=false", "backlogQuotaDefaultLimitBytes=1048576",
                   "backlogQuotaDefaultRetentionPolicy=consumer_backlog_eviction",
                   "backlogQuotaCheckIntervalInSeconds=1", "keepAliveIntervalSeconds=5")


def seeds(conn: Connection) -> list[bytes]:
    """One well-formed frame of each command a client sends; mutated copies of these are the input."""
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=1)
    frames = []
    for topic in TOPICS:
        frames += [
            conn.send(ev.PartitionedMetadata(topic=topic, request_id=1, metadata_auto_creation_enabled=False)),
            conn.send(ev.Lookup(topic=topic, request_id=2)),
            conn.send(ev.Producer(topic=topic, producer_id=1, request_id=3, producer_name="fz")),
            conn.send(ev.Send(producer_id=1, sequence_id=1, num_messages=1, metadata=metadata, payload=b"x" * 64)),
            conn.send(ev.Subscribe(topic=topic, subscription="s", subType=1, consumer_id=1, request_id=4)),
            conn.send(ev.Flow(consumer_id=1, messagePermits=10)),
            conn.send(ev.Ack(consumer_id=1, ack_type=0, message_id=[pb.MessageIdData(ledgerId=1, entryId=0)])),
            conn.send(ev.GetLastMessageId(consumer_id=1, request_id=5)),
            conn.send(ev.BatchLookup(topics=[topic, topic + "-partition-1"], request_id=6)),
        ]
    frames += [
        conn.send(ev.Ping()), conn.send(ev.Pong()),
        conn.send(ev.GetTopicsOfNamespace(request_id=7, namespace="public/default", mode=2, topics_pattern="public/.*")),
        conn.send(ev.ConsumerStats(request_id=8, consumer_id=1)),
        conn.send(ev.RedeliverUnacknowledgedMessages(consumer_id=1)),
        conn.send(ev.Unsubscribe(consumer_id=1, request_id=9)),
        conn.send(ev.CloseProducer(producer_id=1, request_id=10)),
        conn.send(ev.CloseConsumer(consumer_id=1, request_id=11)),
        conn.send(ev.Seek(consumer_id=1, request_id=12, message_publish_time=1)),
        conn.send(ev.GetSchema(topic=TOPICS[0], request_id=13)),
    ]
    return frames


def marker(conn: Connection, index: int) -> bytes:
    """A request no mutation produces, whose answer confirms every frame before it was handled."""
    return conn.send(ev.PartitionedMetadata(topic=TOPICS[0], request_id=MARK_BASE + index,
                                            metadata_auto_creation_enabled=False))


def mutate(frame: bytes, rng: random.Random) -> tuple[str, bytes]:
    """("body", a body mutation with the sizes fixed up), or 1 in 50 (FRAMING, a framing mutation)."""
    command_size = struct.unpack_from(">I", frame, 4)[0]
    body = bytearray(frame[8:8 + command_size])
    rest = frame[8 + command_size:]
    if rng.randrange(50) == 0:
        mutated = bytearray(frame)
        position = rng.randrange(8)
        mutated[position] = rng.randrange(256)
        return FRAMING, bytes(mutated[: rng.randrange(len(mutated) + 1)]) if rng.random() < 0.5 else bytes(mutated)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(6)
        position = rng.randrange(len(body) + 1)
        if kind == 0 and body:  # flip a bit
            body[min(position, len(body) - 1)] ^= 1 << rng.randrange(8)
        elif kind == 1 and body:  # replace a byte: 0xff and 0x80.. bytes make invalid UTF-8 and varints
            body[min(position, len(body) - 1)] = rng.choice((0x00, 0x7F, 0x80, 0xC3, 0xFF, rng.randrange(256)))
        elif kind == 2:  # insert bytes
            body[position:position] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif kind == 3 and body:  # delete bytes
            del body[position:position + rng.randint(1, 8)]
        elif kind == 4 and body:  # repeat a slice
            end = min(len(body), position + rng.randint(1, 16))
            body[position:position] = body[position:end]
        else:  # a big varint where a small number was
            body[position:position] = b"\xff\xff\xff\xff\x0f"
    if rest and rng.random() < 0.3:  # payload commands: touch the metadata and payload too
        rest = bytearray(rest)
        rest[rng.randrange(len(rest))] ^= 0xFF
        rest = bytes(rest)
    return "body", struct.pack(">II", 4 + len(body) + len(rest), len(body)) + bytes(body) + rest


def batch_for_one_connection(corpus: list[bytes], rng: random.Random, size: int) -> tuple[list[bytes], int]:
    """Up to ``size`` mutated frames with a marker after every MARK_EVERY, ended early by a framing
    mutation; returns the byte strings and how many markers they carry."""
    conn = Connection(Role.CLIENT)
    out, markers = [], 0
    for count in range(1, size + 1):
        kind, frame = mutate(rng.choice(corpus), rng)
        out.append(frame)
        if kind == FRAMING:
            break
        if count % MARK_EVERY == 0:
            out.append(marker(conn, markers))
            markers += 1
    return out, markers


class Broker:
    """One reference broker subprocess, its log in a temporary file; always stopped."""

    def __init__(self) -> None:
        self.log = tempfile.NamedTemporaryFile(prefix="fuzz-broker-", suffix=".log", delete=False)
        args = [sys.executable, "-m", "reference_broker", "--broker-port", "0", "--web-port", "0"]
        for setting in BROKER_SETTINGS:
            args += ["--set", setting]
        self.process = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=self.log, text=True)
        ready, _, _ = select.select([self.process.stdout], [], [], 30)
        line = self.process.stdout.readline() if ready else ""
        if not line.startswith("READY "):
            self.stop()
            raise RuntimeError(f"the broker did not start: {Path(self.log.name).read_text()[-2000:]}")
        _, broker_url, self.web_url = line.split()
        host, port = broker_url.removeprefix("pulsar://").rsplit(":", 1)
        self.address = (host, int(port))
        for topic in TOPICS:
            domain, rest = topic.split("://")
            request = urllib.request.Request(f"{self.web_url}/admin/v2/{domain}/{rest}", method="PUT")
            urllib.request.urlopen(request, timeout=10).close()

    def rss(self) -> int:
        with open(f"/proc/{self.process.pid}/status") as status:
            return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))

    def internal_error_lines(self) -> list[str]:
        """Internal-error log lines; a traceback as one entry, with its last lines."""
        lines = Path(self.log.name).read_text(errors="replace").splitlines()
        found = []
        for number, line in enumerate(lines):
            if "internal error" in line.lower():
                found.append(line)
            elif "Traceback" in line:
                end = next((n for n in range(number + 1, len(lines)) if not lines[n].startswith((" ", "\t"))),
                           len(lines) - 1)
                found.append(" | ".join(lines[max(number - 1, 0):number] + lines[end - 3:end + 1]))
        return found

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.log.close()
        os.unlink(self.log.name)


def connect(address) -> tuple[socket.socket, Connection]:
    sock = socket.create_connection(address, timeout=HANG_SECONDS * 5)
    conn = Connection(Role.CLIENT)
    sock.sendall(conn.send(ev.Connect(client_version="fuzz", protocol_version=21)))
    return sock, conn


class Prober(threading.Thread):
    """The other client: PING, wait for PONG, every 10 ms; ``worst`` is its longest wait."""

    def __init__(self, address) -> None:
        super().__init__(daemon=True)
        self.address, self.worst, self.round_trips, self.failure = address, 0.0, 0, None
        self.stopping = threading.Event()

    def run(self) -> None:
        try:
            sock, conn = connect(self.address)
            sock.settimeout(30)
            with sock:
                assert isinstance(read_event(sock, conn), ev.Connected)
                while not self.stopping.is_set():
                    started = time.monotonic()
                    sock.sendall(conn.send(ev.Ping()))
                    while not isinstance(event := read_event(sock, conn), ev.Pong):
                        if event is CLOSED:
                            raise ConnectionError("the broker closed the other client's connection")
                        if isinstance(event, ev.Ping):
                            sock.sendall(conn.send(ev.Pong()))
                    self.worst = max(self.worst, time.monotonic() - started)
                    self.round_trips += 1
                    self.stopping.wait(0.01)
        except Exception as exc:  # noqa: BLE001 - reported as a finding
            self.failure = exc


def read_event(sock: socket.socket, conn: Connection):
    while (event := conn.next_event()) is NEED_DATA:
        try:
            data = sock.recv(1 << 16)
        except ConnectionResetError:
            data = b""
        conn.receive_data(data)
        if not data:
            return conn.next_event()
    return event


def fuzz_connection(address, setup: bytes, frames: list[bytes]) -> tuple[int, int, float]:
    """Send ``setup`` and ``frames`` on a new connection and close its sending side; read every
    answer until the broker closes too. Returns (internal-error answers, markers answered, the wait
    that went past HANG_SECONDS, else 0): each answer, and the close, must come within HANG_SECONDS."""
    sock, conn = connect(address)
    internal, answered = 0, 0
    with sock:
        try:
            sock.settimeout(HANG_SECONDS * 5)
            sock.sendall(setup + b"".join(frames))
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # already closed by the broker: what it answered before is still read below
        sock.settimeout(HANG_SECONDS)
        last = time.monotonic()
        try:
            while True:
                try:
                    event = read_event(sock, conn)
                except RemoteProtocolError:
                    break  # the broker's answers are garbled only when the connection is cut mid-frame
                last = time.monotonic()
                if event is CLOSED:
                    break
                if isinstance(event, ev.Error) and event.message.startswith("Internal error"):
                    internal += 1
                if isinstance(event, ev.PartitionedMetadataResponse) and event.request_id >= MARK_BASE:
                    answered = max(answered, event.request_id - MARK_BASE + 1)
        except socket.timeout:
            return internal, answered, time.monotonic() - last
        return internal, answered, 0.0


def connection_setup(conn: Connection) -> bytes:
    """Unmutated frames each connection starts with, so the mutated SENDs, FLOWs and ACKs have a
    producer and a consumer to name."""
    return (conn.send(ev.Producer(topic=TOPICS[0], producer_id=1, request_id=1, producer_name="fz"))
            + conn.send(ev.Subscribe(topic=TOPICS[0], subscription="s", subType=1, consumer_id=1, request_id=2)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--budget", type=float, default=1500.0, help="seconds at most; every wait is bounded")
    parser.add_argument("--batch", type=int, default=400, help="frames per connection at most")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    corpus = seeds(Connection(Role.CLIENT))
    setup = connection_setup(Connection(Role.CLIENT))
    broker = Broker()
    prober = Prober(broker.address)
    started = time.monotonic()
    sent = written = connections = internal = hangs = 0
    slowest = 0.0
    memory_after_warmup = None
    try:
        prober.start()
        while sent < args.frames and time.monotonic() - started < args.budget and broker.process.poll() is None:
            batch, _ = batch_for_one_connection(corpus, rng, args.batch)
            errors, answered, waited = fuzz_connection(broker.address, setup, batch)
            internal += errors
            hangs += waited > 0
            slowest = max(slowest, waited)
            sent += answered * MARK_EVERY  # confirmed handled by a marker's answer
            written += len(batch)
            connections += 1
            if memory_after_warmup is None and sent >= args.frames // 10:
                memory_after_warmup = broker.rss()
        crashed = broker.process.poll() is not None
        memory_end = broker.rss() if not crashed else 0
        prober.stopping.set()
        prober.join(35)
        log_errors = broker.internal_error_lines() if not crashed else []
    finally:
        broker.stop()
    elapsed = time.monotonic() - started
    other_hung = prober.worst > HANG_SECONDS or prober.failure is not None
    growth = memory_end - (memory_after_warmup or memory_end)
    print(f"mutated frames handled (confirmed): {sent:,} of {written:,} frames written, on {connections:,} "
          f"connections in {elapsed:.0f} s ({sent / elapsed:,.0f}/s)")
    print(f"crashes: {int(crashed)}")
    print(f"hangs over {HANG_SECONDS:.0f} s: {hangs} fuzzing connections (slowest end {slowest:.2f} s); other client: "
          f"worst round trip {prober.worst * 1000:.1f} ms over {prober.round_trips:,} pings"
          + (f", failed: {prober.failure!r}" if prober.failure else ""))
    print(f"internal-error answers: {internal}; internal-error log lines: {len(log_errors)}")
    print(f"broker memory: {(memory_after_warmup or 0) / 2**20:.1f} MiB after the first tenth, "
          f"{memory_end / 2**20:.1f} MiB at the end ({growth / 2**20:+.1f} MiB)")
    for line in log_errors[:5]:
        print("  log:", line)
    ok = (not crashed and hangs == 0 and not other_hung and internal == 0 and not log_errors
          and growth < 64 * 2**20 and sent >= args.frames)
    print("result:", "OK" if ok else "FINDINGS" if sent >= args.frames else "INCOMPLETE (budget ran out)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
