"""The official Python client (``pulsar-client``, C++ core): what it asks the broker and how it fails.

The C++ client "has not implemented PIP-344. It never sends field 6 and its HTTP lookup always
uses ?checkAllowAutoCreation=true" (apache/pulsar-client-cpp#496). So its ``get_topic_partitions`` is the pre-PIP-344
API with auto-creation on, whichever transport it uses.

What it asks (``client_partition_metadata``): over the binary transport PARTITIONED_METADATA
without field 6 (default true); over http the REST partitions endpoint with
checkAllowAutoCreation=true. What it returns (``partition_names``): "Non-partitioned → [topic];
partitioned → the list of topic-partition-i" (Pulsar's BinaryProtoLookupService), as full names.
How it fails (``client_exception``): as the client exception named in CLIENT_EXCEPTIONS below.
Rows: pip344-seed-list-*, pip344-seed-bg-*-client, pip344-gpmt-001-*.

ProduceConsume (``attach``): after the partitions lookup the client subscribes and produces on
every partition, or on the topic itself, one at a time. Each attach is the broker's answer to
that PRODUCER on the wire (model/attach.py: auto-creation, partition names by release, the
namespace's topic limit); the client reports TopicNotFound as TopicNotFound and every
NotAllowedError as NotAllowed. A partition name the lookup already refused never gets that far.
Rows: pip344-produce-*, pip344-bound-topics-producer-*.
"""

from __future__ import annotations

from typing import Optional

from model.attach import wire_attach
from model.errors import ModelUsageError
from model.lookups import binary_partitioned_metadata, lookup, rest_partitioned_metadata
from pulsar_naming.names import TopicName
from model.ops import GetPartitionsForTopic, Lookup, ProduceConsume
from model.outcomes import ClientError, Delivered, PartitionList, Partitions, RestError, ServerError
from model.state import State, parse_topic

# ---------------------------------------------------------------------------------------------------
# CLIENT_EXCEPTIONS: how the official Python client reports a failed partitions lookup, by what the
# broker answered. THE HARNESS MUST CONFIRM EVERY ENTRY AGAINST THE REAL CLIENT (pulsar-client
# 3.x); the names are class names in pulsar.exceptions.
#
# - Binary errors become the C++ Result of the same name; lib/ResultUtils.h#isResultRetryable lists
#   ResultTopicNotFound and ResultAuthorizationError as fatal, so they surface at once. MetadataError
#   and ServiceNotReady are not in that list: RetryableOperation retries them until the operation
#   timeout (30 s by default) and then fails with ResultTimeout.
# - Any HTTP error status: lib/CurlWrapper.h sets CURLOPT_FAILONERROR, and
#   HTTPLookupService#sendHTTPRequest maps CURLE_HTTP_RETURNED_ERROR to ResultConnectError (fatal).
#   pulsar.exceptions has no "NotFound" class; the Java client's NotFoundException has no
#   counterpart in this client.
# ---------------------------------------------------------------------------------------------------
CLIENT_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("binary", "TopicNotFound"): "TopicNotFound",
    ("binary", "AuthorizationError"): "AuthorizationError",
    ("binary", "MetadataError"): "Timeout",
    ("binary", "ServiceNotReady"): "Timeout",
    ("http", "any HTTP error status"): "ConnectError",
}

# A producer or consumer refused by a rule: NotAllowedError, which lib/ResultUtils.h lists as fatal
# (pulsar.exceptions.NotAllowedError).
NOT_ALLOWED = ClientError("NotAllowedError")

# A producer or consumer refused because the topic does not exist ("Topic does not exist",
# ServerError TopicNotFound) [I: message not modelled, only the exception].
TOPIC_DOES_NOT_EXIST = ClientError("TopicNotFound")


def client_exception(transport: str, answer) -> ClientError:
    if isinstance(answer, RestError):
        return ClientError(CLIENT_EXCEPTIONS[("http", "any HTTP error status")])
    if isinstance(answer, ServerError) and (transport, answer.error) in CLIENT_EXCEPTIONS:
        return ClientError(CLIENT_EXCEPTIONS[(transport, answer.error)])
    raise ModelUsageError(f"No client exception is recorded for {answer!r} over {transport}; add it to CLIENT_EXCEPTIONS")


def client_partition_metadata(state: State, topic: TopicName, transport: str):
    """What ``get_topic_partitions`` sends over ``transport``, and the broker's raw answer."""
    if transport == "binary":
        return binary_partitioned_metadata(state, topic, True)
    if transport == "http":
        return rest_partitioned_metadata(state, topic, True)
    raise ModelUsageError(f"Unknown client transport {transport!r}: use 'binary' (pulsar://) or 'http' (http://)")


def get_partitions_for_topic(state: State, op: GetPartitionsForTopic):
    topic = parse_topic(op.topic)
    state, answer = client_partition_metadata(state, topic, op.transport)
    if not isinstance(answer, Partitions):
        return state, client_exception(op.transport, answer)
    return state, PartitionList(partition_names(topic, answer.partitions))


def partition_names(topic: TopicName, partitions: int) -> tuple[str, ...]:
    """The full names the client returns for a topic of ``partitions`` partitions (0: the topic itself)."""
    if partitions == 0:
        return (str(topic),)
    return tuple(str(topic.partition(i)) for i in range(partitions))


def produce_consume(state: State, op: ProduceConsume):
    if op.count < 0:
        raise ModelUsageError(f"ProduceConsume(count={op.count}): count must be >= 0")
    topic = parse_topic(op.topic)
    state, answer = client_partition_metadata(state, topic, op.transport)
    if not isinstance(answer, Partitions):
        return state, client_exception(op.transport, answer)
    if op.transport == "http":
        # The client looks each topic up over HTTP before it connects; a refused lookup ends it (on
        # releases whose lookup checks a non-persistent partition name's existence, model/releases.py
        # rest-lookup-skips-non-persistent).
        for target in attach_targets(topic, answer.partitions):
            _, found = lookup(state, Lookup(str(target), "rest"))
            if isinstance(found, RestError):
                return state, client_exception("http", found)
    state, refusal = attach(state, topic, answer.partitions)
    if refusal is not None:
        return state, refusal
    return state, Delivered(tuple(f"m{i}" for i in range(op.count)))


def attach_targets(topic: TopicName, partitions: int) -> tuple[TopicName, ...]:
    """The topics the client attaches to after its partitions lookup answered ``partitions``."""
    return tuple(topic.partition(i) for i in range(partitions)) or (topic,)


def attach(state: State, topic: TopicName, partitions: int) -> tuple[State, Optional[ClientError]]:
    """The client's producers and consumers attach to ``attach_targets`` one at a time, each as model/attach.py's attach on the wire; the state holds every topic they made, or
    the refusal that ended them, as the client reports it."""
    for target in attach_targets(topic, partitions):
        state, refused = wire_attach(state, target, "PRODUCER")
        if refused is not None:
            return state, TOPIC_DOES_NOT_EXIST if refused.error == "TopicNotFound" else NOT_ALLOWED
    return state, None
