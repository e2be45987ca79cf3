"""Fakes for harness tests: cases with the conformance.cases API, targets, drivers, a fake
binary-protocol server and a fake admin HTTP server.

The real ``conformance.cases`` builds cases from spec/ rows and the model; these fakes follow its
contract (Case fields, ``case.bind(namespace).steps`` of ``Step(op, role, expected)``) so the
harness is tested on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from conformance.targets.base import ERA_PIP344, Target
from conformance.transcript import Transcript


@dataclass(frozen=True)
class Step:
    op: object
    role: str
    expected: object


@dataclass(frozen=True)
class BoundCase:
    steps: tuple


@dataclass(frozen=True)
class FakeCase:
    id: str
    steps: Callable[[str], tuple]  # namespace -> steps
    row_id: str = "row-001"
    pip: str = "344"
    table: str = "fake-table"
    grade: str = "MUST"
    era: str = ERA_PIP344
    api: str = "binary"
    description: str = "a fake case"
    source: tuple = ("Pulsar's ServerCnx.handlePartitionMetadataRequest",)
    info: str = "quoted text"
    broker_config: dict = field(default_factory=dict)

    def bind(self, namespace: str, release=None) -> BoundCase:
        return BoundCase(tuple(self.steps(namespace)))


class FakeDriver:
    """Answers from a function op -> outcome (or raises what it raises)."""

    def __init__(self, name: str, answer: Callable, can: Callable = lambda op: True):
        self.name = name
        self.answer = answer
        self.can = can
        self.transcript = Transcript(name)
        self.performed: list = []
        self.closed = False

    def can_perform(self, op) -> bool:
        return self.can(op)

    def perform(self, op):
        self.performed.append(op)
        self.transcript.sent(repr(op))
        return self.answer(op)

    def reset(self) -> None:
        self.transcript = Transcript(self.name)

    def close(self) -> None:
        self.closed = True


class FakeTarget(Target):
    """A target with no process: start() succeeds or fails as told, detection is given."""

    kind = "fake"

    def __init__(self, name: str = "fake", *, era: str = ERA_PIP344, has_admin: bool = True,
                 fail_start: Optional[str] = None, implicit: bool = False, unsupported_config: bool = False):
        super().__init__(name)
        self._era, self._admin, self.fail_start = era, has_admin, fail_start
        self.implicit_namespaces = implicit
        self.unsupported_config = unsupported_config
        self.configured: list[dict] = []
        self.stopped = 0

    def _launch(self) -> None:
        if self.fail_start:
            raise RuntimeError(self.fail_start)
        self.service_url, self.admin_url = "pulsar://127.0.0.1:1", "http://127.0.0.1:2"

    def detect(self) -> None:
        self.era, self.has_admin = self._era, self._admin
        self.versions["binary"] = "Fake Server 1.0"

    def stop(self) -> None:
        self.stopped += 1

    def unresponsive(self):
        return None  # no broker behind the fake URLs; tests of a dead broker override this

    def _configure(self, wanted: dict) -> None:
        from conformance.errors import Unsupported
        if wanted and self.unsupported_config:
            raise Unsupported("config-no-equivalent", f"fake target cannot take {wanted}")
        self.configured.append(wanted)


# -- a fake Pulsar server built from the codec in SERVER role ---------------------------------

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pulsar_codec import CLOSED, NEED_DATA, Connection, Role, events
from pulsar_codec import pulsar_api_pb2 as pb

CLOSE = "close"  # a handler answer: drop the connection
SILENCE = ()  # a handler answer: send nothing


def claiming(handler: Callable) -> Callable:
    """``handler`` behind a broker that answers every LOOKUP with Connect to itself, as the wire
    driver's lookup before a PRODUCER or SUBSCRIBE expects (wire.py)."""
    def answer(event):
        if isinstance(event, events.Lookup):
            return [events.LookupResponse(request_id=event.request_id, brokerServiceUrl="pulsar://127.0.0.1:1",
                                          response=pb.CommandLookupTopicResponse.Connect, authoritative=True)]
        return handler(event)
    return answer


class FakePulsarServer:
    """Loopback server: answers CONNECT (but for the first ``unanswered_connects``), then calls
    ``handler(event)`` for each request.

    ``handler`` returns a list of events to send, ``SILENCE`` or ``CLOSE``. Every received
    event is kept in ``received`` so tests can check exactly what the driver sent.
    """

    def __init__(self, handler: Callable, *, flag5: bool = True, server_version: str = "Fake Pulsar Server",
                 unanswered_connects: int = 0):
        self.handler = handler
        self.flag5 = flag5
        self.server_version = server_version
        self.unanswered_connects = unanswered_connects  # the first ones go unanswered, as on a starved broker
        self.received: list = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.url = f"pulsar://127.0.0.1:{self.port}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=self._connection, args=(sock,), daemon=True).start()

    def _connection(self, sock) -> None:
        conn = Connection(Role.SERVER)
        state = self._new_connection()
        sock.settimeout(0.2)
        try:
            while not self._stop.is_set():
                event = conn.next_event()
                if event is CLOSED:
                    return
                if event is NEED_DATA:
                    try:
                        data = sock.recv(65536)
                    except socket.timeout:
                        continue
                    conn.receive_data(data)
                    continue
                answer = self._answer(conn, event, state)
                if answer == CLOSE:
                    return
                for reply in answer:
                    sock.sendall(conn.send(reply))
        finally:
            sock.close()

    def _new_connection(self):
        """What a server of another kind keeps per connection (None here)."""
        return None

    def _answer(self, conn, event, state):
        """The frames that answer ``event``, SILENCE or CLOSE."""
        self.received.append(event)
        if isinstance(event, events.Connect):
            if self.unanswered_connects > 0:
                self.unanswered_connects -= 1
                return SILENCE
            flags = {"supports_get_partitioned_metadata_without_auto_creation": True} if self.flag5 else {}
            return [conn.connected_event(self.server_version, 5242880, flags)]
        return self.handler(event)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.listener.close()


# -- a fake admin REST server (real HTTP on loopback) -----------------------------------------

class FakeAdminServer:
    """Records every request; answers from ``routes[(method, path)] -> (status, body)``."""

    def __init__(self, routes: Optional[dict] = None):
        self.routes = routes or {}
        self.requests: list[tuple[str, str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self):
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                owner.requests.append((self.command, self.path, body))
                status, answer = owner.routes.get((self.command, self.path), (204, None))
                payload = b"" if answer is None else (answer if isinstance(answer, str) else json.dumps(answer)).encode()
                self.send_response(status)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_PUT = do_POST = do_DELETE = _any

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
