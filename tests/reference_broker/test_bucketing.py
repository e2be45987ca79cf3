"""PIP-157 topic bucketing in the reference broker (docs/pip157-decisions.md), on the memory, sqlite AND
ZooKeeper stores: paths checked against pulsar_naming.hashing.bucket_of, listing/counting/existence/deletion across
buckets, immutability of numberOfTopicBuckets, restarts on the same store, and the CLI on a real ZooKeeper."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from pulsar_naming.hashing import bucket_of
from pulsar_naming.names import NamespaceName, TopicName
from reference_broker.admin.app import build_app
from reference_broker.config import BrokerConfig
from reference_broker.core import BrokerCore
from reference_broker.core_namespaces import MAX_TOPIC_BUCKETS, TOPIC_BUCKETS_IMMUTABLE
from reference_broker.errors import AlreadyExists, NamespaceNotFound, NotAllowed, NotEmpty
from reference_broker.metadata import layout, open_store
from reference_broker.metadata.memory import MemoryMetadataStore

from .zookeeper_server import zookeeper_server  # noqa: F401

NS = "public/b3"
NS_NAME = NamespaceName("public", "b3")
ML = "/managed-ledgers/public/b3/persistent"
# PIP-157's own example (PIP-157's pip/pip-157.md): 3 buckets.
PIP_EXAMPLE = {"nptopic1": 2, "nptopic2": 1, "ptopic-partition-0": 0, "ptopic-partition-1": 1,
               "ptopic-partition-2": 2, "ptopic-partition-3": 0}


class Stores:
    """Opens the same backing store again, as a restarted broker would."""

    def __init__(self, kind: str, tmp_path, zookeeper=None) -> None:
        self.kind = kind
        self._memory = MemoryMetadataStore() if kind == "memory" else None
        self.url = {"memory": "memory:", "sqlite": f"sqlite:{tmp_path / 'meta.db'}",
                    "zookeeper": zookeeper.unique_url() if zookeeper else None}[kind]
        self.opened: list = []

    def open(self):
        store = self._memory if self._memory is not None else open_store(self.url)
        self.opened.append(store)
        return store

    def core(self, **config) -> BrokerCore:
        return BrokerCore(BrokerConfig(**config), self.open())

    def close_all(self) -> None:
        for store in self.opened:
            store.close()


@pytest.fixture(params=["memory", "sqlite", "zookeeper"])
def stores(request, tmp_path):
    zookeeper = request.getfixturevalue("zookeeper_server") if request.param == "zookeeper" else None
    made = Stores(request.param, tmp_path, zookeeper)
    yield made
    made.close_all()


@pytest.fixture
def core(stores) -> BrokerCore:
    made = stores.core()
    made.create_namespace(NS, {"numberOfTopicBuckets": 3})
    return made


def ledger_nodes(core: BrokerCore, root: str = ML) -> set[str]:
    """Every node below ``root`` (depth 2 at most), as paths."""
    found = set()
    for child in core.store.children(root):
        grandchildren = core.store.children(f"{root}/{child}")
        found.add(f"{root}/{child}")
        found.update(f"{root}/{child}/{g}" for g in grandchildren)
    return found


def expected_path(local_name: str, buckets: int = 3) -> str:
    encoded = TopicName("persistent", "public", "b3", local_name).encoded_local_name
    return f"{ML}/${bucket_of(local_name, buckets)}/{encoded}"


# --- paths (decisions (a), (d)) -------------------------------------------------------------------------


def test_pip157_example_lands_in_the_example_buckets(core):
    core.create_non_partitioned_topic(f"persistent://{NS}/nptopic1")
    core.create_non_partitioned_topic(f"persistent://{NS}/nptopic2")
    core.create_partitioned_topic(f"persistent://{NS}/ptopic", 4)
    assert ledger_nodes(core) == {f"{ML}/$0", f"{ML}/$1", f"{ML}/$2"} | {
        f"{ML}/${bucket}/{name}" for name, bucket in PIP_EXAMPLE.items()}
    # Partitioned-topic metadata is never bucketed (Pulsar's TopicResources/NamespaceResources path unchanged).
    assert core.store.children("/admin/partitioned-topics/public/b3/persistent") == ["ptopic"]


@pytest.mark.parametrize("local", ["my topic", "ünï/code", "a%2Fb", "$1", "polygenelubricants", "GydZG_", "😀"])
def test_encoded_name_in_path_decoded_name_hashed(core, local):
    topic = TopicName("persistent", "public", "b3", local)
    core.create_non_partitioned_topic(topic)
    assert core.store.exists(expected_path(local))
    assert core.list_topics(NS, "persistent") == [str(topic)]
    assert core.topic_existence(topic) == "non-partitioned"


@pytest.mark.parametrize("policies", [None, {}, {"numberOfTopicBuckets": 1}, {"numberOfTopicBuckets": None}])
def test_one_bucket_keeps_todays_paths(stores, policies):
    core = stores.core()
    core.create_namespace("public/flat", policies)
    core.create_partitioned_topic("persistent://public/flat/p", 2)
    core.create_non_partitioned_topic("persistent://public/flat/t")
    assert core.store.children("/managed-ledgers/public/flat/persistent") == ["p-partition-0", "p-partition-1", "t"]
    stored = core.get_policies("public/flat")
    if policies and policies.get("numberOfTopicBuckets") == 1:
        assert stored["numberOfTopicBuckets"] == 1
    else:
        assert "numberOfTopicBuckets" not in stored  # absent means 1: the Policies JSON is as before
    assert core.get_number_of_topic_buckets("public/flat") == 1


# --- listing, existence, counting, deletion across buckets ----------------------------------------------


def test_listing_and_existence_across_buckets(core):
    names = [f"t{i}" for i in range(30)]
    for name in names:
        core.create_non_partitioned_topic(f"persistent://{NS}/{name}")
    core.create_partitioned_topic(f"persistent://{NS}/p", 5)
    listed = core.list_topics(NS, "persistent")
    partitions = [f"persistent://{NS}/p-partition-{i}" for i in range(5)]
    assert listed == sorted([f"persistent://{NS}/{n}" for n in names] + partitions)
    assert {int(child[1:]) for child in core.store.children(ML)} == {0, 1, 2}  # all three buckets used
    for name in names:
        assert core.store.exists(expected_path(name))
        assert core.topic_exists(f"persistent://{NS}/{name}")
        with pytest.raises(AlreadyExists):
            core.create_non_partitioned_topic(f"persistent://{NS}/{name}")
    assert core.get_partitioned_metadata(f"persistent://{NS}/t7", False) == 0
    assert core.get_partitioned_metadata(f"persistent://{NS}/p", False) == 5
    assert core.list_partitioned_topics(NS, "persistent") == [f"persistent://{NS}/p"]
    assert core.lookup(f"persistent://{NS}/t3").authoritative


def test_partition_scan_sees_partitions_in_every_bucket(core):
    for i in (0, 1, 4):  # partitions left in various buckets without their metadata
        core._load(TopicName.parse(f"persistent://{NS}/q-partition-{i}"))
    with pytest.raises(AlreadyExists, match="max partition index of 4"):
        core.create_partitioned_topic(f"persistent://{NS}/q", 3)
    core.create_partitioned_topic(f"persistent://{NS}/q", 5)


def test_max_topics_counts_across_buckets(core):
    core.update_dynamic_config("maxTopicsPerNamespace", "4")
    created = [f"t{i}" for i in range(4)]
    for name in created:
        core.create_non_partitioned_topic(f"persistent://{NS}/{name}")
    assert len({bucket_of(n, 3) for n in created}) > 1  # the count really spans buckets
    with pytest.raises(NotAllowed, match="Exceed maximum number of topics in namespace."):
        core.create_non_partitioned_topic(f"persistent://{NS}/t9")
    with pytest.raises(NotAllowed, match="Exceed maximum number of topics"):
        core.create_partitioned_topic(f"persistent://{NS}/p", 1)
    core.delete_topic(f"persistent://{NS}/t0")
    core.create_non_partitioned_topic(f"persistent://{NS}/t9")


def test_deletion_across_buckets_then_namespace(core):
    core.create_non_partitioned_topic(f"persistent://{NS}/nptopic1")
    core.create_partitioned_topic(f"persistent://{NS}/ptopic", 4)
    with pytest.raises(NotEmpty):
        core.delete_namespace(NS)
    core.delete_partitioned_topic(f"persistent://{NS}/ptopic")
    assert core.list_topics(NS, "persistent") == [f"persistent://{NS}/nptopic1"]
    with pytest.raises(NotEmpty):
        core.delete_namespace(NS)
    core.delete_topic(f"persistent://{NS}/nptopic1")
    assert core.list_topics(NS, "persistent") == []
    assert core.topic_existence(f"persistent://{NS}/nptopic1") is None
    core.delete_namespace(NS)  # empty bucket folders are not topics
    assert core.store.children("/managed-ledgers/public") == []
    core.create_namespace(NS, {"numberOfTopicBuckets": 5})  # a new namespace may choose again
    core.create_non_partitioned_topic(f"persistent://{NS}/nptopic1")
    assert core.store.exists(expected_path("nptopic1", 5))


def test_auto_created_topics_land_in_their_bucket(core):
    core.ensure_topic_for_attach(f"persistent://{NS}/auto1")
    core.update_dynamic_config("allowAutoTopicCreationType", "partitioned")
    core.update_dynamic_config("defaultNumPartitions", "2")
    assert core.get_partitioned_metadata(f"persistent://{NS}/auto2", True) == 2
    core.ensure_topic_for_attach(f"persistent://{NS}/auto2-partition-1")
    assert core.store.exists(expected_path("auto1"))
    assert core.store.exists(expected_path("auto2-partition-1"))


# --- numberOfTopicBuckets: set once, at creation (decisions (e), (f)) ------------------------------------


@pytest.mark.parametrize("value", [0, -1, MAX_TOPIC_BUCKETS + 1, "3", 2.5, True, [3], {"n": 3}])
def test_invalid_bucket_counts_are_refused_at_creation(stores, value):
    core = stores.core()
    with pytest.raises(NotAllowed) as info:
        core.create_namespace("public/bad", {"numberOfTopicBuckets": value})
    assert info.value.http_status == 412
    assert info.value.reason.startswith("Invalid numberOfTopicBuckets ")
    assert info.value.reason.endswith(f": must be an integer from 1 to {MAX_TOPIC_BUCKETS}")
    assert not core.namespace_exists("public/bad")


def test_largest_bucket_count(stores):
    core = stores.core()
    core.create_namespace("public/big", {"numberOfTopicBuckets": MAX_TOPIC_BUCKETS})
    core.create_non_partitioned_topic("persistent://public/big/x")
    assert core.store.exists(f"/managed-ledgers/public/big/persistent/${bucket_of('x', MAX_TOPIC_BUCKETS)}/x")
    assert core.list_topics("public/big", "persistent") == ["persistent://public/big/x"]


def test_bucket_count_cannot_change(core):
    before = core.store.get(layout.namespace_path(NS_NAME))
    with pytest.raises(NotAllowed) as info:
        core.set_number_of_topic_buckets(NS, 5)
    assert (info.value.http_status, info.value.reason) == (412, TOPIC_BUCKETS_IMMUTABLE)
    with pytest.raises(NotAllowed, match=TOPIC_BUCKETS_IMMUTABLE):
        core.set_number_of_topic_buckets(NS, 3)  # even the same value: the endpoint never writes
    with pytest.raises(AlreadyExists, match="Namespace already exists"):
        core.create_namespace(NS, {"numberOfTopicBuckets": 7})
    with pytest.raises(NamespaceNotFound):
        core.set_number_of_topic_buckets("public/nosuch", 5)
    assert core.store.get(layout.namespace_path(NS_NAME)) == before
    core.set_auto_topic_creation_override(NS, {"allowAutoTopicCreation": False})  # other policies still change
    assert core.get_policies(NS)["numberOfTopicBuckets"] == 3


# --- REST -----------------------------------------------------------------------------------------------


def rest(core: BrokerCore, method: str, path: str, **kwargs) -> httpx.Response:
    app = build_app(core, broker_service_url="pulsar://127.0.0.1:6650", web_service_url="http://127.0.0.1:8080")

    async def run() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://broker") as client:
            return await client.request(method, path, **kwargs)

    return asyncio.run(run())


def test_rest_bucketed_namespace_end_to_end(stores):
    core = stores.core()
    base = "/admin/v2/namespaces/public/rb"
    assert rest(core, "PUT", base, json={"numberOfTopicBuckets": 3}).status_code == 204
    assert rest(core, "GET", base).json()["numberOfTopicBuckets"] == 3
    assert rest(core, "GET", f"{base}/numberOfTopicBuckets").json() == 3
    for name in ("nptopic1", "nptopic2"):
        assert rest(core, "PUT", f"/admin/v2/persistent/public/rb/{name}").status_code == 204
    assert rest(core, "PUT", "/admin/v2/persistent/public/rb/ptopic/partitions", json=4).status_code == 204
    ml = "/managed-ledgers/public/rb/persistent"
    for name, bucket in PIP_EXAMPLE.items():
        assert core.store.exists(f"{ml}/${bucket}/{name}")
    listed = rest(core, "GET", "/admin/v2/persistent/public/rb").json()
    assert sorted(listed) == sorted(f"persistent://public/rb/{name}" for name in PIP_EXAMPLE)
    policies_before = rest(core, "GET", base).json()
    for method, kwargs in [("POST", {"json": 5}), ("POST", {"json": 3}), ("POST", {}), ("DELETE", {})]:
        response = rest(core, method, f"{base}/numberOfTopicBuckets", **kwargs)
        assert (response.status_code, response.json()) == (412, {"reason": TOPIC_BUCKETS_IMMUTABLE})
    response = rest(core, "PUT", base, json={"numberOfTopicBuckets": 5})
    assert response.status_code == 409
    assert rest(core, "GET", base).json() == policies_before
    assert rest(core, "DELETE", "/admin/v2/persistent/public/rb/nptopic2").status_code == 204
    assert not core.store.exists(f"{ml}/$1/nptopic2")
    response = rest(core, "PUT", "/admin/v2/namespaces/public/bad", json={"numberOfTopicBuckets": 0})
    assert (response.status_code, response.json()) == (
        412, {"reason": "Invalid numberOfTopicBuckets 0: must be an integer from 1 to 1024"})
    assert rest(core, "GET", "/admin/v2/namespaces/public/default/numberOfTopicBuckets").json() == 1
    assert rest(core, "POST", "/admin/v2/namespaces/public/nosuch/numberOfTopicBuckets", json=2).status_code == 404


# --- restart on the same store --------------------------------------------------------------------------


def test_restart_keeps_namespaces_bucket_counts_and_topics(stores):
    first = stores.core()
    first.create_namespace(NS, {"numberOfTopicBuckets": 3})
    first.create_namespace("public/flat")
    first.create_partitioned_topic(f"persistent://{NS}/ptopic", 4)
    first.create_non_partitioned_topic(f"persistent://{NS}/nptopic1")
    first.create_non_partitioned_topic("persistent://public/flat/t")
    listed = first.list_topics(NS, "persistent")
    if stores.kind != "memory":
        first.close()
    second = stores.core()
    assert second.list_namespaces("public") == ["public/b3", "public/default", "public/flat"]
    assert second.get_number_of_topic_buckets(NS) == 3
    assert second.get_number_of_topic_buckets("public/flat") == 1
    assert second.list_topics(NS, "persistent") == listed
    assert second.list_topics("public/flat", "persistent") == ["persistent://public/flat/t"]
    assert second.get_partitioned_metadata(f"persistent://{NS}/ptopic", False) == 4
    assert second.topic_existence(f"persistent://{NS}/nptopic1") == "non-partitioned"
    second.create_non_partitioned_topic(f"persistent://{NS}/nptopic2")
    assert second.store.exists(expected_path("nptopic2"))
    with pytest.raises(NotAllowed, match=TOPIC_BUCKETS_IMMUTABLE):
        second.set_number_of_topic_buckets(NS, 1)


# --- the CLI on a real ZooKeeper: REST, binary listing, the official client, restart ---------------------


@pytest.mark.slow
def test_cli_on_zookeeper_end_to_end(zookeeper_server):  # noqa: F811
    import pulsar

    from conformance.drivers.wire import WireDriver
    from model import ops
    from model.outcomes import TopicList

    from .broker_process import start, stop

    url = zookeeper_server.unique_url()
    process, broker_url, web_url = start("--metadata-store", url)
    try:
        def call(method, path, **kwargs):
            return httpx.request(method, web_url + path, timeout=10, **kwargs)

        assert call("PUT", "/admin/v2/namespaces/public/zb", json={"numberOfTopicBuckets": 3}).status_code == 204
        assert call("PUT", "/admin/v2/persistent/public/zb/ptopic/partitions", json=4).status_code == 204
        assert call("PUT", "/admin/v2/persistent/public/zb/nptopic1").status_code == 204
        from .broker_process import QUIET

        client = pulsar.Client(broker_url, operation_timeout_seconds=10, logger=QUIET)
        try:  # auto-created by a producer of the official client
            client.create_producer("persistent://public/zb/nptopic2").close()
        finally:
            client.close()
        expected = {f"persistent://public/zb/{name}" for name in PIP_EXAMPLE}
        driver = WireDriver(broker_url, timeout=10)
        try:
            assert driver.perform(ops.ListTopics("public/zb", "binary", "persistent")) == TopicList(frozenset(expected))
        finally:
            driver.close()
        assert set(call("GET", "/admin/v2/persistent/public/zb").json()) == expected
        assert call("POST", "/admin/v2/namespaces/public/zb/numberOfTopicBuckets", json=1).status_code == 412
    finally:
        assert stop(process) == 0
    zk = open_store(url)  # the znodes themselves, read straight from ZooKeeper
    try:
        for name, bucket in PIP_EXAMPLE.items():
            assert zk.exists(f"/managed-ledgers/public/zb/persistent/${bucket}/{name}"), name
        assert zk.children("/managed-ledgers/public/zb/persistent") == ["$0", "$1", "$2"]
    finally:
        zk.close()
    process, broker_url, web_url = start("--metadata-store", url)
    try:
        response = httpx.get(f"{web_url}/admin/v2/namespaces/public/zb", timeout=10)
        assert response.json()["numberOfTopicBuckets"] == 3
        listed = httpx.get(f"{web_url}/admin/v2/persistent/public/zb", timeout=10).json()
        assert set(listed) == {f"persistent://public/zb/{name}" for name in PIP_EXAMPLE}
    finally:
        assert stop(process) == 0
