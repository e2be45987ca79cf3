"""The official Python client (``pulsar-client``, C++ core): what it asks the broker and how it fails.

The C++ client "has not implemented PIP-344. It never sends field 6 and its HTTP lookup always
uses ?checkAllowAutoCreation=true" (apache/pulsar-client-cpp#496). So its ``get_topic_partitions`` is the pre-PIP-344
API with auto-creation on, whichever transport it uses.

Rule 1: binary transport = PARTITIONED_METADATA without field 6 (default true); http transport =
        REST partitions endpoint with checkAllowAutoCreation=true.
Rule 2: "Non-partitioned → [topic]; partitioned → the list of topic-partition-i" (Pulsar's BinaryProtoLookupService), as
        full names.
Rule 3: failures surface as the client exception named in CLIENT_EXCEPTIONS below.
        Rows: pip344-seed-list-*, pip344-seed-bg-*-client, pip344-gpmt-001-*.
Rule 4 (ProduceConsume): after the partitions lookup the client subscribes and produces on every
        partition, or on the topic itself. A producer or consumer creates a missing topic only if
        auto-creation allows it — except a partition K of an existing partitioned topic with more
        than K partitions, which is always created (NonPersistentTopicTest
        testAutoCreateNonPersistentPartitionsWhenThePartitionedTopicExists, Pulsar's NonPersistentTopicTest). A
        partition name with no partitioned metadata is created as an ordinary topic when allowed
        (BrokerService#getTopic) [I]. Otherwise the broker refuses with TopicNotFound.
        Rows: pip344-produce-*.
"""

from __future__ import annotations

from model.autocreation import is_allow_auto_topic_creation
from model.errors import ModelUsageError
from model.lookups import binary_partitioned_metadata, rest_partitioned_metadata
from model.names import TopicName
from model.ops import GetPartitionsForTopic, ProduceConsume
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
    """Rule 1: what ``get_topic_partitions`` sends, and the broker's raw answer."""
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
    """Rule 2."""
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
    if answer.partitions > 0:
        targets = [topic.partition(i) for i in range(answer.partitions)]
    elif state.topic_exists(topic):
        targets = []
    elif _may_create_on_connect(state, topic):
        targets = [topic]
    else:
        return state, TOPIC_DOES_NOT_EXIST
    missing = [t for t in targets if not state.topic_exists(t)]
    limit = state.config.maxTopicsPerNamespace
    if missing and limit > 0 and len(state.topics_in(topic.namespace_name, topic.domain)) + len(missing) > limit:
        raise ModelUsageError(
            "maxTopicsPerNamespace is modelled for partitioned-metadata creation only; a producer that "
            "exceeds it is not modelled — set maxTopicsPerNamespace=0 or create the topics first")
    return state.with_topics(*missing), Delivered(tuple(f"m{i}" for i in range(op.count)))


def _may_create_on_connect(state: State, topic: TopicName) -> bool:
    """Rule 4, for a topic whose partitions lookup answered 0 and which does not exist."""
    if topic.is_partition:
        base_partitions = state.partition_count(topic.partitioned_base)
        if base_partitions > 0:
            return topic.partition_index < base_partitions
    return is_allow_auto_topic_creation(state, topic)
