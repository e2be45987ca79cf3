"""The java-client and java-admin drivers: Pulsar's official Java client and admin client, driven
through the client-driver protocol (drivers/external.py, clients/README.md).

- A small pool of driver processes per Java driver per run, shared by every target (each request
  names the URL it is for): ``shared_process`` hands each new set of drivers the least used
  process, starting another while the pool has fewer than POOL_SIZE (a process answers one
  request at a time, and cases run concurrently), with the library version chosen for the run
  (``configure``; default java_build's); ``close_shared`` ends them all when the run ends.
- A model operation is composed here from the protocol's commands, the way an application calls
  the client; each ``perform`` opens its own client (or admin) and closes it before returning,
  so nothing carries over to the next case.

  - ``JavaGetPartitionsForTopic``: client.create on the target's pulsar:// or http:// URL, then
    client.get_partitions with the flag (none for the one-argument form);
  - ``JavaProduceConsume``: consumer.subscribe (the op's sub_type, a new subscription),
    producer.create, producer.send ``m0..m{count-1}``, consumer.receive until ``count`` messages
    came or none came for ``RECEIVE_IDLE_S``, consumer.acknowledge each; close the consumer,
    subscribe again on the same subscription and receive until none comes for
    ``REDELIVERY_IDLE_S``: anything then is appended, so a lost acknowledgement shows;
  - ``JavaGetPartitionedTopicMetadata``: admin.create on the admin URL, then
    admin.get_partitioned_topic_metadata.
- The first exception the client raises ends the operation (``_Failed``); it is mapped by
  java_exceptions.py (an outcome, a timeout, or a driver bug).
- Credentials (conformance/security.py, ``_JavaDriver._options``) go in client.create /
  admin.create as the protocol's options ``auth_token`` and ``tls_trust_certs_file``, and only to
  a driver whose hello lists them; an operation that needs one its driver lacks is Unsupported.
- Every request is bounded by the driver's ``timeout`` (the Java side waits at most that for
  each future; external.py waits a grace longer and then stops the process).
- The process is shared, so another case's hung request may stop it while this case holds a
  client; every request about a handle names the start of the process that made it, and one
  made before a restart is never sent (``DriverGone``). A lookup had then sent nothing to the
  broker (``NoContact``: the step executor asks again, from a new client); ProduceConsume may
  have, so its answer is indefinite.
- A client that could not connect to the broker (Java's ``ConnectException`` and the client's
  own ``PulsarClientException$ConnectException``, as the exception or a cause) has not answered
  anything: ``NoContact`` (java_exceptions.py), never an outcome.
"""

from __future__ import annotations

import secrets
import threading
from typing import Optional

from conformance.drivers.base import DEFAULT_TIMEOUT, client_connection_timeout_ms, client_operation_timeout_s
from conformance.drivers.external import DriverGone, DriverProcess, Raised
from conformance.drivers.java_build import DEFAULT_ADMIN_VERSION, DEFAULT_CLIENT_VERSION, driver_command
from conformance.drivers.java_exceptions import outcome_of
from conformance.errors import Indefinite, NoContact, Unsupported
from conformance.security import NO_CREDENTIALS, Credentials
from conformance.transcript import Transcript
from model import ops
from model.outcomes import Delivered, PartitionList, Partitions

RECEIVE_IDLE_S = 2.0
REDELIVERY_IDLE_S = 0.3

POOL_SIZE = 2  # each is a JVM: more would cost start-up CPU the run does not win back
_versions = {"java-client": DEFAULT_CLIENT_VERSION, "java-admin": DEFAULT_ADMIN_VERSION}
_processes: dict[str, list[DriverProcess]] = {}
_handed: dict[int, int] = {}  # id(process) -> driver sets given it
_processes_lock = threading.Lock()


def configure(*, client_version: Optional[str] = None, admin_version: Optional[str] = None) -> None:
    """The library versions of this run's Java drivers; a running driver of another
    version is closed."""
    wanted = {"java-client": client_version or DEFAULT_CLIENT_VERSION,
              "java-admin": admin_version or DEFAULT_ADMIN_VERSION}
    with _processes_lock:
        for name, version in wanted.items():
            if _versions[name] != version and name in _processes:
                for process in _processes.pop(name):
                    process.close()
            _versions[name] = version


def shared_process(name: str) -> DriverProcess:
    with _processes_lock:
        pool = _processes.setdefault(name, [])
        if len(pool) < POOL_SIZE and all(_handed.get(id(p), 0) for p in pool):
            version = _versions[name]
            pool.append(DriverProcess(f"{name} {version}", lambda: driver_command(name, version)))
        process = min(pool, key=lambda p: _handed.get(id(p), 0))
        _handed[id(process)] = _handed.get(id(process), 0) + 1
        return process


def close_shared() -> None:
    with _processes_lock:
        processes = [process for pool in _processes.values() for process in pool]
        _processes.clear()
        _handed.clear()
    for process in processes:
        process.close()


def java_drivers(service_url: Optional[str], admin_url: Optional[str], *, timeout: float = DEFAULT_TIMEOUT,
                 credentials: Credentials = NO_CREDENTIALS) -> dict:
    """The Java drivers for a target: the admin one only when it has an admin URL."""
    return {
        "java-client": JavaClientDriver(service_url, admin_url, shared_process("java-client"), timeout=timeout,
                                        credentials=credentials),
        "java-admin": JavaAdminDriver(admin_url, shared_process("java-admin"), timeout=timeout,
                                      credentials=credentials) if admin_url else None,
    }


class _JavaDriver:
    name = "java"

    def __init__(self, process: DriverProcess, *, timeout: float, credentials: Credentials = NO_CREDENTIALS):
        self.process = process
        self.timeout = timeout
        self.credentials = credentials
        self.transcript = Transcript(self.name)

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
        """The process is the run's pool's (``close_shared``); a driver object holds nothing of its own."""

    def _call(self, cmd: str, *, wait_s: Optional[float] = None, born: Optional[int] = None, **args):
        """One request; with ``born``, about handles made in that start of the process (never
        sent after a restart)."""
        args["timeout_ms"] = int((self.timeout if wait_s is None else wait_s) * 1000)
        self.transcript.sent(f"{cmd} {args}")
        answer = self.process.request(cmd, args, timeout=self.timeout, started=born)
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


class JavaClientDriver(_JavaDriver):
    """``JavaGetPartitionsForTopic`` and ``JavaProduceConsume`` with org.apache.pulsar:pulsar-client."""

    name = "java-client"

    def __init__(self, service_url: Optional[str], http_url: Optional[str], process: DriverProcess, *,
                 timeout: float = DEFAULT_TIMEOUT, credentials: Credentials = NO_CREDENTIALS):
        super().__init__(process, timeout=timeout, credentials=credentials)
        self.urls = {"binary": service_url, "http": http_url}

    def can_perform(self, op) -> bool:
        return isinstance(op, (ops.JavaGetPartitionsForTopic, ops.JavaProduceConsume))

    def perform(self, op):
        if not self.can_perform(op):
            raise Unsupported("no-driver", f"the java-client driver cannot perform {type(op).__name__}")
        url = self.urls.get(op.transport)
        if not url:
            raise Unsupported("no-http-service", f"target has no {op.transport} service URL for the Java client (transport={op.transport!r})")
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
            return outcome_of(created, f"{self.process.name} client.create")
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
            raise _Failed(outcome_of(answer, f"{self.process.name} {what}"))
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


class JavaAdminDriver(_JavaDriver):
    """``JavaGetPartitionedTopicMetadata`` with org.apache.pulsar:pulsar-client-admin."""

    name = "java-admin"

    def __init__(self, admin_url: Optional[str], process: DriverProcess, *, timeout: float = DEFAULT_TIMEOUT,
                 credentials: Credentials = NO_CREDENTIALS):
        super().__init__(process, timeout=timeout, credentials=credentials)
        self.admin_url = admin_url

    def can_perform(self, op) -> bool:
        return isinstance(op, ops.JavaGetPartitionedTopicMetadata)

    def perform(self, op):
        if not self.can_perform(op):
            raise Unsupported("no-driver", f"the java-admin driver cannot perform {type(op).__name__}")
        if not self.admin_url:
            raise Unsupported("no-admin-api", "target has no admin URL for the Java admin client")
        try:
            return self._with_admin(op)
        except DriverGone as gone:  # the process restarted: nothing of the lookup was sent
            raise NoContact(f"{gone}: getPartitionedTopicMetadata({op.topic}) was not sent") from None

    def _with_admin(self, op: ops.JavaGetPartitionedTopicMetadata):
        created, born = self._make("admin.create", admin_url=self.admin_url, **self._options(self.admin_url))
        if isinstance(created, Raised):
            return outcome_of(created, f"{self.process.name} admin.create")
        try:
            answer = self._call("admin.get_partitioned_topic_metadata", born=born, admin=created["handle"],
                                topic=op.topic)
            if isinstance(answer, Raised):
                return outcome_of(answer, f"{self.process.name} getPartitionedTopicMetadata({op.topic})")
            return Partitions(answer["partitions"])
        finally:
            self._close(created["handle"], born)
