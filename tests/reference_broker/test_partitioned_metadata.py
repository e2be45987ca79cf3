"""PARTITIONED_METADATA over the binary protocol: every request is decided on the state it finds.

Each test changes the state through one path only (a raw store write, a configuration value, a
non-persistent topic loaded or unloaded, the admin API) between two requests for the same name,
and reads both answers back through the broker's binary protocol. A broker that answered a
request from anything but the state at that moment fails the test of the path it missed.
"""

from __future__ import annotations

import pytest

from pulsar_naming.names import NamespaceName, TopicName
from reference_broker.metadata import layout, open_store
from pulsar_codec import events as ev

from .in_process import run


@pytest.mark.parametrize("field6, answer", [(None, 0), (True, 0), (False, "TopicNotFound")])
def test_field_6_as_sent_decides_for_an_absent_name(field6, answer):
    # An absent field 6 means true; the default topic type is non-partitioned, so nothing is created.
    run(lambda core, client: assert_answers(client, "persistent://public/default/absent", field6, [answer] * 2))


def assert_answers(client, topic, field6, answers):
    assert [client.partitions(topic, field6) for _ in answers] == answers


def test_a_store_write_is_seen_by_the_next_request():
    def test(core, client):
        topic = TopicName.parse("persistent://public/default/late")
        assert client.partitions(str(topic)) == 0
        core.store.create(layout.partitioned_topic_path(topic), layout.encode_json({"partitions": 3}))
        assert client.partitions(str(topic)) == 3
        core.store.delete(layout.partitioned_topic_path(topic))
        assert client.partitions(str(topic)) == 0
    run(test)


def test_a_configuration_change_is_seen_by_the_next_request():
    def test(core, client):
        topic = "persistent://public/default/never-created"
        assert client.partitions(topic) == 0
        core.config.update_dynamic("allowAutoTopicCreation", "false")  # the config alone, no store write
        assert client.partitions(topic) == "TopicNotFound"
        core.config.reset_dynamic("allowAutoTopicCreation")
        assert client.partitions(topic) == 0
        core.config.update_dynamic("allowAutoTopicCreationType", "partitioned")
        assert client.partitions(topic) == 1  # created now, defaultNumPartitions 1
    run(test)


def test_loading_and_unloading_a_non_persistent_topic_is_seen_by_the_next_request():
    def test(core, client):
        topic = "non-persistent://public/default/live"
        core.mark_non_persistent_active(topic)
        assert client.partitions(topic, False) == 0
        core.mark_non_persistent_inactive(topic)
        assert client.partitions(topic, False) == "TopicNotFound"
    run(test)


def test_a_namespace_override_is_seen_by_the_next_request():
    def test(core, client):
        topic = "persistent://public/default/by-override"
        assert client.partitions(topic) == 0
        core.set_auto_topic_creation_override("public/default", {"allowAutoTopicCreation": True,
                                                                  "topicType": "partitioned",
                                                                  "defaultNumPartitions": 2})
        assert client.partitions(topic) == 2  # auto-created now, as the override says
    run(test)


def test_policies_written_straight_to_the_store_are_seen_by_every_name_of_the_namespace():
    def test(core, client):
        path = layout.namespace_path(NamespaceName("public", "default"))
        policies = layout.decode_json(core.store.get(path)[0])
        assert client.partitions("persistent://public/default/a") == 0
        core.store.put(path, layout.encode_json({**policies, "autoTopicCreationOverride": {
            "allowAutoTopicCreation": False}}))  # a raw store write, as another broker would make it
        assert client.partitions("persistent://public/default/a") == "TopicNotFound"
        assert client.partitions("persistent://public/default/b") == "TopicNotFound"
        core.store.put(path, layout.encode_json(policies))
        assert client.partitions("persistent://public/default/c") == 0
    run(test)


def test_a_partitioned_topic_created_after_a_neighbour_was_answered_is_answered_itself():
    def test(core, client):
        assert client.partitions("persistent://public/default/a") == 0
        core.create_partitioned_topic("persistent://public/default/p", 3)
        assert client.partitions("persistent://public/default/p") == 3
        assert client.partitions("persistent://public/default/p", True) == 3
    run(test)


@pytest.mark.parametrize("topic, answer", [
    ("persistent://public/default/b%20c", 0),
    ("persistent://public/default/caf\u00e9", 0),
    ("public/default/b", 0),
    ("non-persistent://public/default/b", 0),
    ("persistent://public/missing/b", "TopicNotFound"),
    ("persistent://public/default/a/b", "InvalidTopicName"),
])
def test_every_spelling_and_namespace_is_decided_on_its_own(topic, answer):
    def test(core, client):
        assert client.partitions("persistent://public/default/a") == 0
        assert client.partitions(topic) == answer
    run(test)


def test_the_same_answers_on_a_store_another_process_may_write(tmp_path):
    def test(core, client):
        assert client.partitions("persistent://public/default/s") == 0
        core.create_partitioned_topic("persistent://public/default/s2", 2)
        assert client.partitions("persistent://public/default/s2") == 2
    run(test, store=open_store(f"sqlite:{tmp_path / 'meta.db'}"))


def test_answers_keep_their_order_around_other_commands():
    def test(core, client):
        first = client.request("persistent://public/default/o")
        ping = client.conn.send(ev.Ping())
        other = client.request("persistent://public/default/other")
        answers = client.exchange(first + ping + first + other)
        assert [type(a).__name__ for a in answers] == ["PartitionedMetadataResponse", "Pong",
                                                       "PartitionedMetadataResponse",
                                                       "PartitionedMetadataResponse"]
    run(test)


def test_a_frame_split_across_reads_is_answered_once_it_is_whole():
    def test(core, client):
        frame = client.request("persistent://public/default/split")
        assert client.exchange(frame[:5]) == []
        [answer] = client.exchange(frame[5:])
        assert answer.partitions == 0 and answer.request_id == client.next_request_id
    run(test)
