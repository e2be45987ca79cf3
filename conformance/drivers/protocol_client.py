"""PIP-344's client operations through any client library that speaks the client-driver protocol
(drivers/external.py, clients/README.md): the Java client (drivers/java.py), the Go client and the
Rust crate (drivers/native_clients.py).

- One pool of driver processes per run (``POOL``), shared by every target (each request names the
  URL it is for): ``Pool.shared`` hands each new set of drivers the least used process of a driver,
  starting another while it has fewer than its size (a process answers one request at a time, and
  cases run concurrently), with the library version chosen for the run (``Pool.configure``; each
  driver registers its default and how to start it); ``Pool.close`` ends them all when the run ends.
- A model operation is composed here from the protocol's commands, the way an application calls
  the client; each ``perform`` opens its own client (or admin) and closes it before returning, so
  nothing carries over to the next case.

  - ``JavaGetPartitionsForTopic``: client.create on the target's pulsar:// or http:// URL, then
    client.get_partitions with the flag (none for the one-argument form);
  - ``JavaProduceConsume``: consumer.subscribe (the op's sub_type, a new subscription),
    producer.create, producer.send ``m0..m{count-1}``, consumer.receive until ``count`` messages
    came or none came for ``RECEIVE_IDLE_S``, consumer.acknowledge each; close the consumer,
    subscribe again on the same subscription and receive until none comes for
    ``REDELIVERY_IDLE_S``: anything then is appended, so a lost acknowledgement shows;
  - ``JavaGetPartitionedTopicMetadata``: admin.create on the admin URL, then
    admin.get_partitioned_topic_metadata.
- A driver performs the operations of its own ``library`` only (the op's field, from the case's
  api); a call the library has no API for is the driver's "unsupported" answer (external.py:
  ``driver-declined``), with the reason the driver gives.
- The first exception the client raises ends the operation (``_Failed``); what it means is the
  driver's ``outcome_of`` (java_exceptions.py, native_errors.py): an outcome, no contact, no
  answer, or a driver bug.
- Credentials (conformance/security.py, ``ProtocolDriver._options``) go in client.create /
  admin.create as the protocol's options ``auth_token`` and ``tls_trust_certs_file``, and only to
  a driver whose hello lists them; an operation that needs one its driver lacks is Unsupported.
- Every request is bounded by the driver's ``timeout`` (the driver waits at most that for its
  library; external.py waits a grace longer and then stops the process), but for a request that
  looks a topic up (``LOOKING_UP``), which waits ``LOOKUP_WAIT`` times as long: a library retries a
  refusal it takes for transient (ServiceNotReady, MetadataError) until its operation timeout, which
  is the driver's ``timeout``, and then raises what it last got (the Java client:
  PulsarClientImpl#getPartitionedTopicMetadata at apache/pulsar@v4.0.7, its remaining time the lookup
  timeout), so its answer comes one attempt after that timeout, and a wait of exactly the timeout
  would take it for no answer.
- The process is shared, so another case's hung request may stop it while this case holds a
  client; every request about a handle names the start of the process that made it, and one
  made before a restart is never sent (``DriverGone``). A lookup had then sent nothing to the
  broker (``NoContact``: the step executor asks again, from a new client); ProduceConsume may
  have, so its answer is indefinite.
"""

from __future__ import annotations

import importlib.metadata
import secrets
import threading
from typing import Callable, Optional

from conformance.drivers.base import DEFAULT_TIMEOUT, client_connection_timeout_ms, client_operation_timeout_s
from conformance.drivers.external import DriverGone, DriverProcess, Raised
from conformance.errors import Indefinite, NoContact, Unsupported
from conformance.security import NO_CREDENTIALS, Credentials
from conformance.transcript import Transcript
from model import ops
from model.outcomes import Delivered, PartitionList, Partitions

RECEIVE_IDLE_S = 2.0
# The requests that begin with a lookup, and their bound in driver timeouts: the library's operation
# timeout, then its last attempt (module docstring).
LOOKING_UP = frozenset({"client.get_partitions", "consumer.subscribe", "producer.create"})
LOOKUP_WAIT = 1.5
REDELIVERY_IDLE_S = 0.3
POOL_SIZE = 2  # a JVM each for the Java drivers: more would cost start-up CPU the run does not win back


class Pool:
    """The run's driver processes, by driver name."""

    def __init__(self):
        self._defaults: dict[str, str] = {}
        self._libraries: dict[str, str] = {}
        self._commands: dict[str, Callable[[str], list[str]]] = {}
        self._versions: dict[str, str] = {}
        self._start_cores: dict[str, float] = {}
        self._processes: dict[str, list[DriverProcess]] = {}
        self._handed: dict[int, int] = {}  # id(process) -> driver sets given it
        self._lock = threading.Lock()

    def register(self, name: str, library: str, default_version: str, command: Callable[[str], list[str]],
                 start_cores: float = 1.0) -> None:
        """A driver: the library it runs, its default version, the argv that starts it at a
        version (building what is missing), and the cores its start takes (a JVM's, one)."""
        with self._lock:
            self._libraries[name] = library
            self._start_cores[name] = start_cores
            self._defaults[name] = default_version
            self._commands[name] = command
            self._versions.setdefault(name, default_version)

    def version(self, name: str) -> str:
        return self._versions[name]

    def library(self, name: str) -> str:
        """``<library> <version>`` of the run's ``name`` driver (result records' ``client``), "" for
        a name that is no driver of the pool."""
        return f"{self._libraries[name]} {self._versions[name]}" if name in self._libraries else ""

    def configure(self, name: str, version: Optional[str]) -> None:
        """The library version of this run's ``name`` driver (None: its default); a running
        process of another version is closed."""
        with self._lock:
            wanted = version or self._defaults[name]
            if self._versions[name] != wanted:
                for process in self._processes.pop(name, []):
                    process.close()
            self._versions[name] = wanted

    def shared(self, name: str) -> DriverProcess:
        with self._lock:
            pool = self._processes.setdefault(name, [])
            if len(pool) < POOL_SIZE and all(self._handed.get(id(p), 0) for p in pool):
                version, command = self._versions[name], self._commands[name]
                pool.append(DriverProcess(f"{name} {version}", lambda: command(version),
                                          start_cores=self._start_cores[name]))
            process = min(pool, key=lambda p: self._handed.get(id(p), 0))
            self._handed[id(process)] = self._handed.get(id(process), 0) + 1
            return process

    def close(self) -> None:
        with self._lock:
            processes = [process for pool in self._processes.values() for process in pool]
            self._processes.clear()
            self._handed.clear()
        for process in processes:
            process.close()


POOL = Pool()


def client_library(driver: str) -> str:
    """The client library and version the ``driver`` runs, for result records (``client``): a driver
    of the pool, or the official Python client (drivers/client.py); "" for the wire and REST drivers."""
    if driver == "client":
        try:
            return f"pulsar-client (Python) {importlib.metadata.version('pulsar-client')}"
        except importlib.metadata.PackageNotFoundError:
            return "pulsar-client (Python)"
    return POOL.library(driver)


class ProtocolDriver:
    """A driver of one client library's process: requests, handles, credentials, transcripts."""

    name = "protocol"
    library = ""

    def __init__(self, process: DriverProcess, *, timeout: float, credentials: Credentials = NO_CREDENTIALS):
        self.process = process
        self.timeout = timeout
        self.credentials = credentials
        self.transcript = Transcript(self.name)

    @staticmethod
    def outcome_of(raised: Raised, what: str):
        """What the library's exception means: an outcome, or NoContact, Indefinite or a driver bug."""
        raise NotImplementedError

    def _options(self, url: str) -> dict:
        """The create options the credentials need for ``url``, if the driver honours them."""
        wanted = {}
        if self.credentials.token is not None:
            wanted["auth_token"] = self.credentials.token.reveal()
        if self.credentials.trust_certs and url.startswith(("pulsar+ssl://", "https://")):
            wanted["tls_trust_certs_file"] = self.credentials.trust_certs
        if wanted:
            offered = self.process.start().get("options") or []
            lacking = [name for name in wanted if name not in offered]
            if lacking:
                raise Unsupported("client-lacks-option", f"{self.process.name} does not take the protocol option(s) {', '.join(lacking)} "
                                  "(clients/README.md, Options) that this secured target needs")
        return wanted

    def reset(self) -> None:
        self.transcript = Transcript(self.name)

    def close(self) -> None:
        """The process is the run's pool's (``Pool.close``); a driver object holds nothing of its own."""

    def _call(self, cmd: str, *, wait_s: Optional[float] = None, born: Optional[int] = None, **args):
        """One request; with ``born``, about handles made in that start of the process (never
        sent after a restart)."""
        if wait_s is None:
            wait_s = self.timeout * (LOOKUP_WAIT if cmd in LOOKING_UP else 1)
        args["timeout_ms"] = int(wait_s * 1000)
        self.transcript.sent(f"{cmd} {args}")
        answer = self.process.request(cmd, args, timeout=max(self.timeout, wait_s), started=born)
        self.transcript.received(repr(answer))
        return answer

    def _make(self, cmd: str, **args) -> tuple[object, int]:
        """A request that makes a client or an admin: its answer and the start of the process it lives in."""
        args["timeout_ms"] = int(self.timeout * 1000)
        self.transcript.sent(f"{cmd} {args}")
        answer, born = self.process.request_making(cmd, args, timeout=self.timeout)
        self.transcript.received(repr(answer))
        return answer, born

    def _close(self, handle: str, born: Optional[int] = None) -> None:
        """Closing is best effort: the answer of the operation is already decided. A handle made
        before the process was restarted (another case's request hung, and it was stopped) is
        gone with that process."""
        args = {"handle": handle, "timeout_ms": int(self.timeout * 1000)}
        self.transcript.sent(f"close {args}")
        try:
            answer = self.process.request("close", args, timeout=self.timeout, started=born)
        except DriverGone:
            self.transcript.note(f"{handle} went with the driver process it was made in")
            return
        self.transcript.received(repr(answer))
        if isinstance(answer, Raised):
            self.transcript.note(f"closing {handle} raised {answer.cls}: {answer.message}")


class _Failed(Exception):
    """The client raised: ``outcome`` is the operation's answer, and the operation ends."""

    def __init__(self, outcome):
        super().__init__(outcome)
        self.outcome = outcome


class ProtocolClientDriver(ProtocolDriver):
    """``JavaGetPartitionsForTopic`` and ``JavaProduceConsume`` with the driver's client library."""

    def __init__(self, service_url: Optional[str], http_url: Optional[str], process: DriverProcess, *,
                 timeout: float = DEFAULT_TIMEOUT, credentials: Credentials = NO_CREDENTIALS):
        super().__init__(process, timeout=timeout, credentials=credentials)
        self.urls = {"binary": service_url, "http": http_url}

    def can_perform(self, op) -> bool:
        return isinstance(op, (ops.JavaGetPartitionsForTopic, ops.JavaProduceConsume)) and op.library == self.library

    def perform(self, op):
        if not self.can_perform(op):
            raise Unsupported("no-driver", f"the {self.name} driver cannot perform {type(op).__name__}"
                                           f"{'' if getattr(op, 'library', self.library) == self.library else ' of library ' + op.library}")
        url = self.urls.get(op.transport)
        if not url:
            raise Unsupported("no-http-service", f"target has no {op.transport} service URL for the {self.name} driver (transport={op.transport!r})")
        if isinstance(op, ops.JavaGetPartitionsForTopic):
            try:
                return self._with_client(url, op)
            except DriverGone as gone:  # the process restarted: nothing of the lookup was sent
                raise NoContact(f"{gone}: getPartitionsForTopic({op.topic}) was not sent") from None
        try:
            return self._with_client(url, op)
        except DriverGone as gone:
            raise Indefinite(f"{gone}: this case's producer and consumer went with it, so what they did is "
                             "unknown") from None

    def _with_client(self, url: str, op):
        created, born = self._make("client.create", service_url=url,
                                   operation_timeout_ms=client_operation_timeout_s(self.timeout) * 1000,
                                   connection_timeout_ms=client_connection_timeout_ms(self.timeout), **self._options(url))
        if isinstance(created, Raised):
            return self.outcome_of(created, f"{self.process.name} client.create")
        try:
            if isinstance(op, ops.JavaGetPartitionsForTopic):
                return self._get_partitions(created["handle"], born, op)
            return self._produce_consume(created["handle"], born, op)
        except _Failed as failed:
            return failed.outcome
        finally:
            self._close(created["handle"], born)

    def _ok(self, answer, what: str) -> dict:
        if isinstance(answer, Raised):
            raise _Failed(self.outcome_of(answer, f"{self.process.name} {what}"))
        return answer

    def _get_partitions(self, client: str, born: int, op: ops.JavaGetPartitionsForTopic):
        flag = {} if op.auto_create is None else {"auto_create": op.auto_create}
        answer = self._ok(self._call("client.get_partitions", born=born, client=client, topic=op.topic, **flag),
                          f"getPartitionsForTopic({op.topic}{'' if op.auto_create is None else f', {op.auto_create}'})")
        return PartitionList(tuple(answer["topics"]))

    def _produce_consume(self, client: str, born: int, op: ops.JavaProduceConsume):
        subscription = f"conformance-{secrets.token_hex(4)}"
        subscribe = dict(client=client, topic=op.topic, subscription=subscription, sub_type=op.sub_type)
        consumer = self._ok(self._call("consumer.subscribe", born=born, **subscribe), "subscribe")["handle"]
        producer = self._ok(self._call("producer.create", born=born, client=client, topic=op.topic),
                            "createProducer")["handle"]
        for index in range(op.count):
            self._ok(self._call("producer.send", born=born, producer=producer, payload=f"m{index}"), "send")
        received = self._drain(consumer, born, op.count, RECEIVE_IDLE_S, acknowledge=True)
        self._close(consumer, born)
        again = self._ok(self._call("consumer.subscribe", born=born, **subscribe), "subscribe again")["handle"]
        received += self._drain(again, born, op.count, REDELIVERY_IDLE_S, acknowledge=False)
        self._close(again, born)
        self._close(producer, born)
        return Delivered(tuple(received))

    def _drain(self, consumer: str, born: int, most: int, idle_s: float, *, acknowledge: bool) -> list[str]:
        """Receive until ``most`` messages came or none came for ``idle_s``."""
        payloads: list[str] = []
        while len(payloads) < most:
            message = self._ok(self._call("consumer.receive", wait_s=idle_s, born=born, consumer=consumer),
                               "receive")["message"]
            if message is None:
                break
            payloads.append(message["payload"])
            if acknowledge:
                self._ok(self._call("consumer.acknowledge", born=born, consumer=consumer,
                                    message_id=message["message_id"]), "acknowledge")
        return payloads


class ProtocolAdminDriver(ProtocolDriver):
    """``JavaGetPartitionedTopicMetadata`` with the driver's admin client."""

    def __init__(self, admin_url: Optional[str], process: DriverProcess, *, timeout: float = DEFAULT_TIMEOUT,
                 credentials: Credentials = NO_CREDENTIALS):
        super().__init__(process, timeout=timeout, credentials=credentials)
        self.admin_url = admin_url

    def can_perform(self, op) -> bool:
        return isinstance(op, ops.JavaGetPartitionedTopicMetadata) and op.library == self.library

    def perform(self, op):
        if not self.can_perform(op):
            raise Unsupported("no-driver", f"the {self.name} driver cannot perform {type(op).__name__}")
        if not self.admin_url:
            raise Unsupported("no-admin-api", f"target has no admin URL for the {self.name} driver")
        try:
            return self._with_admin(op)
        except DriverGone as gone:  # the process restarted: nothing of the lookup was sent
            raise NoContact(f"{gone}: getPartitionedTopicMetadata({op.topic}) was not sent") from None

    def _with_admin(self, op: ops.JavaGetPartitionedTopicMetadata):
        created, born = self._make("admin.create", admin_url=self.admin_url, **self._options(self.admin_url))
        if isinstance(created, Raised):
            return self.outcome_of(created, f"{self.process.name} admin.create")
        try:
            answer = self._call("admin.get_partitioned_topic_metadata", born=born, admin=created["handle"],
                                topic=op.topic)
            if isinstance(answer, Raised):
                return self.outcome_of(answer, f"{self.process.name} getPartitionedTopicMetadata({op.topic})")
            return Partitions(answer["partitions"])
        finally:
            self._close(created["handle"], born)
