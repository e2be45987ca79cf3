"""model/cluster.py: what every broker of a cluster answers (spec/pip344_cluster.yaml, pip2_cluster.yaml)."""

from model.cluster import answer_elsewhere, as_pub_sub
from model.machine import initial_state
from model.ops import (GetPartitionedMetadata, Lookup, LookupAtNonOwner, PubSub, PubSubAcrossBrokers,
                       SameMetadataEverywhere, op_from_json, op_to_json)
from model.outcomes import LookupAnswer, Partitions, ServerError
from model.releases import parse_release
from tests.model.helpers import answer, broker, name


def test_every_broker_answers_the_metadata_the_one_broker_answers():
    state = broker(topics={"p": 3, "t": 0})
    for local in ("p", "t", "absent"):
        for api in ("binary", "rest"):
            for auto_create in (None, False, True):
                alone = answer(state, GetPartitionedMetadata(name(local), api, auto_create))
                assert answer(state, SameMetadataEverywhere(name(local), api, auto_create)) == alone
    assert answer(state, SameMetadataEverywhere(name("p"), "binary", False)) == Partitions(3)


def test_an_apache_pulsar_broker_names_the_owner_of_an_owned_bundle_with_connect():
    # TopicLookupBase#lookupTopicAsync@v4.0.7: an owned bundle's LookupResult is no redirect
    state = initial_state(None, "pip344", parse_release("4.0.7"))
    assert answer(state, LookupAtNonOwner("persistent://public/default/t")) == LookupAnswer("Connect", True)


def test_another_broker_is_held_to_the_authoritative_redirect_of_the_spec():
    # docs/pip35-decisions.md B6
    state = broker()  # the era's representative: no Apache Pulsar release, held to the current spec
    assert state.release is None and answer_elsewhere(state) == LookupAnswer("Redirect", True)


def test_a_lookup_the_one_broker_refuses_every_broker_refuses():
    state = broker()
    missing = "persistent://public/missing-ns/t"
    refused = answer(state, Lookup(missing))
    assert isinstance(refused, ServerError)
    assert answer(state, LookupAtNonOwner(missing)) == refused


def test_across_brokers_a_subscription_gets_what_it_gets_on_one_broker():
    state = broker(domain="non-persistent")
    op = PubSubAcrossBrokers(name("t", "non-persistent"), count=5)
    assert as_pub_sub(op) == PubSub(op.topic, consumers=(("sub", "Exclusive", 1000),), bursts=(5,))
    assert answer(state, op) == answer(state, as_pub_sub(op))


def test_the_operations_go_to_json_and_back():
    for op in (SameMetadataEverywhere("persistent://public/n/t", "rest", False), LookupAtNonOwner("persistent://public/n/t"),
               PubSubAcrossBrokers("non-persistent://public/n/t", 4)):
        assert op_from_json(op_to_json(op)) == op
