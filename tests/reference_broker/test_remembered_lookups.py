"""Remembered PARTITIONED_METADATA answers (core.py Rule 5, server.py Rule 6).

Each test changes the state through one path only (a raw store write, a config value, a
non-persistent topic loaded or unloaded), so a path that failed to make the remembered answers
stale fails its own test. Every answer is read back through the broker's binary protocol.
"""

from __future__ import annotations

import contextlib
import itertools
from unittest import mock

import pytest
from hypothesis import given, settings, strategies as st

from model.names import NamespaceName, TopicName
from reference_broker.core import ordinary_local_name
from reference_broker.metadata import layout, open_store
from reference_broker.protocol import events as ev

from .in_process import run


def counting_decisions(core, monkeypatch) -> list:
    calls = []
    decide = core.get_partitioned_metadata
    monkeypatch.setattr(core, "get_partitioned_metadata",
                        lambda topic, auto_create: calls.append(topic) or decide(topic, auto_create))
    return calls


def test_a_repeated_request_is_answered_from_memory_with_the_same_bytes(monkeypatch):
    def test(core, client):
        calls = counting_decisions(core, monkeypatch)
        core.create_partitioned_topic("persistent://public/default/p", 4)
        frame = client.request("persistent://public/default/p")  # sent twice, request id included
        answers = []
        for _ in range(2):
            client.transport.data.clear()
            client.protocol.data_received(frame)
            answers.append(bytes(client.transport.data))
        assert answers[0] == answers[1]
        assert len(calls) == 1
        assert core.remembered_answers == {(b"persistent://public/default/p", None): 4}
    run(test)


def test_field_6_as_sent_is_part_of_what_is_remembered(monkeypatch):
    def test(core, client):
        calls = counting_decisions(core, monkeypatch)
        topic = "persistent://public/default/absent"
        assert client.partitions(topic, False) == "TopicNotFound"
        assert client.partitions(topic, None) == 0  # absent means true; the default type is non-partitioned
        assert client.partitions(topic, True) == 0
        assert client.partitions(topic, None) == 0
        assert client.partitions(topic, True) == 0
        assert len(calls) == 3  # errors are not remembered; each shape of field 6 is decided once
    run(test)


def test_a_store_write_makes_the_answers_stale():
    def test(core, client):
        topic = TopicName.parse("persistent://public/default/late")
        assert client.partitions(str(topic)) == 0
        core.store.create(layout.partitioned_topic_path(topic), layout.encode_json({"partitions": 3}))
        assert client.partitions(str(topic)) == 3
        core.store.delete(layout.partitioned_topic_path(topic))
        assert client.partitions(str(topic)) == 0
    run(test)


def test_a_configuration_change_makes_the_answers_stale():
    def test(core, client):
        topic = "persistent://public/default/never-created"
        assert client.partitions(topic) == 0
        core.config.update_dynamic("allowAutoTopicCreation", "false")  # the config alone, no store write
        assert client.partitions(topic) == "TopicNotFound"
        core.config.reset_dynamic("allowAutoTopicCreation")
        assert client.partitions(topic) == 0
    run(test)


def test_loading_and_unloading_a_non_persistent_topic_makes_the_answers_stale():
    def test(core, client):
        topic = "non-persistent://public/default/live"
        core.mark_non_persistent_active(topic)
        assert client.partitions(topic, False) == 0
        core.mark_non_persistent_inactive(topic)
        assert client.partitions(topic, False) == "TopicNotFound"
    run(test)


def test_a_namespace_override_through_the_admin_api_makes_the_answers_stale():
    def test(core, client):
        topic = "persistent://public/default/by-override"
        assert client.partitions(topic) == 0
        core.set_auto_topic_creation_override("public/default", {"allowAutoTopicCreation": True,
                                                                  "topicType": "partitioned",
                                                                  "defaultNumPartitions": 2})
        assert client.partitions(topic) == 2  # auto-created now, as the override says
    run(test)


def test_nothing_is_remembered_on_a_store_another_process_may_write(tmp_path, monkeypatch):
    def test(core, client):
        calls = counting_decisions(core, monkeypatch)
        assert core.remembered_answers is None
        assert client.partitions("persistent://public/default/s") == 0
        assert client.partitions("persistent://public/default/s") == 0
        assert len(calls) == 2
    run(test, store=open_store(f"sqlite:{tmp_path / 'meta.db'}"))


def test_answers_keep_their_order_around_other_commands(monkeypatch):
    def test(core, client):
        calls = counting_decisions(core, monkeypatch)
        remembered = client.request("persistent://public/default/o")
        client.exchange(remembered)
        ping = client.conn.send(ev.Ping())
        other = client.request("persistent://public/default/other")
        answers = client.exchange(remembered + ping + remembered + other + remembered)
        assert [type(a).__name__ for a in answers] == ["PartitionedMetadataResponse", "Pong",
                                                       "PartitionedMetadataResponse",
                                                       "PartitionedMetadataResponse",
                                                       "PartitionedMetadataResponse"]
        assert len(calls) == 4  # the first decision, then everything after the PING went the full way
    run(test)


def test_a_frame_split_across_reads_is_answered_once_it_is_whole():
    def test(core, client):
        frame = client.request("persistent://public/default/split")
        client.exchange(frame)
        assert client.exchange(frame[:5]) == []
        [answer] = client.exchange(frame[5:])
        assert answer.partitions == 0 and answer.request_id == client.next_request_id
    run(test)


def test_the_memory_is_bounded(monkeypatch):
    monkeypatch.setattr("reference_broker.core.REMEMBERED_ANSWERS_LIMIT", 2)

    def test(core, client):
        for name in "abcde":
            assert client.partitions(f"persistent://public/default/{name}") == 0
            assert len(core.remembered_answers) <= 2
    run(test)


# --- answers for a whole namespace (core.py Rule 6) -----------------------------------------------

@pytest.mark.parametrize("local, ordinary", [
    (b"orders", True), (b"a.b_c~d-e9", True), (b"bench-lookup-fresh-0-17", True),
    (b"", False), (b"orders-partition-0", False), (b"orders-partition-x", False), (b"__change_events", False),
    (b"__anything", False), (b"orders-DLQ", False), (b"orders-RETRY", False), (b"with space", False),
    (b"caf\xc3\xa9", False), (b"a%2Fb", False), (b"a:b", False), (b"a/b", False),
])
def test_an_ordinary_local_name_is_its_own_path_segment_and_names_nothing_special(local, ordinary):
    assert ordinary_local_name(local) is ordinary


def test_an_ordinary_absent_name_answers_for_every_name_of_its_namespace(monkeypatch):
    def test(core, client):
        calls = counting_decisions(core, monkeypatch)
        writes = core.store.writes
        assert client.partitions("persistent://public/default/a") == 0
        others = ("b", "c.d", "e-f", "g-partition-3", "__change_events", "h-DLQ")
        assert [client.partitions(f"persistent://public/default/{name}") for name in others] == [0] * len(others)
        assert len(calls) == 1
        assert client.partitions("persistent://public/default/g", True) == 0  # field 6 as sent is part of it
        assert client.partitions("persistent://public/default/h", True) == 0
        assert len(calls) == 2
        assert core.store.writes == writes
        assert len(core.remembered_answers) == 2  # the names answered for their namespace are not kept one by one
    run(test)


def test_a_partitioned_topic_created_earlier_is_not_answered_for_its_namespace(monkeypatch):
    def test(core, client):
        core.create_partitioned_topic("persistent://public/default/p", 4)
        calls = counting_decisions(core, monkeypatch)
        assert client.partitions("persistent://public/default/a") == 0
        assert client.partitions("persistent://public/default/p") == 4
        assert len(calls) == 2
    run(test)


def test_a_partitioned_topic_created_after_the_namespace_answer_is_not_answered_for_it(monkeypatch):
    """The namespace answer reads which names are partitioned once; a creation must end it."""
    def test(core, client):
        assert client.partitions("persistent://public/default/a") == 0
        core.create_partitioned_topic("persistent://public/default/p", 3)
        calls = counting_decisions(core, monkeypatch)
        assert client.partitions("persistent://public/default/p") == 3
        assert client.partitions("persistent://public/default/p", True) == 3
        assert len(calls) == 2
    run(test)


def test_a_namespace_with_more_partitioned_topics_than_the_limit_keeps_no_answer(monkeypatch):
    monkeypatch.setattr("reference_broker.core.NAMESPACE_ANSWER_NAMES_LIMIT", 1)

    def test(core, client):
        for name in ("p", "q"):
            core.create_partitioned_topic(f"persistent://public/default/{name}", 2)
        calls = counting_decisions(core, monkeypatch)
        assert [client.partitions(f"persistent://public/default/{name}") for name in "abc"] == [0, 0, 0]
        assert len(calls) == 3  # each decided: none answered for its namespace
        assert client.partitions("persistent://public/default/q") == 2
        assert client.partitions("non-persistent://public/default/a") == 0  # no partitioned topic there
        assert client.partitions("non-persistent://public/default/b") == 0
        assert len(calls) == 5  # the other domain's namespace answer holds
    run(test)


@pytest.mark.parametrize("field6", [None, True, False])
def test_an_existing_non_partitioned_topic_answers_nothing_for_its_namespace(field6, monkeypatch):
    def test(core, client):
        core.create_non_partitioned_topic("persistent://public/default/np")
        calls = counting_decisions(core, monkeypatch)
        assert client.partitions("persistent://public/default/np", field6) == 0  # because it exists
        assert client.partitions("persistent://public/default/absent", field6) == (
            "TopicNotFound" if field6 is False else 0)
        assert len(calls) == 2
    run(test, allowAutoTopicCreationType="non-partitioned")


@pytest.mark.parametrize("topic, answer", [
    ("persistent://public/default/b%20c", 0),  # not its own path segment
    ("persistent://public/default/caf\u00e9", 0),
    ("public/default/b", 0),  # the same namespace spelled another way, kept apart
    ("non-persistent://public/default/b", 0),  # another domain
    ("persistent://public/missing/b", "TopicNotFound"),  # another namespace, one that does not exist
])
def test_other_names_are_decided(topic, answer, monkeypatch):
    def test(core, client):
        calls = counting_decisions(core, monkeypatch)
        assert client.partitions("persistent://public/default/a") == 0
        assert client.partitions(topic) == answer
        assert len(calls) == 2
    run(test)


@pytest.mark.parametrize("config, special", [
    ({"allowAutoTopicCreation": False}, "__change_events"),  # a system topic is created all the same
    ({"allowAutoTopicCreationType": "partitioned"}, "p-DLQ"),  # never partitioned
    ({"allowAutoTopicCreationType": "partitioned"}, "p-RETRY"),
    ({"allowAutoTopicCreationType": "partitioned"}, "made-partition-1"),  # a partition name creates nothing
])
def test_a_special_name_answered_0_answers_nothing_for_its_namespace(config, special, monkeypatch):
    def test(core, client):
        calls = counting_decisions(core, monkeypatch)
        assert client.partitions(f"persistent://public/default/{special}", True) == 0
        assert client.partitions("persistent://public/default/ordinary", True) == (
            "TopicNotFound" if config.get("allowAutoTopicCreation") is False else 1)
        assert len(calls) == 2
    run(test, **config)


def test_a_write_or_a_configuration_change_ends_the_namespace_answers():
    def test(core, client):
        path = layout.namespace_path(NamespaceName("public", "default"))
        policies = layout.decode_json(core.store.get(path)[0])
        assert client.partitions("persistent://public/default/a") == 0
        core.store.put(path, layout.encode_json({**policies, "autoTopicCreationOverride": {
            "allowAutoTopicCreation": False}}))  # a raw store write, as another broker would make it
        assert client.partitions("persistent://public/default/b") == "TopicNotFound"
        core.store.put(path, layout.encode_json(policies))
        assert client.partitions("persistent://public/default/c") == 0
        core.config.update_dynamic("allowAutoTopicCreationType", "partitioned")  # the config alone
        assert client.partitions("persistent://public/default/d") == 1  # created, defaultNumPartitions 1
    run(test)


# --- first requests the server reads itself (server.py Rule 6) ---------------------------------

def _invalid_utf8(frame: bytes) -> bytes:
    return frame.replace(b"/zz", b"/\xff\xfe")  # same length, so the frame stays well formed


FIRST_REQUESTS = {
    # name: (broker config, topic, field 6, change to the frame's bytes)
    "existing partitioned": ({}, "persistent://public/default/made", None, None),
    "absent, field 6 absent": ({}, "persistent://public/default/zz", None, None),
    "absent, field 6 true": ({}, "persistent://public/default/zz", True, None),
    "absent, field 6 false": ({}, "persistent://public/default/zz", False, None),
    "auto-created partitioned": ({"allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": 3},
                                 "persistent://public/default/zz", None, None),
    "creation refused": ({"allowAutoTopicCreation": False}, "persistent://public/default/zz", True, None),
    "missing namespace": ({}, "persistent://public/nowhere/zz", True, None),
    "invalid name": ({}, "persistent://public/default/a/b/zz", True, None),
    "non-persistent": ({}, "non-persistent://public/default/zz", None, None),
    "topic not UTF-8": ({}, "persistent://public/default/zz", True, _invalid_utf8),
}


def first_request_outcome(server_reads_lookups: bool, config: dict, topic: str, field6, change=None,
                          primer: str | None = None) -> dict:
    """What one broker answers and stores for ``topic`` as a first request, then a remembered one,
    in one read (after a request for ``primer`` when given); with ``server_reads_lookups`` off, the
    server leaves every request to the Connection. The broker holds a partitioned topic ``made``
    and a non-partitioned one ``kept``."""
    seen = {}

    def test(core, client):
        core.create_partitioned_topic("persistent://public/default/made", 4)
        core.create_non_partitioned_topic("persistent://public/default/kept")
        frame = client.request(topic, field6)
        frame = change(frame) if change else frame
        if primer is not None:
            frame = client.request(primer, field6) + frame
        client.transport.data.clear()
        client.protocol.data_received(frame + client.request("persistent://public/default/made"))
        seen["answer"] = bytes(client.transport.data)
        seen["partitioned"] = core.list_partitioned_topics("public/default", "persistent")
        seen["store writes"] = core.store.writes

    with contextlib.ExitStack() as patches:
        if not server_reads_lookups:
            patches.enter_context(mock.patch("reference_broker.server.read_partitioned_metadata",
                                             lambda data, start=0: None))
        run(test, **config)
    return seen


@pytest.mark.parametrize("name", FIRST_REQUESTS)
def test_a_first_request_the_server_reads_itself_answers_and_writes_what_the_connection_path_does(name):
    config, topic, field6, change = FIRST_REQUESTS[name]
    assert first_request_outcome(True, config, topic, field6, change) == \
        first_request_outcome(False, config, topic, field6, change)


@settings(max_examples=60, deadline=None)
@given(tenant=st.sampled_from(["public", "nobody", "bad tenant"]),
       namespace=st.sampled_from(["default", "absent"]),
       local=st.text(alphabet="ab-/:%é\u00a0", max_size=12) | st.sampled_from(["made", "made-partition-2", "x-partition-0"]),
       domain=st.sampled_from(["persistent://", "non-persistent://", ""]),
       field6=st.sampled_from([None, True, False]),
       partitioned_default=st.booleans())
def test_any_first_request_is_answered_and_stored_alike_on_both_paths(tenant, namespace, local, domain, field6,
                                                                     partitioned_default):
    topic = f"{domain}{tenant}/{namespace}/{local}"
    config = {"allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": 2} if partitioned_default else {}
    assert first_request_outcome(True, config, topic, field6) == first_request_outcome(False, config, topic, field6)


PRIMERS = ["primer", "kept", "made", "p-partition-1", "__change_events", "p-DLQ", "p-RETRY", "p%41", "p:q"]
CONFIGS = [{}, {"allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": 2},
           {"allowAutoTopicCreation": False}]
TARGETS = ["ab", "kept", "made", "made-partition-2", "x-RETRY", "__change_events", "a%b", "caf\u00e9", "primer"]


def test_every_request_after_another_of_its_namespace_is_answered_and_stored_alike_on_both_paths():
    """core.py Rule 6, every primer, configuration, field 6 and kind of second name: a name answered
    for its namespace gets what deciding it would give (729 pairs of runs, about a second)."""
    for primer, config, field6, local in itertools.product(PRIMERS, CONFIGS, [None, True, False], TARGETS):
        topic, first = f"persistent://public/default/{local}", f"persistent://public/default/{primer}"
        outcomes = [first_request_outcome(reads, config, topic, field6, primer=first) for reads in (True, False)]
        assert outcomes[0] == outcomes[1], (primer, config, field6, local)


@settings(max_examples=60, deadline=None)
@given(prefix=st.sampled_from(["persistent://public/default/", "non-persistent://public/default/",
                               "public/default/", "persistent://nobody/absent/"]),
       primer=st.sampled_from(PRIMERS),
       local=st.text(alphabet="ab-._~%:\u00e9", max_size=10),
       field6=st.sampled_from([None, True, False]),
       config=st.sampled_from(CONFIGS))
def test_any_request_after_another_of_its_namespace_is_answered_and_stored_alike_on_both_paths(
        prefix, primer, local, field6, config):
    outcomes = [first_request_outcome(reads, config, prefix + local, field6, primer=prefix + primer)
                for reads in (True, False)]
    assert outcomes[0] == outcomes[1]
