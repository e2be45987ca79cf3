"""A broker seen through Apache Pulsar's proxy (model/proxy.py): the pair's release, the proxy's
behaviours by release, and the model's answers for each pair the suite runs (pulsar-proxy:P/B)."""

from __future__ import annotations

import pytest

from conformance.cases import cases_of
from model import releases
from model.errors import ModelUsageError
from model.machine import initial_state, run
from model.ops import (
    CreateNamespace, GetPartitionedMetadata, Handshake, JavaGetPartitionsForTopic, ListPartitionedTopics, ListTopics,
    Lookup)
from model.outcomes import (
    ClientError, FeatureFlag, LookupAnswer, Partitions, RestError, ServerError, TopicList, relayed_client_error)
from spec.schema import load_rows
from spec.versions import Proxied, parse_range, parse_release, release_text
from tests.model.helpers import NS, answer, name

FLAG5 = "supports_get_partitioned_metadata_without_auto_creation"
SAME = Proxied((4, 0, 7), (4, 0, 8))          # a 4.0.8 proxy in front of 4.0.7
NEW_PROXY_OLD_BROKER = Proxied((3, 0, 2), (4, 0, 8))
OLD_PROXY_NEW_BROKER = Proxied((4, 0, 7), (3, 0, 0))
PARTITIONED = {"allowAutoTopicCreation": "true", "allowAutoTopicCreationType": "partitioned",
               "defaultNumPartitions": "2"}
RELAYED_NOT_FOUND = ServerError("TopicNotFound", relayed_client_error(""))


def through(release, config=None, topics=()):
    """A state of ``release`` with namespace NS and topics {local: partitions}, made over REST."""
    from model.ops import CreateNonPartitionedTopic, CreatePartitionedTopic
    ops = [CreateNamespace(NS)] + [CreatePartitionedTopic(name(t), n) if n else CreateNonPartitionedTopic(name(t))
                                   for t, n in dict(topics).items()]
    state, _ = run(initial_state(config, "any", release), ops)
    return state


# -- the pair's release ---------------------------------------------------------------------------------

def test_a_pair_is_the_brokers_release_with_the_proxys_beside_it():
    pair = parse_release("3.0.2 via proxy 4.0.8")
    assert pair == NEW_PROXY_OLD_BROKER and tuple(pair) == (3, 0, 2) and pair.proxy == (4, 0, 8)
    assert release_text(pair) == "3.0.2 via proxy 4.0.8"
    assert pair != (3, 0, 2) and (3, 0, 2) != pair and pair != Proxied((3, 0, 2), (3, 0, 0))
    assert len({pair, (3, 0, 2), Proxied((3, 0, 2), (4, 0, 8))}) == 2
    assert parse_release("Pulsar Server4.0.8") == (4, 0, 8) and parse_release("3.0.2 via proxy x") is None


def test_every_range_applies_to_the_broker_and_via_proxy_to_pairs_only():
    assert NEW_PROXY_OLD_BROKER in parse_range("<3.0.6") and NEW_PROXY_OLD_BROKER in parse_range("=3.0.2")
    assert NEW_PROXY_OLD_BROKER not in parse_range(">=3.0.6 <3.1 | >=3.3.1")
    assert NEW_PROXY_OLD_BROKER in parse_range("<3.0.6 | >=3.1 <3.3.1 via proxy >=4.0")
    assert OLD_PROXY_NEW_BROKER not in parse_range("<3.0.6 | >=3.1 <3.3.1 via proxy >=4.0")
    assert OLD_PROXY_NEW_BROKER in parse_range("* via proxy <3.0.6")
    assert (4, 0, 7) not in parse_range("* via proxy *") and None not in parse_range("* via proxy *")
    assert SAME in parse_range("* via proxy *")


@pytest.mark.parametrize("text", ["via proxy *", "* via proxy ", "* via proxy * via proxy *", "* via proxy 4"])
def test_a_malformed_proxy_range_is_refused(text):
    with pytest.raises(ModelUsageError):
        releases.parse_range(text)


def test_the_era_is_the_brokers():
    assert releases.era_of(NEW_PROXY_OLD_BROKER) == "pre-pip344" and releases.era_of(OLD_PROXY_NEW_BROKER) == "pip344"


def test_proxy_behaviours_follow_the_proxys_release_and_no_proxy_has_none():
    assert releases.proxy_has(NEW_PROXY_OLD_BROKER, "proxy-advertises-flag5")
    assert not releases.proxy_has(OLD_PROXY_NEW_BROKER, "proxy-advertises-flag5")
    assert releases.proxy_has(SAME, "proxy-forwards-metadata-auto-creation")
    assert not releases.proxy_has((4, 0, 7), "proxy-advertises-flag5") and not releases.proxy_has(None, "proxy-advertises-flag5")
    with pytest.raises(ModelUsageError, match="unknown proxy behaviour"):
        releases.proxy_has(SAME, "no-such-thing")
    for name_, behaviour in releases.PROXY_BEHAVIOURS.items():
        assert behaviour.what and behaviour.evidence, name_


# -- what each pair answers -----------------------------------------------------------------------------

@pytest.mark.parametrize("release, advertised", [(SAME, True), (NEW_PROXY_OLD_BROKER, True),
                                                 (OLD_PROXY_NEW_BROKER, False)])
def test_connected_is_the_proxys_whatever_the_broker(release, advertised):
    assert answer(through(release), Handshake(FLAG5)) == FeatureFlag(FLAG5, advertised)


@pytest.mark.parametrize("release", [SAME, NEW_PROXY_OLD_BROKER])
def test_a_proxy_that_advertises_field_5_is_held_to_it_whatever_the_broker(release):
    """PIP-344's promise: field 6 false creates nothing and answers not found, relayed by the proxy."""
    state = through(release, PARTITIONED)
    state, got = run(state, [GetPartitionedMetadata(name("t"), "binary", False), ListPartitionedTopics(NS)])
    assert got == (RELAYED_NOT_FOUND, TopicList(frozenset()))


def test_a_proxy_without_field_5_promises_nothing_and_the_broker_reads_true():
    state = through(OLD_PROXY_NEW_BROKER, PARTITIONED)
    state, got = run(state, [GetPartitionedMetadata(name("t"), "binary", False), ListPartitionedTopics(NS)])
    assert got == (Partitions(2), TopicList(frozenset({name("t")})))


def test_an_old_proxy_relays_a_refusal_as_service_not_ready():
    state = through(OLD_PROXY_NEW_BROKER, {"allowAutoTopicCreation": "false"})
    assert answer(state, GetPartitionedMetadata(name("t"), "binary", False)) == \
        ServerError("ServiceNotReady", relayed_client_error(""))


def test_a_name_the_broker_refuses_is_relayed_where_the_proxys_own_parser_takes_it():
    blank = f"persistent://{NS}/ "  # refused from 4.0.2 on, an ordinary name at 3.0.0
    refused = answer(through((4, 0, 7)), GetPartitionedMetadata(blank, "binary", None))
    assert refused.error == "InvalidTopicName"
    # a 3.0.0 proxy asks the broker, and relays its refusal as ServiceNotReady (LookupProxyHandler at v3.0.0)
    assert answer(through(OLD_PROXY_NEW_BROKER), GetPartitionedMetadata(blank, "binary", None)) == \
        ServerError("ServiceNotReady", relayed_client_error(refused.message))
    # a 4.0.8 proxy refuses it itself (and closes the connection, a known divergence): the broker's refusal
    assert answer(through(SAME), GetPartitionedMetadata(blank, "binary", None)) == refused
    empty = f"persistent://{NS}/"  # every release refuses it
    assert answer(through(OLD_PROXY_NEW_BROKER), GetPartitionedMetadata(empty, "binary", None)) == \
        answer(through((4, 0, 7)), GetPartitionedMetadata(empty, "binary", None))


def test_field_6_true_through_a_new_proxy_is_the_old_brokers_own_answer():
    state = through(NEW_PROXY_OLD_BROKER, {"allowAutoTopicCreation": "false"})
    assert answer(state, GetPartitionedMetadata(name("t"), "binary", True)) == Partitions(0)  # pre-PIP-344
    assert answer(through(SAME, {"allowAutoTopicCreation": "false"}),
                  GetPartitionedMetadata(name("t"), "binary", True)) == RELAYED_NOT_FOUND


@pytest.mark.parametrize("release", [SAME, NEW_PROXY_OLD_BROKER, OLD_PROXY_NEW_BROKER])
def test_rest_through_the_web_port_is_the_brokers(release):
    proxied = answer(through(release, PARTITIONED), GetPartitionedMetadata(name("t"), "rest", False))
    direct = answer(through(tuple(release), PARTITIONED), GetPartitionedMetadata(name("t"), "rest", False))
    assert proxied == direct == RestError(404, f"Topic {name('t')} not found")


def test_a_lookup_refusal_is_relayed_as_service_not_ready_and_rest_is_untouched():
    state = through(SAME)
    missing = "persistent://public/missing-ns/t"
    direct = answer(through((4, 0, 7)), Lookup(missing, "binary"))
    assert isinstance(direct, ServerError)
    assert answer(state, Lookup(missing, "binary")) == ServerError("ServiceNotReady", relayed_client_error(direct.message))
    assert answer(state, Lookup(name("t"), "binary")) == LookupAnswer("Connect", True)
    assert answer(state, Lookup(missing, "rest")) == answer(through((4, 0, 7)), Lookup(missing, "rest"))
    listed = answer(state, ListTopics("public/missing-ns", "binary"))  # a broker's empty answer is no refusal
    assert listed == answer(through((4, 0, 7)), ListTopics("public/missing-ns", "binary"))


def test_the_java_client_refuses_false_where_the_proxy_has_no_field_5():
    op = JavaGetPartitionsForTopic(name("t"), False, "binary")
    assert answer(through(OLD_PROXY_NEW_BROKER), op) == ClientError("PulsarClientException.FeatureNotSupportedException")
    # the proxy advertises field 5, so the client asks; the promise is a not-found
    assert answer(through(NEW_PROXY_OLD_BROKER), op) == ClientError("PulsarClientException.TopicDoesNotExistException")


def test_without_a_proxy_nothing_changes():
    for release in [(4, 0, 7), (3, 0, 2), None]:
        state = through(release, PARTITIONED)
        assert answer(state, GetPartitionedMetadata(name("t"), "binary", False)) in (
            ServerError("TopicNotFound", ""), Partitions(2))


# -- the rows of spec/pip344_proxy.yaml, per pair ------------------------------------------------------------

ROWS = {row.id: row for row in load_rows() if row.id.startswith("pip344-proxy-")}


def _action(row_id, release):
    bound = cases_of(ROWS[row_id])[0].bind("public/p", release=release)
    return bound.action.expected, [step.expected for step in bound.observations]


def test_the_proxy_rows_judge_pairs_only():
    for row in ROWS.values():
        case = cases_of(row)[0]
        assert case.applies_to(SAME) is None and case.applies_to(OLD_PROXY_NEW_BROKER) is None
        assert case.applies_to((4, 0, 7)) and case.applies_to(None)


@pytest.mark.parametrize("release, expected", [
    (SAME, (RELAYED_NOT_FOUND, [TopicList(frozenset())])),
    (NEW_PROXY_OLD_BROKER, (RELAYED_NOT_FOUND, [TopicList(frozenset())])),
    (OLD_PROXY_NEW_BROKER, (Partitions(2), [TopicList(frozenset({"persistent://public/p/t"}))])),
])
def test_field_6_false_on_an_absent_partitioned_topic_per_pair(release, expected):
    assert _action("pip344-proxy-field6-003-absent-partitioned-nothing-created", release) == expected


@pytest.mark.parametrize("release", [SAME, NEW_PROXY_OLD_BROKER, OLD_PROXY_NEW_BROKER])
def test_rows_every_pair_answers_alike(release):
    assert _action("pip344-proxy-field6-005-existing-partitioned", release) == (Partitions(3), [])
    assert _action("pip344-proxy-rest-002-absent-partitioned-nothing-created", release) == (
        RestError(404, "Topic persistent://public/p/t not found"), [TopicList(frozenset())])
    assert _action("pip344-proxy-field6-004-param-true-partitioned-created", release) == (
        Partitions(2), [TopicList(frozenset({"persistent://public/p/t"}))])
