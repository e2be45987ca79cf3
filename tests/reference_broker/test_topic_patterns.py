"""GET_TOPICS_OF_NAMESPACE's ``topics_pattern`` (topic_patterns.py): Pulsar's matching rules, the
length bound ``subscriptionPatternMaxLength``, RE2's linear time, and the filtering kept off the event
loop so that another client is never held up by a crafted pattern (the worst stall is printed)."""

import asyncio
import time

import httpx
import pytest

from pulsar_codec import events as ev
from pulsar_codec import pulsar_api_pb2 as pb
from reference_broker import topic_patterns as tp
from reference_broker.config import BrokerConfig
from reference_broker.core import BrokerCore
from reference_broker.metadata.memory import MemoryMetadataStore

from .broker_process import running_broker
from .in_process import BinaryClient
from .probe import Prober
from .wire_client import raw_connect, read_event

NS = "persistent://public/default/"


@pytest.mark.parametrize("pattern, expected", [
    ("persistent://public/default/a.*", "public/default/a.*"),
    ("non-persistent://public/default/a.*", "public/default/a.*"),
    ("public/default/a.*", "public/default/a.*"),
    ("xpersistent://public/default/.*", "xpublic/default/.*"),
])
def test_the_scheme_is_cut_from_the_pattern_as_pulsar_does(pattern, expected):
    assert tp.remove_topic_domain_scheme(pattern) == expected


@pytest.mark.parametrize("pattern", ["bogus://public/default/.*", "persistent://"])
def test_a_pattern_with_an_unknown_scheme_is_refused(pattern):
    with pytest.raises(tp.PatternError):
        tp.compile_pattern(pattern)


def test_the_pattern_matches_the_whole_base_name_without_scheme():
    topics = [NS + "orders", NS + "orders-eu", NS + "orders-partition-0", NS + "pay",
              "non-persistent://public/default/orders"]
    assert tp.filter_topics(topics, "persistent://public/default/orders") == [
        NS + "orders", NS + "orders-partition-0", "non-persistent://public/default/orders"]
    assert tp.filter_topics(topics, "public/default/ord") == []  # a prefix is not a match
    assert tp.filter_topics(topics, ".*") == topics


@pytest.mark.parametrize("pattern", ["public/default/(?=a).*", r"public/default/(a)\1"])
def test_a_pattern_re2_cannot_run_in_linear_time_is_refused_with_the_reason(pattern):
    with pytest.raises(tp.PatternError, match="RE2 syntax"):
        tp.compile_pattern(pattern)


def test_matching_takes_linear_time_on_a_pattern_that_makes_backtracking_exponential():
    started = time.monotonic()
    assert tp.filter_topics([NS + "a" * 40], "public/default/(a+)+b") == []
    assert time.monotonic() - started < 10  # backtracking would take 2^40 steps; a linear match, a loaded machine


def test_the_length_bound_counts_utf16_units_as_java_does():
    assert tp.evaluated("x" * 50, 50) and not tp.evaluated("x" * 51, 50)
    assert not tp.evaluated("\U0001F600" * 25 + "x", 50)  # 51 UTF-16 units
    assert not tp.evaluated(None, 50) and not tp.evaluated("x", 50, enabled=False)


def _list(client: BinaryClient, pattern=None, request_id=5) -> list:
    fields = {} if pattern is None else {"topics_pattern": pattern}
    return client.exchange(client.conn.send(ev.GetTopicsOfNamespace(
        request_id=request_id, namespace="public/default", mode=pb.CommandGetTopicsOfNamespace.PERSISTENT, **fields)))


async def _answer_off_loop(client: BinaryClient, sent: list, deadline: float = 10.0):
    """The answer written once the worker thread is done (``ServerCnx.run_off_loop``)."""
    assert sent == []
    waited = 0.0
    while not client.transport.data and waited < deadline:
        await asyncio.sleep(0.01)
        waited += 0.01
    client.conn.receive_data(bytes(client.transport.data))
    client.transport.data.clear()
    return client.conn.next_event()


def test_a_pattern_filters_off_the_loop_and_a_long_one_is_not_evaluated():
    async def body():
        core = BrokerCore(BrokerConfig(subscriptionPatternMaxLength=40), MemoryMetadataStore())
        for name in ("orders", "pay"):
            core.create_non_partitioned_topic(NS + name)
        client = BinaryClient(core)
        try:
            answer = await _answer_off_loop(client, _list(client, "persistent://public/default/o.*"))
            assert (list(answer.topics), answer.filtered) == ([NS + "orders"], True)
            # longer than subscriptionPatternMaxLength -> every topic, filtered=false
            [answer] = _list(client, "public/default/" + "o" * 25 + ".*")
            assert (sorted(answer.topics), answer.filtered) == ([NS + "orders", NS + "pay"], False)
            error = await _answer_off_loop(client, _list(client, "public/default/(?!x)"))
            assert isinstance(error, ev.Error) and error.error == pb.MetadataError and "RE2" in error.message
        finally:
            client.close()
            core.close()
    asyncio.run(body())


@pytest.mark.slow
def test_a_crafted_pattern_does_not_stall_other_clients():
    """A 21-character pattern that backtracking matchers take 2^40 steps over, against a topic
    named with 40 letters: hours for a matcher that backtracks. Another client pings throughout;
    its worst round trip is printed."""
    with running_broker() as (broker_url, web_url):
        httpx.put(f"{web_url}/admin/v2/persistent/public/default/{'a' * 40}", timeout=10).raise_for_status()
        sock, conn = raw_connect(broker_url)
        with sock, Prober(broker_url) as probe:
            time.sleep(0.2)
            started = time.monotonic()
            sock.settimeout(60)
            sock.sendall(conn.send(ev.GetTopicsOfNamespace(
                request_id=1, namespace="public/default", mode=pb.CommandGetTopicsOfNamespace.PERSISTENT,
                topics_pattern="public/default/(a+)+b")))
            answer = read_event(sock, conn)
            answered = time.monotonic() - started
            time.sleep(0.2)
        print(f"\ncrafted topics_pattern: answered in {answered * 1000:.1f} ms; other client's worst round trip "
              f"{probe.worst * 1000:.1f} ms over {probe.round_trips} pings")
        assert isinstance(answer, ev.GetTopicsOfNamespaceResponse) and list(answer.topics) == []
        assert probe.worst < 10  # a backtracking matcher would stall it for hours; a loaded machine, seconds


def test_a_refused_pattern_whose_connection_closed_first_logs_nothing(caplog):
    async def body():
        core = BrokerCore(BrokerConfig(), MemoryMetadataStore())
        client = BinaryClient(core)
        try:
            assert _list(client, "public/default/(") == []
            client.transport.closed = True  # the client went away before the answer was ready
            await asyncio.sleep(0.5)
        finally:
            client.close()
            core.close()
    asyncio.run(body())
    assert [r for r in caplog.records if r.levelname in ("ERROR", "WARNING")] == []
