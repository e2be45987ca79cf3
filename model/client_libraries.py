"""Pulsar's client libraries, one model for each: what PIP-344's client operations ask the broker
through them, and how each reports a refusal.

The operations ``JavaGetPartitionsForTopic``, ``JavaProduceConsume`` and
``JavaGetPartitionedTopicMetadata`` are PIP-344's client API as the Java client names it; their
``library`` says which client library makes the call (the case's api chooses it). ``java`` is
model/java_client.py. The others:

``go``: github.com/apache/pulsar-client-go (pinned v0.21.0).

- It has no call taking PIP-344's flag: ``Client.TopicPartitions(topic string)`` is its partitions
  lookup (apache/pulsar-client-go@v0.21.0:pulsar/client.go). Its PARTITIONED_METADATA carries no
  field 6 and it reads no feature flag: its copy of PulsarApi.proto has neither
  (apache/pulsar-client-go@v0.21.0:pulsar/internal/pulsar_proto/PulsarApi.proto), and field 6's
  default is true, so it asks as the one-argument form does; its HTTP lookup sends
  ``checkAllowAutoCreation=true`` (apache/pulsar-client-go@v0.21.0:pulsar/internal/lookup_service.go,
  httpLookupService#GetPartitionedTopicMetadata).
- Names: n > 0 partitions answer ``<topic>-partition-i``, 0 the topic's full name
  (apache/pulsar-client-go@v0.21.0:pulsar/client_impl.go, TopicPartitions), as the Java client does.
- Refusals: a failed PARTITIONED_METADATA is ``errors.New(ServerError.String())``, the ServerError's
  name (lookup_service.go); a failed HTTP lookup is ``"Code: <status>, Reason: <body>"``
  (pulsar/internal/http_client.go, responseError), named here by its status, ``Code: 404``; a
  PRODUCER or SUBSCRIBE the broker refuses is ``"server error: <ServerError>: <message>"``
  (pulsar/internal/connection.go, handleResponseError), named ``server error: TopicNotFound``.
  Unlike the Java and C++ clients it asks again for none of them: a MetadataError is its answer at once.
- Producers and consumers ask ``TopicPartitions`` first (pulsar/producer_impl.go,
  pulsar/consumer_impl.go) and attach to each partition, as model/client.py's ``attach`` has it.
- Admin (pulsaradmin): ``Topics().GetMetadata`` GETs ``.../partitions`` without
  checkAllowAutoCreation (pulsaradmin/pkg/admin/topic.go), which the REST API reads as false, as
  the Java admin client; an error status is ``rest.Error``, whose text starts ``code: <status>``.

``rust``: the ``pulsar`` crate (pinned 6.9.1, streamnative/pulsar-rs).

- It has no call taking PIP-344's flag and no HTTP lookup: ``Pulsar::lookup_partitioned_topic`` is
  its partitions lookup (pulsar@6.9.1:src/client.rs), its PARTITIONED_METADATA has no field 6
  (pulsar@6.9.1:src/connection.rs, messages::lookup_partitioned_topic) and its service URL must be
  ``pulsar://`` or ``pulsar+ssl://`` (pulsar@6.9.1:src/connection.rs); nor has its admin client a
  partitioned-metadata call (pulsar@6.9.1:src/admin.rs).
- After the metadata it sends a binary LOOKUP for each name and answers the names with their
  brokers (pulsar@6.9.1:src/service_discovery.rs, lookup_partitioned_topic).
- Refusals: a failed PARTITIONED_METADATA or LOOKUP is ``ServiceDiscoveryError::Query(<ServerError>)``;
  a refused PRODUCER or SUBSCRIBE is ``ConnectionError::PulsarError(<ServerError>)``
  (pulsar@6.9.1:src/error.rs).

A call a library lacks is answered here as PIP-344 defines it (the Java rules): its driver declines
the call, so the case is unsupported and that answer is never compared; the rows' statements hold for
every library. What a library does against the PIP is not modelled here: it is a known divergence of
that library (spec/divergences/pulsar-client-<library>.yaml).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from model import client, java_client
from model.errors import ModelUsageError
from model.lookups import lookup, rest_partitioned_metadata
from model.ops import JavaGetPartitionedTopicMetadata, JavaGetPartitionsForTopic, JavaProduceConsume, Lookup, SUB_TYPES
from model.outcomes import ClientError, Delivered, LookupAnswer, PartitionList, Partitions, RestError, ServerError
from model.state import State, parse_topic


@dataclass(frozen=True)
class Library:
    """What a client library's API has, and how it names a refusal."""
    name: str
    pip344_call: bool          # a partitions lookup taking PIP-344's flag
    http_lookup: bool          # an http:// service URL
    admin_metadata: bool       # an admin call for a topic's partitioned metadata
    lookup_refused: str        # a failed PARTITIONED_METADATA: "{error}" is the ServerError's name
    http_refused: str          # a failed HTTP lookup: "{status}"
    attach_refused: str        # a refused PRODUCER or SUBSCRIBE: "{error}"
    admin_refused: str         # an admin call's error status: "{status}"
    looks_up_each_name: bool   # a binary LOOKUP of every name after the metadata


LIBRARIES: dict[str, Library] = {
    "go": Library("go", pip344_call=False, http_lookup=True, admin_metadata=True,
                  lookup_refused="{error}", http_refused="Code: {status}", attach_refused="server error: {error}",
                  admin_refused="code: {status}", looks_up_each_name=False),
    "rust": Library("rust", pip344_call=False, http_lookup=False, admin_metadata=False,
                    lookup_refused="ServiceDiscoveryError::Query({error})", http_refused="",
                    attach_refused="ConnectionError::PulsarError({error})", admin_refused="",
                    looks_up_each_name=True),
}
JAVA = "java"

# The abstract error a row's `stated` names (spec/README.md), per library refusal.
LIBRARY_ERROR_KINDS: dict[str, str] = {
    "Code: 404": "not-found",
    "code: 404": "not-found",
    "server error: TopicNotFound": "not-found",
    "ServiceDiscoveryError::Query(TopicNotFound)": "not-found",
    "ConnectionError::PulsarError(TopicNotFound)": "not-found",
    "MetadataError": "metadata-error",
    "ServiceDiscoveryError::Query(MetadataError)": "metadata-error",
}


def library_of(op) -> Library | None:
    """The model of ``op``'s library; None for the Java client (model/java_client.py)."""
    name = getattr(op, "library", JAVA)
    if name == JAVA:
        return None
    if name not in LIBRARIES:
        raise ModelUsageError(f"{type(op).__name__}(library={name!r}): use one of {JAVA}, {', '.join(LIBRARIES)}")
    return LIBRARIES[name]


def refusal(library: Library, transport: str, answer) -> ClientError:
    """How ``library`` reports a failed partitions lookup over ``transport``."""
    if isinstance(answer, RestError) and transport == "http":
        return ClientError(library.http_refused.format(status=answer.status))
    if isinstance(answer, ServerError) and transport == "binary":
        return ClientError(library.lookup_refused.format(error=answer.error))
    raise ModelUsageError(f"No {library.name} client refusal is recorded for {answer!r} over {transport}")


def _as_java(op):
    return replace(op, library=JAVA)


def _names_looked_up(state: State, library: Library, names: tuple[str, ...]):
    """The binary LOOKUP of each name a library sends before it answers; the first refusal, or None."""
    if not library.looks_up_each_name:
        return None
    for name in names:
        state, answer = lookup(state, Lookup(name, api="binary"))
        if not isinstance(answer, LookupAnswer):
            return ClientError(library.lookup_refused.format(error=answer.error))
    return None


def get_partitions_for_topic(state: State, op: JavaGetPartitionsForTopic):
    library = library_of(op)
    if library is None or (op.auto_create is not None and not library.pip344_call) or (
            op.transport == "http" and not library.http_lookup):
        return java_client.get_partitions_for_topic(state, _as_java(op))  # Java's, or the PIP's for a call it lacks
    topic = parse_topic(op.topic)
    state, answer = client.client_partition_metadata(state, topic, op.transport)  # no field 6: true
    if not isinstance(answer, Partitions):
        return state, refusal(library, op.transport, answer)
    names = client.partition_names(topic, answer.partitions)
    refused = _names_looked_up(state, library, names)
    return state, refused or PartitionList(names)


def produce_consume(state: State, op: JavaProduceConsume):
    library = library_of(op)
    if library is None or (op.transport == "http" and not library.http_lookup):
        return java_client.produce_consume(state, _as_java(op))
    if op.sub_type not in SUB_TYPES:
        raise ModelUsageError(f"JavaProduceConsume(sub_type={op.sub_type!r}): use one of {', '.join(SUB_TYPES)}")
    topic = parse_topic(op.topic)
    after_lookup, answer = client.client_partition_metadata(state, topic, op.transport)
    if not isinstance(answer, Partitions):
        return after_lookup, refusal(library, op.transport, answer)
    refused = _names_looked_up(after_lookup, library, client.partition_names(topic, answer.partitions))
    if refused is not None:
        return after_lookup, refused
    state, attached = client.attach(after_lookup, topic, answer.partitions)
    if attached is not None:
        error = "TopicNotFound" if attached == client.TOPIC_DOES_NOT_EXIST else "NotAllowedError"
        return state, ClientError(library.attach_refused.format(error=error))
    return state, Delivered(tuple(f"m{i}" for i in range(op.count)))


def get_partitioned_topic_metadata(state: State, op: JavaGetPartitionedTopicMetadata):
    library = library_of(op)
    if library is None or not library.admin_metadata:
        return java_client.get_partitioned_topic_metadata(state, _as_java(op))
    state, answer = rest_partitioned_metadata(state, parse_topic(op.topic), False)  # no checkAllowAutoCreation
    if isinstance(answer, RestError):
        return state, ClientError(library.admin_refused.format(status=answer.status))
    return state, answer
