"""model/java_client.py: the Java client's and admin client's PIP-344 rules."""

import pytest

from model.errors import ModelUsageError
from model.java_client import FEATURE_NOT_SUPPORTED, TOPIC_DOES_NOT_EXIST, java_client_exception
from model.machine import apply, initial_state, run
from model.ops import (CreateNamespace, CreateNonPartitionedTopic, CreatePartitionedTopic, CreateTenant,
                       JavaGetPartitionedTopicMetadata, JavaGetPartitionsForTopic, JavaProduceConsume,
                       ListPartitionedTopics)
from model.outcomes import ClientError, Delivered, PartitionList, Partitions, RestError, ServerError

NS = "public/j"
T = f"persistent://{NS}/t"
ALLOW_PARTITIONED = {"allowAutoTopicCreation": "true", "allowAutoTopicCreationType": "partitioned",
                     "defaultNumPartitions": "2"}


def state(era="pip344", broker=None, *setup):
    s, _ = run(initial_state(broker or {}, era), [CreateNamespace(NS), *setup])
    return s


def partitioned_names():
    return PartitionList((f"{T}-partition-0", f"{T}-partition-1"))


@pytest.mark.parametrize("transport", ["binary", "http"])
@pytest.mark.parametrize("flag", [None, True, False])
def test_existing_topics_answer_whatever_the_flag(transport, flag):
    assert apply(state("pip344", None, CreatePartitionedTopic(T, 2)), JavaGetPartitionsForTopic(T, flag, transport))[1] \
        == partitioned_names()
    assert apply(state("pip344", None, CreateNonPartitionedTopic(T)), JavaGetPartitionsForTopic(T, flag, transport))[1] \
        == PartitionList((T,))


def test_false_on_an_absent_topic_is_not_found_per_transport_and_creates_nothing():
    s = state("pip344", ALLOW_PARTITIONED)
    after, outcome = apply(s, JavaGetPartitionsForTopic(T, False, "binary"))
    assert outcome == TOPIC_DOES_NOT_EXIST and after == s
    after, outcome = apply(s, JavaGetPartitionsForTopic(T, False, "http"))
    assert outcome == ClientError("PulsarClientException.NotFoundException") and after == s


def test_the_one_argument_form_is_true():
    s = state("pip344", ALLOW_PARTITIONED)
    for transport in ("binary", "http"):
        one, two = apply(s, JavaGetPartitionsForTopic(T, None, transport)), apply(s, JavaGetPartitionsForTopic(T, True, transport))
        assert one == two and one[1] == partitioned_names()
        assert apply(one[0], ListPartitionedTopics(NS))[1].topics == {T}


def test_old_broker_binary_false_is_refused_before_anything_is_sent():
    s = state("pre-pip344", ALLOW_PARTITIONED, CreatePartitionedTopic(f"persistent://{NS}/p", 2))
    for topic in (T, f"persistent://{NS}/p"):
        after, outcome = apply(s, JavaGetPartitionsForTopic(topic, False, "binary"))
        assert outcome == FEATURE_NOT_SUPPORTED and after == s


def test_old_broker_http_false_is_not_found_and_creates_nothing():
    """An old broker's REST partitions call without checkAllowAutoCreation checks existence (observed
    on 3.0.2 and 3.2.3: 404), which the Java client reports as NotFoundException."""
    s = state("pre-pip344", ALLOW_PARTITIONED)
    after, outcome = apply(s, JavaGetPartitionsForTopic(T, False, "http"))
    assert outcome == ClientError("PulsarClientException.NotFoundException") and after == s


def test_old_broker_true_creates_as_before():
    after, outcome = apply(state("pre-pip344", ALLOW_PARTITIONED), JavaGetPartitionsForTopic(T, True, "binary"))
    assert outcome == partitioned_names() and apply(after, ListPartitionedTopics(NS))[1].topics == {T}


@pytest.mark.parametrize("sub_type", ["Exclusive", "Shared", "Failover"])
def test_produce_consume_delivers_each_message_once(sub_type):
    s = state("pip344", None, CreatePartitionedTopic(T, 2))
    assert apply(s, JavaProduceConsume(T, sub_type, 3, "binary"))[1] == Delivered(("m0", "m1", "m2"))


def test_produce_consume_refused_names_the_java_exception_per_transport():
    s = state("pip344", {"allowAutoTopicCreation": "false"})
    assert apply(s, JavaProduceConsume(T, "Exclusive", 3, "binary"))[1] == TOPIC_DOES_NOT_EXIST
    assert apply(s, JavaProduceConsume(T, "Exclusive", 3, "http"))[1] == ClientError("PulsarClientException.NotFoundException")
    with pytest.raises(ModelUsageError, match="sub_type"):
        apply(s, JavaProduceConsume(T, "Key_Failover", 3, "binary"))


def test_admin_never_asks_to_create():
    s = state("pip344", ALLOW_PARTITIONED)
    after, outcome = apply(s, JavaGetPartitionedTopicMetadata(T))
    assert outcome == ClientError("PulsarAdminException.NotFoundException") and after == s
    assert apply(state("pre-pip344", ALLOW_PARTITIONED), JavaGetPartitionedTopicMetadata(T))[1] == \
        ClientError("PulsarAdminException.NotFoundException")
    assert apply(state("pip344", None, CreatePartitionedTopic(T, 2)), JavaGetPartitionedTopicMetadata(T))[1] == Partitions(2)


def test_admin_on_a_missing_namespace_is_not_found():
    s, _ = run(initial_state({}, "pip344"), [CreateTenant("other")])
    assert apply(s, JavaGetPartitionedTopicMetadata("persistent://other/none/t"))[1] == \
        ClientError("PulsarAdminException.NotFoundException")


def test_unrecorded_answers_are_a_usage_error():
    assert java_client_exception("http", RestError(500, "x")) == ClientError("PulsarClientException")
    with pytest.raises(ModelUsageError, match="JAVA_CLIENT_EXCEPTIONS"):
        java_client_exception("binary", ServerError("ProducerBusy", ""))
