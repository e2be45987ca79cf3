"""Client driver: the official ``pulsar-client`` (C++ core), as an application would use it.

- ``GetPartitionsForTopic`` is ``client.get_topic_partitions(topic)`` on a client built from the
  target's ``pulsar://`` URL (transport "binary": PARTITIONED_METADATA) or its ``http://`` URL
  (transport "http": GET .../partitions?checkAllowAutoCreation=true; the C++ client has not
  implemented PIP-344, apache/pulsar-client-cpp#496). The answer is ``PartitionList(names)``; a
  raised ``pulsar.<Exception>`` is ``ClientError(<class name>)`` (Pulsar's
  BinaryProtoLookupService for the Java names, pulsar/exceptions.py for the Python ones).
- ``ProduceConsume`` (``_produce_consume``) subscribes first (a new Exclusive subscription),
  produces ``m0..m{count-1}``, then receives until ``count`` messages arrived or no message came
  for ``RECEIVE_IDLE_S``; the received payloads, in index order, are the outcome (ops.py:
  "outcome lists the received payloads"). Fewer messages is an answer, not a timeout.
- ``_bounded``: ``pulsar.Timeout`` and a call that does not return within the bound raise
  ``Indefinite``. The C++ calls run in a daemon thread so a stuck call cannot hang the run; a
  stuck thread is left behind (and said so in the reason) because the C++ client cannot be
  interrupted.
- A client that could not connect answered nothing (``Contact``, ``ClientLog``). The C++ client
  raises ``ConnectError`` both when the broker answered an HTTP lookup with an error status (an
  answer: model/client.py) and when it could not connect within its connection timeout. So an
  operation that has had nothing from the broker yet (``Contact``) and gets ``ConnectError``
  raises ``NoContact`` (the step executor performs it again), except over HTTP where the
  client's log names an HTTP error status for the operation's topic: that is the answer. The log
  is never printed (it would drown the report). The C++ client logs through the logger of the
  first ``pulsar.Client`` a process makes, for every client after it, so every client gets the
  same ``CLIENT_LOG`` and an operation reads the lines that name its topic; where another logger
  came first (``CLIENT_LOG.active`` is false), an HTTP ``ConnectError`` is taken as the answer it
  nearly always is.
- Security (``_security_options``): with a token the client is built with
  ``pulsar.AuthenticationToken``; for a ``pulsar+ssl://`` or ``https://`` URL it trusts the
  credentials' CA (``tls_trust_certs_file_path``) and checks the broker's host name.
- PIP-2 ``PubSub`` (``_pub_sub``): one client, producer without batching and with
  single-partition routing, consumers with ``receiver_queue_size`` = the op's permits. A burst
  of one is a ``send``; a longer burst is that many ``send_async`` calls, a ``flush`` and a
  bounded wait for every callback. After the last burst a partitions lookup on the same
  connection is the barrier: the C++ client handles frames in order on one I/O thread, so
  messages the broker dispatched before answering are queued by then. Each consumer is then
  drained (``_drain``) until it has every accepted message, or the broker's counters say it holds
  all it was sent, or ``receive`` waits in vain for a quiet period (``pubsub.quiet_period``). The
  client stays open until the case ends (``reset``), so a stats observation sees it.
"""

from __future__ import annotations

import collections
import logging
import re
import secrets
import threading
import time
from typing import Callable, Optional

from conformance.drivers.base import client_connection_timeout_ms, client_operation_timeout_s, DEFAULT_TIMEOUT
from conformance import timing
from conformance.errors import Indefinite, NoContact, Unsupported
from conformance.security import NO_CREDENTIALS, Credentials
from conformance.transcript import Transcript
from model import ops
from pulsar_naming.names import TopicName
from conformance.drivers.pubsub import message_index, quiet_period, receipt_kind, settled, summarise
from model.outcomes import DROPPED, ClientError, Delivered, PartitionList

RECEIVE_IDLE_S = 2.0
DRAIN_IDLE_MS = 300  # after the barrier, messages are already queued; this only ends the drain
EVIDENCE_POLL_MS = 20  # a receive between reads of the broker's counters
# A persistent topic's dispatcher reads stored messages from the ledger, which on a busy machine
# takes longer than a non-persistent send; the quiet period that ends such a collection is longer.
PERSISTENT_DRAIN_IDLE_MS = 2000

class ClientLog(logging.Handler):
    """The official client's log, process-wide: the HTTP error statuses its lookups got, by the URL
    they asked, and the receipts its producers got ahead of the one they waited for, by topic;
    nothing is printed."""

    HTTP_STATUS = re.compile(r"Response failed for url (\S+?):? .*returned error: (\d{3})")
    # ProducerImpl::ackReceived (apache/pulsar-client-cpp@v4.2.0:lib/ProducerImpl.cc) logs this, for
    # a receipt ahead of the oldest pending send, and has the connection closed and made again
    ACK_AHEAD = re.compile(r"\[([^,\]]+), [^\]]*\] *Got ack for msg (\d+) expecting(?: last)?: (\d+)")
    KEPT = 512

    def __init__(self):
        super().__init__(logging.INFO)
        self._statuses: collections.deque[tuple[str, str]] = collections.deque(maxlen=self.KEPT)
        self._acks_ahead: collections.deque[tuple[str, str]] = collections.deque(maxlen=self.KEPT)
        self.active = False  # the C++ client logs here, not through the logger of a client made before
        self.logger = logging.Logger("pulsar-client", logging.INFO)  # never registered, never printed
        self.logger.addHandler(self)
        self.logger.propagate = False

    def emit(self, record: logging.LogRecord) -> None:
        self.active = True
        if record.levelno < logging.WARNING:
            return
        line = record.getMessage()
        found = self.HTTP_STATUS.search(line)
        if found:
            self._statuses.append((found.group(1), found.group(2)))
        ahead = self.ACK_AHEAD.search(line)
        if ahead:
            self._acks_ahead.append((ahead.group(1), f"receipt of send {ahead.group(2)} while send "
                                                     f"{ahead.group(3)} was the oldest pending"))

    def acks_ahead(self, topic: str) -> list[str]:
        """The receipts a producer on ``topic`` got out of order, as logged."""
        return [what for logged_topic, what in self._acks_ahead if logged_topic == topic]

    def http_status(self, topic: str) -> Optional[str]:
        """The last HTTP error status of a lookup whose URL names ``topic``'s REST path, if logged."""
        name = TopicName.parse(topic)
        path = f"/{name.domain}/{name.tenant}/{name.namespace}/{name.encoded_local_name}"
        for url, status in reversed(self._statuses):
            if path in url:
                return status
        return None


CLIENT_LOG = ClientLog()


class Contact:
    """Whether the broker has answered anything yet in this operation: without that, a
    ConnectError means no contact, not an answer."""

    def __init__(self):
        self.made = False


def _pulsar():
    import pulsar  # imported lazily: the C++ extension is heavy and not every run needs it
    return pulsar


class ClientDriver:
    """Performs ``GetPartitionsForTopic`` and ``ProduceConsume`` with the official client."""

    name = "client"

    def __init__(self, service_url: Optional[str], http_url: Optional[str], *, timeout: float = DEFAULT_TIMEOUT,
                 credentials: Credentials = NO_CREDENTIALS):
        self.urls = {"binary": service_url, "http": http_url}
        self.timeout = timeout
        self.credentials = credentials
        self.transcript = Transcript("client")
        self._kept: list = []  # clients a PubSub left open until the case ends, for its stats observations

    def can_perform(self, op) -> bool:
        if isinstance(op, ops.PubSub):
            return op.api == "client"
        return isinstance(op, (ops.GetPartitionsForTopic, ops.ProduceConsume))

    def reset(self) -> None:
        self._close_kept()
        self.transcript = Transcript("client")

    def close(self) -> None:
        self._close_kept()  # other operations own and close their own pulsar.Client

    def _close_kept(self) -> None:
        kept, self._kept = self._kept, []
        for client in kept:
            thread = threading.Thread(target=_close_quietly, args=(client,), name="pulsar-client close", daemon=True)
            thread.start()
            thread.join(self.timeout)

    def perform(self, op):
        if not self.can_perform(op):
            raise Unsupported("no-driver", f"the client driver cannot perform {type(op).__name__}; use the REST or wire driver")
        url = self.urls.get(op.transport)
        if not url:
            raise Unsupported("no-http-service", f"target has no {op.transport} service URL for the official client "
                              f"(transport={op.transport!r})")
        keep = False
        if isinstance(op, ops.GetPartitionsForTopic):
            work = lambda client, contact: PartitionList(tuple(client.get_topic_partitions(op.topic)))  # noqa: E731
        elif isinstance(op, ops.PubSub):
            work, keep = (lambda client, contact: self._pub_sub(client, op, contact)), True  # noqa: E731
        else:
            work = lambda client, contact: self._produce_consume(client, op, contact)  # noqa: E731
        self.transcript.sent(f"{type(op).__name__}({op.topic!r}) via pulsar.Client({url!r})")
        outcome = self._bounded(url, op.topic, work, f"{type(op).__name__} on {op.topic}", keep=keep)
        self.transcript.received(repr(outcome))
        return outcome

    def _security_options(self, pulsar, url: str) -> dict:
        """The pulsar.Client keyword arguments for the credentials: a token, and the CA for TLS."""
        options: dict = {}
        if self.credentials.token is not None:
            options["authentication"] = pulsar.AuthenticationToken(self.credentials.token.reveal())
        if url.startswith(("pulsar+ssl://", "https://")):
            options["tls_validate_hostname"] = True
            if self.credentials.trust_certs:
                options["tls_trust_certs_file_path"] = self.credentials.trust_certs
        return options

    def _bounded(self, url: str, topic: str, work: Callable, what: str, keep: bool = False):
        """Run ``work(client)`` in a daemon thread; map exceptions to outcomes, or to Indefinite
        or NoContact when nothing was answered."""
        pulsar = _pulsar()
        box: dict = {}

        contact = Contact()

        def body():
            client = None
            try:
                client = pulsar.Client(url, operation_timeout_seconds=client_operation_timeout_s(self.timeout),
                                       connection_timeout_ms=client_connection_timeout_ms(self.timeout),
                                       logger=CLIENT_LOG.logger, **self._security_options(pulsar, url))
                box["outcome"] = work(client, contact)
                if keep:
                    self._kept.append(client)
                    client = None
            except BaseException as exc:  # noqa: BLE001 - every client exception is an answer or a timeout
                box["error"] = exc
            finally:
                if client is not None:
                    try:
                        client.close()
                    except Exception:  # noqa: BLE001 - closing a client whose broker is gone may raise
                        pass

        thread = threading.Thread(target=body, name=f"pulsar-client {what}", daemon=True)
        thread.start()
        # The client's own operation timeout (the run's bound), plus connect and close time; a PubSub
        # also collects for up to one more bound (``_drain``).
        bound = self.timeout + client_operation_timeout_s(self.timeout) + (self.timeout if keep else 0)
        thread.join(bound)
        if thread.is_alive():
            raise Indefinite(f"{what}: the official client did not return within "
                             f"{bound:g} s (its thread is left running)")
        error = box.get("error")
        if error is None:
            return box["outcome"]
        if isinstance(error, Indefinite):
            raise error
        status = CLIENT_LOG.http_status(topic) if isinstance(error, pulsar.ConnectError) else None
        unanswered = url.startswith("pulsar") or (CLIENT_LOG.active and status is None)
        if isinstance(error, pulsar.ConnectError) and unanswered and not contact.made:
            raise NoContact(f"{what}: the official client could not connect within its connection timeout "
                            f"({client_connection_timeout_ms(self.timeout)} ms), and no HTTP lookup was answered")
        if isinstance(error, pulsar.Timeout):
            raise Indefinite(f"{what}: pulsar.Timeout from the official client ({error})")
        if isinstance(error, pulsar.PulsarException):
            self.transcript.note(f"raised {type(error).__name__}: {error}"
                                 + (f" (HTTP status {status})" if status else ""))
            return ClientError(type(error).__name__)
        raise error  # a bug in our code or the binding: the runner reports it as broken

    def _produce_consume(self, client, op: ops.ProduceConsume, contact: Contact):
        pulsar = _pulsar()
        consumer = client.subscribe(op.topic, f"conformance-{secrets.token_hex(4)}",
                                    consumer_type=pulsar.ConsumerType.Exclusive)
        contact.made = True
        producer = client.create_producer(op.topic)
        for index in range(op.count):
            producer.send(f"m{index}".encode())
        received = []
        while len(received) < op.count:
            try:
                message = consumer.receive(timeout_millis=int(RECEIVE_IDLE_S * 1000))
            except pulsar.Timeout:
                break  # fewer messages is the answer, not a timeout
            received.append(message.data().decode(errors="replace"))
            consumer.acknowledge(message)
        producer.close()
        consumer.close()
        # Pulsar orders messages per partition only, so across the partitions of a topic the
        # order a consumer sees is not an answer (outcomes.Delivered).
        return Delivered(tuple(sorted(received, key=lambda payload: (message_index(payload.encode()), payload))))

    def _pub_sub(self, client, op: ops.PubSub, contact: Contact):
        """A PubSub: sends, a lookup as the barrier, then each consumer drained; returns the outcome,
        or ClientError when a producer or consumer is refused."""
        pulsar = _pulsar()
        producer = client.create_producer(
            op.topic, batching_enabled=False, block_if_queue_full=True,
            message_routing_mode=pulsar.PartitionsRoutingMode.UseSinglePartition)
        contact.made = True
        receipts: list[str] = []
        for _ in range(op.sends_before):
            receipts.append(self._send_one(producer, op.topic, len(receipts)))
        consumers = []
        for name, kind, permits in op.consumers:
            consumer = client.subscribe(
                op.topic, name, consumer_type=getattr(pulsar.ConsumerType, kind.replace("_", "")),
                receiver_queue_size=permits,
                initial_position=getattr(pulsar.InitialPosition, op.initial_position))
            consumers.append((name, consumer))
        for size in op.bursts:
            if size == 1:
                receipts.append(self._send_one(producer, op.topic, len(receipts)))
            else:
                receipts.extend(self._send_burst(producer, op.topic, len(receipts), size))
        asked = time.monotonic()
        partitions = client.get_topic_partitions(op.topic)  # the barrier: frames are handled in order on one I/O thread
        round_trip = time.monotonic() - asked
        partitioned = list(partitions) != [op.topic]
        total = sum(1 for kind in receipts if kind != DROPPED and not kind.startswith("client-"))
        received = self._drain(op.topic, consumers, total, pulsar, round_trip, partitioned)
        if op.close_after:
            producer.close()
            for _, consumer in consumers:
                consumer.close()
        self.transcript.note(f"receipts {receipts}; received {received}")
        for what in CLIENT_LOG.acks_ahead(op.topic):
            self.transcript.note(f"the client logged a {what}: it closed the connection and made a new one, "
                                 "its producer and consumers with it (messages sent meanwhile reached no consumer)")
        return summarise(op, receipts, received)

    def _drain(self, topic: str, consumers: list, total: int, pulsar, round_trip: float,
               partitioned: bool) -> dict[str, list[list[int]]]:
        """Each consumer's messages until it holds every accepted one, or its subscription holds
        what the broker says it sent (pubsub.settled, over the partitions of a partitioned topic),
        or, without those counters, until a receive waits a quiet period in vain."""
        got: list[list[int]] = [[] for _ in consumers]
        open_ = set(range(len(consumers)))
        deadline = time.monotonic() + self.timeout
        # pubsub.settled's evidence; this driver acknowledges what it receives, which a persistent topic's
        # backlog then no longer shows, so there only the quiet period ends the collection.
        persistent = TopicName.parse(topic).persistent
        counters = self.urls.get("http") is not None and not persistent
        quiet_ms = int(1000 * quiet_period((PERSISTENT_DRAIN_IDLE_MS if persistent else DRAIN_IDLE_MS) / 1000,
                                           round_trip, self.timeout))
        while open_ and time.monotonic() < deadline:
            # Take what each consumer holds, until a receive waits in vain ...
            for index in sorted(open_):
                _, consumer = consumers[index]
                while len(got[index]) < total:
                    try:
                        left_ms = max(1, int(1000 * (deadline - time.monotonic())))  # one bound for the whole drain
                        message = consumer.receive(timeout_millis=min(EVIDENCE_POLL_MS if counters else quiet_ms,
                                                                      left_ms))
                    except pulsar.Timeout:
                        break
                    got[index].append(message_index(message.data()))
                    consumer.acknowledge(message)
                if len(got[index]) >= total:
                    open_.discard(index)
            if not open_:
                break
            # ... then ask whether the broker sent more than arrived.
            held: dict[str, int] = {}
            for index, (name, _) in enumerate(consumers):
                held[name] = held.get(name, 0) + len(got[index])
            done = settled(self.urls.get("http"), topic, held, self.timeout, self.credentials,
                           partitioned) if counters else None
            if done:
                open_ = set()
                break  # the broker's counters say everything it sent has arrived
            if done is None:
                if not counters:
                    if time.monotonic() >= deadline:
                        break  # the bound cut the quiet period short: below, no answer
                    timing.spent(timing.QUIET, quiet_ms / 1000, "official client")
                    open_ = set()
                    break  # a whole quiet period passed, and there are no counters to ask
                counters = False  # the stats do not say: from now on a quiet period ends it
        if open_ and time.monotonic() >= deadline:
            raise Indefinite(f"PubSub on {topic}: messages were still to come when the bound of {self.timeout:g} s "
                             "ran out (neither the broker's counters nor a quiet period said the collection was over)")
        received: dict[str, list[list[int]]] = {}
        for index, (name, _) in enumerate(consumers):
            received.setdefault(name, []).append(got[index])
        return received

    @staticmethod
    def _send_one(producer, topic: str, index: int) -> str:
        pulsar = _pulsar()
        try:
            message_id = producer.send(f"m{index}".encode())
        except pulsar.Timeout:
            raise
        except pulsar.PulsarException as exc:
            return f"client-error:{type(exc).__name__}"
        return receipt_kind(topic, message_id.ledger_id(), message_id.entry_id())

    def _send_burst(self, producer, topic: str, first: int, size: int) -> list[str]:
        pulsar = _pulsar()
        results: dict[int, str] = {}
        all_done = threading.Event()

        def callback_for(index: int):
            def callback(result, message_id):
                if result == pulsar.Result.Ok:
                    results[index] = receipt_kind(topic, message_id.ledger_id(), message_id.entry_id())
                else:
                    results[index] = f"client-error:{result}"
                if len(results) == size:
                    all_done.set()
            return callback

        for i in range(size):
            producer.send_async(f"m{first + i}".encode(), callback_for(first + i))
        producer.flush()
        if not all_done.wait(self.timeout):
            raise Indefinite(f"{size - len(results)} of {size} send callbacks did not run within {self.timeout:g} s")
        return [results[first + i] for i in range(size)]


def _close_quietly(client) -> None:
    try:
        client.close()
    except Exception:  # noqa: BLE001 - closing a client whose broker is gone may raise
        pass
