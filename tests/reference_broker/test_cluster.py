"""The PIP-35 reference cluster: bundles, membership, ownership, LOOKUP/REST redirects, the official
client through any broker, and a broker going away (docs/pip35-decisions.md part B).

Unit tests use cores on one store without sockets; the rest run real brokers (in-process with
``InProcessCluster``, or the CLI as subprocesses, including separate processes sharing sqlite or a
real ZooKeeper).
"""

from __future__ import annotations

import json
import time
import zlib

import httpx
import pulsar
import pytest
from hypothesis import given, strategies as st

from bench.lookup_client import Pool, batch_lookup, single_lookup
from pulsar_naming.names import NamespaceName, TopicName
from reference_broker import bundles
from reference_broker.cluster import BrokerInfo, ClusterNode, rendezvous_score, view_for
from reference_broker.config import build_config
from reference_broker.core import BrokerCore
from reference_broker.errors import ServiceNotReady
from reference_broker.metadata import layout
from reference_broker.metadata.sqlite import SqliteMetadataStore
from pulsar_codec import events as ev
from pulsar_codec import pulsar_api_pb2 as pb

from . import broker_process
from .broker_process import QUIET
from .cluster_helpers import FakeCnx, InProcessCluster, core_cluster
from .zookeeper_server import zookeeper_server  # noqa: F401  (fixture)

NS = NamespaceName("public", "default")
LOOKUP = pb.CommandLookupTopicResponse


# --- bundles (bundles.py) -------------------------------------------------------------------


def test_default_four_bundles_are_pulsars_ranges():
    assert [b.range_name for b in bundles.namespace_bundles(NS, 4)] == [
        "0x00000000_0x40000000", "0x40000000_0x80000000", "0x80000000_0xc0000000", "0xc0000000_0xffffffff"]
    assert str(bundles.namespace_bundles(NS, 4)[0]) == "public/default/0x00000000_0x40000000"
    assert bundles.default_boundaries(1) == [0, 0xFFFFFFFF]
    assert bundles.default_boundaries(3) == [0, 0x55555555, 0xAAAAAAAA, 0xFFFFFFFF]


def test_topic_hash_is_crc32_of_the_full_name():
    assert zlib.crc32(b"123456789") == 0xCBF43926  # CRC-32 check value: the algorithm Guava's crc32 uses
    topic = TopicName.parse("t")
    assert bundles.topic_hash(topic) == zlib.crc32(b"persistent://public/default/t")
    assert bundles.topic_hash("persistent://public/default/t") == bundles.topic_hash(topic)


def test_range_edges_and_the_closed_last_bundle():
    ring = bundles.namespace_bundles(NS, 4)
    for value, index in [(0, 0), (0x3FFFFFFF, 0), (0x40000000, 1), (0xBFFFFFFF, 2), (0xC0000000, 3),
                         (0xFFFFFFFF, 3)]:
        assert [b.includes_hash(value) for b in ring].index(True) == index
        assert sum(b.includes_hash(value) for b in ring) == 1


@given(st.integers(1, 64), st.text(min_size=1, max_size=30))
def test_every_topic_lands_in_exactly_one_bundle(count, local):
    ring = bundles.namespace_bundles(NS, count)
    topic = TopicName("persistent", "public", "default", local)
    found = bundles.find_bundle(ring, topic)
    assert [b for b in ring if b.includes_hash(bundles.topic_hash(topic))] == [found]


def test_policies_bundles_win_over_the_default():
    policies = {"bundles": {"boundaries": ["0x00000000", "0x80000000", "0xffffffff"], "numBundles": 2}}
    assert [b.range_name for b in bundles.namespace_bundles(NS, 4, policies)] == [
        "0x00000000_0x80000000", "0x80000000_0xffffffff"]
    assert len(bundles.namespace_bundles(NS, 4, {"bundles": {"numBundles": 8}})) == 8
    assert len(bundles.namespace_bundles(NS, 4, {"bundles": {"boundaries": ["0x10", "0x20"]}})) == 4  # invalid


def test_partitions_spread_over_the_bundles():
    ring = bundles.namespace_bundles(NS, 4)
    used = {bundles.find_bundle(ring, TopicName.parse(f"p-partition-{i}")) for i in range(100)}
    assert len(used) == 4


# --- membership and ownership (cluster.py) ------------------------------------------------------


def test_brokers_register_under_loadbalance_brokers():
    cores = core_cluster(3)
    assert cores[0].store.children(layout.LOADBALANCE_BROKERS_ROOT) == ["b0:8080", "b1:8080", "b2:8080"]
    data = layout.decode_json(cores[0].store.get("/loadbalance/brokers/b1:8080")[0])
    assert data["pulsarServiceUrl"] == "pulsar://b1:6650" and data["webServiceUrl"] == "http://b1:8080"
    assert sorted(cores[2].cluster.live_brokers()) == ["b0:8080", "b1:8080", "b2:8080"]


def test_four_bundles_on_three_brokers_are_spread_two_one_one_and_recorded():
    cores = core_cluster(3)
    ring = cores[0].cluster.bundles_of(NS)
    owners = [cores[i % 3].cluster.owner_of(bundle).broker_id for i, bundle in enumerate(ring)]
    assert sorted(owners.count(b) for b in set(owners)) == [1, 1, 2]
    for bundle, owner in zip(ring, owners):  # every broker agrees, and the znode says the same
        assert {c.cluster.owner_of(bundle).broker_id for c in cores} == {owner}
        data = layout.decode_json(cores[0].store.get(f"/namespace/public/default/{bundle.range_name}")[0])
        assert data["brokerId"] == owner and data["nativeUrl"] == f"pulsar://{owner.split(':')[0]}:6650"


def test_ownership_is_sticky_when_a_broker_joins_and_moves_when_its_owner_leaves():
    cores = core_cluster(2)
    ring = cores[0].cluster.bundles_of(NS)
    before = {b: cores[0].cluster.owner_of(b).broker_id for b in ring}
    late = core_cluster(1, store=cores[0].store.inner, first=2)[0]  # a third broker joins the same store
    assert {b: late.cluster.owner_of(b).broker_id for b in ring} == before  # sticky: nothing moves
    leaving = cores[0].cluster.info.broker_id
    cores[0].close()  # releases its bundles and unregisters
    assert leaving not in late.cluster.live_brokers()
    after = {b: late.cluster.owner_of(b).broker_id for b in ring}
    assert leaving not in after.values()
    assert all(after[b] == before[b] for b in ring if before[b] != leaving)  # the others keep theirs
    assert not [p for p in late.cluster._ownership_paths()
                if layout.decode_json(late.store.get(p)[0])["brokerId"] == leaving]


def test_a_lost_assignment_race_reads_the_winner():
    cores = core_cluster(2)
    bundle = cores[0].cluster.bundles_of(NS)[0]
    winner = cores[1].cluster.info
    path = layout.bundle_ownership_path(NS, bundle.range_name)
    cores[1].store.create(path, layout.encode_json(winner.ownership()))  # b1 wrote first
    assert cores[0].cluster.owner_of(bundle) == winner


def test_a_stale_registration_is_dead_on_a_store_without_sessions(tmp_path):
    store = SqliteMetadataStore(str(tmp_path / "cluster.db"))
    config = build_config(overrides=["metadataStoreSessionTimeoutMillis=1000"])
    core = BrokerCore(config, store)
    core.set_service_urls("pulsar://b0:6650", "http://b0:8080")
    ghost = BrokerInfo("ghost:8080", "s1", "pulsar://ghost:6650", "http://ghost:8080")
    store.put("/loadbalance/brokers/ghost:8080", layout.encode_json(ghost.registration(time.time() - 5, False)))
    bundle = core.cluster.bundles_of(NS)[0]
    store.put(layout.bundle_ownership_path(NS, bundle.range_name), layout.encode_json(ghost.ownership()))
    view_for(store).invalidate()
    assert "ghost:8080" not in core.cluster.live_brokers()
    assert core.cluster.owner_of(bundle).broker_id == "b0:8080"  # the dead owner's bundle is taken over
    store.put("/loadbalance/brokers/ghost:8080", layout.encode_json(ghost.registration(time.time(), False)))
    view_for(store).invalidate()
    assert "ghost:8080" in core.cluster.live_brokers()
    core.close()


def test_rendezvous_score_is_stable_and_per_broker():
    bundle = bundles.namespace_bundles(NS, 4)[0]
    assert rendezvous_score(bundle, "a:1") == rendezvous_score(bundle, "a:1") != rendezvous_score(bundle, "b:1")


def test_a_core_without_a_server_is_a_cluster_of_one():
    core = BrokerCore(build_config(), core_cluster(1)[0].store)  # shares a store but never joined
    node: ClusterNode = core.cluster
    assert not node.joined
    assert node.owner_of(node.bundles_of(NS)[0]).broker_url == core.broker_service_url
    core.ensure_topic_for_attach("anything")  # owns everything: no ServiceNotReady


def test_attach_on_a_bundle_owned_elsewhere_is_service_not_ready():
    cores = core_cluster(3)
    topic = TopicName.parse("attach-me")
    owner = cores[0].cluster.owner_of(cores[0].cluster.bundle_of(topic))
    other = next(c for c in cores if c.cluster.info.broker_id != owner.broker_id)
    with pytest.raises(ServiceNotReady) as refused:
        other.ensure_topic_for_attach(topic)
    assert str(refused.value) == (
        f"Namespace bundle for topic ({topic}) not served by this instance:{other.cluster.info.broker_id}. "
        "Please redo the lookup. Request is denied: namespace=public/default")
    next(c for c in cores if c.cluster.info.broker_id == owner.broker_id).ensure_topic_for_attach(topic)


def test_binary_lookup_connects_on_the_owner_and_redirects_elsewhere():
    from reference_broker import lookup_service

    cores = core_cluster(3)
    topic = TopicName.parse("where")
    owner = cores[0].cluster.owner_of(cores[0].cluster.bundle_of(topic))
    for core in cores:
        cnx = FakeCnx(core)
        lookup_service.handle_lookup(cnx, ev.Lookup(topic="where", request_id=7))
        [answer] = cnx.sent
        assert answer.request_id == 7 and answer.authoritative and answer.brokerServiceUrl == owner.broker_url
        mine = core.cluster.info.broker_id == owner.broker_id
        assert answer.response == (LOOKUP.Connect if mine else LOOKUP.Redirect)


# --- real brokers ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster():
    with InProcessCluster(3) as running:
        yield running


def _owner_index(cluster, topic: str) -> int:
    owner = cluster.run(lambda: cluster.servers[0].core.cluster.owner_of(
        cluster.servers[0].core.cluster.bundle_of(TopicName.parse(topic))))
    return cluster.broker_urls.index(owner.broker_url)


@pytest.mark.slow
def test_lookup_over_sockets_follows_one_redirect_to_the_owner(cluster):
    topic = "persistent://public/default/sock-lookup"
    owner = _owner_index(cluster, topic)
    pool = Pool()
    try:
        for index, url in enumerate(cluster.broker_urls):
            answer = pool.get(url).request(ev.Lookup(topic=topic, request_id=next(pool.get(url).ids)))
            assert answer.response == (LOOKUP.Connect if index == owner else LOOKUP.Redirect)
            assert answer.brokerServiceUrl == cluster.broker_urls[owner] and answer.authoritative
            assert single_lookup(pool, url, topic).broker_url == cluster.broker_urls[owner]
    finally:
        pool.close()


@pytest.mark.slow
def test_rest_lookup_answers_200_on_the_owner_and_307_elsewhere(cluster):
    topic = "rest-lookup"
    owner = _owner_index(cluster, topic)
    for index, web in enumerate(cluster.web_urls):
        response = httpx.get(f"{web}/lookup/v2/topic/persistent/public/default/{topic}", timeout=5)
        if index == owner:
            assert response.status_code == 200
            assert response.json()["brokerUrl"] == cluster.broker_urls[owner]
            assert response.json()["httpUrl"] == cluster.web_urls[owner]
        else:
            assert response.status_code == 307
            assert response.headers["location"] == (
                f"{cluster.web_urls[owner]}/lookup/v2/topic/persistent/public/default/{topic}?authoritative=true")
            followed = httpx.get(f"{web}/lookup/v2/topic/persistent/public/default/{topic}", timeout=5,
                                 follow_redirects=True)
            assert followed.status_code == 200 and followed.json()["brokerUrl"] == cluster.broker_urls[owner]
    # Unchanged refusals come first: an unknown namespace is 404 on any broker.
    assert httpx.get(f"{cluster.web_urls[0]}/lookup/v2/topic/persistent/public/nope/t", timeout=5).status_code == 404


@pytest.mark.slow
def test_rest_cluster_views(cluster):
    web = cluster.web_urls[1]
    live = httpx.get(f"{web}/admin/v2/brokers/standalone", timeout=5).json()
    assert sorted(live) == sorted(u.split("//")[1] for u in cluster.web_urls)
    assert httpx.get(f"{web}/admin/v2/brokers/nosuch", timeout=5).status_code == 404
    assert httpx.get(f"{web}/admin/v2/namespaces/public/default/bundles", timeout=5).json() == {
        "boundaries": ["0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"], "numBundles": 4}
    topic = TopicName.parse("which-bundle")
    expected = bundles.find_bundle(bundles.namespace_bundles(NS, 4), topic).range_name
    assert httpx.get(f"{web}/lookup/v2/topic/persistent/public/default/which-bundle/bundle", timeout=5).text == expected


@pytest.mark.slow
def test_producer_on_a_non_owner_is_refused_with_service_not_ready(cluster):
    topic = "persistent://public/default/not-here"
    owner = _owner_index(cluster, topic)
    other = (owner + 1) % 3
    pool = Pool()
    try:
        client = pool.get(cluster.broker_urls[other])
        answer = client.request(ev.Producer(topic=topic, producer_id=1, request_id=next(client.ids)))
        assert isinstance(answer, ev.Error) and answer.error == pb.ServiceNotReady
        assert "not served by this instance" in answer.message and "Please redo the lookup" in answer.message
        owner_client = pool.get(cluster.broker_urls[owner])
        assert isinstance(owner_client.request(ev.Producer(topic=topic, producer_id=1, request_id=next(
            owner_client.ids))), ev.ProducerSuccess)
    finally:
        pool.close()


def _produce_and_consume(service_url: str, topic: str, tag: str, count: int = 30, expect: int | None = None) -> list[str]:
    """Subscribe from the earliest message, produce ``count`` messages, read ``expect`` (default count)."""
    client = pulsar.Client(service_url, operation_timeout_seconds=10, connection_timeout_ms=3000, logger=QUIET)
    try:
        consumer = client.subscribe(topic, f"sub-{tag}", initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer(topic, batching_enabled=False)
        for n in range(count):
            producer.send(f"{tag}-{n}".encode(), partition_key=str(n))
        received = []
        for _ in range(count if expect is None else expect):
            message = consumer.receive(timeout_millis=5000)
            received.append(message.data().decode())
            consumer.acknowledge(message)
        return received
    finally:
        client.close()


@pytest.mark.slow
def test_official_client_produces_and_consumes_through_any_broker(cluster):
    web = cluster.web_urls[0]
    assert httpx.put(f"{web}/admin/v2/persistent/public/default/six/partitions", json=6, timeout=5).status_code == 204
    topic = "persistent://public/default/six"
    owners = {_owner_index(cluster, f"{topic}-partition-{i}") for i in range(6)}
    assert len(owners) >= 2  # the partitions really live on different brokers, so redirects happen
    sent = []
    for index, url in enumerate(cluster.broker_urls):
        sent += [f"b{index}-{n}" for n in range(30)]
        received = _produce_and_consume(url, topic, f"b{index}", expect=len(sent))
        assert sorted(received) == sorted(sent)  # each new subscription reads everything so far
    # The HTTP service URL follows the REST lookup's 307s.
    client = pulsar.Client(cluster.web_urls[2], operation_timeout_seconds=10, logger=QUIET)
    try:
        client.create_producer(topic).send(b"via-http")
    finally:
        client.close()


@pytest.mark.slow
def test_a_broker_going_away_moves_its_bundles_and_the_cluster_keeps_serving():
    with InProcessCluster(3) as cluster:
        topic = "persistent://public/default/moving"
        web = cluster.web_urls[0]
        assert httpx.put(f"{web}/admin/v2/persistent/public/default/moving/partitions", json=8,
                         timeout=5).status_code == 204
        pool = Pool()
        before = {t: r.broker_url for t, r in batch_lookup(pool, cluster.broker_urls[0], [topic]).items()}
        pool.close()
        victim = next(i for i in (1, 2) if cluster.broker_urls[i] in before.values())
        gone = cluster.broker_urls[victim]
        cluster.stop(victim)
        live = httpx.get(f"{web}/admin/v2/brokers/standalone", timeout=5).json()
        assert cluster.web_urls[victim].split("//")[1] not in live and len(live) == 2
        pool = Pool()
        after = {t: r.broker_url for t, r in batch_lookup(pool, cluster.broker_urls[0], [topic]).items()}
        pool.close()
        assert set(after) == set(before) and gone not in after.values() and None not in after.values()
        assert all(after[t] == before[t] for t in before if before[t] != gone)  # only its bundles moved
        received = _produce_and_consume(cluster.broker_urls[0], topic, "after", count=20)
        assert sorted(received) == sorted(f"after-{n}" for n in range(20))


# --- the CLI: --brokers N, and separate processes on one store -----------------------------------------


@pytest.mark.slow
def test_cli_brokers_n_prints_every_url_and_n_1_keeps_the_contract():
    with broker_process.running_broker("--brokers", "3") as (broker_urls, web_urls):
        assert len(broker_urls.split(",")) == 3 and len(set(web_urls.split(","))) == 3
        assert all(u.startswith("pulsar://127.0.0.1:") for u in broker_urls.split(","))
        live = httpx.get(web_urls.split(",")[2] + "/admin/v2/brokers/standalone", timeout=5).json()
        assert len(live) == 3
    with broker_process.running_broker() as (broker_url, web_url):
        assert "," not in broker_url + web_url


def test_cli_refuses_zero_brokers():
    from reference_broker.__main__ import main

    assert main(["--brokers", "0"]) == 2


def _lookup_everywhere(brokers: list[str], topic: str) -> dict[str, str]:
    pool = Pool()
    try:
        return {url: single_lookup(pool, url, topic).broker_url for url in brokers}
    finally:
        pool.close()


@pytest.mark.slow
def test_separate_processes_on_one_sqlite_store_form_a_cluster_and_survive_a_kill(tmp_path):
    store = f"sqlite:{tmp_path / 'cluster.db'}"
    timeout = ["--set", "metadataStoreSessionTimeoutMillis=1500"]
    started = [broker_process.start("--metadata-store", store, *timeout) for _ in range(3)]
    try:
        brokers = [b for _, b, _ in started]
        webs = [w for _, _, w in started]
        assert len(httpx.get(webs[0] + "/admin/v2/brokers/standalone", timeout=5).json()) == 3
        assert httpx.put(webs[0] + "/admin/v2/persistent/public/default/proc/partitions", json=12,
                         timeout=5).status_code == 204
        pool = Pool()
        resolved = batch_lookup(pool, brokers[1], ["persistent://public/default/proc"])
        pool.close()
        assert len(resolved) == 12 and len({r.broker_url for r in resolved.values()}) >= 2
        for topic, result in list(resolved.items())[:4]:  # every process agrees on each owner
            assert set(_lookup_everywhere(brokers, topic).values()) == {result.broker_url}
        victim = next(i for i in (0, 2) if brokers[i] in {r.broker_url for r in resolved.values()})
        started[victim][0].kill()  # no unregister: liveness must expire (1.5 s)
        started[victim][0].wait(10)
        survivors = [b for i, b in enumerate(brokers) if i != victim]
        deadline = time.monotonic() + 60  # the expiry, and a loaded machine's delay in noticing it
        while True:
            pool = Pool()
            after = batch_lookup(pool, brokers[1], ["persistent://public/default/proc"])
            pool.close()
            if {r.broker_url for r in after.values()} <= set(survivors) or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        assert {r.broker_url for r in after.values()} <= set(survivors)
        assert all(r.error is None for r in after.values())
    finally:
        for process, _, _ in started:
            broker_process.stop(process)


@pytest.mark.slow
def test_separate_processes_on_zookeeper_use_ephemeral_registrations(zookeeper_server):  # noqa: F811
    store = zookeeper_server.unique_url()
    started = [broker_process.start("--metadata-store", store) for _ in range(2)]
    try:
        brokers = [b for _, b, _ in started]
        web = started[0][2]
        assert len(httpx.get(web + "/admin/v2/brokers/standalone", timeout=5).json()) == 2
        owners = {_lookup_everywhere(brokers, f"zk-t{i}")[brokers[0]] for i in range(12)}
        assert owners <= set(brokers)
        broker_process.stop(started[1][0])  # graceful: unregisters and releases its bundles
        deadline = time.monotonic() + 30  # the survivor's view of /loadbalance/brokers is cached for up to 1 s
        while len(httpx.get(web + "/admin/v2/brokers/standalone", timeout=5).json()) != 1 \
                and time.monotonic() < deadline:
            time.sleep(0.25)
        assert len(httpx.get(web + "/admin/v2/brokers/standalone", timeout=5).json()) == 1
        assert {_lookup_everywhere(brokers[:1], f"zk-t{i}")[brokers[0]] for i in range(12)} == {brokers[0]}
    finally:
        for process, _, _ in started:
            broker_process.stop(process)



# -- a ZooKeeper session that expires (ClusterNode._register_again) -----------------------------------


def _wait_for(condition, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.mark.slow
def test_a_broker_whose_zookeeper_session_expired_registers_again(zookeeper_server):  # noqa: F811
    from kazoo.client import KazooClient

    from reference_broker.metadata import open_store

    url = zookeeper_server.unique_url()
    store_a, store_b = open_store(url), open_store(url)  # two processes' worth: two sessions
    try:
        (a,), (b,) = core_cluster(1, store=store_a), core_cluster(1, store=store_b, first=1)
        path = layout.broker_registration_path(a.cluster.info.broker_id)

        def registered() -> bool:  # seen by the other session, with a's own session id
            found = store_b.get(path)
            return found is not None and json.loads(found[0])["session"] == a.cluster.info.session

        assert registered()
        session_id, password = store_a._client.client_id
        twin = KazooClient(hosts=store_a.hosts, client_id=(session_id, password))
        twin.start(timeout=10)
        twin.stop()  # closing a session with a's id and password ends a's session: its ephemeral node goes
        twin.close()
        # Bounded waits, not on the node's absence (the broker may register again before we look):
        # first a's store is on a new session, then the node is back.
        assert _wait_for(lambda: (store_a._client.client_id or (session_id,))[0] != session_id, 15), \
            "the session did not expire"
        assert _wait_for(registered, 15), "the broker did not register again after its session expired"
    finally:
        store_a.close()
        store_b.close()


def test_after_a_new_session_cached_owners_are_read_again_from_the_store():
    """A bundle taken by another broker while this one was dead is answered as that broker's."""
    a, b = core_cluster(2)
    bundle = a.cluster.bundle_of(TopicName.parse("persistent://public/default/t-rule7"))
    owner = a.cluster.owner_of(bundle)
    other = b if owner.broker_id == a.cluster.info.broker_id else a
    mine = a if other is b else b
    path = layout.bundle_ownership_path(bundle.namespace, bundle.range_name)
    mine.store.put(path, layout.encode_json(other.cluster.info.ownership()))  # taken meanwhile
    assert mine.cluster.owner_of(bundle).broker_id == mine.cluster.info.broker_id  # still the cached answer
    mine.cluster._session_renewed()  # what the store calls on a new session (no loop here: a thread)
    assert _wait_for(lambda: mine.cluster.owner_of(bundle).broker_id == other.cluster.info.broker_id, 5)


def test_after_a_new_session_producers_on_a_bundle_taken_meanwhile_are_closed():
    """A new session on a live server: CLOSE_PRODUCER (request_id -1) to the client, then the bundle is not served."""
    from .wire_client import raw_connect, read_event

    with InProcessCluster(2) as cluster:
        first, second = cluster.servers
        core = first.core
        mine = next(t for t in (f"persistent://public/default/r7-{i}" for i in range(64))
                    if cluster.run(lambda t=t: core.cluster.is_self(
                        core.cluster.owner_of(core.cluster.bundle_of(TopicName.parse(t))))))
        sock, conn = raw_connect(first.broker_url)
        try:
            sock.sendall(conn.send(ev.Producer(topic=mine, producer_id=5, request_id=1)))
            assert isinstance(read_event(sock, conn), ev.ProducerSuccess)
            bundle = cluster.run(lambda: core.cluster.bundle_of(TopicName.parse(mine)))
            path = layout.bundle_ownership_path(bundle.namespace, bundle.range_name)
            cluster.run(lambda: core.store.put(path, layout.encode_json(second.core.cluster.info.ownership())))
            core.cluster._session_renewed()  # what the ZooKeeper store calls on a new session
            closed = read_event(sock, conn)
            assert isinstance(closed, ev.CloseProducer)
            assert (closed.producer_id, closed.request_id) == (5, 2**64 - 1)
            sock.sendall(conn.send(ev.Producer(topic=mine, producer_id=6, request_id=2)))
            refused = read_event(sock, conn)
            assert isinstance(refused, ev.Error) and refused.error == pb.ServiceNotReady
            assert mine not in first.topics.names()
        finally:
            sock.close()


# -- admin requests about one topic go to its owner (admin/owners.py) ------------------------------------


@pytest.mark.slow
def test_on_a_cluster_a_topics_admin_requests_go_to_its_owner_and_listings_ask_every_owner():
    """Pulsar's admin API serves a topic on the broker that owns its bundle (a 307 elsewhere, with
    authoritative=true), and a non-persistent topic exists only there: the other brokers ask it."""
    with InProcessCluster(3) as cluster:
        names = [f"non-persistent://public/default/owned-{i}" for i in range(12)]
        owners = {name: single_lookup(Pool(), cluster.broker_urls[0], name).broker_url for name in names}
        elsewhere = next(name for name, owner in owners.items() if owner != cluster.broker_urls[0])
        owner_web = cluster.web_urls[cluster.broker_urls.index(owners[elsewhere])]
        path = "/admin/v2/non-persistent/public/default/" + elsewhere.rsplit("/", 1)[1]
        asked = httpx.put(cluster.web_urls[0] + path, timeout=10)
        assert asked.status_code == 307 and asked.headers["location"].startswith(owner_web + path)
        assert "authoritative=true" in asked.headers["location"]
        assert httpx.put(cluster.web_urls[0] + path, timeout=10, follow_redirects=True).status_code == 204
        for web in cluster.web_urls:  # the owner loaded it; every broker lists it and finds it
            listed = httpx.get(web + "/admin/v2/non-persistent/public/default", timeout=10).json()
            assert elsewhere in listed, web
            found = httpx.get(web + path + "/partitions", params={"checkAllowAutoCreation": "false"}, timeout=10)
            assert found.status_code == 200 and found.json() == {"partitions": 0}, web
        stats = httpx.get(cluster.web_urls[0] + path + "/stats", timeout=10, follow_redirects=True)
        assert stats.status_code == 200 and "msgInCounter" in stats.json()
