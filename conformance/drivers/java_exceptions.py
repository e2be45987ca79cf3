"""What a Java client's exception means to the harness: an outcome, a timeout, or a driver bug.

``outcome_of`` decides, in this order:

- A client that could not connect answered nothing: ``PulsarClientException$ConnectException``,
  or any exception caused by Java's ``java.net.ConnectException`` or a Netty connect timeout,
  raises ``NoContact``, so the step executor asks again. This is checked before the API's
  exceptions count as answers, since ConnectException is one of them.
- A timeout is no answer: ``java.util.concurrent.TimeoutException`` (the driver's bounded wait on
  a future) and the client's and admin's own TimeoutException raise ``Indefinite``.
- An exception of the Pulsar client or admin API (``PulsarClientException`` or
  ``PulsarAdminException`` and their nested classes) is the client's answer: the outcome
  ``ClientError`` with the class as Java source names it (``org.apache.pulsar.client.api.
  PulsarClientException$NotFoundException`` -> ``PulsarClientException.NotFoundException``),
  which is how model/java_client.py writes its expectations.
- Anything else (a NullPointerException, an IllegalStateException thrown by the JDK or by our
  driver) is not an answer of the client's API: ``JavaDriverBug`` (verdict broken) with the
  class and message.
"""

from __future__ import annotations

from conformance.drivers.external import DriverError, Raised
from conformance.errors import Indefinite, NoContact
from model.outcomes import ClientError

API_EXCEPTION_ROOTS = (
    "org.apache.pulsar.client.api.PulsarClientException",
    "org.apache.pulsar.client.admin.PulsarAdminException",
)
TIMEOUTS = frozenset({
    "java.util.concurrent.TimeoutException",
    "org.apache.pulsar.client.api.PulsarClientException$TimeoutException",
    "org.apache.pulsar.client.admin.PulsarAdminException$TimeoutException",
})


NOT_CONNECTED = frozenset({
    "org.apache.pulsar.client.api.PulsarClientException$ConnectException",
    "java.net.ConnectException",
    "io.netty.channel.ConnectTimeoutException",
    "io.netty.channel.AbstractChannel$AnnotatedConnectException",
})


class JavaDriverBug(DriverError):
    """The driver raised something that is not the client API's answer (verdict broken)."""


def java_name(binary_name: str) -> str:
    """``a.b.Outer$Inner`` -> ``Outer.Inner``: the name Java source gives the class."""
    return binary_name.rsplit(".", 1)[-1].replace("$", ".")


def is_api_exception(binary_name: str) -> bool:
    return any(binary_name == root or binary_name.startswith(root + "$") for root in API_EXCEPTION_ROOTS)


def outcome_of(raised: Raised, what: str) -> ClientError:
    """The outcome of one ``raised`` answer of the call described by ``what``, or NoContact,
    Indefinite or JavaDriverBug when it is not the client's answer."""
    if {raised.cls, *raised.causes} & NOT_CONNECTED:
        raise NoContact(f"{what}: the client could not connect: {java_name(raised.cls)} ({raised.message})")
    if raised.cls in TIMEOUTS:
        raise Indefinite(f"{what}: {java_name(raised.cls)} ({raised.message})")
    if is_api_exception(raised.cls):
        return ClientError(java_name(raised.cls))
    raise JavaDriverBug(f"{what}: the driver raised {raised.cls}: {raised.message} "
                        f"(causes: {', '.join(raised.causes) or 'none'}), which no client API call answers")
