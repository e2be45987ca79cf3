import pytest

from model.config import (
    DYNAMIC_KEYS, KEYS, AutoTopicCreationOverride, BrokerConfig, validate_override,
)
from model.errors import ModelUsageError


def test_defaults_are_pulsars():
    assert BrokerConfig().to_strings() == {
        "allowAutoTopicCreation": "true",
        "allowAutoTopicCreationType": "non-partitioned",
        "defaultNumPartitions": "1",
        "maxNumPartitionsPerPartitionedTopic": "0",
        "maxTopicsPerNamespace": "0",
        # Pulsar's ServiceConfiguration (PIP-2)
        "enablePersistentTopics": "true",
        "enableNonPersistentTopics": "true",
        "maxConcurrentNonPersistentMessagePerConnection": "1000",
    }


def test_pip2_keys_are_not_dynamic():
    # Pulsar's ServiceConfiguration: "dynamic: no" for all three
    assert not {"enablePersistentTopics", "enableNonPersistentTopics",
                "maxConcurrentNonPersistentMessagePerConnection"} & DYNAMIC_KEYS


def test_from_strings_overlays_defaults():
    config = BrokerConfig.from_strings({"allowAutoTopicCreation": "FALSE", "defaultNumPartitions": "4"})
    assert config.allowAutoTopicCreation is False
    assert config.defaultNumPartitions == 4
    assert config.allowAutoTopicCreationType == "non-partitioned"


def test_round_trip_through_strings():
    config = BrokerConfig.from_strings({"allowAutoTopicCreationType": "partitioned", "maxTopicsPerNamespace": "9"})
    assert BrokerConfig.from_strings(config.to_strings()) == config


@pytest.mark.parametrize("key, value, hint", [
    ("allowAutoTopicCreations", "true", "Unknown broker config key 'allowAutoTopicCreations'"),
    ("allowAutoTopicCreation", "yes", "write 'true' or 'false'"),
    ("allowAutoTopicCreation", True, "values are strings as in broker.conf"),
    ("defaultNumPartitions", "three", "write a decimal integer"),
    ("allowAutoTopicCreationType", "PARTITIONED", "write one of non-partitioned, partitioned"),
])
def test_bad_key_or_value_is_a_usage_error_naming_the_fix(key, value, hint):
    with pytest.raises(ModelUsageError, match=hint):
        BrokerConfig.from_strings({key: value})


def test_dynamic_keys_are_known_keys():
    assert DYNAMIC_KEYS <= set(KEYS)
    assert {"allowAutoTopicCreation", "allowAutoTopicCreationType", "defaultNumPartitions"} <= DYNAMIC_KEYS


@pytest.mark.parametrize("override, detail", [
    (AutoTopicCreationOverride(True, "bogus"), "Unknown topic type [bogus]"),
    (AutoTopicCreationOverride(True, "partitioned"), "[defaultNumPartitions] cannot be null when the type is partitioned."),
    (AutoTopicCreationOverride(True, "partitioned", 0), "[defaultNumPartitions] cannot be less than 1 for partition type."),
    (AutoTopicCreationOverride(True, "non-partitioned", 2),
     "[defaultNumPartitions] is not allowed to be set when the type is non-partition."),
    (AutoTopicCreationOverride(True, "partitioned", 2), None),
    (AutoTopicCreationOverride(True, "non-partitioned"), None),
    # validated only when the override allows auto-creation (Pulsar's BrokerService/AutoTopicCreationOverrideImpl)
    (AutoTopicCreationOverride(False, "bogus", -1), None),
])
def test_override_validation_texts(override, detail):
    assert validate_override(override) == detail


def test_override_from_json_refuses_unknown_fields():
    assert AutoTopicCreationOverride.from_json({"allowAutoTopicCreation": True, "topicType": "partitioned",
                                                "defaultNumPartitions": 2}).defaultNumPartitions == 2
    with pytest.raises(ModelUsageError, match="write allowAutoTopicCreation"):
        AutoTopicCreationOverride.from_json({"allowAutoTopicCreation": True, "type": "partitioned"})
