"""What a broker answers a PRODUCER or SUBSCRIBE sent on the wire for exactly one topic name.

ServerCnx#handleProducer asks BrokerService#getOrCreateTopic, ServerCnx#handleSubscribe
getTopic(name, forceTopicCreation && isAllowed): both ask BrokerService#isAllowAutoTopicCreationAsync
whether a missing topic may be created, then BrokerService#getTopic decides. The official client
looks the partitions up before it attaches, so its outcomes are model/client.py's; this module is
the attach alone, as a client that sends the command straight away meets it (the wire driver).
Read at v3.0.7, v4.0.7 and v4.2.4; a domain that is disabled and a missing namespace are decided
before this (model/nonpersistent.py).

- may a missing topic be created: model/autocreation.py's is_allow_auto_topic_creation,
  which from BEHAVIOURS["partition-attach-follows-metadata"] lets a partition name of a topic
  with partitioned metadata be created exactly when its index is below the count.
- absent: a topic that neither exists nor may be created is TopicNotFound, in the words of
  the command that asked (texts.ATTACH_ABSENT; a PRODUCER's named no topic before
  BEHAVIOURS["producer-topic-not-found-names-it"]).
- persistent: a partition name at or past the count of its partitioned topic is refused by
  getTopic ("Illegal topic partition name ...") before BEHAVIOURS
  ["partition-name-needs-partitioned-metadata"], and by validateTopicConsistency from it.
  A topic about to be created first passes checkMaxTopicsPerNamespace with one more topic
  (createPersistentTopic0), NotAllowedError texts.TOO_MANY_TOPICS.
- non-persistent: nothing is counted. Before that same behaviour a partition name is
  created when its index is below the count and is absent otherwise, whatever auto-creation
  says; from it every partition name is created and then checked.
- consistency (``_inconsistency``; from that behaviour, validateTopicConsistency on what
  getTopic creates or, for a persistent topic, loads): a partition name with no partitioned
  metadata is refused ("Partition metadata not found for the partitioned topic: "), one past
  the count is refused ("Illegal topic partition name ..."), and the base name of a partitioned
  topic is refused ("Found partitioned metadata for non-partitioned topic: "), all
  NotAllowedError. Before it, the base name of a partitioned topic is created as an ordinary
  topic beside its partitions (observed on 3.0.7 and 4.0.7).
"""

from __future__ import annotations

from typing import Optional

from model import texts
from model.autocreation import exceeds_max_topics, is_allow_auto_topic_creation
from pulsar_naming.names import TopicName
from model.outcomes import ServerError
from model.state import State

COMMANDS = tuple(texts.ATTACH_ABSENT)


def wire_attach(state: State, topic: TopicName, command: str) -> tuple[State, Optional[ServerError]]:
    """(state, refusal or None) for ``command`` on exactly ``topic``; the topic exists after None."""
    exists = state.topic_exists(topic)
    count = state.partition_count(topic.partitioned_base) if topic.is_partition else 0
    checked = state.has("partition-name-needs-partitioned-metadata")
    if topic.persistent:
        if not exists and not is_allow_auto_topic_creation(state, topic):
            return state, _absent(state, topic, command)  # neither exists nor may be created
        if topic.is_partition and 0 < count <= topic.partition_index and not checked:
            return state, ServerError("NotAllowedError", texts.illegal_partition_name(topic, count))
        if not exists and exceeds_max_topics(state, topic, 1):
            return state, ServerError("NotAllowedError", texts.TOO_MANY_TOPICS)
        creating_or_loading = True
    else:
        if topic.is_partition and not checked:
            if topic.partition_index >= count:
                return state, _absent(state, topic, command)  # non-persistent: absent past the count
        elif not topic.is_partition and not exists and not is_allow_auto_topic_creation(state, topic):
            return state, _absent(state, topic, command)
        creating_or_loading = not exists
    if checked and creating_or_loading:
        refusal = _inconsistency(state, topic, count)
        if refusal is not None:
            return state, refusal
    return state.with_topics(topic), None


def _absent(state: State, topic: TopicName, command: str) -> ServerError:
    if command == "PRODUCER" and not state.has("producer-topic-not-found-names-it"):
        return ServerError("TopicNotFound", texts.PRODUCER_ABSENT_UNNAMED)
    return ServerError("TopicNotFound", texts.ATTACH_ABSENT[command].format(topic))


def _inconsistency(state: State, topic: TopicName, count: int) -> Optional[ServerError]:
    """The NotAllowedError validateTopicConsistency answers for what getTopic creates or loads, or None."""
    if topic.is_partition:
        if count == 0:
            return ServerError("NotAllowedError", texts.PARTITION_METADATA_NOT_FOUND + str(topic))
        if topic.partition_index >= count:
            return ServerError("NotAllowedError", texts.illegal_partition_name(topic, count))
        return None
    if state.partition_count(topic) > 0:
        return ServerError("NotAllowedError", texts.FOUND_PARTITIONED_METADATA + str(topic))
    return None
