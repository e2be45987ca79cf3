"""Topic auto-creation: who may create what, and creating partitioned metadata on a lookup.

Owns the broker-side decisions every lookup path shares (BrokerService, Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync, Pulsar's BrokerService/AutoTopicCreationOverrideImpl).

Rule 1 (override precedence, Pulsar's BrokerService/AutoTopicCreationOverrideImpl): "if the namespace autoTopicCreationOverride is set,
        use its allowAutoTopicCreation; else use the broker's allowAutoTopicCreation. There is no
        topic-level override for topic creation." The same precedence picks the topic type and the
        default number of partitions.
Rule 2 (Pulsar's BrokerService/AutoTopicCreationOverrideImpl): "isDefaultTopicTypePartitioned: always false for names ending with the DLQ or
        retry suffixes (PR #22705)". PR #22705 is from May 2024, so the model applies it to the
        pip344 era only.
Rule 3 (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync): a lookup that may auto-create creates partitioned *metadata* only, and
        only when the topic is absent, auto-creation is allowed, the default type is partitioned and
        the name is not a partition name: "Only the metadata is created, not the partitions; the
        test asserts this."
Rule 4: existence is ``checkTopicExists`` (NamespaceService): partitioned metadata of exactly that
        name, else a non-partitioned topic (managed ledger / loaded topic) of exactly that name.

Not modelled (a single standalone broker never reaches them): namespaces being deleted,
ExtensibleLoadManager internal topics, system topics, partitioned topics being deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from model import texts
from model.config import PARTITIONED
from model.names import TopicName
from model.state import State

# RetryMessageUtil's suffixes ("-DLQ", "-RETRY") [I: suffix strings from Pulsar's client code].
DLQ_RETRY_SUFFIXES = ("-DLQ", "-RETRY")


@dataclass(frozen=True)
class Refused:
    """Metadata creation failed inside the broker: the Java exception's HTTP status and message.

    Each API turns it into its own answer (REST: the status and reason; binary: Pulsar's ServerCnx.handlePartitionMetadataRequest).
    """
    status: int
    message: str


def is_allow_auto_topic_creation(state: State, topic: TopicName) -> bool:
    """BrokerService.isAllowAutoTopicCreationAsync (Rule 1)."""
    override = state.policies(topic.namespace_name).autoTopicCreationOverride
    if override is not None:
        return override.allowAutoTopicCreation
    return state.config.allowAutoTopicCreation


def is_default_topic_type_partitioned(state: State, topic: TopicName) -> bool:
    """BrokerService.isDefaultTopicTypePartitioned (Rules 1 and 2)."""
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
    """Rule 4: N > 0 for a partitioned topic, 0 for a non-partitioned one, None when absent."""
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
    # Rule 3: metadata only — state.topics is left alone.
    return state.with_partitioned_metadata(topic, partitions), partitions


def _creation_limits(state: State, topic: TopicName, partitions: int) -> Optional[Refused]:
    """"Before creating, it checks defaultNumPartitions > 0, <= maxNumPartitionsPerPartitionedTopic
    (when that is > 0), and maxTopicsPerNamespace" (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync).

    The first two are Guava checkArgument calls (IllegalArgumentException, so HTTP 500 and binary
    ServiceNotReady); the last is a 412 RestException. Statuses and counting are [I].
    """
    if partitions <= 0:
        return Refused(500, texts.DEFAULT_PARTITIONS_NOT_POSITIVE)
    maximum = state.config.maxNumPartitionsPerPartitionedTopic
    if maximum > 0 and partitions > maximum:
        return Refused(500, texts.partitions_above_max(maximum))
    limit = state.config.maxTopicsPerNamespace
    if limit > 0 and len(state.topics_in(topic.namespace_name, topic.domain)) + partitions > limit:
        return Refused(412, texts.TOO_MANY_TOPICS)
    return None
