import pytest

from model.errors import ModelUsageError
from model.machine import apply, initial_state, run
from model.ops import (
    CreateNamespace, CreateNonPartitionedTopic, CreatePartitionedTopic, CreateTenant, DeleteNamespace,
    DeletePartitionedTopic, DeleteTopic, GetPartitionedMetadata, ListPartitionedTopics, ListTopics, RemoveAutoTopicCreation,
    PubSub, SetAutoTopicCreation, SetBrokerConfig,
)
from model.outcomes import Done, Partitions, RestError, ServerError, TopicList

from tests.model.helpers import NS, answer, broker, name

DONE = Done()


def test_set_broker_config():
    state, outcome = apply(initial_state(), SetBrokerConfig("allowAutoTopicCreation", "false"))
    assert outcome == DONE and state.config.allowAutoTopicCreation is False
    unknown = apply(initial_state(), SetBrokerConfig("brokerServicePort", "6651"))
    assert unknown == (initial_state(), RestError(412, "Can't update non-dynamic configuration"))
    with pytest.raises(ModelUsageError, match="decimal integer"):
        apply(initial_state(), SetBrokerConfig("defaultNumPartitions", "two"))


def test_a_dynamic_update_lowers_the_default_partitions_to_the_maximum():
    state, _ = apply(initial_state(), SetBrokerConfig("defaultNumPartitions", "5"))
    state, _ = apply(state, SetBrokerConfig("maxNumPartitionsPerPartitionedTopic", "4"))
    assert state.config.defaultNumPartitions == 4
    state, _ = apply(state, SetBrokerConfig("defaultNumPartitions", "6"))
    assert state.config.defaultNumPartitions == 4
    # broker.conf keeps both as written: the rows' setup.broker
    assert broker({"defaultNumPartitions": "6", "maxNumPartitionsPerPartitionedTopic": "4"}).config.defaultNumPartitions == 6


def test_tenants():
    state, outcomes = run(initial_state(), [CreateTenant("acme"), CreateTenant("acme"), CreateTenant("public"),
                                            CreateTenant("bad/name")])
    assert outcomes == (DONE, RestError(409, "Tenant already exists"), RestError(409, "Tenant already exists"),
                        RestError(412, "Tenant name is not valid"))
    assert "acme" in state.tenants


def test_namespaces():
    _, outcomes = run(initial_state(), [
        CreateNamespace("nobody/ns"), CreateNamespace("public/ns"), CreateNamespace("public/ns"),
        CreateNamespace("public/default"), CreateNamespace("public/a/b"),
        DeleteNamespace("public/ns"), DeleteNamespace("public/ns")])
    assert outcomes == (
        RestError(404, "Tenant does not exist"), DONE, RestError(409, "Namespace already exists"),
        RestError(409, "Namespace already exists"), RestError(412, "Namespace name is not valid"),
        DONE, RestError(404, "Namespace does not exist"))


def test_namespace_created_with_an_override_policy():
    body = (("autoTopicCreationOverride", {"allowAutoTopicCreation": True, "topicType": "partitioned",
                                           "defaultNumPartitions": 2}),)
    state, outcome = apply(initial_state(), CreateNamespace(NS, body))
    assert outcome == DONE
    assert answer(state, GetPartitionedMetadata(name("t"), "rest", True)) == Partitions(2)
    with pytest.raises(ModelUsageError, match="not modelled"):
        apply(initial_state(), CreateNamespace(NS, (("retention_policies", {}),)))


def test_delete_non_empty_namespace():
    state = broker(topics={"t": 0})
    assert answer(state, DeleteNamespace(NS)) == RestError(409, "Cannot delete non empty namespace")


@pytest.mark.parametrize("op, outcome", [
    (SetAutoTopicCreation(NS, True, "partitioned", 2), DONE),
    (SetAutoTopicCreation(NS, False, "whatever"), DONE),
    (SetAutoTopicCreation(NS, True, "partitioned"), RestError(
        412, "Invalid configuration for autoTopicCreationOverride. the detail is "
             "[defaultNumPartitions] cannot be null when the type is partitioned.")),
    (SetAutoTopicCreation(NS, True, "sometimes"), RestError(
        412, "Invalid configuration for autoTopicCreationOverride. the detail is Unknown topic type [sometimes]")),
    (SetAutoTopicCreation(NS, True, "partitioned", 5), RestError(406, "Number of partitions should be less than or equal to 4")),
    (SetAutoTopicCreation("public/gone", True, "non-partitioned"), RestError(404, "Namespace does not exist")),
    (RemoveAutoTopicCreation("public/gone"), RestError(404, "Namespace does not exist")),
])
def test_override_validation(op, outcome):
    state = broker({"maxNumPartitionsPerPartitionedTopic": "4"})
    assert answer(state, op) == outcome


@pytest.mark.parametrize("era, status", [("pip344", 412), ("pre-pip344", 412)])
def test_invalid_override_status_per_era(era, status):
    """412 in every release (NamespacesBase at v3.0.2 .. v4.2.4, observed on 3.0.7, 4.0.7 and 4.2.4),
    also for an invalid override in a CreateNamespace body."""
    invalid = SetAutoTopicCreation(NS, True, "non-partitioned", 2)
    reason = ("Invalid configuration for autoTopicCreationOverride. the detail is "
              "[defaultNumPartitions] is not allowed to be set when the type is non-partition.")
    assert answer(broker(era=era), invalid) == RestError(status, reason)
    body = (("autoTopicCreationOverride", {"allowAutoTopicCreation": True, "topicType": "partitioned",
                                           "defaultNumPartitions": 0}),)
    assert answer(initial_state(era=era), CreateNamespace(NS, body)).status == status


def test_remove_override_restores_broker_config():
    state = broker({"allowAutoTopicCreation": "false"},
                   override={"allowAutoTopicCreation": True, "topicType": "non-partitioned"})
    assert answer(state, GetPartitionedMetadata(name("t"), "binary", True)) == Partitions(0)
    state, outcome = apply(state, RemoveAutoTopicCreation(NS))
    assert outcome == DONE
    assert answer(state, GetPartitionedMetadata(name("t"), "binary", True)).error == "TopicNotFound"


@pytest.mark.parametrize("op, outcome", [
    (CreatePartitionedTopic(name("t"), 0), RestError(406, "Number of partitions should be more than 0")),
    (CreatePartitionedTopic(name("t"), -1), RestError(406, "Number of partitions should be more than 0")),
    (CreatePartitionedTopic(name("t"), 9), RestError(406, "Number of partitions should be less than or equal to 8")),
    (CreatePartitionedTopic(name("x-partition-0"), 2), RestError(412, "Partitioned Topic Name should not contain '-partition-'")),
    (CreatePartitionedTopic(name("p"), 2), RestError(409, "This topic already exists")),
    (CreatePartitionedTopic(name("n"), 2), RestError(409, "This topic already exists")),
    (CreatePartitionedTopic("persistent://public/gone/t", 2), RestError(404, "Namespace not found")),
    (CreateNonPartitionedTopic(name("p")), RestError(409, "This topic already exists")),
    (CreateNonPartitionedTopic(name("n")), RestError(409, "This topic already exists")),
    (CreateNonPartitionedTopic("persistent://public/gone/t"), RestError(404, "Namespace not found")),
    (CreatePartitionedTopic("persistent://public/gone/t-partition-0", 2), RestError(404, "Namespace not found")),
    (DeletePartitionedTopic(name("n")), RestError(
        409, "persistent://public/ns1/n is a non-partitioned topic. Instead of calling delete-partitioned-topic "
             "please call delete.")),
    (DeletePartitionedTopic(name("zz")), RestError(404, "Topic persistent://public/ns1/zz not found.")),
    (DeletePartitionedTopic("persistent://public/gone/t-partition-0"),
     RestError(412, "Partitioned Topic Name should not contain '-partition-'")),
    (DeletePartitionedTopic("persistent://public/gone/t"), RestError(404, "Namespace not found")),
])
def test_topic_creation_errors(op, outcome):
    state = broker({"maxNumPartitionsPerPartitionedTopic": "8"}, topics={"p": 3, "n": 0})
    assert apply(state, op) == (state, outcome)


@pytest.mark.parametrize("local", ["n", "zz"])
def test_delete_of_absent_partitioned_topic_before_pip344(local):
    """Before apache/pulsar PR #23002 (3.0.6, 3.2.4, 3.3.1) the delete failed on the absent metadata."""
    state = broker(era="pre-pip344", topics={"n": 0})
    assert answer(state, DeletePartitionedTopic(name(local))) == RestError(
        404, f"Partitioned Topic persistent://public/ns1/{local} not found")


def test_topic_creation_after_metadata_only_auto_creation_conflicts():
    state = broker({"allowAutoTopicCreationType": "partitioned"})
    state, _ = apply(state, GetPartitionedMetadata(name("t"), "rest", True))
    assert answer(state, CreatePartitionedTopic(name("t"), 2)) == RestError(409, "This topic already exists")


def test_max_topics_per_namespace_on_partitioned_creation():
    state = broker({"maxTopicsPerNamespace": "3"})
    assert answer(state, CreatePartitionedTopic(name("t"), 4)) == RestError(412, "Exceed maximum number of topics in namespace.")
    assert answer(state, CreatePartitionedTopic(name("t"), 3)) == DONE


def test_max_topics_per_namespace_on_non_partitioned_creation():
    too_many = RestError(409, "Exceed maximum number of topics in namespace.")
    assert answer(broker({"maxTopicsPerNamespace": "2"}, topics={"p": 2}), CreateNonPartitionedTopic(name("t"))) == too_many
    assert answer(broker({"maxTopicsPerNamespace": "2"}, topics={"u": 0}), CreateNonPartitionedTopic(name("t"))) == DONE
    # existence answers first
    assert answer(broker({"maxTopicsPerNamespace": "1"}, topics={"u": 0}), CreateNonPartitionedTopic(name("u"))) \
        == RestError(409, "This topic already exists")


def test_the_namespace_policy_replaces_the_brokers_topic_limit():
    def create(broker_config, limit, partitions):
        state, outcome = apply(broker(broker_config), CreateNamespace("public/limited", {"max_topics_per_namespace": limit}))
        assert outcome == DONE
        return answer(state, CreatePartitionedTopic("persistent://public/limited/t", partitions))
    too_many = RestError(412, "Exceed maximum number of topics in namespace.")
    assert create({}, 2, 2) == DONE
    assert create({}, 2, 3) == too_many
    assert create({"maxTopicsPerNamespace": "1"}, 3, 2) == DONE
    assert create({"maxTopicsPerNamespace": "1"}, 0, 2) == DONE  # 0 lifts the broker's limit
    assert create({"maxTopicsPerNamespace": "1"}, None, 2) == too_many


def test_non_persistent_topics_are_not_counted():
    state = broker({"maxTopicsPerNamespace": "1"}, topics={"u": 0}, domain="non-persistent")
    assert answer(state, CreatePartitionedTopic(name("t", "non-persistent"), 1)) == DONE
    assert answer(state, CreateNonPartitionedTopic(name("t", "non-persistent"))) == DONE


def test_admin_partitioned_creation_creates_persistent_partitions_only():
    state = broker(topics={"p": 2})
    assert answer(state, ListTopics(NS)) == TopicList(frozenset({name("p-partition-0"), name("p-partition-1")}))
    np_state = broker(topics={"p": 2}, domain="non-persistent")
    assert answer(np_state, ListTopics(NS, domain="non-persistent")) == TopicList(frozenset())
    assert answer(np_state, ListPartitionedTopics(NS, "non-persistent")) == TopicList(frozenset({name("p", "non-persistent")}))


def test_delete_partitioned_topic_removes_metadata_and_partitions():
    state, outcome = apply(broker(topics={"p": 2, "n": 0}), DeletePartitionedTopic(name("p")))
    assert outcome == DONE
    assert answer(state, ListPartitionedTopics(NS)) == TopicList(frozenset())
    assert answer(state, ListTopics(NS)) == TopicList(frozenset({name("n")}))


PARTITIONED_AS_TOPIC = ("{} is a partitioned topic, instead of calling delete topic, please call "
                        "delete-partitioned-topic.")


@pytest.mark.parametrize("op,outcome", [
    (DeleteTopic(name("p")), RestError(409, PARTITIONED_AS_TOPIC.format(name("p")))),
    (DeleteTopic(name("one")), RestError(409, PARTITIONED_AS_TOPIC.format(name("one")))),
    (DeleteTopic(name("zz")), RestError(404, f"Topic {name('zz')} not found")),
    (DeleteTopic(name("p-partition-2")), RestError(404, f"Topic {name('p-partition-2')} not found")),
    (DeleteTopic(name("zz", "non-persistent")), DONE),  # nothing loaded, nothing stored
    (DeleteTopic("non-persistent://public/gone/t"), DONE),
    (DeleteTopic("persistent://public/gone/t"), RestError(404, "Topic persistent://public/gone/t not found")),
])
def test_delete_topic_refusals(op, outcome):
    state = broker(topics={"p": 2, "one": 1, "n": 0})
    assert apply(state, op) == (state, outcome)


def test_delete_topic_removes_one_topic_or_one_partition():
    state, outcome = apply(broker(topics={"p": 2, "n": 0}), DeleteTopic(name("n")))
    assert outcome == DONE and answer(state, ListTopics(NS)) == TopicList(frozenset({name("p-partition-0"),
                                                                                    name("p-partition-1")}))
    assert answer(state, GetPartitionedMetadata(name("n"), "rest")) == RestError(404, f"Topic {name('n')} not found")
    state, outcome = apply(state, DeleteTopic(name("p-partition-0")))
    assert outcome == DONE and answer(state, ListTopics(NS)) == TopicList(frozenset({name("p-partition-1")}))
    assert answer(state, GetPartitionedMetadata(name("p"), "rest")) == Partitions(2)
    np_state, outcome = apply(broker(topics={"n": 0}, domain="non-persistent"), DeleteTopic(name("n", "non-persistent")))
    assert outcome == DONE and answer(np_state, ListTopics(NS, domain="non-persistent")) == TopicList(frozenset())


def test_delete_topic_in_a_missing_namespace_before_the_change_events_check():
    """apache/pulsar PR #24097 (3.0.11, 3.3.6, 4.0.4): 3.0.7 writes the policies' DELETE event anyway."""
    old = initial_state(release=(3, 0, 7))
    assert answer(old, DeleteTopic("persistent://public/gone/t")) == RestError(
        500, '{"errorMsg":"Namespace not found","reqId":<id>, "remote":"<address>", "local":"<address>"}')
    assert answer(old, DeleteTopic("non-persistent://public/gone/t")) == DONE
    assert answer(initial_state(release=(4, 0, 7)), DeleteTopic("persistent://public/gone/t")) == RestError(
        404, "Topic persistent://public/gone/t not found")


@pytest.mark.parametrize("release, persistent_words", [
    ((4, 0, 7), "Topic has 3 connected producers/consumers"),
    ((4, 2, 4), "Topic has 3 clients connected Including 2 consumers, 1 producers, and 0 replicators."),
])
def test_a_topic_in_use_is_not_deleted_in_the_words_of_its_release(release, persistent_words):
    """PersistentTopic#delete counts what is attached; the kinds are named from 4.2 (PR #24975),
    never by NonPersistentTopic#delete."""
    non_persistent_words = "Topic has 3 connected producers/consumers"
    for domain, words in (("persistent", persistent_words), ("non-persistent", non_persistent_words)):
        state, _ = run(initial_state(release=release), [CreateNamespace(NS)])
        two_consumers = (("s", "Shared", 10), ("s", "Shared", 10))
        state, _ = apply(state, PubSub(name("t", domain), two_consumers, (1,)))
        assert answer(state, DeleteTopic(name("t", domain))) == RestError(412, words)
        state, _ = apply(initial_state(release=release), CreateNamespace(NS))
        state, _ = apply(state, PubSub(name("t", domain), two_consumers, (1,), close_after=True))
        assert answer(state, DeleteTopic(name("t", domain))) == DONE


def test_one_client_is_one_client():
    state = broker(era="pip344")
    state, _ = apply(state, PubSub(name("t"), (), ()))
    assert answer(state, DeleteTopic(name("t"))) == RestError(
        412, "Topic has 1 client connected Including 0 consumers, 1 producers, and 0 replicators.")


def test_deleting_a_partitioned_topic_with_a_partition_in_use_is_not_modelled():
    state = broker(topics={"p": 2})
    state, _ = apply(state, PubSub(name("p-partition-1"), (("s", "Exclusive", 10),), (1,)))
    with pytest.raises(ModelUsageError, match="still attached to a partition"):
        apply(state, DeletePartitionedTopic(name("p")))


def test_lists_per_api_and_domain():
    state = broker(topics={"n": 0, "p": 1})
    everything = TopicList(frozenset({name("n"), name("p-partition-0")}))
    assert answer(state, ListTopics(NS, "rest")) == everything
    assert answer(state, ListTopics(NS, "binary")) == everything
    assert answer(state, ListTopics(NS, "rest", "non-persistent")) == TopicList(frozenset())
    assert answer(state, ListPartitionedTopics(NS)) == TopicList(frozenset({name("p")}))
    assert answer(state, ListTopics("public/gone", "rest")) == RestError(404, "Namespace does not exist")
    assert answer(state, ListTopics("public/gone", "binary")) == TopicList(frozenset())
    assert answer(state, ListTopics("public/gone", "binary", "non-persistent")) == ServerError(
        "MetadataError", "org.apache.pulsar.broker.web.RestException: Namespace not found")
    old = broker(era="pre-pip344")
    assert answer(old, ListTopics("public/gone", "binary", "non-persistent")) == ServerError(
        "MetadataError", "org.apache.pulsar.broker.web.RestException: Policies not found for public/gone namespace")
    assert answer(state, ListPartitionedTopics("public/gone")) == RestError(404, "Namespace does not exist")
    with pytest.raises(ModelUsageError):
        apply(state, ListTopics(NS, "client"))


def test_partition_names_as_non_partitioned_topics_are_refused_unless_a_partition_of_that_number_exists():
    state = broker()
    assert answer(state, CreateNonPartitionedTopic(name("x-partition-0"))) == RestError(
        412, 'Can\'t create topic x-partition-0 with "-partition-" followed by numeric value if there isn\'t a '
             'partitioned topic x created.')
    state, _ = apply(state, CreatePartitionedTopic(name("x"), 2))
    assert answer(state, CreateNonPartitionedTopic(name("x-partition-2"))) == RestError(
        412, 'Can\'t create topic x-partition-2 with "-partition-" followed by a number smaller than number of '
             'partition of partitioned topic x')
    old, _ = run(initial_state(release=(3, 0, 7)), [CreateNamespace(NS), CreatePartitionedTopic(name("x"), 2)])
    assert "smaller then number" in answer(old, CreateNonPartitionedTopic(name("x-partition-5"))).reason
    assert answer(state, CreateNonPartitionedTopic(name("x-partition-z"))) == Done()  # not a number: a name
    with pytest.raises(ModelUsageError, match="does not follow for a partition name"):
        apply(state, CreateNonPartitionedTopic(name("x-partition-1")))
