"""model/client_libraries.py: PIP-344's client API through the Go client and the Rust crate."""

import pytest

from model import java_client
from model.errors import ModelUsageError
from model.machine import apply, initial_state, run
from model.ops import (CreateNamespace, CreatePartitionedTopic, JavaGetPartitionedTopicMetadata,
                       JavaGetPartitionsForTopic, JavaProduceConsume, ListPartitionedTopics)
from model.outcomes import ClientError, Delivered, PartitionList, Partitions, TopicList

NS = "public/l"
T = f"persistent://{NS}/t"
ALLOW_PARTITIONED = {"allowAutoTopicCreation": "true", "allowAutoTopicCreationType": "partitioned",
                     "defaultNumPartitions": "2"}
DISALLOW = {"allowAutoTopicCreation": "false"}


def state(era="pip344", broker=None, *setup):
    s, _ = run(initial_state(broker or {}, era), [CreateNamespace(NS), *setup])
    return s


@pytest.mark.parametrize("library", ["go", "rust"])
@pytest.mark.parametrize("era", ["pip344", "pre-pip344"])
def test_the_one_argument_lookup_asks_with_auto_creation_on_as_java_does(library, era):
    s = state(era, ALLOW_PARTITIONED)
    java = apply(s, JavaGetPartitionsForTopic(T, None, "binary"))
    assert apply(s, JavaGetPartitionsForTopic(T, None, "binary", library)) == java
    assert java[1] == PartitionList((f"{T}-partition-0", f"{T}-partition-1"))


def test_each_library_names_a_refusal_its_own_way():
    s = state("pip344", DISALLOW)
    assert apply(s, JavaGetPartitionsForTopic(T, None, "binary", "go"))[1] == ClientError("TopicNotFound")
    assert apply(s, JavaGetPartitionsForTopic(T, None, "http", "go"))[1] == ClientError("Code: 404")
    assert apply(s, JavaGetPartitionsForTopic(T, None, "binary", "rust"))[1] == \
        ClientError("ServiceDiscoveryError::Query(TopicNotFound)")
    assert apply(s, JavaProduceConsume(T, "Shared", 3, "binary", "go"))[1] == ClientError("TopicNotFound")
    assert apply(s, JavaGetPartitionedTopicMetadata(T, "go"))[1] == ClientError("code: 404")


def test_a_refused_attach_is_the_librarys_server_error():
    # a non-persistent partition name without its partitioned topic: the lookup answers 0, the attach is refused
    topic = f"non-persistent://{NS}/issue-partition-0"
    s = state("pip344")
    assert apply(s, JavaProduceConsume(topic, "Exclusive", 1, "binary", "go"))[1] == \
        ClientError("server error: NotAllowedError")
    assert apply(s, JavaProduceConsume(topic, "Exclusive", 1, "binary", "rust"))[1] == \
        ClientError("ConnectionError::PulsarError(NotAllowedError)")


@pytest.mark.parametrize("library", ["go", "rust"])
def test_a_call_the_library_lacks_is_answered_as_the_pip_defines_it(library):
    s = state("pip344", ALLOW_PARTITIONED)
    for op in (JavaGetPartitionsForTopic(T, False, "binary", library), JavaGetPartitionsForTopic(T, True, "http", library)):
        assert apply(s, op) == java_client.get_partitions_for_topic(s, JavaGetPartitionsForTopic(T, op.auto_create,
                                                                                                   op.transport))


def test_produce_consume_creates_what_the_lookup_creates():
    s = state("pip344", ALLOW_PARTITIONED)
    for library in ("go", "rust"):
        after, outcome = apply(s, JavaProduceConsume(T, "Failover", 3, "binary", library))
        assert outcome == Delivered(("m0", "m1", "m2"))
        assert apply(after, ListPartitionedTopics(NS))[1] == TopicList(frozenset({T}))


def test_the_go_admin_reads_without_creating_and_the_rust_crate_has_no_admin_call():
    s = state("pip344", ALLOW_PARTITIONED, CreatePartitionedTopic(T, 3))
    assert apply(s, JavaGetPartitionedTopicMetadata(T, "go"))[1] == Partitions(3)
    assert apply(s, JavaGetPartitionedTopicMetadata(T, "rust")) == apply(s, JavaGetPartitionedTopicMetadata(T))


def test_an_unknown_library_is_a_usage_error():
    with pytest.raises(ModelUsageError, match="library='cobol'"):
        apply(state(), JavaGetPartitionsForTopic(T, None, "binary", "cobol"))
