"""reference_broker.core: boot, namespaces, the auto-creation decision, partitioned metadata, attach, lookup.

Rows of the facts' matrices are cited next to the tests that check them (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync, Pulsar's BrokerService/AutoTopicCreationOverrideImpl, Pulsar's GetPartitionMetadataTest, Pulsar's PersistentTopicsBase/ServerCnx).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pulsar_naming.names import TopicName
from reference_broker.config import BrokerConfig
from reference_broker.core import BrokerCore
from reference_broker.errors import (
    AlreadyExists,
    InvalidOverride,
    InvalidPolicies,
    InvalidTopicName,
    NamespaceNotFound,
    NotAllowed,
    NotEmpty,
    PartitionedTopicNotFound,
    TenantNotFound,
    TooManyRequests,
    TopicNotFound,
)
from reference_broker.metadata import layout, open_store
from reference_broker.metadata.memory import MemoryMetadataStore
from reference_broker.metadata.store import NodeExists

NS = "public/default"


def make_core(store=None, **config) -> BrokerCore:
    return BrokerCore(BrokerConfig(**config), store or MemoryMetadataStore())


@pytest.fixture
def core() -> BrokerCore:
    return make_core()


def partitioned_config(core: BrokerCore, allow: bool = True, partitions: int = 3) -> None:
    core.update_dynamic_config("allowAutoTopicCreation", "true" if allow else "false")
    core.update_dynamic_config("allowAutoTopicCreationType", "partitioned")
    core.update_dynamic_config("defaultNumPartitions", str(partitions))


def nothing_created(core: BrokerCore, name: str) -> bool:
    topic = TopicName.parse(name)
    base = topic.partitioned_base
    return (
        not core.store.exists(layout.partitioned_topic_path(topic))
        and not core.store.exists(layout.partitioned_topic_path(base))
        and not core.list_topics(NS, topic.domain)
    )


# --- boot (Testcontainers' PulsarContainer) ---------------------------------------------------------------------------


def test_boot_creates_standalone_cluster_public_tenant_and_default_namespace(core):
    assert core.list_clusters() == ["standalone"]
    assert core.list_tenants() == ["public"]
    assert core.list_namespaces("public") == ["public/default"]
    assert core.get_policies(NS)["replication_clusters"] == ["standalone"]
    assert core.get_tenant("public")["allowedClusters"] == ["standalone"]


def test_boot_is_idempotent_and_reopening_sqlite_keeps_state(tmp_path):
    url = f"sqlite:{tmp_path / 'meta.db'}"
    first = make_core(open_store(url))
    first.create_namespace("public/ns1")
    first.create_partitioned_topic("persistent://public/ns1/p", 2)
    first.update_dynamic_config("allowAutoTopicCreation", "false")
    first.close()
    second = make_core(open_store(url))
    assert second.list_namespaces("public") == ["public/default", "public/ns1"]
    assert second.get_partitioned_metadata("persistent://public/ns1/p", False) == 2
    assert second.config.allowAutoTopicCreation is False  # runtime update survives a restart
    assert second.dynamic_config_overrides() == {"allowAutoTopicCreation": "false"}
    second.close()


def test_boot_with_other_cluster_name():
    core = make_core(clusterName="c1")
    assert core.list_clusters() == ["c1"]
    assert core.get_policies(NS)["replication_clusters"] == ["c1"]


def test_service_urls_default_from_config_then_set():
    core = make_core(brokerServicePort=6651, webServicePort=8081, advertisedAddress="b1")
    assert core.lookup("t").broker_url == "pulsar://b1:6651"
    core.set_service_urls(broker_url="pulsar://127.0.0.1:1", web_url="http://127.0.0.1:2")
    result = core.lookup("t")
    assert (result.broker_url, result.http_url, result.authoritative) == ("pulsar://127.0.0.1:1", "http://127.0.0.1:2", True)
    assert core.get_cluster("standalone") == {"serviceUrl": "http://127.0.0.1:2", "brokerServiceUrl": "pulsar://127.0.0.1:1"}


# --- tenants and namespaces ----------------------------------------------------------------------


def test_tenants(core):
    core.create_tenant("t1")
    assert core.list_tenants() == ["public", "t1"]
    assert core.get_tenant("t1") == {"adminRoles": [], "allowedClusters": ["standalone"]}
    with pytest.raises(AlreadyExists, match="Tenant already exists"):
        core.create_tenant("t1")
    with pytest.raises(InvalidTopicName) as info:
        core.create_tenant("bad name")
    assert info.value.http_status == 412
    with pytest.raises(NotAllowed, match="Clusters do not exist"):
        core.create_tenant("t2", {"allowedClusters": ["nowhere"]})
    with pytest.raises(InvalidPolicies):
        core.create_tenant("t2", {"adminRoles": "root"})
    with pytest.raises(TenantNotFound, match="Tenant does not exist"):
        core.get_tenant("t9")
    core.create_namespace("t1/ns")
    with pytest.raises(NotEmpty):
        core.delete_tenant("t1")
    core.delete_namespace("t1/ns")
    core.delete_tenant("t1")
    assert core.list_tenants() == ["public"]


def test_namespaces(core):
    with pytest.raises(TenantNotFound) as info:
        core.create_namespace("nosuch/ns")
    assert info.value.http_status == 404
    core.create_namespace("public/ns1", {"someField": 5})
    assert core.get_policies("public/ns1") == {"deleted": False, "replication_clusters": ["standalone"], "someField": 5}
    with pytest.raises(AlreadyExists, match="Namespace already exists"):
        core.create_namespace("public/ns1")
    with pytest.raises(InvalidTopicName):
        core.create_namespace("public/bad ns")
    with pytest.raises(InvalidPolicies):
        core.create_namespace("public/ns2", ["not", "an", "object"])
    with pytest.raises(NotAllowed, match="Cluster nowhere does not exist"):
        core.create_namespace("public/ns2", {"replication_clusters": ["nowhere"]})
    with pytest.raises(NamespaceNotFound, match="Namespace does not exist"):
        core.get_policies("public/ns9")
    with pytest.raises(TenantNotFound):
        core.list_namespaces("nosuch")


@pytest.mark.parametrize("make_topic", [
    lambda core: core.create_non_partitioned_topic("persistent://public/ns/t"),
    lambda core: core.create_partitioned_topic("non-persistent://public/ns/p", 2),
    lambda core: core.ensure_topic_for_attach("non-persistent://public/ns/np"),
])
def test_delete_namespace_refuses_while_topics_exist(core, make_topic):
    core.create_namespace("public/ns")
    make_topic(core)
    with pytest.raises(NotEmpty, match="Cannot delete non empty namespace") as info:
        core.delete_namespace("public/ns")
    assert info.value.http_status == 409


def test_delete_namespace(core):
    core.create_namespace("public/ns")
    core.create_non_partitioned_topic("persistent://public/ns/t")
    core.delete_topic("persistent://public/ns/t")
    core.delete_namespace("public/ns")
    assert core.list_namespaces("public") == ["public/default"]
    assert core.store.children("/managed-ledgers/public") == []
    with pytest.raises(NamespaceNotFound):
        core.delete_namespace("public/ns")


# --- autoTopicCreationOverride validation (Pulsar's BrokerService/AutoTopicCreationOverrideImpl) --------------------------------------------

DETAIL = "Invalid configuration for autoTopicCreationOverride. the detail is "


@pytest.mark.parametrize("override,status,reason", [
    ({"allowAutoTopicCreation": True, "topicType": "bogus"}, 412, DETAIL + "Unknown topic type [bogus]"),
    ({"allowAutoTopicCreation": True}, 412, DETAIL + "Unknown topic type [null]"),
    ({"allowAutoTopicCreation": True, "topicType": "partitioned"}, 412,
     DETAIL + "[defaultNumPartitions] cannot be null when the type is partitioned."),
    ({"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 0}, 412,
     DETAIL + "[defaultNumPartitions] cannot be less than 1 for partition type."),
    ({"allowAutoTopicCreation": True, "topicType": "non-partitioned", "defaultNumPartitions": 2}, 412,
     DETAIL + "[defaultNumPartitions] is not allowed to be set when the type is non-partition."),
])
def test_override_validation_messages(core, override, status, reason):
    with pytest.raises(InvalidOverride) as info:
        core.set_auto_topic_creation_override(NS, override)
    assert (info.value.http_status, info.value.reason) == (status, reason)
    assert core.get_auto_topic_creation_override(NS) is None


def test_override_partitions_limited_by_max_num_partitions():
    core = make_core(maxNumPartitionsPerPartitionedTopic=4)
    with pytest.raises(NotAllowed) as info:
        core.set_auto_topic_creation_override(
            NS, {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 5})
    assert (info.value.http_status, info.value.reason) == (406, "Number of partitions should be less than or equal to 4")


def test_override_set_get_remove(core):
    # validation runs only when allowAutoTopicCreation is true
    core.set_auto_topic_creation_override(NS, {"allowAutoTopicCreation": False, "topicType": "bogus"})
    assert core.get_auto_topic_creation_override(NS) == {"allowAutoTopicCreation": False, "topicType": "bogus"}
    value = {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 2}
    core.set_auto_topic_creation_override(NS, value)
    assert core.get_auto_topic_creation_override(NS) == value
    assert core.get_policies(NS)["autoTopicCreationOverride"] == value
    core.remove_auto_topic_creation_override(NS)
    assert core.get_auto_topic_creation_override(NS) is None
    with pytest.raises(NamespaceNotFound, match="Namespace does not exist"):
        core.set_auto_topic_creation_override("public/nosuch", value)


def test_override_in_namespace_create_body_is_validated(core):
    with pytest.raises(InvalidOverride, match="Unknown topic type"):
        core.create_namespace("public/ns", {"autoTopicCreationOverride": {"allowAutoTopicCreation": True}})
    assert not core.namespace_exists("public/ns")
    core.create_namespace("public/ns", {"autoTopicCreationOverride": {
        "allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 2}})
    assert core.get_partitioned_metadata("persistent://public/ns/t", True) == 2


# --- the auto-creation decision (Pulsar's BrokerService/AutoTopicCreationOverrideImpl "How the broker decides") -----------------------------


@pytest.mark.parametrize("broker_allow,override,expected", [
    (True, None, True),
    (False, None, False),
    (True, {"allowAutoTopicCreation": False}, False),  # namespace first
    (False, {"allowAutoTopicCreation": True, "topicType": "non-partitioned"}, True),
])
def test_allow_decision_override_first_then_broker(broker_allow, override, expected):
    core = make_core(allowAutoTopicCreation=broker_allow)
    if override is not None:
        core.set_auto_topic_creation_override(NS, override)
    assert core.is_allow_auto_topic_creation("t") is expected


def test_deleted_namespace_never_allows(core):
    core.create_namespace("public/gone", {"deleted": True})
    assert core.is_allow_auto_topic_creation("persistent://public/gone/t") is False


def test_system_topic_always_allowed():
    core = make_core(allowAutoTopicCreation=False)
    assert core.is_allow_auto_topic_creation("persistent://public/default/__change_events") is True
    assert make_core(allowAutoTopicCreation=False, systemTopicEnabled=False).is_allow_auto_topic_creation(
        "persistent://public/default/__change_events") is False


def test_override_type_and_count_beat_broker_config(core):
    partitioned_config(core, partitions=3)
    core.set_auto_topic_creation_override(NS, {"allowAutoTopicCreation": True, "topicType": "non-partitioned"})
    assert core.get_partitioned_metadata("a", True) == 0
    core.set_auto_topic_creation_override(
        NS, {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 5})
    assert core.get_partitioned_metadata("b", True) == 5


@pytest.mark.parametrize("name", ["orders-sub-DLQ", "orders-sub-RETRY"])
def test_dlq_and_retry_topics_are_never_auto_partitioned(core, name):
    partitioned_config(core)  # PR #22705
    assert core.get_partitioned_metadata(name, True) == 0
    assert core.list_partitioned_topics(NS, "persistent") == []


# --- get_partitioned_metadata: Pulsar's PersistentTopicsBase/ServerCnx matrix ----------------------------------------------------

DOMAINS = ["persistent", "non-persistent"]


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("allow", [True, False])
@pytest.mark.parametrize("auto_create", [True, False])
def test_existing_partitioned_topic_answers_n(core, domain, allow, auto_create):
    partitioned_config(core, allow=allow)
    core.create_partitioned_topic(f"{domain}://public/default/p", 3)
    assert core.get_partitioned_metadata(f"{domain}://public/default/p", auto_create) == 3
    assert f"{domain}://public/default/p" not in core.list_topics(NS, domain)  # 1.6 #4


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("allow", [True, False])
@pytest.mark.parametrize("auto_create", [True, False])
def test_existing_non_partitioned_topic_answers_0(core, domain, allow, auto_create):
    partitioned_config(core, allow=allow)
    core.create_non_partitioned_topic(f"{domain}://public/default/np")
    assert core.get_partitioned_metadata(f"{domain}://public/default/np", auto_create) == 0
    assert core.list_partitioned_topics(NS, domain) == []  # 1.6 #3
    assert core.list_topics(NS, domain) == [f"{domain}://public/default/np"]


@pytest.mark.parametrize("domain", DOMAINS)
def test_absent_partitioned_default_creates_metadata_only(core, domain):
    partitioned_config(core, partitions=3)  # 1.6 #5a
    name = f"{domain}://public/default/new"
    assert core.get_partitioned_metadata(name, True) == 3
    assert core.list_partitioned_topics(NS, domain) == [name]
    assert core.list_topics(NS, domain) == []  # no partitions created
    assert core.get_partitioned_metadata(name, False) == 3


@pytest.mark.parametrize("domain", DOMAINS)
def test_absent_partition_name_answers_0_and_creates_nothing(core, domain):
    partitioned_config(core)  # 1.6 #5b
    name = f"{domain}://public/default/new-partition-1"
    assert core.get_partitioned_metadata(name, True) == 0
    assert nothing_created(core, name)


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("name", ["new", "new-partition-1"])
def test_absent_with_non_partitioned_default_answers_0(core, domain, name):
    core.update_dynamic_config("defaultNumPartitions", "3")  # 1.6 #6, type stays non-partitioned
    full = f"{domain}://public/default/{name}"
    assert core.get_partitioned_metadata(full, True) == 0
    assert nothing_created(core, full)


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("allow,auto_create", [(True, False), (False, False), (False, True)])
def test_absent_and_not_creating_is_topic_not_found(core, domain, allow, auto_create):
    partitioned_config(core, allow=allow)  # 1.6 #7 / #8
    name = f"{domain}://public/default/absent"
    with pytest.raises(TopicNotFound) as info:
        core.get_partitioned_metadata(name, auto_create)
    error = info.value
    assert (error.http_status, error.reason) == (404, f"Topic {name} not found")
    assert (error.server_error, error.binary_message) == ("TopicNotFound", "")
    assert nothing_created(core, name)


@pytest.mark.parametrize("missing", ["public/ns_x", "nosuchtenant/ns"])
def test_missing_namespace_or_tenant(core, missing):
    with pytest.raises(NamespaceNotFound) as info:  # Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync, Pulsar's PersistentTopicsBase/ServerCnx
        core.get_partitioned_metadata(f"persistent://{missing}/t", True)
    error = info.value
    assert (error.http_status, error.reason) == (404, "Namespace not found")
    # the auto-creating fetch's namespace check speaks; the existence check says nothing
    # (ServerCnx#handlePartitionMetadataRequest, observed on 3.0.7, 4.0.7 and 4.2.4)
    assert (error.server_error, error.binary_message) == ("TopicNotFound", "Namespace not found")
    with pytest.raises(NamespaceNotFound) as info:
        core.get_partitioned_metadata(f"persistent://{missing}/t", False)
    assert (info.value.server_error, info.value.binary_message) == ("TopicNotFound", "")


def test_namespace_without_local_cluster_is_412():
    store = MemoryMetadataStore()
    make_core(store).close()
    core = make_core(store, clusterName="c2")  # public/default still lists only "standalone"
    with pytest.raises(NotAllowed) as info:
        core.get_partitioned_metadata("t", True)
    assert info.value.http_status == 412 and info.value.server_error == "MetadataError"
    assert info.value.reason == ("Namespace missing local cluster name in clusters list: "
                                 "local_cluster=c2 ns=public/default clusters=[standalone]")


@pytest.mark.parametrize("settings,reason,status", [
    ({"defaultNumPartitions": 0}, "Default number of partitions should be more than 0", 500),
    ({"defaultNumPartitions": 5, "maxNumPartitionsPerPartitionedTopic": 4},
     "Number of partitions should be less than or equal to 4", 500),
    ({"defaultNumPartitions": 3, "maxTopicsPerNamespace": 2}, "Exceed maximum number of topics in namespace.", 409),
])
def test_auto_created_metadata_respects_limits(settings, reason, status):
    # broker.conf values: a running broker would lower defaultNumPartitions to the maximum
    core = make_core(allowAutoTopicCreationType="partitioned", **settings)
    with pytest.raises(NotAllowed) as info:
        core.get_partitioned_metadata("t", True)
    assert info.value.reason == reason
    # an IllegalArgumentException (500) or a NotAllowedException (409): no RestException, so the
    # binary handler answers ServiceNotReady
    assert (info.value.http_status, info.value.server_error) == (status, "ServiceNotReady")
    assert nothing_created(core, "t")


def test_a_dynamic_update_lowers_the_default_partitions_to_the_maximum(core):
    core.update_dynamic_config("defaultNumPartitions", "5")
    core.update_dynamic_config("maxNumPartitionsPerPartitionedTopic", "4")
    assert core.config.defaultNumPartitions == 4
    core.update_dynamic_config("defaultNumPartitions", "6")
    assert core.config.defaultNumPartitions == 4
    core.update_dynamic_config("maxNumPartitionsPerPartitionedTopic", "0")
    core.update_dynamic_config("defaultNumPartitions", "6")
    assert core.config.defaultNumPartitions == 6


def test_max_topics_counts_existing_managed_ledgers(core):
    partitioned_config(core, partitions=2)
    core.update_dynamic_config("maxTopicsPerNamespace", "3")
    core.create_non_partitioned_topic("a")
    assert core.get_partitioned_metadata("b", True) == 2  # 1 + 2 <= 3
    core.create_non_partitioned_topic("c")
    with pytest.raises(NotAllowed, match="Exceed maximum number of topics"):
        core.get_partitioned_metadata("d", True)  # 2 + 2 > 3


class RacingStore(MemoryMetadataStore):
    """Another broker writes the partitioned metadata first (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync: "it re-reads")."""

    def create(self, path, value=b""):
        if path.startswith("/admin/partitioned-topics/"):
            super().create(path, b'{"partitions":7}')
            raise NodeExists(path)
        return super().create(path, value)


def test_race_on_metadata_creation_rereads():
    core = make_core(RacingStore())
    partitioned_config(core)
    assert core.get_partitioned_metadata("t", True) == 7


# --- admin creation and deletion ------------------------------------------------------------------


def test_create_partitioned_topic_creates_metadata_and_persistent_partitions(core):
    core.create_partitioned_topic("p", 2)
    core.create_partitioned_topic("non-persistent://public/default/q", 2)
    assert core.list_topics(NS, "persistent") == ["persistent://public/default/p-partition-0",
                                                  "persistent://public/default/p-partition-1"]
    assert core.list_topics(NS, "non-persistent") == []
    assert core.topic_existence("p") == "partitioned"
    assert core.topic_existence("p-partition-0") == "non-partitioned"
    assert core.topic_existence("zz") is None


@pytest.mark.parametrize("name,partitions,error,status,reason", [
    ("a-partition-0", 2, InvalidTopicName, 412, "Partitioned Topic Name should not contain '-partition-'"),
    ("a-partition-x", 2, InvalidTopicName, 412, "Partitioned Topic Name should not contain '-partition-'"),
    ("a", 0, NotAllowed, 406, "Number of partitions should be more than 0"),
    ("a", 5, NotAllowed, 406, "Number of partitions should be less than or equal to 4"),
    ("existing-np", 2, AlreadyExists, 409, "This topic already exists"),
    ("existing-p", 2, AlreadyExists, 409, "This topic already exists"),
    ("persistent://public/nosuch/a", 2, NamespaceNotFound, 404, "Namespace not found"),
    # PersistentTopics#createPartitionedTopic: validateGlobalNamespaceOwnership, then the name
    ("persistent://public/nosuch/a-partition-0", 2, NamespaceNotFound, 404, "Namespace not found"),
])
def test_create_partitioned_topic_refusals(name, partitions, error, status, reason):
    core = make_core(maxNumPartitionsPerPartitionedTopic=4)
    core.create_non_partitioned_topic("existing-np")
    core.create_partitioned_topic("existing-p", 1)
    with pytest.raises(error) as info:
        core.create_partitioned_topic(name, partitions)
    assert (info.value.http_status, info.value.reason) == (status, reason)


def test_create_partitioned_topic_below_existing_partition_index(core):
    # a partition left without its metadata (neither a producer nor the admin API makes one from 4.2)
    core._load(TopicName.parse("persistent://public/default/x-partition-3"))
    with pytest.raises(AlreadyExists, match="max partition index of 3, the number of partitions must be at least 4"):
        core.create_partitioned_topic("x", 2)
    core.create_partitioned_topic("x", 4)


def test_delete_partitioned_topic(core):
    deleted = []
    core.topic_deleted_listeners.append(deleted.append)
    core.create_partitioned_topic("p", 2)
    core.delete_partitioned_topic("p")
    assert core.list_topics(NS, "persistent") == [] and core.list_partitioned_topics(NS, "persistent") == []
    assert [str(t) for t in deleted] == ["persistent://public/default/p-partition-0",
                                         "persistent://public/default/p-partition-1"]
    # PersistentTopicsBase#internalDeletePartitionedTopic (PR #23002): "Topic %s not found." / 409
    with pytest.raises(PartitionedTopicNotFound) as info:
        core.delete_partitioned_topic("p")
    assert (info.value.http_status, info.value.reason) == (404, "Topic persistent://public/default/p not found.")
    core.create_non_partitioned_topic("np")
    with pytest.raises(AlreadyExists, match="np is a non-partitioned topic. Instead of calling "):
        core.delete_partitioned_topic("np")
    # a partition name is refused before the namespace is read; a name merely containing the suffix is not
    with pytest.raises(InvalidTopicName, match="should not contain '-partition-'"):
        core.delete_partitioned_topic("persistent://public/nosuch/p-partition-0")
    with pytest.raises(PartitionedTopicNotFound):
        core.delete_partitioned_topic("a-partition-x")


def test_delete_topic_of_one_partition_keeps_the_metadata(core):
    core.create_partitioned_topic("p", 2)
    core.delete_topic("p-partition-0")
    assert core.list_topics(NS, "persistent") == ["persistent://public/default/p-partition-1"]
    assert core.list_partitioned_topics(NS, "persistent") == ["persistent://public/default/p"]
    with pytest.raises(TopicNotFound):
        core.delete_topic("p-partition-2")


@pytest.mark.parametrize("name,refusal", [
    # BrokerService#deleteTopicInternal: "Nothing to do if it's not persistent"; no namespace is read
    ("non-persistent://public/default/absent", None),
    ("non-persistent://public/nosuch/absent", None),
    ("non-persistent://public/default/np-partition-0", None),
    ("persistent://public/nosuch/absent", (404, "Topic persistent://public/nosuch/absent not found")),
    ("non-persistent://public/default/np", (409, "non-persistent://public/default/np is a partitioned topic, "
                                                 "instead of calling delete topic, please call delete-partitioned-topic.")),
])
def test_delete_topic_of_what_is_not_loaded(core, name, refusal):
    core.create_partitioned_topic("non-persistent://public/default/np", 2)
    try:
        core.delete_topic(name)
        answered = None
    except (TopicNotFound, AlreadyExists) as exc:
        answered = (exc.http_status, exc.reason)
    assert answered == refusal
    assert core.list_partitioned_topics(NS, "non-persistent") == ["non-persistent://public/default/np"]


def test_create_and_delete_non_partitioned_topic(core):
    core.create_non_partitioned_topic("t")
    with pytest.raises(AlreadyExists, match="This topic already exists"):
        core.create_non_partitioned_topic("t")
    core.create_partitioned_topic("p", 2)
    with pytest.raises(AlreadyExists, match="This topic already exists"):
        core.create_non_partitioned_topic("p")
    with pytest.raises(InvalidTopicName, match="Can't create topic p-partition-5 with \"-partition-\" followed by a "
                                               "number smaller than number of partition of partitioned topic p"):
        core.create_non_partitioned_topic("p-partition-5")
    with pytest.raises(InvalidTopicName, match="numeric value if there isn't a partitioned topic q created"):
        core.create_non_partitioned_topic("q-partition-0")
    with pytest.raises(AlreadyExists) as refused:  # PersistentTopics#deleteTopic@v4.2.4
        core.delete_topic("p")
    assert (refused.value.http_status, refused.value.reason) == (
        409, "persistent://public/default/p is a partitioned topic, instead of calling delete topic, please call "
             "delete-partitioned-topic.")
    core.delete_topic("t")
    with pytest.raises(TopicNotFound) as absent:
        core.delete_topic("t")
    assert (absent.value.http_status, absent.value.reason) == (404, "Topic persistent://public/default/t not found")
    core.create_non_partitioned_topic("non-persistent://public/default/np")
    assert core.list_topics(NS, "non-persistent") == ["non-persistent://public/default/np"]


def test_listing_needs_namespace_and_domain(core):
    with pytest.raises(NamespaceNotFound, match="Namespace does not exist"):
        core.list_topics("public/nosuch", "persistent")
    with pytest.raises(InvalidTopicName):
        core.list_topics(NS, "volatile")


def test_binary_listing_of_a_missing_namespace(core):
    """GET_TOPICS_OF_NAMESPACE: mode PERSISTENT reads the ledger folder (empty), NON_PERSISTENT and
    ALL run checkLocalOrGetPeerReplicationCluster first (MetadataError)."""
    assert core.topics_of_namespace("public/nosuch", ("persistent",)) == []
    for domains in (("non-persistent",), ("persistent", "non-persistent")):
        with pytest.raises(NamespaceNotFound) as info:
            core.topics_of_namespace("public/nosuch", domains)
        assert (info.value.server_error, info.value.binary_message) == (
            "MetadataError", "org.apache.pulsar.broker.web.RestException: Namespace not found")
    core.create_partitioned_topic("p", 1)
    core.create_non_partitioned_topic("non-persistent://public/default/np")
    assert core.topics_of_namespace(NS, ("persistent", "non-persistent")) == [
        "persistent://public/default/p-partition-0", "non-persistent://public/default/np"]


# --- attach (producer / consumer) ----------------------------------------------------------------


@pytest.mark.parametrize("domain", DOMAINS)
def test_attach_loads_partitions_of_existing_partitioned_topic_even_without_auto_creation(domain):
    core = make_core(allowAutoTopicCreation=False)  # Pulsar's NonPersistentTopicTest testAutoCreateNonPersistentPartitions...
    core.update_dynamic_config("allowAutoTopicCreationType", "partitioned")
    core.update_dynamic_config("allowAutoTopicCreation", "true")
    core.get_partitioned_metadata(f"{domain}://public/default/p", True)  # metadata only
    core.update_dynamic_config("allowAutoTopicCreation", "false")
    core.ensure_topic_for_attach(f"{domain}://public/default/p-partition-0")
    assert core.list_topics(NS, domain) == [f"{domain}://public/default/p-partition-0"]
    # past the count an absent persistent partition is not created at all (BrokerService
    # #isAllowAutoTopicCreationAsync at v4.2.4); a non-persistent one is, and then refused
    past = f"{domain}://public/default/p-partition-1"
    with pytest.raises(TopicNotFound if domain == "persistent" else NotAllowed):
        core.ensure_topic_for_attach(past)
    # the base name is absent and may not be created; where it would be, 4.2 refuses it
    # (rows pip344-produce-006-*)
    with pytest.raises(TopicNotFound) as absent:
        core.ensure_topic_for_attach(f"{domain}://public/default/p", command="PRODUCER")
    assert absent.value.binary_message == f"Topic not found {domain}://public/default/p"
    core.update_dynamic_config("allowAutoTopicCreation", "true")
    with pytest.raises(NotAllowed, match="Found partitioned metadata for non-partitioned topic"):
        core.ensure_topic_for_attach(f"{domain}://public/default/p")


@pytest.mark.parametrize("domain", DOMAINS)
def test_attach_auto_creates_non_partitioned_when_allowed(core, domain):
    core.ensure_topic_for_attach(f"{domain}://public/default/t")
    core.ensure_topic_for_attach(f"{domain}://public/default/t")  # idempotent
    assert core.list_topics(NS, domain) == [f"{domain}://public/default/t"]
    assert core.list_partitioned_topics(NS, domain) == []
    assert core.get_partitioned_metadata(f"{domain}://public/default/t", False) == 0


def test_attach_refused_when_not_allowed():
    core = make_core(allowAutoTopicCreation=False)
    with pytest.raises(TopicNotFound) as info:
        core.ensure_topic_for_attach("t")
    assert info.value.binary_message == f"Topic {TopicName.parse('t')} does not exist"
    assert nothing_created(core, "t")


def test_a_non_persistent_partition_name_without_metadata_is_refused():
    # BrokerService#validateTopicConsistency at v4.2.4: getTopic reaches it for a non-persistent
    # name whatever auto-creation says, and nothing is created
    core = make_core(allowAutoTopicCreation=False)
    name = "non-persistent://public/default/issue-9173-partition-0"
    with pytest.raises(NotAllowed, match="Partition metadata not found for the partitioned topic"):
        core.ensure_topic_for_attach(name)
    assert nothing_created(core, name)


def test_attach_without_force_topic_creation_does_not_create(core):
    with pytest.raises(TopicNotFound):
        core.ensure_topic_for_attach("t", create=False)
    core.create_partitioned_topic("p", 1)
    core.delete_topic("p-partition-0")
    core.ensure_topic_for_attach("p-partition-0", create=False)  # partitions load regardless


@pytest.mark.parametrize("key,name", [("enablePersistentTopics", "t"),
                                      ("enableNonPersistentTopics", "non-persistent://public/default/t")])
def test_attach_to_disabled_domain(key, name):
    core = make_core(**{key: False})
    with pytest.raises(NotAllowed) as info:  # Pulsar's BrokerService.getTopic
        core.ensure_topic_for_attach(name)
    assert (info.value.server_error, info.value.reason) == ("NotAllowedError", "Broker is unable to load persistent topic")
    # a standalone's NoopLoadManager still names this broker (observed on 3.0.7, 4.0.7, 4.2.4)
    assert core.lookup(name).broker_url == core.broker_service_url


def test_attach_respects_max_topics_and_missing_namespace():
    core = make_core(maxTopicsPerNamespace=1)
    core.ensure_topic_for_attach("a")
    with pytest.raises(NotAllowed, match="Exceed maximum number of topics"):
        core.ensure_topic_for_attach("b")
    with pytest.raises(NamespaceNotFound):
        core.ensure_topic_for_attach("persistent://public/nosuch/a")


def test_non_persistent_topic_exists_only_while_active(core):
    core.ensure_topic_for_attach("non-persistent://public/default/np")
    assert core.topic_exists("non-persistent://public/default/np")
    core.mark_non_persistent_inactive("non-persistent://public/default/np")
    assert not core.topic_exists("non-persistent://public/default/np")
    core.mark_non_persistent_active("non-persistent://public/default/np")
    assert core.list_topics(NS, "non-persistent") == ["non-persistent://public/default/np"]


# --- lookup (Pulsar's TopicLookupBase.lookupTopicAsync, Pulsar's TopicLookupBase.internalLookupTopicAsync) --------------------------------------------------------------------


def test_lookup_of_absent_persistent_topic():
    core = make_core(allowAutoTopicCreation=False)
    with pytest.raises(TopicNotFound) as info:
        core.lookup("t")
    assert (info.value.http_status, info.value.reason) == (404, "Topic not found persistent://public/default/t")
    assert core.lookup("t", check_existence=False).broker_url.startswith("pulsar://")
    assert core.lookup("non-persistent://public/default/t")  # skips the existence check
    core.create_partitioned_topic("p", 2)
    core.delete_topic("p-partition-1")
    assert core.lookup("p") and core.lookup("p-partition-1")  # partitions of an existing partitioned topic


def test_lookup_of_creatable_topic_and_missing_namespace(core):
    assert core.lookup("t").broker_url == core.broker_service_url
    assert not core.topic_exists("t")  # lookup creates nothing
    with pytest.raises(NamespaceNotFound) as info:
        core.lookup("persistent://public/nosuch/t")
    assert (info.value.server_error, info.value.binary_message) == ("TopicNotFound", "Namespace not found")


def test_lookup_permits(core):
    permits = core.lookup_permits
    with permits.permit():
        assert permits.in_use == 1
    assert permits.in_use == 0
    core.update_dynamic_config("maxConcurrentLookupRequest", "1")
    assert permits.try_acquire() and not permits.try_acquire()
    permits.release()
    core.update_dynamic_config("maxConcurrentLookupRequest", "0")
    with pytest.raises(TooManyRequests) as info:
        with permits.permit():
            pass
    assert (info.value.server_error, info.value.http_status) == ("TooManyRequests", 503)
    assert info.value.binary_message == "Failed due to too many pending lookup requests"
    assert permits.in_use == 0
    with pytest.raises(RuntimeError):
        permits.release()


# --- dynamic configuration through the core ------------------------------------------------------


def test_dynamic_configuration(core):
    assert "allowAutoTopicCreation" in core.dynamic_config_names()
    assert core.dynamic_config_overrides() == {}
    assert core.dynamic_config_values()["defaultNumPartitions"] == "1"
    core.update_dynamic_config("defaultNumPartitions", "4")
    assert core.get_config("defaultNumPartitions") == 4
    assert core.dynamic_config_overrides() == {"defaultNumPartitions": "4"}
    assert core.dynamic_config_values()["defaultNumPartitions"] == "4"
    assert set(core.dynamic_config_values()) == set(core.dynamic_config_names())
    assert core.runtime_config()["defaultNumPartitions"] == "4"
    core.delete_dynamic_config("defaultNumPartitions")
    assert core.get_config("defaultNumPartitions") == 1 and core.dynamic_config_overrides() == {}


def test_invalid_topic_names(core):
    for bad in ["", "a/b/c/d", "persistent://public/default/", "volatile://public/default/t"]:
        with pytest.raises(InvalidTopicName) as info:
            core.get_partitioned_metadata(bad, True)
        assert (info.value.http_status, info.value.server_error) == (412, "InvalidTopicName")


# --- independence from the model: value helpers only, never its decisions ---------------------------

CORE_MODULES = ["config.py", "errors.py", "core.py", "core_namespaces.py", "core_topics.py", "autocreation.py",
                "metadata", "admin"]


def test_core_modules_import_only_the_model_value_helpers():
    root = Path(__file__).resolve().parents[2] / "reference_broker"
    files = []
    for name in CORE_MODULES:
        path = root / name
        files += sorted(path.glob("*.py")) if path.is_dir() else [path]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for module in names:
                assert not module.startswith("conformance"), (path, module)
                if module == "model" or module.startswith("model."):
                    assert module in ("pulsar_naming.names", "pulsar_naming.hashing"), (path, module)


# --- what the core reads is what the store holds now ------------------------------------------


def test_policy_writes_through_another_core_are_seen_at_once():
    """Two brokers sharing one store: a reader never answers from policies the store no longer holds."""
    store = MemoryMetadataStore()
    reader, writer = make_core(store), make_core(store)
    reader.create_namespace("public/cached")
    topic = "persistent://public/cached/t"
    assert reader.is_allow_auto_topic_creation(topic)
    writer.set_auto_topic_creation_override("public/cached", {"allowAutoTopicCreation": False,
                                                               "topicType": "non-partitioned"})
    assert not reader.is_allow_auto_topic_creation(topic)
    writer.remove_auto_topic_creation_override("public/cached")
    assert reader.is_allow_auto_topic_creation(topic)
    writer.delete_namespace("public/cached")
    with pytest.raises(NamespaceNotFound):
        reader.get_partitioned_metadata(topic, auto_create=True)


def test_policies_handed_to_a_caller_are_its_own_copy(core):
    core.create_namespace("public/mut")
    shared = core._policies_or_none(TopicName.parse("public/mut/t").namespace_name)
    mine = core.get_policies("public/mut")
    mine["replication_clusters"] = []
    assert shared is not mine and shared["replication_clusters"] == ["standalone"]
