"""PIP-35 batch lookup on the reference cluster: every defined answer, bad input, and a broker going
away mid-batch (docs/pip35-decisions.md part C; the wire form itself is in protocol/test_events.py).

Rule of these tests: a batch never fails as a whole except for the two refusals C3 names (too big,
no lookup permit); every other problem is an entry of its own, and the cluster keeps serving.
"""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given, settings, strategies as st

from bench.lookup_client import UNREACHABLE, Pool, batch_lookup, send_all, single_lookup
from pulsar_naming.names import TopicName
from reference_broker import lookup_service
from reference_broker.errors import MetadataStoreError
from reference_broker.metadata.memory import MemoryMetadataStore
from pulsar_codec import events as ev
from pulsar_codec import pulsar_api_pb2 as pb

from .cluster_helpers import FakeCnx, InProcessCluster, core_cluster

LOOKUP = pb.CommandLookupTopicResponse
P = "persistent://public/default/"


def batch(core, topics, request_id=1):
    cnx = FakeCnx(core)
    lookup_service.handle_batch_lookup(cnx, ev.BatchLookup(topics=topics, request_id=request_id))
    [answer] = cnx.sent
    assert isinstance(answer, ev.BatchLookupResponse) and answer.request_id == request_id
    return answer


def single(core, topic):
    cnx = FakeCnx(core)
    lookup_service.handle_lookup(cnx, ev.Lookup(topic=topic, request_id=1))
    return cnx.sent[0]


@pytest.fixture
def cores():
    made = core_cluster(3)
    made[0].create_partitioned_topic("p4", 4)
    return made


def test_empty_batch_is_a_success_with_no_entries(cores):
    answer = batch(cores[0], [])
    assert not answer.has("error") and len(answer.entries) == 0


def test_duplicates_are_answered_once_in_first_appearance_order(cores):
    answer = batch(cores[0], ["b", "a", "b", P + "a", "persistent://public/default/b"])
    assert [e.topic for e in answer.entries] == [P + "b", P + "a"]
    assert [e.requested for e in answer.entries] == ["b", "a"]  # the first spelling, not canonical


def test_canonical_names_carry_no_requested(cores):
    answer = batch(cores[0], [P + "x", P + "p4"])
    assert [e.HasField("requested") for e in answer.entries] == [False] * 5


def test_a_partitioned_name_expands_to_its_partitions_in_order(cores):
    answer = batch(cores[0], ["p4", P + "p4-partition-2", "plain"])
    assert [e.topic for e in answer.entries] == [P + f"p4-partition-{i}" for i in range(4)] + [P + "plain"]
    assert {e.requested for e in answer.entries[:4]} == {"p4"}
    assert all(e.response in (LOOKUP.Connect, LOOKUP.Redirect) and e.authoritative for e in answer.entries)


def test_invalid_names_fail_alone_under_the_name_as_written(cores):
    answer = batch(cores[0], ["ok", "bad//name", "a/b/c/d", "", "other"])
    by_topic = {e.topic: e for e in answer.entries}
    for name in ("bad//name", "a/b/c/d", ""):
        assert by_topic[name].response == LOOKUP.Failed and by_topic[name].error == pb.InvalidTopicName
        assert by_topic[name].message
    assert by_topic[P + "ok"].response != LOOKUP.Failed and by_topic[P + "other"].response != LOOKUP.Failed


def test_unknown_topics_and_namespaces_answer_what_a_single_lookup_answers(cores):
    names = ["never-created", "persistent://public/nosuch/t", "non-persistent://public/default/np", "p4-partition-9"]
    answer = batch(cores[1], names)
    for entry, name in zip(answer.entries, names):
        one = single(cores[1], name)
        assert (entry.response, entry.brokerServiceUrl, entry.error, entry.message) == (
            one.response, one.brokerServiceUrl, one.error, one.message)
    assert answer.entries[1].error == pb.TopicNotFound and answer.entries[1].message == "Namespace not found"


def test_a_disabled_domain_resolves_as_its_single_lookup_does():
    cores = core_cluster(2, overrides=("enableNonPersistentTopics=false",))
    answer = batch(cores[0], ["non-persistent://public/default/np", "fine"])
    assert all(entry.response != LOOKUP.Failed for entry in answer.entries)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "p4", "p4-partition-1", P + "a", "bad//x", "persistent://x/y/z",
                                 "non-persistent://public/default/n", "p4-partition-7"]), max_size=12),
       st.integers(0, 2))
def test_every_entry_agrees_with_a_single_lookup(names, at):
    cores = core_cluster(3)
    cores[0].create_partitioned_topic("p4", 4)
    answer = batch(cores[at], names)
    for entry in answer.entries:
        one = single(cores[at], entry.topic)
        assert (entry.response, entry.brokerServiceUrl, entry.authoritative, entry.error) == (
            one.response, one.brokerServiceUrl, one.authoritative, one.error), entry.topic


def test_entries_owned_here_connect_and_the_others_redirect_to_their_owner(cores):
    answer = batch(cores[0], ["p4"] + [f"t{i}" for i in range(40)])
    for entry in answer.entries:
        owner = cores[0].cluster.owner_of(cores[0].cluster.bundle_of(TopicName.parse(entry.topic)))
        assert entry.brokerServiceUrl == owner.broker_url
        assert entry.response == (LOOKUP.Connect if owner.broker_url == "pulsar://b0:6650" else LOOKUP.Redirect)
    # The follow-up to each owner, authoritative, connects every one of its topics.
    for core in cores[1:]:
        mine = [e.topic for e in answer.entries if e.brokerServiceUrl == core.broker_service_url]
        cnx = FakeCnx(core)
        lookup_service.handle_batch_lookup(cnx, ev.BatchLookup(topics=mine, request_id=2, authoritative=True))
        assert {e.response for e in cnx.sent[0].entries} <= {LOOKUP.Connect}


# --- the whole-request refusals (C3) ------------------------------------------------------------


def test_more_names_than_the_maximum_is_refused_whole_with_the_limit_named():
    cores = core_cluster(2, overrides=("maxBatchLookupTopics=5",))
    assert len(batch(cores[0], [f"t{i}" for i in range(5)]).entries) == 5  # exactly the limit is fine
    answer = batch(cores[0], [f"t{i}" for i in range(6)])
    assert answer.error == pb.TooManyRequests and len(answer.entries) == 0
    assert "maxBatchLookupTopics=5" in answer.message and "6" in answer.message


def test_a_partitioned_name_that_expands_beyond_the_maximum_is_refused_whole():
    cores = core_cluster(2, overrides=("maxBatchLookupTopics=10",))
    cores[0].create_partitioned_topic("wide", 11)
    answer = batch(cores[0], ["wide"])
    assert answer.error == pb.TooManyRequests and "after partition expansion" in answer.message


def test_an_answer_larger_than_max_message_size_is_refused_whole():
    cores = core_cluster(2, overrides=("maxMessageSize=2000",))
    answer = batch(cores[0], [f"a-fairly-long-topic-name-{i}" for i in range(100)])
    assert answer.error == pb.TooManyRequests and "maxMessageSize=2000" in answer.message


def test_no_lookup_permit_refuses_the_batch_and_releases_nothing_it_did_not_take():
    cores = core_cluster(2)
    cores[0].update_dynamic_config("maxConcurrentLookupRequest", "0")
    answer = batch(cores[0], ["t"])
    assert answer.error == pb.TooManyRequests and answer.message == "Failed due to too many pending lookup requests"
    assert cores[0].lookup_permits.in_use == 0
    cores[0].update_dynamic_config("maxConcurrentLookupRequest", "10")
    batch(cores[0], ["t"])
    assert cores[0].lookup_permits.in_use == 0


# --- failures during a batch are per topic (C10) ------------------------------------------------


class FailingStore(MemoryMetadataStore):
    """Store errors on chosen paths, to break one bundle's resolution in the middle of a batch."""

    def __init__(self):
        super().__init__()
        self.broken: set[str] = set()

    def _check(self, path):
        if any(path.startswith(prefix) for prefix in self.broken):
            raise MetadataStoreError(f"store unavailable for {path}")

    def get(self, path):
        self._check(path)
        return super().get(path)

    def create(self, path, value=b""):
        self._check(path)
        return super().create(path, value)


def test_a_store_failure_on_one_bundle_fails_only_that_bundles_topics():
    store = FailingStore()
    cores = core_cluster(2, store=store)
    ring = cores[0].cluster.bundles_of(TopicName.parse("x").namespace_name)
    store.broken.add(f"/namespace/public/default/{ring[1].range_name}")
    names = [f"t{i}" for i in range(60)]
    answer = batch(cores[0], names)
    assert len(answer.entries) == 60 and not answer.has("error")
    for entry in answer.entries:
        in_broken = cores[0].cluster.bundle_of(TopicName.parse(entry.topic)) == ring[1]
        assert (entry.response == LOOKUP.Failed) == in_broken
        if in_broken:
            assert entry.error == pb.MetadataError and "store unavailable" in entry.message
    store.broken.clear()  # the store is back: the same batch resolves entirely
    assert LOOKUP.Failed not in {e.response for e in batch(cores[0], names).entries}


def test_a_store_failure_reading_partitioned_metadata_fails_that_name_only():
    store = FailingStore()
    cores = core_cluster(2, store=store)
    store.broken.add("/admin/partitioned-topics/public/default/persistent/sick")
    answer = batch(cores[0], ["sick", "well"])
    assert answer.entries[0].topic == P + "sick" and answer.entries[0].error == pb.MetadataError
    assert answer.entries[1].response != LOOKUP.Failed


# --- over sockets: the 1,000-partition case and a broker going away mid-batch ----------------------


@pytest.mark.slow
def test_a_thousand_partitions_in_one_round_trip_per_owning_broker():
    with InProcessCluster(3) as cluster:
        web = cluster.web_urls[0]
        assert httpx.put(f"{web}/admin/v2/persistent/public/default/k/partitions", json=1000,
                         timeout=10).status_code == 204
        pool = Pool()
        try:
            for url in cluster.broker_urls:
                pool.get(url)
            before = pool.round_trips
            resolved = batch_lookup(pool, cluster.broker_urls[0], [P + "k"])
            owners = {r.broker_url for r in resolved.values()}
            assert len(resolved) == 1000 and None not in owners
            assert pool.round_trips - before == 1 + len(owners - {cluster.broker_urls[0]})
            sequential = {t: single_lookup(pool, cluster.broker_urls[0], t).broker_url for t in list(resolved)[:200]}
            assert all(resolved[t].broker_url == url for t, url in sequential.items())
        finally:
            pool.close()


def _first_answer_redirects(pool, cluster, topic):
    first = pool.get(cluster.broker_urls[0]).request(ev.BatchLookup(topics=[topic], request_id=1))
    redirected: dict[str, list[str]] = {}
    for entry in first.entries:
        if entry.response == LOOKUP.Redirect:
            redirected.setdefault(entry.brokerServiceUrl, []).append(entry.topic)
    assert redirected, "the first broker owns everything: the test needs another owner"
    return first, redirected


@pytest.mark.slow
def test_a_broker_stopped_between_the_first_answer_and_the_follow_up():
    with InProcessCluster(3) as cluster:
        assert httpx.put(f"{cluster.web_urls[0]}/admin/v2/persistent/public/default/mid/partitions", json=40,
                         timeout=10).status_code == 204
        pool = Pool()
        try:
            first, redirected = _first_answer_redirects(pool, cluster, P + "mid")
            victim_url = sorted(redirected)[0]
            pool.get(victim_url)  # connected before it goes away: the follow-up meets a closed connection
            cluster.stop(cluster.broker_urls.index(victim_url))
            answers = send_all(pool, redirected, authoritative=True)
            for url, answer in answers.items():
                if url == victim_url:
                    assert isinstance(answer, Exception)  # the client turns it into per-topic errors
                else:
                    assert {e.response for e in answer.entries} == {LOOKUP.Connect}
            # Asked again, the stopped broker's bundles have moved: every topic resolves on a live broker.
            again = batch_lookup(pool, cluster.broker_urls[0], [P + "mid"])
            assert len(again) == 40 and all(r.error is None and r.broker_url != victim_url for r in again.values())
        finally:
            pool.close()


@pytest.mark.slow
def test_a_crashed_broker_gives_per_topic_errors_then_its_bundles_move_and_the_cluster_keeps_serving():
    with InProcessCluster(3) as cluster:
        assert httpx.put(f"{cluster.web_urls[0]}/admin/v2/persistent/public/default/crash/partitions", json=40,
                         timeout=10).status_code == 204
        pool = Pool()
        try:
            _, redirected = _first_answer_redirects(pool, cluster, P + "crash")
            victim_url = sorted(redirected)[0]
            victim = cluster.broker_urls.index(victim_url)
            cluster.crash(victim)  # still registered, still the owner of its bundles
            resolved = batch_lookup(pool, cluster.broker_urls[0], [P + "crash"])
            assert len(resolved) == 40
            failed = {t for t, r in resolved.items() if r.error is not None}
            assert failed == set(redirected[victim_url])  # exactly the crashed broker's topics
            for topic in failed:
                assert resolved[topic].error == UNREACHABLE and victim_url.split("//")[1] in resolved[topic].message
            assert all(r.broker_url in cluster.broker_urls for t, r in resolved.items() if t not in failed)
            # The cluster keeps serving: lookups, metadata and producers on the live brokers.
            live = next(u for u in cluster.broker_urls if u != victim_url)
            client = pool.get(live)
            assert client.request(ev.PartitionedMetadata(topic=P + "crash", request_id=next(client.ids))).partitions == 40
            healthy = next(t for t in resolved if t not in failed)
            owner = pool.get(resolved[healthy].broker_url)
            assert isinstance(owner.request(ev.Producer(topic=healthy, producer_id=5, request_id=next(owner.ids))),
                              ev.ProducerSuccess)
            # Its session ends: its bundles move and every topic resolves again.
            cluster.expire(victim)
            again = batch_lookup(pool, cluster.broker_urls[0], [P + "crash"])
            assert all(r.error is None and r.broker_url != victim_url for r in again.values())
            assert all(again[t].broker_url == resolved[t].broker_url for t in resolved if t not in failed)
        finally:
            pool.close()


@pytest.mark.slow
def test_an_unreachable_broker_in_the_follow_up_fails_its_topics_only():
    with InProcessCluster(2) as cluster:
        pool = Pool()
        try:
            # A follow-up aimed at a URL nothing listens on: per-topic ServiceNotReady, no exception.
            answers = send_all(pool, {"pulsar://127.0.0.1:1": ["a", "b"], cluster.broker_urls[0]: ["c"]}, True)
            assert isinstance(answers["pulsar://127.0.0.1:1"], Exception)
            assert isinstance(answers[cluster.broker_urls[0]], ev.BatchLookupResponse)
        finally:
            pool.close()


# --- REST: POST /lookup/v2/topics (C11) -------------------------------------------------------------


@pytest.fixture(scope="module")
def rest_cluster():
    with InProcessCluster(2, overrides=("maxBatchLookupTopics=50",)) as cluster:
        httpx.put(f"{cluster.web_urls[0]}/admin/v2/persistent/public/default/rp/partitions", json=3, timeout=10)
        yield cluster


@pytest.mark.slow
def test_rest_batch_answers_owner_lookup_data_or_per_topic_errors(rest_cluster):
    web = rest_cluster.web_urls[1]
    response = httpx.post(f"{web}/lookup/v2/topics", json=["rp", "x", "x", "bad//n", "persistent://public/nope/t"],
                          timeout=10)
    assert response.status_code == 200
    body = response.json()
    assert list(body) == [P + "rp-partition-0", P + "rp-partition-1", P + "rp-partition-2", P + "x", "bad//n",
                          "persistent://public/nope/t"]
    assert body[P + "rp-partition-0"]["requested"] == "rp"
    for topic in (P + "rp-partition-0", P + "x"):
        data = body[topic]
        assert data["brokerUrl"] in rest_cluster.broker_urls and data["nativeUrl"] == data["brokerUrl"]
        assert data["httpUrl"] == rest_cluster.web_urls[rest_cluster.broker_urls.index(data["brokerUrl"])]
        single = httpx.get(f"{web}/lookup/v2/topic/persistent/public/default/{topic.rsplit('/', 1)[1]}",
                           follow_redirects=True, timeout=10).json()
        assert single["brokerUrl"] == data["brokerUrl"]  # what following the 307 ends at
    assert body["bad//n"]["error"] == "InvalidTopicName" and body["bad//n"]["reason"]
    assert body["persistent://public/nope/t"]["error"] == "TopicNotFound"
    assert "requested" not in body["persistent://public/nope/t"]  # written canonically
    assert body["bad//n"] == {"error": "InvalidTopicName", "reason": body["bad//n"]["reason"]}


@pytest.mark.slow
def test_each_batch_answers_what_the_single_lookup_of_its_api_answers_with_auto_creation_off():
    """C6: the REST batch has the single REST lookup's existence check (its 404 is a TopicNotFound entry
    with the same reason); BATCH_LOOKUP has none, like LOOKUP."""
    with InProcessCluster(2, overrides=("allowAutoTopicCreation=false",)) as cluster:
        web = cluster.web_urls[0]
        # the topic's owner creates it: a 307 there from another broker, which Pulsar's admin client follows
        assert httpx.put(f"{web}/admin/v2/persistent/public/default/here", timeout=10,
                         follow_redirects=True).status_code == 204
        body = httpx.post(f"{web}/lookup/v2/topics", json=[P + "here", P + "absent"], timeout=10).json()
        single = httpx.get(f"{web}/lookup/v2/topic/persistent/public/default/absent", timeout=10)
        assert single.status_code == 404
        assert body[P + "absent"] == {"error": "TopicNotFound", "reason": single.json()["reason"]}
        assert body[P + "here"]["brokerUrl"] in cluster.broker_urls
        pool = Pool()
        try:
            answers = batch_lookup(pool, cluster.broker_urls[0], [P + "here", P + "absent"])
            assert {topic: answer.broker_url in cluster.broker_urls for topic, answer in answers.items()} == {
                P + "here": True, P + "absent": True}
        finally:
            pool.close()


@pytest.mark.slow
def test_rest_batch_bad_input(rest_cluster):
    web = rest_cluster.web_urls[0]
    assert httpx.post(f"{web}/lookup/v2/topics", json=[], timeout=10).json() == {}
    for body in ({"topics": ["a"]}, "a", [1, 2], None):
        response = httpx.post(f"{web}/lookup/v2/topics", json=body, timeout=10)
        assert response.status_code == 400 and response.json()["reason"]
    big = httpx.post(f"{web}/lookup/v2/topics", json=[f"t{i}" for i in range(51)], timeout=10)
    assert big.status_code == 413 and "maxBatchLookupTopics=50" in big.json()["reason"]
    # The cluster keeps serving after bad input.
    assert httpx.post(f"{web}/lookup/v2/topics", json=["fine"], timeout=10).status_code == 200


@pytest.mark.slow
def test_connected_advertises_batch_lookup(rest_cluster):
    pool = Pool()
    try:
        assert pool.get(rest_cluster.broker_urls[0]).connected.feature_flags.supports_batch_lookup
        assert pool.get(rest_cluster.broker_urls[0]).connected.feature_flags.supports_get_partitioned_metadata_without_auto_creation
    finally:
        pool.close()
