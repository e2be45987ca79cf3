import pytest

from model.errors import ModelUsageError
from model.machine import initial_state
from pulsar_naming.names import NamespaceName, TopicName
from model.state import FrozenMap, parse_namespace, parse_topic


def test_initial_state_is_pulsar_standalone():
    state = initial_state()
    assert state.clusters == {"standalone"}
    assert state.tenants == {"public"}
    assert set(state.namespaces) == {NamespaceName("public", "default")}
    assert not state.partitioned and not state.topics
    assert state.era == "pip344"


def test_state_is_a_hashable_value():
    assert initial_state() == initial_state()
    assert hash(initial_state()) == hash(initial_state())
    assert initial_state({"defaultNumPartitions": "2"}) != initial_state()


def test_changes_return_new_states():
    state = initial_state()
    topic = TopicName.parse("persistent://public/default/t")
    changed = state.with_partitioned_metadata(topic, 2).with_topics(topic.partition(0))
    assert state.partition_count(topic) == 0 and not state.topic_exists(topic.partition(0))
    assert changed.partition_count(topic) == 2 and changed.topic_exists(topic.partition(0))
    removed = changed.without_partitioned_topic(topic)
    assert removed.partition_count(topic) == 0 and not removed.topics
    one = changed.with_live(topic.partition(0), "stats").without_topic(topic.partition(0))
    assert one.partition_count(topic) == 2 and not one.topics and not one.live


def test_partitioned_metadata_needs_a_positive_count():
    with pytest.raises(ValueError, match="partitions > 0"):
        initial_state().with_partitioned_metadata(TopicName.parse("t"), 0)


def test_namespace_without_its_tenant_does_not_exist():
    ns = NamespaceName("gone", "ns")
    state = initial_state().with_namespace(ns, initial_state().policies(ns))
    assert not state.namespace_exists(ns)


def test_frozen_map_is_read_only_and_hashable():
    m = FrozenMap({"a": 1})
    assert m.set("b", 2) == {"a": 1, "b": 2} and m == {"a": 1}
    assert m.remove("a") == {}
    assert hash(m) == hash(FrozenMap({"a": 1}))
    with pytest.raises(TypeError):
        m["a"] = 2  # noqa


def test_invalid_names_are_usage_errors():
    with pytest.raises(ModelUsageError, match="v1 names"):
        parse_topic("persistent://t/cluster/ns/x")
    with pytest.raises(ModelUsageError, match="<tenant>/<namespace>"):
        parse_namespace("justone")
