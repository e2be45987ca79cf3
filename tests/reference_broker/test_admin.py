"""reference_broker.admin: every route's status codes and bodies, in process (httpx over ASGI, no sockets).

Error bodies are always Pulsar's ``{"reason": ...}`` (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync), also for bad JSON and unknown paths.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from reference_broker.admin.app import build_app
from reference_broker.config import BrokerConfig
from reference_broker.core import BrokerCore
from reference_broker.metadata.memory import MemoryMetadataStore

BROKER_URL = "pulsar://127.0.0.1:6650"
WEB_URL = "http://127.0.0.1:8080"
P = "/admin/v2/persistent/public/default"
NP = "/admin/v2/non-persistent/public/default"


class Admin:
    """A synchronous face over httpx.AsyncClient + ASGITransport, one event loop per request."""

    def __init__(self, **config) -> None:
        self.core = BrokerCore(BrokerConfig(**config), MemoryMetadataStore())
        self.app = build_app(self.core, broker_service_url=BROKER_URL, web_service_url=WEB_URL)

    def request(self, method: str, url: str, **kwargs) -> httpx.Response:
        async def run() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://broker") as client:
                return await client.request(method, url, **kwargs)

        return asyncio.run(run())

    def get(self, url, **kw):
        return self.request("GET", url, **kw)

    def put(self, url, **kw):
        return self.request("PUT", url, **kw)

    def post(self, url, **kw):
        return self.request("POST", url, **kw)

    def delete(self, url, **kw):
        return self.request("DELETE", url, **kw)

    def configure(self, **values) -> None:
        for key, value in values.items():
            assert self.post(f"/admin/v2/brokers/configuration/{key}/{value}").status_code == 204


@pytest.fixture
def admin() -> Admin:
    return Admin()


def reason(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert list(body) == ["reason"], body
    return body["reason"]


BAD_JSON = {"content": b"{not json", "headers": {"content-type": "application/json"}}


# --- clusters, tenants ---------------------------------------------------------------------------


def test_clusters(admin):
    response = admin.get("/admin/v2/clusters")
    assert response.status_code == 200 and response.text == '["standalone"]'  # Testcontainers' readiness check
    assert admin.get("/admin/v2/clusters/standalone").json() == {"serviceUrl": WEB_URL, "brokerServiceUrl": BROKER_URL}
    assert reason(admin.get("/admin/v2/clusters/nowhere"), 404) == "Cluster does not exist"


def test_tenants(admin):
    assert admin.get("/admin/v2/tenants").json() == ["public"]
    assert admin.put("/admin/v2/tenants/t1").status_code == 204
    assert admin.put("/admin/v2/tenants/t2", json={"adminRoles": ["r"], "allowedClusters": ["standalone"]}).status_code == 204
    assert admin.get("/admin/v2/tenants/t2").json() == {"adminRoles": ["r"], "allowedClusters": ["standalone"]}
    assert reason(admin.put("/admin/v2/tenants/t1"), 409) == "Tenant already exists"
    assert "Invalid tenant name" in reason(admin.put("/admin/v2/tenants/bad!name"), 412)
    assert reason(admin.get("/admin/v2/tenants/t9"), 404) == "Tenant does not exist"
    assert reason(admin.put("/admin/v2/tenants/t3", **BAD_JSON), 400).startswith("Invalid request")
    assert reason(admin.put("/admin/v2/tenants/t3", json={"allowedClusters": ["x"]}), 412) == "Clusters do not exist"
    assert admin.delete("/admin/v2/tenants/t1").status_code == 204
    assert admin.get("/admin/v2/tenants").json() == ["public", "t2"]


# --- namespaces ----------------------------------------------------------------------------------


def test_namespaces(admin):
    assert admin.get("/admin/v2/namespaces/public").json() == ["public/default"]
    assert admin.put("/admin/v2/namespaces/public/ns1").status_code == 204
    assert admin.put("/admin/v2/namespaces/public/ns2", json={"replication_clusters": ["standalone"]}).status_code == 204
    assert admin.get("/admin/v2/namespaces/public").json() == ["public/default", "public/ns1", "public/ns2"]
    assert admin.get("/admin/v2/namespaces/public/ns1").json() == {"deleted": False, "replication_clusters": ["standalone"]}
    assert reason(admin.put("/admin/v2/namespaces/public/ns1"), 409) == "Namespace already exists"
    assert reason(admin.put("/admin/v2/namespaces/nosuch/ns"), 404) == "Tenant does not exist"
    assert reason(admin.get("/admin/v2/namespaces/nosuch"), 404) == "Tenant does not exist"
    assert reason(admin.get("/admin/v2/namespaces/public/ns9"), 404) == "Namespace does not exist"
    assert "Invalid namespace name" in reason(admin.put("/admin/v2/namespaces/public/bad!ns"), 412)
    assert reason(admin.put("/admin/v2/namespaces/public/ns3", **BAD_JSON), 400).startswith("Invalid request")
    assert reason(admin.put("/admin/v2/namespaces/public/ns3", json=[1, 2]), 400).startswith("Invalid request")
    assert admin.delete("/admin/v2/namespaces/public/ns2").status_code == 204
    assert reason(admin.delete("/admin/v2/namespaces/public/ns2"), 404) == "Namespace does not exist"
    admin.put(f"/admin/v2/persistent/public/ns1/t")
    assert reason(admin.delete("/admin/v2/namespaces/public/ns1"), 409) == "Cannot delete non empty namespace"


def test_namespace_created_with_override_in_policies(admin):
    body = {"autoTopicCreationOverride": {"allowAutoTopicCreation": True, "topicType": "partitioned",
                                          "defaultNumPartitions": 2}}
    assert admin.put("/admin/v2/namespaces/public/ns", json=body).status_code == 204
    url = "/admin/v2/persistent/public/ns/t/partitions?checkAllowAutoCreation=true"
    assert admin.get(url).json() == {"partitions": 2}
    bad = {"autoTopicCreationOverride": {"allowAutoTopicCreation": True, "topicType": "x"}}
    assert reason(admin.put("/admin/v2/namespaces/public/ns2", json=bad), 412).endswith("Unknown topic type [x]")


# --- autoTopicCreation override (Pulsar's BrokerService/AutoTopicCreationOverrideImpl) ------------------------------------------------------

OVERRIDE = "/admin/v2/namespaces/public/default/autoTopicCreation"


def test_override_round_trip(admin):
    assert admin.get(OVERRIDE).status_code == 204
    value = {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 3}
    assert admin.post(OVERRIDE, json=value).status_code == 204
    assert admin.get(OVERRIDE).json() == value
    assert admin.get("/admin/v2/namespaces/public/default").json()["autoTopicCreationOverride"] == value
    assert admin.delete(OVERRIDE).status_code == 204
    assert admin.get(OVERRIDE).status_code == 204


@pytest.mark.parametrize("body,status,text", [
    ({"allowAutoTopicCreation": True, "topicType": "bogus"}, 412, "Unknown topic type [bogus]"),
    ({"allowAutoTopicCreation": True, "topicType": "partitioned"}, 412,
     "[defaultNumPartitions] cannot be null when the type is partitioned."),
    ({"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": -1}, 412,
     "[defaultNumPartitions] cannot be less than 1 for partition type."),
    ({"allowAutoTopicCreation": True, "topicType": "non-partitioned", "defaultNumPartitions": 1}, 412,
     "[defaultNumPartitions] is not allowed to be set when the type is non-partition."),
    ({"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 9}, 406,
     "Number of partitions should be less than or equal to 8"),
])
def test_override_refusals(body, status, text):
    admin = Admin(maxNumPartitionsPerPartitionedTopic=8)
    assert reason(admin.post(OVERRIDE, json=body), status).endswith(text)


def test_override_unparsable_body_is_400(admin):
    assert reason(admin.post(OVERRIDE, **BAD_JSON), 400).startswith("Invalid request")


IMPL = "`org.apache.pulsar.common.policies.data.impl.AutoTopicCreationOverrideImpl`"


# What Apache Pulsar 3.0.7, 4.0.7 and 4.2.4 answered (Jackson's message, its first line; rows
# pip344-override-body-*), and what GET shows afterwards.
@pytest.mark.parametrize("body,status,text,shown", [
    ([True], 400, f"Cannot deserialize value of type {IMPL} from Array value (token `JsonToken.START_ARRAY`)", None),
    ("x", 400, f"Cannot construct instance of {IMPL} (although at least one Creator exists): no String-argument "
               "constructor/factory method to deserialize from String value ('x')", None),
    (5, 400, f"Cannot construct instance of {IMPL} (although at least one Creator exists): no int/Int-argument "
             "constructor/factory method to deserialize from Number value (5)", None),
    ({"allowAutoTopicCreation": "yes"}, 400, 'Cannot deserialize value of type `boolean` from String "yes": only '
                                              '"true"/"True"/"TRUE" or "false"/"False"/"FALSE" recognized', None),
    ({"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": True}, 400,
     "Cannot deserialize value of type `java.lang.Integer` from Boolean value (token `JsonToken.VALUE_TRUE`)", None),
    ({"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": "3"}, 204, "",
     {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 3}),
    ({"allowAutoTopicCreation": "TRUE", "topicType": "partitioned", "defaultNumPartitions": 2.5}, 204, "",
     {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 2}),
    ({"topicType": 5, "bogus": 1}, 204, "", {"allowAutoTopicCreation": False, "topicType": "5"}),
    ({"allowAutoTopicCreation": True, "topicType": True}, 412,
     "Invalid configuration for autoTopicCreationOverride. the detail is Unknown topic type [true]", None),
])
def test_override_bodies_bind_as_pulsar_binds_them(admin, body, status, text, shown):
    response = admin.post(OVERRIDE, json=body)
    if status == 204:
        assert response.status_code == 204
    else:
        assert reason(response, status) == text
    answer = admin.get(OVERRIDE)
    assert (answer.json() if answer.content else None) == shown


@pytest.mark.parametrize("kwargs", [{"json": None}, {}])
def test_a_null_or_absent_override_body_removes_the_override(admin, kwargs):
    assert admin.post(OVERRIDE, json={"allowAutoTopicCreation": False}).status_code == 204
    assert admin.post(OVERRIDE, **kwargs).status_code == 204
    assert admin.get(OVERRIDE).status_code == 204


def test_a_refused_override_body_answers_before_the_namespace_is_read(admin):
    url = "/admin/v2/namespaces/public/nosuch/autoTopicCreation"
    assert reason(admin.post(url, json=[]), 400).startswith("Cannot deserialize")


def test_override_on_missing_namespace(admin):
    url = "/admin/v2/namespaces/public/nosuch/autoTopicCreation"
    assert reason(admin.post(url, json={"allowAutoTopicCreation": False}), 404) == "Namespace does not exist"
    assert reason(admin.get(url), 404) == "Namespace does not exist"
    assert reason(admin.delete(url), 404) == "Namespace does not exist"


# --- partitioned metadata (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync, Pulsar's PersistentTopicsBase/ServerCnx) --------------------------------------------------------


@pytest.mark.parametrize("base", [P, NP])
def test_get_partitions_matrix(admin, base):
    domain = base.split("/")[3]
    assert reason(admin.get(f"{base}/t/partitions"), 404) == f"Topic {domain}://public/default/t not found"
    assert admin.get(f"{base}/t/partitions?checkAllowAutoCreation=true").json() == {"partitions": 0}
    admin.configure(allowAutoTopicCreationType="partitioned", defaultNumPartitions=3)
    response = admin.get(f"{base}/t/partitions", params={"checkAllowAutoCreation": "true", "authoritative": "false"})
    assert response.status_code == 200 and response.json() == {"partitions": 3}
    assert admin.get(f"{base}/partitioned").json() == [f"{domain}://public/default/t"]
    assert admin.get(base).json() == []  # metadata only, no partitions
    assert admin.get(f"{base}/t/partitions").json() == {"partitions": 3}
    assert admin.get(f"{base}/x-partition-1/partitions?checkAllowAutoCreation=true").json() == {"partitions": 0}
    admin.configure(allowAutoTopicCreation="false")
    assert reason(admin.get(f"{base}/u/partitions?checkAllowAutoCreation=true"), 404).endswith("/u not found")


def test_get_partitions_errors(admin):
    assert reason(admin.get("/admin/v2/persistent/public/nosuch/t/partitions"), 404) == "Namespace not found"
    assert reason(admin.get("/admin/v2/persistent/nosuch/ns/t/partitions"), 404) == "Namespace not found"
    assert reason(admin.get("/admin/v2/persistent/bad!t/ns/t/partitions"), 412) == "Topic name is not valid"  # AdminResource
    assert reason(admin.get(f"{P}/t/partitions?checkAllowAutoCreation=maybe"), 400).startswith("Invalid request")
    assert reason(admin.get("/admin/v2/volatile/public/default/t/partitions"), 404) == "HTTP 404 Not Found"


def test_create_and_delete_partitioned_topic(admin):
    assert admin.put(f"{P}/p/partitions", json=2).status_code == 204
    assert admin.get(f"{P}/p/partitions").json() == {"partitions": 2}
    assert admin.get(P).json() == ["persistent://public/default/p-partition-0", "persistent://public/default/p-partition-1"]
    assert reason(admin.put(f"{P}/p/partitions", json=2), 409) == "This topic already exists"
    assert reason(admin.put(f"{P}/q/partitions", json=0), 406) == "Number of partitions should be more than 0"
    assert reason(admin.put(f"{P}/q-partition-0/partitions", json=1), 412) == (
        "Partitioned Topic Name should not contain '-partition-'")
    assert reason(admin.put("/admin/v2/persistent/public/nosuch/q/partitions", json=1), 404) == "Namespace not found"
    for bad in ({"json": "3"}, {"json": 2.5}, {"json": True}, {}, BAD_JSON):
        assert reason(admin.put(f"{P}/q/partitions", **bad), 400).startswith("Invalid request")
    assert admin.delete(f"{P}/p/partitions").status_code == 204
    assert reason(admin.delete(f"{P}/p/partitions"), 404) == "Topic persistent://public/default/p not found."
    # PersistentTopics#createPartitionedTopic reads the namespace before validatePartitionedTopicName
    assert reason(admin.put("/admin/v2/persistent/public/nosuch/q-partition-0/partitions", json=1), 404) == (
        "Namespace not found")
    # DELETE .../partitions: a partition name is refused first; a non-partitioned topic is a conflict
    assert reason(admin.delete("/admin/v2/persistent/public/nosuch/q-partition-0/partitions"), 412) == (
        "Partitioned Topic Name should not contain '-partition-'")
    assert admin.put(f"{P}/np").status_code == 204
    assert reason(admin.delete(f"{P}/np/partitions"), 409) == (
        "persistent://public/default/np is a non-partitioned topic. Instead of calling delete-partitioned-topic "
        "please call delete.")
    assert admin.delete(f"{P}/np").status_code == 204
    assert admin.get(P).json() == []


def test_delete_topic_over_rest(admin):
    assert admin.put(f"{P}/p/partitions", json=2).status_code == 204
    assert reason(admin.delete(f"{P}/p"), 409) == (
        "persistent://public/default/p is a partitioned topic, instead of calling delete topic, please call "
        "delete-partitioned-topic.")
    assert admin.delete(f"{P}/p-partition-0").status_code == 204
    assert admin.get(P).json() == ["persistent://public/default/p-partition-1"]
    assert reason(admin.delete(f"{P}/p-partition-0"), 404) == "Topic persistent://public/default/p-partition-0 not found"
    assert admin.delete("/admin/v2/non-persistent/public/default/absent").status_code == 204


def test_limits_over_rest():
    admin = Admin(maxNumPartitionsPerPartitionedTopic=2, maxTopicsPerNamespace=3)
    assert reason(admin.put(f"{P}/p/partitions", json=3), 406) == "Number of partitions should be less than or equal to 2"
    assert admin.put(f"{P}/p/partitions", json=2).status_code == 204
    assert reason(admin.put(f"{P}/q/partitions", json=2), 412) == "Exceed maximum number of topics in namespace."


# --- non-partitioned topics and listings ----------------------------------------------------------


def test_non_partitioned_topics(admin):
    assert admin.put(f"{P}/t").status_code == 204
    assert reason(admin.put(f"{P}/t"), 409) == "This topic already exists"
    assert admin.put(f"{NP}/n").status_code == 204
    assert admin.put(f"{P}/a%20b").status_code == 204  # the encoded local name is decoded once
    assert admin.get(P).json() == ["persistent://public/default/a b", "persistent://public/default/t"]
    assert admin.get(NP).json() == ["non-persistent://public/default/n"]
    assert admin.get(f"{P}/a%20b/partitions").json() == {"partitions": 0}
    assert admin.delete(f"{P}/t").status_code == 204
    assert reason(admin.delete(f"{P}/t"), 404) == "Topic persistent://public/default/t not found"


def test_listing_errors(admin):
    assert reason(admin.get("/admin/v2/persistent/public/nosuch"), 404) == "Namespace does not exist"
    assert reason(admin.get("/admin/v2/persistent/public/nosuch/partitioned"), 404) == "Namespace does not exist"
    assert reason(admin.get("/admin/v2/volatile/public/default"), 404) == "HTTP 404 Not Found"
    assert reason(admin.put("/admin/v2/volatile/public/default/t"), 404) == "HTTP 404 Not Found"


# --- lookup (Pulsar's TopicLookupBase.internalLookupTopicAsync) --------------------------------------------------------------------------


def test_lookup(admin):
    response = admin.get("/lookup/v2/topic/persistent/public/default/t")
    assert response.status_code == 200
    assert response.json() == {"brokerUrl": BROKER_URL, "brokerUrlTls": None, "httpUrl": WEB_URL,
                               "httpUrlTls": None, "nativeUrl": BROKER_URL}
    admin.configure(allowAutoTopicCreation="false")
    assert reason(admin.get("/lookup/v2/topic/persistent/public/default/t"), 404) == (
        "Topic not found persistent://public/default/t")
    assert admin.get("/lookup/v2/topic/non-persistent/public/default/t").status_code == 200
    assert reason(admin.get("/lookup/v2/topic/persistent/public/nosuch/t"), 404) == "Namespace not found"
    assert reason(admin.get("/lookup/v2/topic/bogus/public/default/t"), 404) == "HTTP 404 Not Found"
    admin.configure(maxConcurrentLookupRequest=0)
    assert reason(admin.get("/lookup/v2/topic/non-persistent/public/default/t"), 503) == (
        "Failed due to too many pending lookup requests")
    assert admin.core.lookup_permits.in_use == 0


# --- brokers: dynamic configuration and version ---------------------------------------------------


def test_dynamic_configuration(admin):
    names = admin.get("/admin/v2/brokers/configuration").json()
    assert {"allowAutoTopicCreation", "allowAutoTopicCreationType", "defaultNumPartitions"} <= set(names)
    values = admin.get("/admin/v2/brokers/configuration/values").json()
    assert set(values) == set(names) and values["defaultNumPartitions"] == "1"
    assert admin.post("/admin/v2/brokers/configuration/defaultNumPartitions/4").status_code == 204
    assert admin.get("/admin/v2/brokers/configuration/values").json()["defaultNumPartitions"] == "4"
    assert admin.get("/admin/v2/brokers/configuration/runtime").json()["defaultNumPartitions"] == "4"
    assert admin.delete("/admin/v2/brokers/configuration/defaultNumPartitions").status_code == 204
    assert admin.get("/admin/v2/brokers/configuration/values").json()["defaultNumPartitions"] == "1"


@pytest.mark.parametrize("key,value,prefix", [
    ("clusterName", "x", "Can't update non-dynamic configuration"),
    ("noSuchKey", "1", "Can't update non-dynamic configuration"),
    ("allowAutoTopicCreation", "maybe", "Invalid dynamic-config value 'maybe' for allowAutoTopicCreation"),
    ("allowAutoTopicCreationType", "PARTITIONED", "Invalid dynamic-config value"),
])
def test_dynamic_configuration_refusals(admin, key, value, prefix):
    assert reason(admin.post(f"/admin/v2/brokers/configuration/{key}/{value}"), 412).startswith(prefix)
    assert reason(admin.delete("/admin/v2/brokers/configuration/clusterName"), 412).startswith(
        "Can't delete non-dynamic configuration")


def test_version(admin):
    response = admin.get("/admin/v2/brokers/version")
    assert response.status_code == 200 and response.text == admin.core.version


# --- the error shape everywhere --------------------------------------------------------------------


def test_unknown_paths_and_methods(admin):
    assert reason(admin.get("/no/such/path"), 404) == "HTTP 404 Not Found"
    assert reason(admin.get("/admin/v3/clusters"), 404) == "HTTP 404 Not Found"
    assert reason(admin.delete("/admin/v2/clusters"), 405) == "HTTP 405 Method Not Allowed"


def test_unexpected_exception_is_500_json(admin, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(admin.core, "list_tenants", boom)
    assert reason(admin.get("/admin/v2/tenants"), 500) == "Internal server error: RuntimeError: disk on fire"
    assert admin.get("/admin/v2/clusters").status_code == 200  # still serving


def test_openapi_description(admin):
    spec = admin.get("/openapi.json").json()
    for path in ["/admin/v2/clusters", "/admin/v2/{domain}/{tenant}/{namespace}/{topic}/partitions",
                 "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}",
                 "/admin/v2/namespaces/{tenant}/{namespace}/autoTopicCreation",
                 "/admin/v2/brokers/configuration/{configName}/{configValue}"]:
        assert path in spec["paths"]


# -- a subscription deleted through the admin API (PersistentTopicsBase#internalDeleteSubscriptionAsync),
# the partitioned metadata of an unloaded partition (NonPersistentTopic#tryToDeletePartitionedMetadata)


def test_deleting_a_non_persistent_subscription_disconnects_its_consumers_and_keeps_its_counters():
    from pulsar_naming.names import TopicName
    from reference_broker.topics.persistent import Consumer
    from reference_broker.topics.registry import TopicRegistry

    core = BrokerCore(BrokerConfig(), MemoryMetadataStore())
    registry, closed = TopicRegistry(), []
    app = build_app(core, broker_service_url=BROKER_URL, web_service_url=WEB_URL, topics=registry,
                    close_subscription=lambda topic, sub: closed.append((topic, sub)))
    name = "non-persistent://public/default/t"
    core.create_non_partitioned_topic(name)
    live = registry.get_or_load(TopicName.parse(name))
    sub = live.subscription("s", 0)
    sub.consumers.append(Consumer(1, "c", deliver=lambda *a: None))
    sub.out.record(1, 5, 0.0)

    async def delete(path):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://broker") as client:
            return await client.delete(path)

    answer = asyncio.run(delete(f"{NP}/t/subscription/s"))
    assert answer.status_code == 204 and closed == [(name, "s")] and "s" not in live.subscriptions
    assert live.stats()["msgOutCounter"] == 1  # the topic keeps what the subscription delivered
    gone = asyncio.run(delete(f"{NP}/t/subscription/s"))
    assert (gone.status_code, gone.json()) == (404, {"reason": f"Subscription s not found for topic {name}"})
    absent = asyncio.run(delete(f"{NP}/u/subscription/s"))
    assert absent.status_code == 404


def test_unloading_a_partition_deletes_its_base_names_metadata_only_when_asked():
    core = BrokerCore(BrokerConfig(), MemoryMetadataStore())
    core.create_partitioned_topic("non-persistent://public/default/t", 2)
    core.delete_metadata_of_unloaded_partition("non-persistent://public/default/u")  # not a partition: nothing
    assert core.get_partitioned_metadata("non-persistent://public/default/t", auto_create=False) == 2
    core.delete_metadata_of_unloaded_partition("non-persistent://public/default/t-partition-0")
    assert core.list_partitioned_topics("public/default", "non-persistent") == []
