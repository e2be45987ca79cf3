"""Topic auto-creation: who may create what, and creating partitioned metadata on a lookup.

Owns the broker-side decisions every lookup path shares (BrokerService, Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync, Pulsar's BrokerService/AutoTopicCreationOverrideImpl).

- override precedence (``is_allow_auto_topic_creation``; Pulsar's
  BrokerService/AutoTopicCreationOverrideImpl): "if the namespace autoTopicCreationOverride is
  set, use its allowAutoTopicCreation; else use the broker's allowAutoTopicCreation. There is no
  topic-level override for topic creation." The same precedence picks the topic type and the
  default number of partitions.
- DLQ and retry topics (``is_default_topic_type_partitioned``; Pulsar's
  BrokerService/AutoTopicCreationOverrideImpl): "isDefaultTopicTypePartitioned: always false for
  names ending with the DLQ or retry suffixes (PR #22705)". PR #22705 is from May 2024, so the
  model applies it to the pip344 era only.
- metadata only (``fetch_metadata_check_allow_auto_creation``; Pulsar's
  PersistentTopicsBase.internalGetPartitionedMetadataAsync): a lookup that may auto-create
  creates partitioned *metadata* only, and only when the topic is absent, auto-creation is
  allowed, the default type is partitioned and the name is not a partition name: "Only the
  metadata is created, not the partitions; the test asserts this."
- existence (``topic_existence``) is ``checkTopicExists`` (NamespaceService): partitioned
  metadata of exactly that name, else a non-partitioned topic (managed ledger / loaded topic) of
  exactly that name.

Not modelled (a single standalone broker never reaches them): namespaces being deleted,
ExtensibleLoadManager internal topics, system topics, partitioned topics being deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from model import texts
from model.config import PARTITIONED
from pulsar_naming.names import PERSISTENT, NamespaceName, TopicName
from model.state import State

# RetryMessageUtil's suffixes ("-DLQ", "-RETRY") [I: suffix strings from Pulsar's client code].
DLQ_RETRY_SUFFIXES = ("-DLQ", "-RETRY")


@dataclass(frozen=True)
class Refused:
    """Metadata creation failed inside the broker: what each API answers for the Java exception.

    REST answers ``status`` with ``message`` as its reason; binary answers the ServerError named by
    ``binary`` with the same message. Neither refusal of ``_creation_limits`` is a RestException, so
    the binary handler, which maps only RestException and MetadataStoreException (Pulsar's
    ServerCnx#handlePartitionMetadataRequest), answers ServiceNotReady for both.
    """
    status: int
    message: str
    binary: str = "ServiceNotReady"


# BrokerService#isAllowAutoTopicCreationAsync: "Other system topics can be created automatically"
# while systemTopicEnabled, which the model's broker keeps at its default (true; no row sets it).
# The one system topic a client names in an ordinary namespace: the namespace's events topic.
SYSTEM_TOPIC_LOCAL_NAMES = ("__change_events",)


def is_allow_auto_topic_creation(state: State, topic: TopicName) -> bool:
    """BrokerService.isAllowAutoTopicCreationAsync (the namespace's override, else the broker's
    setting): a system topic always may. From the release of
    BEHAVIOURS["partition-attach-follows-metadata"], a partition name of a topic that has
    partitioned metadata may be created exactly when its index is below the count, in either
    domain and whatever the policies say: every caller (lookups, partitioned metadata, attach) asks
    this one function."""
    if topic.partitioned_base.local_name in SYSTEM_TOPIC_LOCAL_NAMES:
        return True
    if topic.is_partition and state.has("partition-attach-follows-metadata"):
        count = state.partition_count(topic.partitioned_base)
        if count > 0:
            return count > topic.partition_index
    override = state.policies(topic.namespace_name).autoTopicCreationOverride
    if override is not None:
        return override.allowAutoTopicCreation
    return state.config.allowAutoTopicCreation


def is_default_topic_type_partitioned(state: State, topic: TopicName) -> bool:
    """BrokerService.isDefaultTopicTypePartitioned: never for a DLQ or retry topic (pip344 era), else
    the namespace's override, else the broker's setting."""
    if state.era == "pip344" and topic.local_name.endswith(DLQ_RETRY_SUFFIXES):
        return False
    override = state.policies(topic.namespace_name).autoTopicCreationOverride
    if override is not None:
        return override.topicType == PARTITIONED
    return state.config.allowAutoTopicCreationType == PARTITIONED


def default_num_partitions(state: State, topic: TopicName) -> int:
    """BrokerService.getDefaultNumPartitions: "the override's value, or else the broker's
    defaultNumPartitions" (Pulsar's BrokerService/AutoTopicCreationOverrideImpl)."""
    override = state.policies(topic.namespace_name).autoTopicCreationOverride
    if override is not None and override.defaultNumPartitions is not None:
        return override.defaultNumPartitions
    return state.config.defaultNumPartitions


def topic_existence(state: State, topic: TopicName) -> Optional[int]:
    """checkTopicExists: N > 0 for a partitioned topic, 0 for a non-partitioned one, None when absent."""
    count = state.partition_count(topic)
    if count > 0:
        return count
    return 0 if state.topic_exists(topic) else None


def fetch_metadata_check_allow_auto_creation(state: State, topic: TopicName) -> Union[tuple[State, int], Refused]:
    """BrokerService.fetchPartitionedTopicMetadataCheckAllowAutoCreationAsync (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync)."""
    existing = topic_existence(state, topic)
    if existing is not None:
        # "Topic exists: partitioned → N; non-partitioned → 0."
        return state, existing
    if not is_allow_auto_topic_creation(state, topic):
        # "It does not exist and auto-creation is not allowed → 0 (nothing created)."
        return state, 0
    if not is_default_topic_type_partitioned(state, topic) or topic.is_partition:
        # "the default type is non-partitioned or the name is a partition name (...-partition-K)
        # → 0 (nothing created)."
        return state, 0
    partitions = default_num_partitions(state, topic)
    refused = _creation_limits(state, topic, partitions)
    if refused is not None:
        return refused
    # metadata only — state.topics is left alone.
    return state.with_partitioned_metadata(topic, partitions), partitions


def stored_topics(state: State, namespace: NamespaceName, domain: str) -> int:
    """What maxTopicsPerNamespace counts: TopicResources#getExistingPartitions, the children of
    /managed-ledgers/{ns}/{domain} (Pulsar's TopicResources#getExistingPartitions). A non-persistent topic has no managed ledger, so
    that domain always counts 0, however many of its topics are loaded."""
    return len(state.topics_in(namespace, domain)) if domain == PERSISTENT else 0


def max_topics(state: State, namespace: NamespaceName) -> int:
    """The namespace policy max_topics_per_namespace when set, else the broker's maxTopicsPerNamespace
    (AdminResource#internalCreatePartitionedTopic: "policies.max_topics_per_namespace != null ?
    policies.max_topics_per_namespace : getMaxTopicsPerNamespace()"; BrokerService reads it alike),
    so a policy of 0 lifts a broker limit."""
    policy = state.policies(namespace).max_topics_per_namespace
    return state.config.maxTopicsPerNamespace if policy is None else policy


def exceeds_max_topics(state: State, topic: TopicName, adding: int) -> bool:
    """BrokerService#checkMaxTopicsPerNamespace and AdminResource#internalCreatePartitionedTopic:
    stored topics + the new ones > the namespace's limit (0 or less: unlimited)."""
    limit = max_topics(state, topic.namespace_name)
    return limit > 0 and stored_topics(state, topic.namespace_name, topic.domain) + adding > limit


def _creation_limits(state: State, topic: TopicName, partitions: int) -> Optional[Refused]:
    """"Before creating, it checks defaultNumPartitions > 0, <= maxNumPartitionsPerPartitionedTopic
    (when that is > 0), and maxTopicsPerNamespace" (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync).

    BrokerService#createDefaultPartitionedTopicAsync (v3.0.7, v4.0.7; v4.2.4 fails the future with
    the same exception): the first two are Guava checkArgument calls, an IllegalArgumentException,
    which the admin API answers 500 (PulsarWebResource#resumeAsyncResponseExceptionally: not a
    WebApplicationException); the last is checkMaxTopicsPerNamespace's NotAllowedException, which
    it answers 409 CONFLICT with the exception's message. Binary: ServiceNotReady (Refused).
    """
    if partitions <= 0:
        return Refused(500, texts.DEFAULT_PARTITIONS_NOT_POSITIVE)
    maximum = state.config.maxNumPartitionsPerPartitionedTopic
    if maximum > 0 and partitions > maximum:
        return Refused(500, texts.partitions_above_max(maximum))
    if exceeds_max_topics(state, topic, partitions):
        return Refused(409, texts.TOO_MANY_TOPICS)
    return None
