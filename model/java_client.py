"""The official Java client (``org.apache.pulsar:pulsar-client``) and admin client
(``pulsar-client-admin``): what PIP-344 says they ask the broker, and how they fail.

model/client.py is the Python client (C++ core), which never implemented PIP-344; this module is
the client the PIP changed. Its rules follow the PIP's words; where a Java client release does
otherwise, the row fails on that release and says so in its note.

``get_partitions_for_topic``:

- binary, no feature flag 5: "You will get a {@link PulsarClientException.NotSupportedException}
  if the broker's version is an older one that does not support this feature and the Pulsar
  client is using a binary protocol "serviceUrl"" (PIP-344, Public API, getPartitionsForTopic);
  "New version client and Old version Broker: ... The client will get a not-support error if the
  param `createIfAutoCreationEnabled` is false" (PIP-344, Backward & Forward Compatibility). The
  Java client raises ``FeatureNotSupportedException``, a subclass of NotSupportedException,
  before sending anything (PR #22773; BinaryProtoLookupService.java @ v3.0.7), so nothing is
  created. Rows: pip344-java-oldbroker-*. Releases with PR #24822 (3.0.15, 4.0.8, 4.1.2 on) pass
  ``useFallbackForNonPIP344Brokers = true`` from PulsarClientImpl#getPartitionsForTopic and send
  metadata_auto_creation_enabled = true instead (PulsarClientImpl.java @ v4.0.8): they fail
  those rows.
- otherwise the binary transport sends PARTITIONED_METADATA with field 6 = the flag
  (model/lookups.py binary_partitioned_metadata) and the http transport GETs
  ``.../partitions?checkAllowAutoCreation=<flag>`` (HttpLookupService.java @ v4.0.8; lookups.py
  rest_partitioned_metadata).
- the one-argument form is the two-argument form with true: "default
  CompletableFuture<List<String>> getPartitionsForTopic(String topic) { return
  getPartitionsForTopic(topic, true); }" (PulsarClient.java @ v4.0.13, as PIP-344's Public API
  writes it). Rows: pip344-java-onearg-*.
- partitions n > 0 answer ``topic-partition-0..n-1``, 0 answers ``[topic]``
  (PulsarClientImpl#getPartitionsForTopic), as model/client.py's partition_names.
- failures (``java_client_exception``) are the client's exception classes
  (JAVA_CLIENT_EXCEPTIONS): a binary ServerError as ClientCnx#getPulsarClientException maps it, an
  HTTP 404 as NotFoundException and any other HTTP error as a plain PulsarClientException
  (HttpClient.java @ v4.0.8). "When {@param createIfAutoCreationEnabled} is "false", neither the
  partitioned topic nor non-partitioned topic does not exist. You will get an {@link
  PulsarClientException.NotFoundException}" (PIP-344): binary answers TopicNotFound, which the
  client raises as TopicDoesNotExistException; both are "not-found" (JAVA_ERROR_KINDS).

JavaProduceConsume (``produce_consume``): subscribe and producer creation ask
getPartitionedTopicMetadata(topic, true, ...) (PulsarClientImpl.java @ v4.0.8), so what they
create is what model/client.py's ``attach`` creates; a producer or consumer the broker refuses
(TopicNotFound) is TopicDoesNotExistException.

Admin (``get_partitioned_topic_metadata``): ``topics().getPartitionedTopicMetadata`` sends no
checkAllowAutoCreation, which the REST API reads as false: "Regarding the `pulsar-admin` API, ...
it always sets the param `checkAllowAutoCreation` to `false` and can not be set manually"
(PIP-344, Background knowledge; TopicsImpl.java @ v4.0.8). A REST error is the admin's exception
for its status (BaseResource#getApiException @ v4.0.8). Rows: pip344-java-admin-*.
"""

from __future__ import annotations

from model import client
from model.errors import ModelUsageError
from model.lookups import advertised_flags, binary_partitioned_metadata, rest_partitioned_metadata
from model.ops import (SUB_TYPES, JavaGetPartitionedTopicMetadata, JavaGetPartitionsForTopic, JavaProduceConsume,
                       ProduceConsume)
from model.outcomes import ClientError, PartitionList, Partitions, RestError, ServerError
from model.state import State, parse_topic

FLAG5 = "supports_get_partitioned_metadata_without_auto_creation"

# Java exceptions are named as Java source writes a nested class: Outer.Inner.
FEATURE_NOT_SUPPORTED = ClientError("PulsarClientException.FeatureNotSupportedException")
TOPIC_DOES_NOT_EXIST = ClientError("PulsarClientException.TopicDoesNotExistException")

# The client's exception classes. Binary: ClientCnx#getPulsarClientException (ClientCnx.java @ v4.0.8), for the ServerErrors
# a partitioned-metadata answer can carry here. MetadataError and ServiceNotReady are retried until
# the lookup timeout (PulsarClientException#isRetriableError) and then raised as listed.
JAVA_CLIENT_EXCEPTIONS: dict[tuple[str, object], str] = {
    ("binary", "TopicNotFound"): "PulsarClientException.TopicDoesNotExistException",
    ("binary", "MetadataError"): "PulsarClientException.BrokerMetadataException",
    ("binary", "ServiceNotReady"): "PulsarClientException.ServiceNotReadyException",
    ("binary", "NotAllowedError"): "PulsarClientException.NotAllowedException",
    ("binary", "AuthorizationError"): "PulsarClientException.AuthorizationException",
    ("http", 404): "PulsarClientException.NotFoundException",
    ("http", "any other HTTP error status"): "PulsarClientException",
}

# The admin client's exceptions: BaseResource#getApiException, by HTTP status.
JAVA_ADMIN_EXCEPTIONS: dict[int, str] = {
    401: "PulsarAdminException.NotAuthorizedException",
    403: "PulsarAdminException.NotAuthorizedException",
    404: "PulsarAdminException.NotFoundException",
    405: "PulsarAdminException.NotAllowedException",
    409: "PulsarAdminException.ConflictException",
    412: "PulsarAdminException.PreconditionFailedException",
}

# The abstract error a row's `stated` names (spec/README.md), per Java exception.
JAVA_ERROR_KINDS: dict[str, str] = {
    "PulsarClientException.NotFoundException": "not-found",
    "PulsarClientException.TopicDoesNotExistException": "not-found",
    "PulsarAdminException.NotFoundException": "not-found",
    "PulsarClientException.BrokerMetadataException": "metadata-error",
    "PulsarClientException.FeatureNotSupportedException": "not-supported",
}


def java_client_exception(transport: str, answer) -> ClientError:
    """The exception the Java client raises for a failed partitioned-metadata answer."""
    if isinstance(answer, RestError):
        key = ("http", 404) if answer.status == 404 else ("http", "any other HTTP error status")
        return ClientError(JAVA_CLIENT_EXCEPTIONS[key])
    if isinstance(answer, ServerError) and (transport, answer.error) in JAVA_CLIENT_EXCEPTIONS:
        return ClientError(JAVA_CLIENT_EXCEPTIONS[(transport, answer.error)])
    raise ModelUsageError(f"No Java client exception is recorded for {answer!r} over {transport}; "
                          "add it to JAVA_CLIENT_EXCEPTIONS")


def get_partitions_for_topic(state: State, op: JavaGetPartitionsForTopic):
    topic = parse_topic(op.topic)
    flag = True if op.auto_create is None else op.auto_create  # the one-argument form is (topic, true)
    if op.transport == "binary":
        if not flag and FLAG5 not in advertised_flags(state):  # the CONNECTED it saw (a proxy's, model/proxy.py)
            return state, FEATURE_NOT_SUPPORTED  # no feature flag 5: refused before anything is sent
        state, answer = binary_partitioned_metadata(state, topic, flag)
    elif op.transport == "http":
        state, answer = rest_partitioned_metadata(state, topic, flag)
    else:
        raise ModelUsageError(f"Unknown client transport {op.transport!r}: use 'binary' (pulsar://) or 'http' (http://)")
    if not isinstance(answer, Partitions):
        return state, java_client_exception(op.transport, answer)
    return state, PartitionList(client.partition_names(topic, answer.partitions))  # n > 0: the partitions' names; 0: [topic]


def produce_consume(state: State, op: JavaProduceConsume):
    """JavaProduceConsume: the partitions lookup with true, then the attaches of model/client.py."""
    if op.sub_type not in SUB_TYPES:
        raise ModelUsageError(f"JavaProduceConsume(sub_type={op.sub_type!r}): use one of {', '.join(SUB_TYPES)}")
    topic = parse_topic(op.topic)
    after_lookup, answer = client.client_partition_metadata(state, topic, op.transport)
    if not isinstance(answer, Partitions):
        return after_lookup, java_client_exception(op.transport, answer)
    state, outcome = client.produce_consume(state, ProduceConsume(op.topic, op.count, op.transport))
    if outcome == client.TOPIC_DOES_NOT_EXIST:
        return state, TOPIC_DOES_NOT_EXIST
    return state, outcome


def get_partitioned_topic_metadata(state: State, op: JavaGetPartitionedTopicMetadata):
    """``topics().getPartitionedTopicMetadata`` of the admin client: REST with checkAllowAutoCreation false."""
    topic = parse_topic(op.topic)
    state, answer = rest_partitioned_metadata(state, topic, False)
    if isinstance(answer, Partitions):
        return state, answer
    if isinstance(answer, RestError):
        return state, ClientError(JAVA_ADMIN_EXCEPTIONS.get(
            answer.status, "PulsarAdminException.ServerSideErrorException" if answer.status >= 500 else "PulsarAdminException"))
    raise ModelUsageError(f"No Java admin exception is recorded for {answer!r}; add it to JAVA_ADMIN_EXCEPTIONS")
