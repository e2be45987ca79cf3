import pytest

from model.errors import ModelUsageError
from model.machine import apply, initial_state
from model.ops import GetPartitionedMetadata, ListPartitionedTopics, ListTopics, Lookup
from model.outcomes import LookupAnswer, Partitions, RestError, ServerError, TopicList

from tests.model.helpers import NS, answer, broker, name

PART3 = {"allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": "3"}
NOT_FOUND_REST = RestError(404, "Topic persistent://public/ns1/t not found")
NOT_FOUND_BINARY = ServerError("TopicNotFound", "")


def gpm(local, api, auto_create=None, domain="persistent"):
    return GetPartitionedMetadata(name(local, domain), api, auto_create)


# -- PIP-344 era: Pulsar's PersistentTopicsBase/ServerCnx matrix ---------------------------------------------------------------------

@pytest.mark.parametrize("api", ["rest", "binary"])
@pytest.mark.parametrize("auto_create", [True, False, None])
@pytest.mark.parametrize("allow", ["true", "false"])
def test_existing_topics_answer_their_partitions(api, auto_create, allow):
    state = broker({"allowAutoTopicCreation": allow, **PART3}, topics={"p": 2, "n": 0})
    assert answer(state, gpm("p", api, auto_create)) == Partitions(2)
    assert answer(state, gpm("n", api, auto_create)) == Partitions(0)


@pytest.mark.parametrize("api", ["rest", "binary"])
def test_absent_topic_allowed_partitioned_creates_metadata_only(api):
    state = broker(PART3)
    new_state, outcome = apply(state, gpm("t", api, True))
    assert outcome == Partitions(3)
    assert answer(new_state, ListPartitionedTopics(NS)) == TopicList(frozenset({name("t")}))
    assert answer(new_state, ListTopics(NS)) == TopicList(frozenset())


@pytest.mark.parametrize("api", ["rest", "binary"])
@pytest.mark.parametrize("config, local", [
    ({}, "t"),                                    # non-partitioned default: nothing created
    (PART3, "x-partition-1"),                     # partition names never create metadata
    ({"allowAutoTopicCreationType": "non-partitioned"}, "x-partition-1"),
])
def test_absent_topic_answers_zero_and_creates_nothing(api, config, local):
    state = broker(config)
    assert apply(state, gpm(local, api, True)) == (state, Partitions(0))


@pytest.mark.parametrize("config, auto_create", [
    ({}, False),                                  # allowed but the param says no
    (PART3, False),
    ({"allowAutoTopicCreation": "false"}, True),  # the broker says no
    ({"allowAutoTopicCreation": "false"}, False),
])
def test_absent_topic_not_creatable_is_not_found(config, auto_create):
    state = broker(config)
    assert apply(state, gpm("t", "rest", auto_create)) == (state, NOT_FOUND_REST)
    assert apply(state, gpm("t", "binary", auto_create)) == (state, NOT_FOUND_BINARY)


def test_param_defaults_differ_per_api():
    # REST checkAllowAutoCreation defaults to false, binary field 6 to true (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync, Pulsar's ServerCnx.handlePartitionMetadataRequest)
    state = broker()
    assert answer(state, gpm("t", "rest")) == NOT_FOUND_REST
    assert answer(state, gpm("t", "binary")) == Partitions(0)


def test_non_persistent_topics_follow_the_same_rules():
    state = broker(PART3, topics={"n": 0}, domain="non-persistent")
    assert answer(state, gpm("n", "binary", False, "non-persistent")) == Partitions(0)
    assert answer(state, gpm("t", "binary", False, "non-persistent")) == NOT_FOUND_BINARY
    assert answer(state, gpm("t", "rest", True, "non-persistent")) == Partitions(3)


@pytest.mark.parametrize("era, rest, binary", [
    ("pip344", RestError(404, "Namespace not found"), ServerError("TopicNotFound", "Namespace not found")),
    ("pre-pip344", RestError(404, "Policies not found for public/gone namespace"),
     ServerError("MetadataError", "Policies not found for public/gone namespace")),
])
def test_missing_namespace_per_era(era, rest, binary):
    state = initial_state(era=era)
    topic = "persistent://public/gone/t"
    assert answer(state, GetPartitionedMetadata(topic, "rest", True)) == rest
    assert answer(state, GetPartitionedMetadata(topic, "binary", True)) == binary


def test_missing_namespace_without_auto_creation_is_an_empty_not_found():
    """ServerCnx#handlePartitionMetadataRequest (v4.0.7): field 6 false, or a broker that does not
    allow auto-creation, checks existence and answers TopicNotFound with no message."""
    assert answer(initial_state(), GetPartitionedMetadata("persistent://public/gone/t", "binary", False)) == \
        ServerError("TopicNotFound", "")
    assert answer(broker({"allowAutoTopicCreation": "false"}),
                  GetPartitionedMetadata("persistent://public/gone/t", "binary", True)) == ServerError("TopicNotFound", "")


def test_missing_tenant_answers_like_a_missing_namespace():
    state = initial_state()
    outcome = answer(state, GetPartitionedMetadata("persistent://nobody/ns/t", "binary", True))
    assert outcome == ServerError("TopicNotFound", "Namespace not found")


def test_creation_refused_maps_per_api():
    state = broker({**PART3, "maxNumPartitionsPerPartitionedTopic": "2"})
    message = "Number of partitions should be less than or equal to 2"
    assert answer(state, gpm("t", "rest", True)) == RestError(500, message)
    assert answer(state, gpm("t", "binary", True)) == ServerError("ServiceNotReady", message)
    limited = broker({**PART3, "maxTopicsPerNamespace": "2"})
    too_many = "Exceed maximum number of topics in namespace."
    assert answer(limited, gpm("t", "rest", True)) == RestError(409, too_many)
    assert answer(limited, gpm("t", "binary", True)) == ServerError("ServiceNotReady", too_many)


# -- pre-PIP-344 era: PIP-344's Background table -----------------------------------------------------

def test_old_broker_answers_zero_for_an_absent_topic_when_it_may_create():
    state = broker({"allowAutoTopicCreation": "false", **PART3}, era="pre-pip344")
    assert apply(state, gpm("t", "rest", True)) == (state, Partitions(0))
    assert apply(state, gpm("t", "binary", True)) == (state, Partitions(0))
    assert apply(state, gpm("t", "binary", False)) == (state, Partitions(0))  # field 6 ignored


def test_old_broker_rest_param_false_checks_existence_and_creates_nothing():
    """PersistentTopicsBase#internalGetPartitionedMetadataAsync at v3.0.2: 0 partitions without
    checkAllowAutoCreation runs internalCheckTopicExists (observed on 3.0.2 and 3.2.3)."""
    state = broker(PART3, era="pre-pip344")
    assert apply(state, gpm("t", "rest", False)) == (state, RestError(404, f"Topic persistent://{NS}/t not found"))
    existing = broker(PART3, topics={"t": 0}, era="pre-pip344")
    assert apply(existing, gpm("t", "rest", False))[1] == Partitions(0)


def test_old_broker_binary_ignores_field_6():
    state = broker(PART3, era="pre-pip344")
    new_state, outcome = apply(state, gpm("t", "binary", False))
    assert outcome == Partitions(3)
    assert new_state.partition_count(next(iter(new_state.partitioned))) == 3


def test_get_partitioned_metadata_through_the_client_is_refused():
    with pytest.raises(ModelUsageError, match="GetPartitionsForTopic"):
        apply(broker(), gpm("t", "client"))


# -- Lookup ---------------------------------------------------------------------------------------

CONNECT = LookupAnswer("Connect", True)


def test_lookup_rest_checks_existence_of_persistent_topics_only():
    state = broker({"allowAutoTopicCreation": "false"}, topics={"n": 0, "p": 2})
    assert answer(state, Lookup(name("t"), "rest")) == RestError(404, "Topic not found persistent://public/ns1/t")
    assert answer(state, Lookup(name("n"), "rest")) == CONNECT
    assert answer(state, Lookup(name("p"), "rest")) == CONNECT
    assert answer(state, Lookup(name("t", "non-persistent"), "rest")) == CONNECT
    assert answer(broker(), Lookup(name("t"), "rest")) == CONNECT


def test_lookup_binary_has_no_existence_check():
    state = broker({"allowAutoTopicCreation": "false"})
    assert answer(state, Lookup(name("t"), "binary")) == CONNECT


def test_lookup_missing_namespace():
    state = initial_state()
    assert answer(state, Lookup("persistent://public/gone/t", "rest")) == RestError(404, "Namespace not found")
    assert answer(state, Lookup("persistent://public/gone/t", "binary")) == ServerError("TopicNotFound", "Namespace not found")
    with pytest.raises(ModelUsageError):
        apply(state, Lookup(name("t"), "client"))
