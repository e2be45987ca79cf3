"""reference_broker.config: Pulsar's broker.conf keys, typed parsing, conf files, overrides, dynamic keys."""

from __future__ import annotations

import pytest

from reference_broker.config import (
    CONFIG_KEYS,
    DYNAMIC_KEYS,
    BrokerConfig,
    build_config,
    load_conf_file,
    parse_conf_text,
)
from reference_broker.errors import BrokerError, ConfigError

PULSAR_DEFAULTS = {
    "clusterName": "standalone",
    "brokerServicePort": 6650,
    "webServicePort": 8080,
    "advertisedAddress": None,
    "allowAutoTopicCreation": True,
    "allowAutoTopicCreationType": "non-partitioned",
    "defaultNumPartitions": 1,
    "maxNumPartitionsPerPartitionedTopic": 0,
    "maxTopicsPerNamespace": 0,
    "maxConcurrentLookupRequest": 50000,
    "maxMessageSize": 5242880,
    "enablePersistentTopics": True,
    "enableNonPersistentTopics": True,
    "maxConcurrentNonPersistentMessagePerConnection": 1000,
    "keepAliveIntervalSeconds": 30,
    "metadataStoreUrl": "memory:",
}


@pytest.mark.parametrize("key,value", sorted(PULSAR_DEFAULTS.items()))
def test_defaults_are_pulsars(key, value):
    config = BrokerConfig()
    assert getattr(config, key) == value
    assert config.get(key) == value


def test_dynamic_keys_include_the_auto_creation_and_lookup_keys():
    for key in ("allowAutoTopicCreation", "allowAutoTopicCreationType", "defaultNumPartitions",
                "maxNumPartitionsPerPartitionedTopic", "maxTopicsPerNamespace", "maxConcurrentLookupRequest"):
        assert key in DYNAMIC_KEYS
    # PIP-2 keys are not dynamic (Pulsar's ServiceConfiguration)
    for key in ("enablePersistentTopics", "enableNonPersistentTopics", "maxConcurrentNonPersistentMessagePerConnection"):
        assert key not in DYNAMIC_KEYS


@pytest.mark.parametrize("key,text,expected", [
    ("allowAutoTopicCreation", "false", False),
    ("allowAutoTopicCreation", "TRUE", True),
    ("allowAutoTopicCreationType", "partitioned", "partitioned"),
    ("defaultNumPartitions", "3", 3),
    ("defaultNumPartitions", "0", 0),
    ("defaultNumPartitions", "-1", -1),
    ("brokerServicePort", "0", 0),
    ("advertisedAddress", "broker.example", "broker.example"),
    ("clusterName", " c1 ", "c1"),
    ("maxConcurrentLookupRequest", "0", 0),
])
def test_set_parses_typed_values(key, text, expected):
    config = BrokerConfig()
    config.set(key, text)
    assert config.get(key) == expected


def test_empty_value_means_default():
    config = BrokerConfig().apply_overrides(["defaultNumPartitions=4"])
    config.set("defaultNumPartitions", "")
    assert config.defaultNumPartitions == 1


@pytest.mark.parametrize("key,text,allowed", [
    ("allowAutoTopicCreation", "yes", "true or false"),
    ("allowAutoTopicCreationType", "PARTITIONED", "non-partitioned or partitioned"),
    ("defaultNumPartitions", "three", "an integer"),
    ("defaultNumPartitions", "2147483648", "an integer"),
    ("brokerServicePort", "70000", "0..65535"),
    ("maxMessageSize", "0", "an integer 1.."),
    ("maxConcurrentLookupRequest", "-1", "an integer 0.."),
])
def test_bad_value_names_key_value_and_what_is_allowed(key, text, allowed):
    with pytest.raises(ConfigError) as info:
        BrokerConfig().set(key, text)
    message = info.value.reason
    assert key in message and repr(text) in message and allowed in message
    assert isinstance(info.value, BrokerError) and info.value.http_status == 412


def test_unknown_key_suggests_the_close_one():
    with pytest.raises(ConfigError) as info:
        BrokerConfig().set("allowAutoTopicCreations", "true")
    assert "allowAutoTopicCreations" in info.value.reason
    assert "did you mean allowAutoTopicCreation?" in info.value.reason


def test_keyword_construction_is_type_checked():
    assert BrokerConfig(defaultNumPartitions=3).defaultNumPartitions == 3
    with pytest.raises(ConfigError):
        BrokerConfig(defaultNumPartitions="3")
    with pytest.raises(ConfigError):
        BrokerConfig(allowAutoTopicCreation=1)
    with pytest.raises(ConfigError):
        BrokerConfig(noSuchKey=1)


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError):
        BrokerConfig().noSuchKey  # noqa: B018


def test_apply_overrides():
    config = BrokerConfig().apply_overrides(["allowAutoTopicCreationType=partitioned", " defaultNumPartitions = 5"])
    assert (config.allowAutoTopicCreationType, config.defaultNumPartitions) == ("partitioned", 5)
    with pytest.raises(ConfigError, match="expected key=value"):
        BrokerConfig().apply_overrides(["allowAutoTopicCreation"])
    with pytest.raises(ConfigError, match="expected key=value"):
        BrokerConfig().apply_overrides(["=true"])


def test_load_conf_file(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "# Pulsar broker.conf excerpt\n"
        "\n"
        "clusterName=c1\n"
        "  # indented comment\n"
        "advertisedAddress=\n"
        "allowAutoTopicCreationType=partitioned\n"
        "defaultNumPartitions=3\n"
        "metadataStoreUrl=sqlite:/tmp/x.db\n",
        encoding="utf-8",
    )
    config = load_conf_file(conf, overrides=["defaultNumPartitions=4"])
    assert config.clusterName == "c1"
    assert config.advertisedAddress is None
    assert config.allowAutoTopicCreationType == "partitioned"
    assert config.defaultNumPartitions == 4  # overrides come after the file
    assert config.metadataStoreUrl == "sqlite:/tmp/x.db"  # only the first '=' splits


def test_conf_file_errors_name_file_and_line(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("clusterName=c1\nnotAKey=1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broker.conf:2: Unknown configuration key 'notAKey'"):
        load_conf_file(conf)
    conf.write_text("clusterName c1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r":1: expected key=value"):
        load_conf_file(conf)
    conf.write_text("allowAutoTopicCreation=maybe\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"allowAutoTopicCreation: expected true or false"):
        load_conf_file(conf)
    with pytest.raises(ConfigError, match="Cannot read configuration file"):
        load_conf_file(tmp_path / "missing.conf")


def test_parse_conf_text_checks_names_and_keeps_raw_values():
    with pytest.raises(ConfigError, match="x:1: Unknown configuration key"):
        parse_conf_text("a=b", source="x")
    assert parse_conf_text("defaultNumPartitions = 7 \n") == {"defaultNumPartitions": "7"}


def test_update_dynamic_and_reset():
    config = BrokerConfig().apply_overrides(["defaultNumPartitions=2"])
    config.update_dynamic("defaultNumPartitions", "5")
    assert config.defaultNumPartitions == 5
    config.update_dynamic("defaultNumPartitions", "6")
    config.reset_dynamic("defaultNumPartitions")
    assert config.defaultNumPartitions == 2  # back to the broker.conf value, not the first update


@pytest.mark.parametrize("key", ["clusterName", "enablePersistentTopics", "noSuchKey"])
def test_update_of_non_dynamic_or_unknown_key_is_refused(key):
    with pytest.raises(ConfigError, match="Can't update non-dynamic configuration") as info:
        BrokerConfig().update_dynamic(key, "x")
    assert info.value.reason == "Can't update non-dynamic configuration"  # BrokersBase, word for word
    with pytest.raises(ConfigError, match="Can't delete non-dynamic configuration"):
        BrokerConfig().reset_dynamic(key)


def test_update_with_bad_value_is_refused_and_changes_nothing():
    config = BrokerConfig()
    with pytest.raises(ConfigError, match="Invalid dynamic-config value 'maybe' for allowAutoTopicCreation"):
        config.update_dynamic("allowAutoTopicCreation", "maybe")
    assert config.allowAutoTopicCreation is True


def test_as_strings_uses_broker_conf_text():
    strings = BrokerConfig(allowAutoTopicCreation=False).as_strings()
    assert strings["allowAutoTopicCreation"] == "false"
    assert strings["defaultNumPartitions"] == "1"
    assert strings["advertisedAddress"] == ""
    assert set(strings) == set(CONFIG_KEYS)


def test_advertised_host():
    assert BrokerConfig().advertised_host == "127.0.0.1"
    assert BrokerConfig(bindAddress="0.0.0.0").advertised_host == "localhost"
    assert BrokerConfig(advertisedAddress="b1").advertised_host == "b1"


def test_build_config_for_the_cli(tmp_path):
    assert build_config().clusterName == "standalone"
    assert build_config(overrides=["defaultNumPartitions=2"]).defaultNumPartitions == 2
    conf = tmp_path / "broker.conf"
    conf.write_text("defaultNumPartitions=3\n", encoding="utf-8")
    assert build_config(conf, ["allowAutoTopicCreation=false"]).defaultNumPartitions == 3
    with pytest.raises(ConfigError, match="allowAutoTopicCreationz"):
        build_config(overrides=["allowAutoTopicCreationz=true"])
