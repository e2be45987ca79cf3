import pytest

from model.autocreation import (
    Refused, default_num_partitions, exceeds_max_topics, fetch_metadata_check_allow_auto_creation,
    is_allow_auto_topic_creation, is_default_topic_type_partitioned, stored_topics, topic_existence,
)
from pulsar_naming.names import TopicName

from tests.model.helpers import broker, name

T = TopicName.parse(name("t"))
PARTITIONED_2 = {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 2}


@pytest.mark.parametrize("broker_allow, override, allowed", [
    ("true", None, True),
    ("false", None, False),
    ("false", PARTITIONED_2, True),                                                   # override wins
    ("true", {"allowAutoTopicCreation": False, "topicType": "non-partitioned"}, False),  # override wins
])
def test_override_precedence_for_allow(broker_allow, override, allowed):
    state = broker({"allowAutoTopicCreation": broker_allow}, override=override)
    assert is_allow_auto_topic_creation(state, T) is allowed


def test_override_precedence_for_type_and_partitions():
    config = {"allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": "3"}
    assert is_default_topic_type_partitioned(broker(config), T)
    assert default_num_partitions(broker(config), T) == 3
    overridden = broker(config, override=PARTITIONED_2)
    assert default_num_partitions(overridden, T) == 2
    non_partitioned = broker(config, override={"allowAutoTopicCreation": True, "topicType": "non-partitioned"})
    assert not is_default_topic_type_partitioned(non_partitioned, T)
    # the override leaves the count unset, so the broker's value is used
    assert default_num_partitions(non_partitioned, T) == 3


def test_override_is_per_namespace():
    state = broker({"allowAutoTopicCreation": "false"}, override=PARTITIONED_2)
    elsewhere = TopicName.parse("persistent://public/default/t")
    assert not is_allow_auto_topic_creation(state, elsewhere)


@pytest.mark.parametrize("era, partitioned", [("pip344", False), ("pre-pip344", True)])
def test_dlq_and_retry_topics_are_never_partitioned_from_pip344_on(era, partitioned):
    state = broker({"allowAutoTopicCreationType": "partitioned"}, era=era)
    for suffix in ("-DLQ", "-RETRY"):
        assert is_default_topic_type_partitioned(state, TopicName.parse(name("sub" + suffix))) is partitioned


def test_existence_is_metadata_then_topic():
    state = broker(topics={"p": 3, "n": 0})
    assert topic_existence(state, TopicName.parse(name("p"))) == 3
    assert topic_existence(state, TopicName.parse(name("n"))) == 0
    assert topic_existence(state, TopicName.parse(name("absent"))) is None
    # admin-created persistent partitions exist as topics of their own
    assert topic_existence(state, TopicName.parse(name("p-partition-0"))) == 0


def test_fetch_creates_metadata_only():
    state = broker({"allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": "3"})
    new_state, partitions = fetch_metadata_check_allow_auto_creation(state, T)
    assert partitions == 3
    assert new_state.partition_count(T) == 3
    assert new_state.topics == state.topics  # no partition was created


@pytest.mark.parametrize("config, local", [
    ({"allowAutoTopicCreation": "false", "allowAutoTopicCreationType": "partitioned"}, "t"),
    ({"allowAutoTopicCreationType": "non-partitioned"}, "t"),
    ({"allowAutoTopicCreationType": "partitioned"}, "t-partition-1"),
])
def test_fetch_answers_zero_and_creates_nothing(config, local):
    state = broker(config)
    assert fetch_metadata_check_allow_auto_creation(state, TopicName.parse(name(local))) == (state, 0)


@pytest.mark.parametrize("config, refused", [
    ({"defaultNumPartitions": "0"}, Refused(500, "Default number of partitions should be more than 0")),
    ({"defaultNumPartitions": "5", "maxNumPartitionsPerPartitionedTopic": "4"},
     Refused(500, "Number of partitions should be less than or equal to 4")),
    ({"defaultNumPartitions": "5", "maxTopicsPerNamespace": "4"},
     Refused(409, "Exceed maximum number of topics in namespace.")),
])
def test_fetch_checks_creation_limits(config, refused):
    state = broker({"allowAutoTopicCreationType": "partitioned", **config})
    assert fetch_metadata_check_allow_auto_creation(state, T) == refused
    assert refused.binary == "ServiceNotReady"  # none of the three is a RestException


def test_non_persistent_topics_do_not_count_against_the_namespace_limit():
    state = broker({"maxTopicsPerNamespace": "1"})
    loaded = TopicName.parse(name("u").replace("persistent://", "non-persistent://"))
    state = state.with_topics(loaded)
    assert stored_topics(state, loaded.namespace_name, "non-persistent") == 0
    assert not exceeds_max_topics(state, loaded.partitioned_base, 1)
    assert exceeds_max_topics(state.with_topics(T), T, 1)
