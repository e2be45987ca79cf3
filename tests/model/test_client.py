import pytest

from model.client import CLIENT_EXCEPTIONS, client_exception
from model.errors import ModelUsageError
from model.machine import apply, initial_state
from model.ops import GetPartitionsForTopic, ListTopics, ProduceConsume
from model.outcomes import ClientError, Delivered, PartitionList, RestError, ServerError, TopicList

from tests.model.helpers import NS, answer, broker, name

PART2 = {"allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": "2"}


@pytest.mark.parametrize("transport", ["binary", "http"])
def test_partition_lists(transport):
    state = broker(PART2, topics={"n": 0, "p": 3})
    assert answer(state, GetPartitionsForTopic(name("n"), transport)) == PartitionList((name("n"),))
    assert answer(state, GetPartitionsForTopic(name("p"), transport)) == PartitionList(
        (name("p-partition-0"), name("p-partition-1"), name("p-partition-2")))


@pytest.mark.parametrize("transport", ["binary", "http"])
def test_the_client_always_asks_with_auto_creation(transport):
    state, outcome = apply(broker(PART2), GetPartitionsForTopic(name("t"), transport))
    assert outcome == PartitionList((name("t-partition-0"), name("t-partition-1")))
    assert state.partition_count(next(iter(state.partitioned))) == 2
    assert answer(broker(), GetPartitionsForTopic(name("t"), transport)) == PartitionList((name("t"),))


@pytest.mark.parametrize("era, transport, outcome", [
    ("pip344", "binary", ClientError("TopicNotFound")),
    ("pip344", "http", ClientError("ConnectError")),
    ("pre-pip344", "binary", PartitionList((name("t"),))),
    ("pre-pip344", "http", PartitionList((name("t"),))),
])
def test_absent_topic_broker_disallows(era, transport, outcome):
    state = broker({"allowAutoTopicCreation": "false"}, era=era)
    assert answer(state, GetPartitionsForTopic(name("t"), transport)) == outcome


def test_missing_namespace_through_the_client():
    state = initial_state(era="pre-pip344")
    # MetadataError is retried by the C++ client until its operation timeout
    assert answer(state, GetPartitionsForTopic("persistent://public/gone/t", "binary")) == ClientError("Timeout")
    assert answer(state, GetPartitionsForTopic("persistent://public/gone/t", "http")) == ClientError("ConnectError")


def test_exception_table():
    assert client_exception("binary", ServerError("TopicNotFound", "")) == ClientError("TopicNotFound")
    assert client_exception("http", RestError(404, "x")) == ClientError("ConnectError")
    assert set(CLIENT_EXCEPTIONS.values()) <= {"TopicNotFound", "AuthorizationError", "Timeout", "ConnectError"}
    with pytest.raises(ModelUsageError, match="CLIENT_EXCEPTIONS"):
        client_exception("binary", ServerError("ProducerBusy", ""))


def test_unknown_transport_is_a_usage_error():
    with pytest.raises(ModelUsageError, match="transport"):
        apply(broker(), GetPartitionsForTopic(name("t"), "smoke-signals"))


@pytest.mark.parametrize("transport", ["binary", "http"])
def test_produce_consume_creates_partitions_after_metadata(transport):
    state, outcome = apply(broker(PART2), ProduceConsume(name("t"), 3, transport))
    assert outcome == Delivered(("m0", "m1", "m2"))
    assert answer(state, ListTopics(NS)) == TopicList(frozenset({name("t-partition-0"), name("t-partition-1")}))


def test_produce_consume_creates_non_partitioned_topic():
    state, outcome = apply(broker(), ProduceConsume(name("t"), 1))
    assert outcome == Delivered(("m0",))
    assert answer(state, ListTopics(NS)) == TopicList(frozenset({name("t")}))


def test_produce_consume_when_creation_is_not_allowed():
    disallowed = broker({"allowAutoTopicCreation": "false"}, era="pre-pip344")
    assert apply(disallowed, ProduceConsume(name("t"))) == (disallowed, ClientError("TopicNotFound"))


def test_partitions_of_existing_partitioned_topics_are_always_creatable():
    state = broker({**PART2, "allowAutoTopicCreation": "false"}, topics={"p": 2}, domain="non-persistent", era="pre-pip344")
    new_state, outcome = apply(state, ProduceConsume(name("p", "non-persistent"), 2))
    assert outcome == Delivered(("m0", "m1"))
    assert answer(new_state, ListTopics(NS, domain="non-persistent")) == TopicList(
        frozenset({name("p-partition-0", "non-persistent"), name("p-partition-1", "non-persistent")}))
    # partition 5 of a 2-partition topic is not
    assert answer(state, ProduceConsume(name("p-partition-5", "non-persistent"))) == ClientError("TopicNotFound")


def test_produce_consume_count_must_not_be_negative():
    with pytest.raises(ModelUsageError, match="count"):
        apply(broker(), ProduceConsume(name("t"), -1))


def test_a_producer_may_not_create_a_topic_beyond_the_namespace_limit():
    full = broker({"maxTopicsPerNamespace": "1"}, topics={"u": 0})
    assert apply(full, ProduceConsume(name("t"), 1)) == (full, ClientError("NotAllowedError"))
    state, outcome = apply(broker({"maxTopicsPerNamespace": "2"}, topics={"u": 0}), ProduceConsume(name("t"), 1))
    assert outcome == Delivered(("m0",))
    assert answer(state, ListTopics(NS)) == TopicList(frozenset({name("u"), name("t")}))
    # non-persistent topics are never counted
    np_full = broker({"maxTopicsPerNamespace": "1"}, topics={"u": 0}, domain="non-persistent")
    assert apply(np_full, ProduceConsume(name("t", "non-persistent"), 1))[1] == Delivered(("m0",))
