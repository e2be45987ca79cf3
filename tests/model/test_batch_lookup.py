"""model/batch_lookup.py: PIP-35 batch lookup and its metamorphic relations, as the model answers them
(spec/pip35.md; docs/pip35-decisions.md C2-C7, C11)."""

import pytest
from hypothesis import given, settings, strategies as st

from model.batch_lookup import SELF, Answer, agreement, compare, resolve, too_big_message
from model.errors import ModelUsageError
from model.machine import apply, initial_state, run
from model.ops import (
    BatchEqualsSingles, BatchLookup, CreateNamespace, CreateNonPartitionedTopic, CreatePartitionedTopic,
    CreateTenant, Handshake, Lookup, SameOwnerEverywhere, op_from_json, op_to_json,
)
from model.outcomes import (
    Agreement, BatchLookupResult, FeatureFlag, LookupAnswer, RestError, ServerError, outcome_from_json,
    outcome_to_json,
)

NS = "public/b"
P = f"persistent://{NS}/"


def state(config=None, era="pip344"):
    s = initial_state(config, era)
    s, _ = run(s, [CreateTenant("public"), CreateNamespace(NS), CreatePartitionedTopic(P + "p", 3),
                   CreateNonPartitionedTopic(P + "a")])
    return s


def batch(topics, api="binary", config=None):
    return apply(state(config), BatchLookup(tuple(topics), api))[1]


def connect(topic, requested=None):
    return (topic, requested, "Connect", True, None)


def failed(topic, error):
    return (topic, None, "Failed", None, error)


def test_one_entry_per_topic_and_a_partitioned_name_expands_in_index_order():
    assert batch([P + "p", P + "a"]) == BatchLookupResult(
        (connect(P + "p-partition-0"), connect(P + "p-partition-1"), connect(P + "p-partition-2"), connect(P + "a")))


def test_duplicates_first_appearance_and_requested_for_other_spellings():
    got = batch([P + "a", P + "p-partition-1", "public/b/a", P + "p"])
    assert got.entries == (connect(P + "a"), connect(P + "p-partition-1"), connect(P + "p-partition-0"),
                           connect(P + "p-partition-2"))
    # a short spelling, not canonical: kept in requested (C4)
    assert batch(["public/b/p"]).entries[0] == connect(P + "p-partition-0", "public/b/p")


def test_invalid_names_missing_namespace_and_unknown_topics_are_per_entry():
    got = batch([P + "a", "public/b/x/y", "bogus://public/b/t", "persistent://public/nosuch/t", P + "never"])
    assert got.entries == (connect(P + "a"), failed("public/b/x/y", "InvalidTopicName"),
                           failed("bogus://public/b/t", "InvalidTopicName"),
                           failed("persistent://public/nosuch/t", "TopicNotFound"), connect(P + "never"))


def test_a_disabled_domain_resolves_as_its_single_lookup_does():
    got = batch([f"non-persistent://{NS}/np", P + "a"], config={"enableNonPersistentTopics": "false"})
    assert got.entries == (connect(f"non-persistent://{NS}/np"), connect(P + "a"))


def test_empty_batch_has_no_entries_on_both_apis():
    assert batch([]) == batch([], "rest") == BatchLookupResult(())


@pytest.mark.parametrize("topics, what, count", [
    ([P + "a"] * 4, "names", 4),
    ([P + "p", P + "a"], "topics after partition expansion", 4),
])
def test_too_big_is_the_whole_request(topics, what, count):
    config = {"maxBatchLookupTopics": "3"}
    message = too_big_message(count, 3, what)
    assert batch(topics, "binary", config) == ServerError("TooManyRequests", message)
    assert batch(topics, "rest", config) == RestError(413, message)
    assert "maxBatchLookupTopics=3" in message


def test_at_the_limit_is_answered():
    assert len(batch([P + "p"], config={"maxBatchLookupTopics": "3"}).entries) == 3


def test_rest_entries_are_sorted_binary_entries_keep_their_order():
    names = [P + "zz", P + "a", "bogus://x/y/z"]
    assert [e[0] for e in batch(names).entries] == [P + "zz", P + "a", "bogus://x/y/z"]
    assert [e[0] for e in batch(names, "rest").entries] == sorted([P + "zz", P + "a", "bogus://x/y/z"])


@pytest.mark.parametrize("auto_creation", ["true", "false"])
@settings(max_examples=60, deadline=None)
@given(names=st.lists(st.sampled_from([P + "a", P + "p", P + "p-partition-1", P + "p-partition-7", "public/b/a",
                                 "bad/x/y/z", "persistent://public/nosuch/q", f"non-persistent://{NS}/n",
                                 f"non-persistent://{NS}/p-partition-9", P + "never"]),
                max_size=10))
def test_every_entry_is_what_a_single_lookup_of_the_same_api_answers(names, auto_creation):
    """C6, as a property: the batch's entries are the single lookups of its distinct topics, binary
    LOOKUP for the binary batch and the REST lookup (its 404 as TopicNotFound) for the REST batch."""
    s = state({"allowAutoTopicCreation": auto_creation})
    for api in ("binary", "rest"):
        refusal, entries = resolve(s, names, api)
        assert refusal is None
        assert len({e.topic for e in entries}) == len(entries)
        for entry in entries:
            if entry.answer == LookupAnswer("Connect", True) or entry.answer.error != "InvalidTopicName":
                single = apply(s, Lookup(entry.topic, api))[1]
                if isinstance(single, RestError):
                    assert (single.status, single.reason) == (404, entry.answer.message)
                    assert entry.answer.error == "TopicNotFound"
                else:
                    assert single == entry.answer


def test_batch_equals_singles_agrees_on_binary_and_rest():
    topics = (P + "a", P + "p", P + "never", "public/b/x/y", "persistent://public/nosuch/t")
    for api in ("binary", "rest"):
        assert apply(state(), BatchEqualsSingles(topics, api))[1] == Agreement(True)


def test_the_rest_batch_checks_existence_as_the_rest_lookup_does_and_binary_does_not():
    s = state({"allowAutoTopicCreation": "false"})
    assert batch([P + "never", P + "a"], "rest", {"allowAutoTopicCreation": "false"}).entries == (
        connect(P + "a"), failed(P + "never", "TopicNotFound"))
    assert batch([P + "never"], "binary", {"allowAutoTopicCreation": "false"}).entries == (connect(P + "never"),)
    for api in ("rest", "binary"):
        assert apply(s, BatchEqualsSingles((P + "never", P + "a"), api))[1] == Agreement(True)


def test_same_owner_everywhere_holds_on_one_broker_unless_refused():
    assert apply(state(), SameOwnerEverywhere((P + "p",), "binary"))[1] == Agreement(True)
    refused = apply(state({"maxBatchLookupTopics": "1"}), SameOwnerEverywhere((P + "p",), "rest"))[1]
    assert refused == RestError(413, too_big_message(3, 1, "topics after partition expansion"))


@pytest.mark.parametrize("batch_side, single_side, why", [
    (Answer(owner="u1"), Answer(owner="u1"), None),
    (Answer(owner="u1"), Answer(owner="u2"), "batch owner u1, single owner u2"),
    (Answer(owner=SELF), Answer(status=404), "batch Connect, single HTTP 404"),
    (Answer(error="TopicNotFound", message="m"), Answer(status=404), None),
    (Answer(error="TopicNotFound", message="m"), Answer(status=503), "batch Failed TopicNotFound, single HTTP 503"),
    (Answer(error="X", message="m"), Answer(error="X", message="m"), None),
    (Answer(error="X", message="m"), Answer(error="X", message="n"), "batch Failed X 'm', single Failed X 'n'"),
    (Answer(error="X", message="m"), Answer(owner="u"), "batch Failed X, single Connect"),
])
def test_compare(batch_side, single_side, why):
    assert compare(batch_side, single_side) == why
    expected = Agreement(True) if why is None else Agreement(False, (f"t: {why}",))
    assert agreement([("t", batch_side, single_side)]) == expected


def test_flag_10_is_required_of_every_broker_and_flag_5_of_pip344_ones():
    """Field 10 is what this spec asks of any broker (PIP-35, ours); field 5 is PIP-344's."""
    old = initial_state(era="pre-pip344")
    for s in (state(), old):
        assert apply(s, Handshake("supports_batch_lookup"))[1] == FeatureFlag("supports_batch_lookup", True)
    flag5 = "supports_get_partitioned_metadata_without_auto_creation"
    assert apply(old, Handshake(flag5))[1] == FeatureFlag(flag5, False)


def test_the_client_api_is_refused():
    with pytest.raises(ModelUsageError, match="binary .* or rest"):
        apply(state(), BatchLookup((P + "a",), "client"))


def test_ops_and_outcomes_round_trip_through_json():
    for op in (BatchLookup((P + "a", "x"), "rest"), BatchEqualsSingles((), "binary"), SameOwnerEverywhere((P + "p",))):
        assert op_from_json(op_to_json(op)) == op
    for outcome in (batch([P + "p", "bad/x/y/z"]), Agreement(False, ("t: why",)), Agreement(True)):
        assert outcome_from_json(outcome_to_json(outcome)) == outcome


def test_the_limit_key_is_sent_only_when_set():
    from model.config import BrokerConfig

    assert "maxBatchLookupTopics" not in BrokerConfig().to_strings()
    assert BrokerConfig.from_strings({"maxBatchLookupTopics": "3"}).to_strings()["maxBatchLookupTopics"] == "3"
