"""Capture the exact frames the official pulsar-client (C++ core) sends, for golden-byte tests.

A minimal in-test peer answers just enough (CONNECTED with flag 5, a partitioned-metadata answer,
a Connect lookup, PRODUCER_SUCCESS, SEND_RECEIPT) for the client to send CONNECT,
PARTITIONED_METADATA, LOOKUP, PRODUCER and SEND. It records every client frame as raw bytes.
Run as a script to refresh ``golden/official_client.json``.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from pathlib import Path

from pulsar_codec import NEED_DATA, Connection, Role, events as ev
from pulsar_codec import pulsar_api_pb2 as pb

GOLDEN = Path(__file__).parent / "golden" / "official_client.json"


def _split_frames(data: bytes) -> list[bytes]:
    frames, pos = [], 0
    while pos + 4 <= len(data):
        (total,) = struct.unpack_from(">I", data, pos)
        frames.append(data[pos:pos + 4 + total])
        pos += 4 + total
    return frames


def _serve_once(listener: socket.socket, captured: list[bytes], done: threading.Event) -> None:
    sock, _ = listener.accept()
    sock.settimeout(10)
    conn = Connection(Role.SERVER)
    raw = b""
    port = listener.getsockname()[1]
    try:
        while not done.is_set():
            chunk = sock.recv(65536)
            if not chunk:
                return
            raw += chunk
            conn.receive_data(chunk)
            while True:
                event = conn.next_event()
                if event is NEED_DATA:
                    break
                answer = None
                if isinstance(event, ev.Connect):
                    answer = conn.connected_event("Pulsar Servercapture", 5 * 1024 * 1024,
                                                  {"supports_get_partitioned_metadata_without_auto_creation": True})
                elif isinstance(event, ev.PartitionedMetadata):
                    answer = ev.PartitionedMetadataResponse(request_id=event.request_id, partitions=0, response=0)
                elif isinstance(event, ev.Lookup):
                    answer = ev.LookupResponse(request_id=event.request_id, response=1, authoritative=True,
                                               brokerServiceUrl=f"pulsar://127.0.0.1:{port}")
                elif isinstance(event, ev.Producer):
                    answer = ev.ProducerSuccess(request_id=event.request_id, producer_name="capture-0")
                elif isinstance(event, ev.Send):
                    answer = ev.SendReceipt(producer_id=event.producer_id, sequence_id=event.sequence_id,
                                            message_id={"ledgerId": 1, "entryId": 0})
                    if event.num_messages > 1:
                        done.set()
                elif isinstance(event, ev.Ping):
                    answer = ev.Pong()
                elif isinstance(event, ev.CloseProducer):
                    answer = ev.Success(request_id=event.request_id)
                if answer is not None:
                    sock.sendall(conn.send(answer))
    except OSError:
        pass
    finally:
        captured.extend(_split_frames(raw))
        sock.close()


def capture(timeout: float = 15.0) -> dict[str, str]:
    """Run the official client against the capture peer; returns {command name: frame hex}."""
    import pulsar

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    captured: list[bytes] = []
    done = threading.Event()
    thread = threading.Thread(target=_serve_once, args=(listener, captured, done), daemon=True)
    thread.start()
    url = f"pulsar://127.0.0.1:{listener.getsockname()[1]}"
    client = pulsar.Client(url, operation_timeout_seconds=5, connection_timeout_ms=3000,
                           logger=_quiet_logger())
    try:
        client.get_topic_partitions("persistent://public/default/golden")
        producer = client.create_producer("persistent://public/default/golden", producer_name="golden-p",
                                          batching_enabled=False)
        producer.send(b"hi")
        batching = client.create_producer("persistent://public/default/golden", producer_name="golden-b",
                                          batching_enabled=True, batching_max_publish_delay_ms=50)
        for index in range(3):
            batching.send_async(b"batched-%d" % index, None)
        batching.flush()
        done.wait(timeout)
    finally:
        try:
            client.close()
        except Exception:  # the capture peer hangs up after the batch; closing may fail
            pass
        thread.join(timeout)
        listener.close()
    frames: dict[str, str] = {}
    for frame in captured:
        (size,) = struct.unpack_from(">I", frame, 4)
        command = pb.BaseCommand.FromString(frame[8:8 + size])
        name = pb.BaseCommand.Type.Name(command.type)
        if command.type == pb.BaseCommand.SEND and command.send.num_messages > 1:
            name = "SEND_BATCH"
        frames.setdefault(name, frame.hex())
    return frames


def _quiet_logger():
    import logging
    logger = logging.getLogger("pulsar-capture")
    logger.setLevel(logging.ERROR)
    return logger


if __name__ == "__main__":
    GOLDEN.parent.mkdir(exist_ok=True)
    frames = capture()
    GOLDEN.write_text(json.dumps({"client": "pulsar-client (PyPI, C++ core)", "frames": frames}, indent=2) + "\n")
    print(f"wrote {GOLDEN}: {sorted(frames)}")
