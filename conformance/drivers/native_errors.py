"""What the Go client's and the Rust crate's errors mean to the harness: an outcome, no contact, no
answer, or a driver bug. The names of the outcomes are model/client_libraries.py's.

Go (clients/go reports the innermost error's ``%T``, the whole message, and every type on the way;
a ``pulsar.Error`` adds ``pulsar.Result.<name>``), decided in this order:

- no contact: a ``*net.OpError`` anywhere, or a message saying the connection could not be made
  (``connection refused``, ``dial tcp``, the client's ``connection error``);
- no answer: the driver's own bounded wait (``main.timedOut``), a ``context deadline exceeded``, the
  client's ``request timed out`` (ErrRequestTimeOut) or a ``pulsar.Result.TimeoutError``;
- an outcome: ``invalid topic name`` for a name the client itself refuses before it asks the broker
  (a ``*strconv.NumError`` on the way: its TopicName reads whatever follows ``-partition-`` as the
  partition's number, apache/pulsar-client-go@v0.21.0:pulsar/internal/topic_name.go,
  getPartitionIndex), ``server error: <ServerError>: ...`` (a refused PRODUCER or SUBSCRIBE),
  ``Code: <status>, Reason: ...`` (the HTTP lookup), ``code: <status> reason: ...`` (pulsaradmin's
  rest.Error), a message that is, or ends with ``: ``, a ServerError's name (a refused
  PARTITIONED_METADATA), ``no partitioned metadata for topic{<topic>} in lookup response`` (a
  PARTITIONED_METADATA answered with a frame of another kind, whose error the client does not read:
  apache/pulsar-client-go@v0.21.0:pulsar/internal/lookup_service.go, GetPartitionedTopicMetadata;
  Apache Pulsar's proxy answers a refusal so), named without the topic, or a ``pulsar.Result``
  (``pulsar.<name>``);
- anything else is a driver bug (broken).

Rust (clients/rust reports the innermost enum variant, then the enclosing variants and the
broker's ``ServerError::<name>`` or ``std::io::ErrorKind::<kind>`` in ``causes``):

- no contact: ``ConnectionError::Io`` whose kind is ConnectionRefused, TimedOut or similar, or
  ``ConnectionError::SocketAddr`` (no address to connect to);
- no answer: the driver's bounded wait (``tokio::time::error::Elapsed``), and the connection closed
  while the crate waited (``ConnectionError::Disconnected``; a consumer's message stream that ends,
  ``futures::stream::End``, which the crate does when the consumer's connection is gone): the
  broker may have done the request, so the answer is unknown (docs/runner-contract.md);
- an outcome: ``ServiceDiscoveryError::Query`` and ``ConnectionError::PulsarError`` with the broker's
  ServerError, named ``<Enum>::<Variant>(<ServerError>)``; ``ConnectionError::UnexpectedResponse``,
  an answer frame of another kind than the request's (matched by its request id, whatever error it
  holds unread: pulsar@6.9.1:src/connection.rs, extract_message; Apache Pulsar's proxy answers a
  refused PARTITIONED_METADATA so), named by the frame's type:
  ``ConnectionError::UnexpectedResponse(LookupResponse)``;
- anything else is a driver bug (broken).
"""

from __future__ import annotations

import re

from conformance.drivers.external import DriverError, Raised
from conformance.errors import Indefinite, NoContact
from model.outcomes import ClientError
from pulsar_codec import pulsar_api_pb2 as pb

SERVER_ERRORS = frozenset(pb.ServerError.keys())
GO_NOT_CONNECTED = ("connection refused", "dial tcp", "connection error", "no route to host")
GO_NAME_REFUSED = "invalid topic name"  # the wording of the client's own refusal (pulsar/helper.go)
GO_TIMEOUTS = ("context deadline exceeded", "request timed out")
GO_NO_METADATA = re.compile(r"no partitioned metadata for topic\{[^}]*\} in lookup response")
GO_NO_METADATA_NAME = "no partitioned metadata in lookup response"
_GO_PATTERNS = (
    (re.compile(r"server error: (\w+)"), "server error: {}"),
    (re.compile(r"^Code: (\d+), Reason"), "Code: {}"),
    (re.compile(r"^code: (\d+) reason"), "code: {}"),
)
RUST_NOT_CONNECTED = frozenset({"std::io::ErrorKind::ConnectionRefused", "std::io::ErrorKind::TimedOut",
                                "std::io::ErrorKind::ConnectionReset", "std::io::ErrorKind::NotConnected"})
RUST_NO_ANSWER = frozenset({"tokio::time::error::Elapsed", "pulsar::error::ConnectionError::Disconnected",
                            "futures::stream::End"})
RUST_OUTCOMES = ("pulsar::error::ServiceDiscoveryError::Query", "pulsar::error::ConnectionError::PulsarError")
RUST_UNEXPECTED = "pulsar::error::ConnectionError::UnexpectedResponse"
_RUST_FRAME = re.compile(r"BaseCommand \{ r#type: (\w+)")  # the Debug text of the frame the crate got


class NativeDriverBug(DriverError):
    """The driver reported an error that is not an answer of the library's API (verdict broken)."""


def _bug(raised: Raised, what: str) -> NativeDriverBug:
    return NativeDriverBug(f"{what}: the driver raised {raised.cls}: {raised.message} "
                           f"(causes: {', '.join(raised.causes) or 'none'}), which no outcome of the library's API names")


def go_outcome_of(raised: Raised, what: str) -> ClientError:
    message = raised.message or ""
    if "*net.OpError" in (raised.cls, *raised.causes) or any(text in message for text in GO_NOT_CONNECTED):
        raise NoContact(f"{what}: the client could not connect: {message}")
    if raised.cls == "main.timedOut" or "pulsar.Result.TimeoutError" in raised.causes or \
            any(text in message for text in GO_TIMEOUTS):
        raise Indefinite(f"{what}: {message}")
    if "*strconv.NumError" in (raised.cls, *raised.causes):
        return ClientError(GO_NAME_REFUSED)
    if GO_NO_METADATA.search(message):
        return ClientError(GO_NO_METADATA_NAME)
    for pattern, name in _GO_PATTERNS:
        found = pattern.search(message)
        if found:
            return ClientError(name.format(found.group(1)))
    last = message.rsplit(": ", 1)[-1].strip()
    if last in SERVER_ERRORS:
        return ClientError(last)
    results = [cause.rsplit(".", 1)[-1] for cause in raised.causes if cause.startswith("pulsar.Result.")]
    if results:
        return ClientError(f"pulsar.{results[-1]}")
    raise _bug(raised, what)


def rust_outcome_of(raised: Raised, what: str) -> ClientError:
    causes = set(raised.causes)
    if causes & RUST_NOT_CONNECTED or raised.cls in ("pulsar::error::ConnectionError::SocketAddr",):
        raise NoContact(f"{what}: the client could not connect: {raised.message}")
    if raised.cls in RUST_NO_ANSWER:
        raise Indefinite(f"{what}: {raised.message}")
    if raised.cls in RUST_OUTCOMES:
        errors = [c.split("::", 1)[1] for c in raised.causes if c.startswith("ServerError::")]
        variant = raised.cls.split("::", 2)[2]
        return ClientError(f"{variant}({errors[-1] if errors else 'None'})")
    frame = _RUST_FRAME.search(raised.message or "")
    if raised.cls == RUST_UNEXPECTED and frame:
        return ClientError(f"ConnectionError::UnexpectedResponse({frame.group(1)})")
    raise _bug(raised, what)
