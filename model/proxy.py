"""Apache Pulsar's proxy in front of a broker: what a client on the proxy's ports is answered.

A state whose release is spec/versions.py's ``Proxied`` is a broker of that release seen through
Apache Pulsar's proxy of release ``release.proxy`` (the target ``pulsar-proxy:P/B``). Every rule
of the broker applies as it is, except where the proxy itself answers; those rules are here, each
read from the proxy's source (model/releases.py PROXY_BEHAVIOURS for what changed by release):

- The admin REST API on the proxy's web port is the broker's: AdminProxyHandler forwards each
  request, path and query as sent (``checkAllowAutoCreation`` included), and relays the answer.
  Nothing here changes a REST answer.
- CONNECTED on the lookup connection (a CONNECT without ``proxy_to_broker_url``) is the proxy's
  own (ProxyConnection#completeConnect): FeatureFlags field 5 when the proxy's release has
  ``proxy-advertises-flag5``, whatever broker is behind it (``advertised_flags``).
- PARTITIONED_METADATA is asked again by the proxy on a connection of its own to the broker
  (LookupProxyHandler#handlePartitionMetadataResponse), with the client's field 6 where the proxy
  has ``proxy-forwards-metadata-auto-creation``, else without it (the broker then reads true).
  The expectation is PIP-344's promise, not the pair's accident: a client that saw field 5 may
  send field 6 = false and rely on it, so where the proxy advertises field 5 such a request is
  answered as a PIP-344 broker answers it, whatever the broker's release and whether the proxy
  forwards the field. A pair that does not keep the promise fails those cases: a finding
  (spec/divergences/apache-pulsar.yaml). Every other request (field 6 true or absent, or a proxy
  that does not advertise field 5, which promises nothing) is answered as the broker answers the
  field the proxy sends (``partitioned_metadata``).
- A refusal comes back through the proxy's own client (``relayed``): the message is what that
  client made of the broker's (ClientCnx#buildError: the broker's text, the request id and both
  addresses, normalised by outcomes.relayed_client_error), and the error is the broker's as
  ClientCnx#getPulsarClientException then ClientCnx#revertClientExToErrorCode read it back
  (``proxy-keeps-partition-metadata-error``), or else ServiceNotReady
  (LookupProxyHandler#getServerError: only authentication and authorization keep theirs). The
  proxy writes a PARTITIONED_METADATA refusal as a LOOKUP_RESPONSE frame; the value compared here
  is the error and its message, and the wire driver reports the frame's type.
- LOOKUP and GET_TOPICS_OF_NAMESPACE are asked again of the broker, and a refusal is relayed with
  LookupProxyHandler#getServerError's error (``relaying``): LookupProxyHandler#performLookup and
  #performGetTopicsOfNamespace at v4.0.7.
- A PARTITIONED_METADATA of a topic name the broker refuses (model/refused_names.py) is parsed by
  the proxy first, with the TopicName of its own release (LookupProxyHandler#handlePartitionMetadataResponse:
  TopicName.get at v3.0.0, TopicName.toFullTopicName at v4.0.8). A name the proxy's parser takes is
  asked of the broker, whose refusal is relayed as any other (``refused_name``): through 3.0.0, whose
  TopicName takes a blank local name, in front of a broker that refuses it, the broker's
  InvalidTopicName comes back as ServiceNotReady. A name the proxy's parser refuses too gets no answer
  from any rule of the proxy's (it closes the connection: spec/divergences/apache-pulsar.yaml), so the
  broker's refusal stays what is expected.
"""

from __future__ import annotations

from typing import Callable

from model import releases
from model.outcomes import ServerError, relayed_client_error
from model.refused_names import refusal
from model.state import State
from pulsar_naming.names import TopicName

FLAG5 = "supports_get_partitioned_metadata_without_auto_creation"
# What the spec requires of every target whatever its release (PIP-35, tentative; model/lookups.py
# ADVERTISED_FLAGS): no Apache Pulsar proxy sets it either.
REQUIRED_OF_EVERY_TARGET = frozenset({"supports_batch_lookup"})

# ClientCnx#revertClientExToErrorCode of ClientCnx#getPulsarClientException, at v4.0.7, for the errors
# a broker answers a PARTITIONED_METADATA with: the exception class each error becomes, read back.
# An error not listed becomes PulsarClientException itself, read back as UnknownError.
KEPT_THROUGH_CLIENT = frozenset({
    "AuthenticationError", "AuthorizationError", "MetadataError", "PersistenceError", "ServiceNotReady",
    "TooManyRequests", "TopicNotFound", "NotAllowedError", "ProducerBusy", "ConsumerBusy",
    "TopicTerminatedError", "IncompatibleSchema", "SubscriptionNotFound", "ConsumerAssignError",
    "TransactionConflict", "ProducerFenced", "ProducerBlockedQuotaExceededError",
    "ProducerBlockedQuotaExceededException",
})
# LookupProxyHandler#getServerError at v4.0.7: only these keep their error.
KEPT_BY_GET_SERVER_ERROR = frozenset({"AuthenticationError", "AuthorizationError"})


def proxied(state: State) -> bool:
    return releases.proxy_of(state.release) is not None


def advertised_flags(state: State) -> frozenset[str]:
    """The FeatureFlags set in the proxy's own CONNECTED."""
    flag5 = {FLAG5} if releases.proxy_has(state.release, "proxy-advertises-flag5") else set()
    return frozenset(flag5) | REQUIRED_OF_EVERY_TARGET


def partitioned_metadata(state: State, topic: TopicName, metadata_auto_creation_enabled: bool,
                         broker_answer: Callable):
    """A PARTITIONED_METADATA through the proxy; ``broker_answer(state, topic, field6, era=...)`` is
    model/lookups.py's binary_partitioned_metadata, the broker's own handling."""
    if not metadata_auto_creation_enabled and FLAG5 in advertised_flags(state):
        state, answer = broker_answer(state, topic, False, era="pip344")  # the promise field 5 makes
    else:
        sent = metadata_auto_creation_enabled if releases.proxy_has(
            state.release, "proxy-forwards-metadata-auto-creation") else True
        state, answer = broker_answer(state, topic, sent, era=state.era)
    if isinstance(answer, ServerError):
        answer = _relayed_partition_metadata_refusal(state, answer)
    return state, answer


def refused_name(state: State, name: str, answer: ServerError) -> ServerError:
    """A PARTITIONED_METADATA of ``name``, which the broker refuses with ``answer``, through the proxy
    (module docstring): relayed where the proxy's own TopicName takes the name, else ``answer``."""
    if refusal(name, releases.proxy_of(state.release)) is not None:
        return answer
    return _relayed_partition_metadata_refusal(state, answer)


def _relayed_partition_metadata_refusal(state: State, answer: ServerError) -> ServerError:
    kept = releases.proxy_has(state.release, "proxy-keeps-partition-metadata-error")
    return relayed(answer, KEPT_THROUGH_CLIENT if kept else KEPT_BY_GET_SERVER_ERROR,
                   "UnknownError" if kept else "ServiceNotReady")


def relayed(answer: ServerError, kept: frozenset[str], otherwise: str) -> ServerError:
    """A broker's refusal as the proxy relays it: the error kept or replaced, the message the
    proxy's client made of the broker's."""
    return ServerError(answer.error if answer.error in kept else otherwise, relayed_client_error(answer.message))


def relaying(handler: Callable) -> Callable:
    """``handler`` (a binary LOOKUP or GET_TOPICS_OF_NAMESPACE of the broker) as the proxy answers it:
    a refusal relayed with LookupProxyHandler#getServerError's error."""
    def through_proxy(state: State, op):
        state, answer = handler(state, op)
        if proxied(state) and getattr(op, "api", None) == "binary" and isinstance(answer, ServerError):
            answer = relayed(answer, KEPT_BY_GET_SERVER_ERROR, "ServiceNotReady")
        return state, answer
    through_proxy.__name__ = getattr(handler, "__name__", "handler")
    through_proxy.__doc__ = handler.__doc__
    return through_proxy
