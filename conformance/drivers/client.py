"""Client driver: the official ``pulsar-client`` (C++ core), as an application would use it.

Rule 1: ``GetPartitionsForTopic`` is ``client.get_topic_partitions(topic)`` on a client built from
        the target's ``pulsar://`` URL (transport "binary": PARTITIONED_METADATA) or its
        ``http://`` URL (transport "http": GET .../partitions?checkAllowAutoCreation=true; the
        C++ client has not implemented PIP-344, facts §1.1). The answer is
        ``PartitionList(names)``; a raised ``pulsar.<Exception>`` is ``ClientError(<class name>)``
        (facts §1.4 for the Java names, pulsar/exceptions.py for the Python ones).
Rule 2: ``ProduceConsume`` subscribes first (a new Exclusive subscription), produces
        ``m0..m{count-1}``, then receives until ``count`` messages arrived or no message came for
        ``RECEIVE_IDLE_S``; the received payloads are the outcome (ops.py: "outcome lists the
        received payloads"). Fewer messages is an answer, not a timeout.
Rule 3: ``pulsar.Timeout`` and a call that does not return within the bound raise ``Indefinite``.
        The C++ calls run in a daemon thread so a stuck call cannot hang the run; a stuck thread
        is left behind (and said so in the reason) because the C++ client cannot be interrupted.
Rule 4: the client's own logging is silenced: it would otherwise print to stdout/stderr for
        every connection and drown the report.
"""

from __future__ import annotations

import logging
import secrets
import threading
from typing import Callable, Optional

from conformance.drivers.base import (CLIENT_CONNECTION_TIMEOUT_MS, CLIENT_OPERATION_TIMEOUT_S,
                                      DEFAULT_TIMEOUT)
from conformance.errors import Indefinite, Unsupported
from conformance.transcript import Transcript
from model import ops
from model.outcomes import ClientError, Delivered, PartitionList

RECEIVE_IDLE_S = 2.0

_quiet = logging.getLogger("conformance.pulsar-client")
_quiet.addHandler(logging.NullHandler())
_quiet.setLevel(logging.CRITICAL)
_quiet.propagate = False


def _pulsar():
    import pulsar  # imported lazily: the C++ extension is heavy and not every run needs it
    return pulsar


class ClientDriver:
    """Performs ``GetPartitionsForTopic`` and ``ProduceConsume`` with the official client."""

    name = "client"

    def __init__(self, service_url: Optional[str], http_url: Optional[str], *, timeout: float = DEFAULT_TIMEOUT):
        self.urls = {"binary": service_url, "http": http_url}
        self.timeout = timeout
        self.transcript = Transcript("client")

    def can_perform(self, op) -> bool:
        return isinstance(op, (ops.GetPartitionsForTopic, ops.ProduceConsume))

    def reset(self) -> None:
        self.transcript = Transcript("client")

    def close(self) -> None:
        pass  # each operation owns and closes its own pulsar.Client

    def perform(self, op):
        if not self.can_perform(op):
            raise Unsupported(f"the client driver cannot perform {type(op).__name__}; use the REST or wire driver")
        url = self.urls.get(op.transport)
        if not url:
            raise Unsupported(f"target has no {op.transport} service URL for the official client "
                              f"(transport={op.transport!r})")
        if isinstance(op, ops.GetPartitionsForTopic):
            work = lambda client: PartitionList(tuple(client.get_topic_partitions(op.topic)))  # noqa: E731
        else:
            work = lambda client: self._produce_consume(client, op)  # noqa: E731
        self.transcript.sent(f"{type(op).__name__}({op.topic!r}) via pulsar.Client({url!r})")
        outcome = self._bounded(url, work, f"{type(op).__name__} on {op.topic}")
        self.transcript.received(repr(outcome))
        return outcome

    def _bounded(self, url: str, work: Callable, what: str):
        """Run ``work(client)`` in a daemon thread; map exceptions to outcomes (Rules 1, 3)."""
        pulsar = _pulsar()
        box: dict = {}

        def body():
            client = None
            try:
                client = pulsar.Client(url, operation_timeout_seconds=CLIENT_OPERATION_TIMEOUT_S,
                                       connection_timeout_ms=CLIENT_CONNECTION_TIMEOUT_MS, logger=_quiet)
                box["outcome"] = work(client)
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
        # The client's own operation timeout is 5 s; give it that plus connect and close time.
        thread.join(self.timeout + CLIENT_OPERATION_TIMEOUT_S)
        if thread.is_alive():
            raise Indefinite(f"{what}: the official client did not return within "
                             f"{self.timeout + CLIENT_OPERATION_TIMEOUT_S:g} s (its thread is left running)")
        error = box.get("error")
        if error is None:
            return box["outcome"]
        if isinstance(error, Indefinite):
            raise error
        if isinstance(error, pulsar.Timeout):
            raise Indefinite(f"{what}: pulsar.Timeout from the official client ({error})")
        if isinstance(error, pulsar.PulsarException):
            self.transcript.note(f"raised {type(error).__name__}: {error}")
            return ClientError(type(error).__name__)
        raise error  # a bug in our code or the binding: the runner reports it as broken

    def _produce_consume(self, client, op: ops.ProduceConsume):
        pulsar = _pulsar()
        consumer = client.subscribe(op.topic, f"conformance-{secrets.token_hex(4)}",
                                    consumer_type=pulsar.ConsumerType.Exclusive)
        producer = client.create_producer(op.topic)
        for index in range(op.count):
            producer.send(f"m{index}".encode())
        received = []
        while len(received) < op.count:
            try:
                message = consumer.receive(timeout_millis=int(RECEIVE_IDLE_S * 1000))
            except pulsar.Timeout:
                break  # Rule 2: fewer messages is the answer
            received.append(message.data().decode(errors="replace"))
            consumer.acknowledge(message)
        producer.close()
        consumer.close()
        return Delivered(tuple(received))
