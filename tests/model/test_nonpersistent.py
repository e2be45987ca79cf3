"""model/nonpersistent.py: the PIP-2 rules, one test per rule, and the refusals."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from model.errors import ModelUsageError
from model.machine import apply, initial_state, run
from model.ops import (
    AwaitTopicGC, BadCommand, CreateNamespace, CreateNonPartitionedTopic, CreatePartitionedTopic, DeletePartitionedTopic,
    DeleteSubscription, GetInternalStats,
    GetPartitionedStats, GetTopicStats, ListTopics, Lookup, PubSub,
)
from model.nonpersistent import NON_PERSISTENT_FIXED
from model.outcomes import (
    ACCEPTED, DROPPED, FIXED_STATS_FIELDS, POSITIVE, STORED, ZERO, ClientError, ConnectionClosed, InternalStatsView,
    Done, LookupAnswer, PartitionedStatsView, PubSubBounds, PubSubResult, RestError, ServerError, StatsDetailView,
    TopicList, TopicLoaded, TopicStatsView, payload_ranges, run_length,
)
from model.state import parse_topic

NS = "public/np"
NP = f"non-persistent://{NS}/t"
P = f"persistent://{NS}/t"


def state(**config):
    s, _ = apply(initial_state({k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in config.items()}),
                 CreateNamespace(NS))
    return s


def outcome(op, **config):
    return apply(state(**config), op)[1]


# -- nothing stored -----------------------------------------------------------------------------------


def test_connected_consumer_gets_every_message_with_zero_zero_receipts():
    assert outcome(PubSub(NP, (("s", "Exclusive", 10),), (5,))) == PubSubResult(
        ((ACCEPTED, 5),), (("s", ("m0..m4",)),))


@pytest.mark.parametrize("position", ["Latest", "Earliest"])
def test_late_subscriber_gets_nothing_earlier_even_at_earliest(position):
    got = outcome(PubSub(NP, (("s", "Exclusive", 10),), (2,), sends_before=3, initial_position=position))
    assert got.delivered == (("s", ("m3..m4",)),)


def test_persistent_contrast_earliest_gets_the_backlog():
    got = outcome(PubSub(P, (("s", "Exclusive", 10),), (2,), sends_before=3, initial_position="Earliest"))
    assert got == PubSubResult(((STORED, 5),), (("s", ("m0..m4",)),))


# -- publish side ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("limit, burst, accepted", [(0, 10, 1), (1, 10, 2), (2, 5, 3), (1000, 50, 50)])
def test_one_write_burst_accepts_limit_plus_one(limit, burst, accepted):
    got = outcome(PubSub(NP, (("s", "Exclusive", 100),), (burst,)),
                  maxConcurrentNonPersistentMessagePerConnection=limit)
    assert got.receipts == run_length([ACCEPTED] * accepted + [DROPPED] * (burst - accepted))


def test_awaited_sends_never_overlap_and_persistent_is_never_dropped():
    np = outcome(PubSub(NP, (("s", "Exclusive", 9),), (1, 1, 1)), maxConcurrentNonPersistentMessagePerConnection=0)
    assert np.receipts == ((ACCEPTED, 3),)
    p = outcome(PubSub(P, (("s", "Exclusive", 9),), (5,)), maxConcurrentNonPersistentMessagePerConnection=0)
    assert p.receipts == ((STORED, 5),)


@given(limit=st.integers(0, 5), bursts=st.lists(st.integers(1, 8), min_size=1, max_size=4),
       permits=st.integers(0, 12))
def test_receipts_and_deliveries_stay_within_their_bounds(limit, bursts, permits):
    got = outcome(PubSub(NP, (("s", "Exclusive", permits),), tuple(bursts)),
                  maxConcurrentNonPersistentMessagePerConnection=limit)
    accepted = sum(n for kind, n in got.receipts if kind == ACCEPTED)
    assert sum(n for _, n in got.receipts) == sum(bursts)
    assert accepted == sum(min(b, limit + 1) for b in bursts)
    delivered = [i for text in got.delivered[0][1] for i in _expand(text)]
    assert len(delivered) == min(permits, accepted)


def _expand(text):
    first, _, last = text.partition("..")
    return range(int(first[1:]), int((last or first)[1:]) + 1)


# -- dispatch side --------------------------------------------------------------------------------------


def test_no_permits_drop_and_flow_later_brings_nothing_unlike_persistent():
    op = PubSub(NP, (("s", "Exclusive", 2),), (5,), flow_after=10)
    assert outcome(op).delivered == (("s", ("m0..m1",)),)
    assert outcome(PubSub(P, op.consumers, op.bursts, flow_after=10)).delivered == (("s", ("m0..m4",)),)


def test_shared_uses_total_permits_and_failover_the_active_consumers():
    shared = outcome(PubSub(NP, (("s", "Shared", 2), ("s", "Shared", 2)), (6,)))
    assert shared.delivered == (("s", ("m0..m3",)),)
    failover = outcome(PubSub(NP, (("s", "Failover", 3), ("s", "Failover", 3)), (5,)))
    assert failover.delivered == (("s", ("m0..m2",)),)


@pytest.mark.parametrize("consumers, why", [
    ((("s", "Failover", 1), ("s", "Failover", 2)), "different permits"),
    ((("s", "Exclusive", 1), ("s", "Exclusive", 1)), "second consumer"),
    ((("s", "Shared", 1), ("s", "Exclusive", 1)), "two types"),
    ((("s", "Key_Shared", 1), ("s", "Key_Shared", 1)), "sticky-key"),
    ((("s", "Key_Failover", 1),), "subType"),
])
def test_what_the_sources_do_not_settle_is_refused(consumers, why):
    with pytest.raises(ModelUsageError, match=why):
        outcome(PubSub(NP, consumers, (1,)))


@pytest.mark.parametrize("close_after", [False, True])
def test_a_second_pub_sub_on_a_persistent_topic_is_refused(close_after):
    """Its log holds the first one's m0.. and, attached, its consumers hold the subscriptions."""
    first, _ = apply(state(), PubSub(P, (("s", "Exclusive", 5),), (1,), close_after=close_after))
    with pytest.raises(ModelUsageError, match="second PubSub on a persistent topic"):
        apply(first, PubSub(P, (("a", "Exclusive", 5),), (1,), initial_position="Earliest"))
    apply(first, PubSub(f"persistent://{NS}/u", (("s", "Exclusive", 5),), (1,)))  # another topic is fine


def test_client_bursts_beyond_the_limit_need_the_bounds_view():
    op = PubSub(NP, (("s", "Exclusive", 20),), (10,), api="client")
    with pytest.raises(ModelUsageError, match="timing decides"):
        outcome(op, maxConcurrentNonPersistentMessagePerConnection=1)
    bounds = outcome(PubSub(NP, op.consumers, op.bursts, view="bounds", api="client"),
                     maxConcurrentNonPersistentMessagePerConnection=1)
    assert bounds == PubSubBounds(0, True, True, True)
    with pytest.raises(ModelUsageError, match="permits for every send"):
        outcome(PubSub(NP, (("s", "Exclusive", 3),), (10,), view="bounds", api="client"))


def test_client_attach_refusals_follow_the_client_model():
    got = outcome(PubSub(f"non-persistent://{NS}/x-partition-0", (("s", "Exclusive", 1),), (1,), api="client"),
                  allowAutoTopicCreation=False)
    assert got == ClientError("TopicNotFound")
    got = outcome(PubSub(f"non-persistent://{NS}/x-partition-0", (("s", "Exclusive", 1),), (1,), api="client",
                         transport="http"), allowAutoTopicCreation=False)
    assert got == ClientError("ConnectError")


def test_partitioned_client_pub_sub_loads_every_partition():
    s, _ = apply(state(allowAutoTopicCreation=False), CreatePartitionedTopic(NP, 3))
    s, got = apply(s, PubSub(NP, (("s", "Exclusive", 100),), (10,), api="client"))
    assert got.delivered == (("s", ("m0..m9",)),)
    assert apply(s, ListTopics(NS, "rest", "non-persistent"))[1] == TopicList(
        frozenset(f"{NP}-partition-{i}" for i in range(3)))


# -- stats ----------------------------------------------------------------------------------------------


FIXED = tuple(NON_PERSISTENT_FIXED.items())
WITHOUT_PUBLISHERS_OR_CONSUMERS = tuple((path, value) for path, value in FIXED
                                        if not path.startswith(("publishers[]", "subscriptions.*.consumers[]")))
TOPIC_ONLY = tuple((path, value) for path, value in FIXED if "." not in path)


def test_the_fixed_values_cover_the_fields_the_driver_reads():
    assert tuple(NON_PERSISTENT_FIXED) == FIXED_STATS_FIELDS


def test_stats_counters_and_drop_signs():
    s, _ = apply(state(maxConcurrentNonPersistentMessagePerConnection=0),
                 PubSub(NP, (("a", "Shared", 1), ("b", "Exclusive", 5)), (3, 3)))
    assert apply(s, GetTopicStats(NP))[1] == TopicStatsView(
        (), 2, 3, POSITIVE, (POSITIVE,), (("a", POSITIVE, 1, "Shared", 0), ("b", ZERO, 2, "Exclusive", 0)), FIXED)
    assert apply(s, GetInternalStats(NP))[1] == InternalStatsView(2, ("a", "b"))


def test_counters_survive_close_and_accumulate():
    s, _ = apply(state(), PubSub(NP, (("s", "Exclusive", 10),), (4,), close_after=True))
    assert apply(s, GetTopicStats(NP))[1] == TopicStatsView((), 4, 4, ZERO, (), (), TOPIC_ONLY)
    s, _ = apply(s, PubSub(NP, (("s", "Exclusive", 1),), (3,)))
    assert apply(s, GetTopicStats(NP))[1] == TopicStatsView(
        (), 7, 5, POSITIVE, (ZERO,), (("s", POSITIVE, 1, "Exclusive", 0),), FIXED)
    with pytest.raises(ModelUsageError, match="still attached"):
        apply(s, PubSub(NP, (), (1,)))


def test_releases_before_3_1_keep_the_subscription_with_its_type_and_no_consumers():
    s, _ = run(initial_state(release=(3, 0, 7)), [CreateNamespace(NS),
                                                 PubSub(NP, (("s", "Failover", 10),), (4,), close_after=True)])
    assert apply(s, GetTopicStats(NP))[1] == TopicStatsView(
        (), 4, 4, ZERO, (), (("s", ZERO, 4, "Failover", 0),), WITHOUT_PUBLISHERS_OR_CONSUMERS)


FOUR_TYPES = (("ex", "Exclusive", 10), ("sh", "Shared", 10), ("fo", "Failover", 10), ("ks", "Key_Shared", 10))


@pytest.mark.parametrize("release, unacked", [((3, 0, 2), {"sh": 3, "ks": 3}), ((3, 0, 7), {}), ((3, 2, 3), {}),
                                              ((4, 0, 7), {}), (None, {})])
def test_each_subscription_reports_its_type_and_3_0_2_counts_shared_unacked(release, unacked):
    s, got = run(initial_state(era="any", release=release), [CreateNamespace(NS), PubSub(NP, FOUR_TYPES, (3,))])
    assert got[-1].delivered == tuple((name, ("m0..m2",)) for name in ("ex", "fo", "ks", "sh"))
    assert apply(s, GetTopicStats(NP))[1].subscriptions == tuple(
        (name, ZERO, 3, kind, unacked.get(name, 0)) for name, kind, _ in sorted(FOUR_TYPES))


def test_key_shared_drops_what_its_consumer_has_no_permits_for():
    got = outcome(PubSub(NP, (("ks", "Key_Shared", 2),), (5,)))
    assert got.delivered == (("ks", ("m0..m1",)),)


def test_unacked_counts_after_a_client_pub_sub_are_refused_where_the_release_counts_them():
    s, _ = run(initial_state(release=(3, 0, 2), era="any"),
               [CreateNamespace(NS), PubSub(NP, (("sh", "Shared", 10),), (1,), api="client")])
    with pytest.raises(ModelUsageError, match="acks"):
        apply(s, GetTopicStats(NP))


def test_partitioned_stats_sum_partitions():
    s, _ = run(state(), [CreatePartitionedTopic(NP, 2), PubSub(f"{NP}-partition-0", (("s", "Exclusive", 9),), (3,)),
                         PubSub(f"{NP}-partition-1", (("s", "Exclusive", 9),), (2,))])
    assert apply(s, GetPartitionedStats(NP))[1] == PartitionedStatsView((), 2, 5, 5)


def test_a_deleted_and_recreated_partitioned_topic_starts_its_stats_at_zero():
    part = f"{NP}-partition-0"
    s, _ = run(state(), [CreatePartitionedTopic(NP, 1), PubSub(part, (("s", "Exclusive", 9),), (3,), close_after=True),
                         DeletePartitionedTopic(NP), CreatePartitionedTopic(NP, 1),
                         PubSub(part, (("s", "Exclusive", 9),), (2,), close_after=True)])
    assert apply(s, GetPartitionedStats(NP))[1] == PartitionedStatsView((), 1, 2, 2)


@pytest.mark.parametrize("op, why", [
    (GetTopicStats(P), "non-persistent"),
    (GetTopicStats(NP), "not loaded"),
    (GetPartitionedStats(NP), "no partitioned metadata"),
])
def test_stats_the_model_does_not_know_are_refused(op, why):
    with pytest.raises(ModelUsageError, match=why):
        apply(state(), op)


def test_stats_after_a_bounds_pub_sub_are_refused():
    s, _ = apply(state(), PubSub(NP, (("s", "Exclusive", 20),), (10,), view="bounds", api="client"))
    with pytest.raises(ModelUsageError, match="timing"):
        apply(s, GetTopicStats(NP))


def test_admin_created_topic_has_zero_stats():
    s, _ = apply(state(), CreateNonPartitionedTopic(NP))
    assert apply(s, GetTopicStats(NP))[1] == TopicStatsView((), 0, 0, ZERO, (), (), TOPIC_ONLY)


# -- isolation ------------------------------------------------------------------------------------------


def test_disabled_domain_refuses_attach_but_not_lookup_and_serves_the_other():
    off = {"enableNonPersistentTopics": False}
    s = state(**off)
    s2, got = apply(s, PubSub(NP, (), (1,)))
    assert got == ServerError("NotAllowedError", "Broker is unable to load persistent topic")
    assert apply(s2, ListTopics(NS, "binary", "non-persistent"))[1] == TopicList(frozenset())
    # a standalone's NoopLoadManager names the local broker whatever the domain (observed on 4.0.7)
    assert apply(s, Lookup(NP, "binary"))[1] == LookupAnswer("Connect", True)
    assert apply(s, Lookup(NP, "rest"))[1] == LookupAnswer("Connect", True)
    assert apply(s, PubSub(P, (("s", "Exclusive", 5),), (2,)))[1].delivered == (("s", ("m0..m1",)),)
    with pytest.raises(ModelUsageError, match="isolation rows use api binary"):
        apply(s, PubSub(NP, (), (1,), api="client"))


def test_persistent_disabled_uses_the_same_text():
    got = outcome(PubSub(P, (), (1,)), enablePersistentTopics=False)
    assert got == ServerError("NotAllowedError", "Broker is unable to load persistent topic")


# -- bad input ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command, loads", [("send-after-close-producer", True), ("flow-negative-permits", True),
                                            ("flow-zero-permits", True), ("subscribe-unknown-subtype", False)])
def test_bad_commands_close_the_connection(command, loads):
    s, got = apply(state(), BadCommand(NP, command))
    assert got == ConnectionClosed()
    # REST lists every loaded non-persistent topic; the binary listing only active ones, and the
    # connection that loaded this one is gone
    assert (apply(s, ListTopics(NS, "rest", "non-persistent"))[1] == TopicList(frozenset({NP}))) is loads
    assert apply(s, ListTopics(NS, "binary", "non-persistent"))[1] == TopicList(frozenset())


def test_bad_command_vocabulary_is_checked():
    with pytest.raises(ModelUsageError, match="one of"):
        outcome(BadCommand(NP, "flow-sideways"))
    with pytest.raises(ModelUsageError, match="exact frames"):
        outcome(BadCommand(NP, "flow-zero-permits", api="client"))


# -- outcome helpers -------------------------------------------------------------------------------------


def test_payload_ranges_keep_duplicates_visible():
    assert payload_ranges([0, 1, 2, 5]) == ("m0..m2", "m5")
    assert payload_ranges([0, 1, 1, 2]) == ("m0..m1", "m1..m2")
    assert payload_ranges([]) == ()
    assert run_length(["a", "a", "b", "a"]) == (("a", 2), ("b", 1), ("a", 1))


# -- one subscription's and one consumer's stats, partial closes, deleted subscriptions, the check for
# inactive topics (NonPersistentTopicTest#testTopicStats, #testAccumulativeStats, NonPersistentTopicE2ETest)


def test_the_detail_view_reads_byte_counters_and_each_consumers_rates():
    s, _ = apply(state(), PubSub(NP, (("sh", "Shared", 10), ("fo", "Failover", 10), ("fo", "Failover", 10)), (2,)))
    assert apply(s, GetTopicStats(NP, detail=True))[1] == StatsDetailView(
        (), POSITIVE, POSITIVE, (("fo", 2, POSITIVE, POSITIVE, POSITIVE, ((POSITIVE, POSITIVE), (ZERO, ZERO))),
                                 ("sh", 1, POSITIVE, POSITIVE, POSITIVE, ((POSITIVE, POSITIVE),))))


def test_the_detail_view_before_any_message_and_after_everyone_left():
    s, _ = apply(state(), PubSub(NP, (("s", "Shared", 10),), ()))
    assert apply(s, GetTopicStats(NP, detail=True))[1] == StatsDetailView(
        (), ZERO, ZERO, (("s", 1, ZERO, ZERO, ZERO, ((ZERO, ZERO),)),))
    s, _ = apply(state(), PubSub(NP, (("s", "Shared", 10),), (1,), close_after=True))
    assert apply(s, GetTopicStats(NP, detail=True))[1] == StatsDetailView((), POSITIVE, POSITIVE, ())


def test_the_detail_view_refuses_shared_consumers_whose_share_is_not_fixed():
    s, _ = apply(state(), PubSub(NP, (("sh", "Shared", 10), ("sh", "Shared", 10)), (4,)))
    with pytest.raises(ModelUsageError, match="not fixed"):
        apply(s, GetTopicStats(NP, detail=True))


@pytest.mark.parametrize("release, kept", [(None, ("fo", "sh")), ((3, 0, 7), ("ex", "fo", "sh"))])
def test_a_subscription_stays_while_a_consumer_is_left_and_goes_with_the_last_from_3_1(release, kept):
    consumers = (("ex", "Exclusive", 10), ("fo", "Failover", 10), ("fo", "Failover", 10), ("sh", "Shared", 10),
                 ("sh", "Shared", 10))
    s, _ = run(initial_state(era="any", release=release), [CreateNamespace(NS),
                                                          PubSub(NP, consumers, (), close_consumers=(0, 1, 3))])
    assert tuple(sub[0] for sub in apply(s, GetTopicStats(NP))[1].subscriptions) == kept
    detail = apply(s, GetTopicStats(NP, detail=True))[1]
    assert {name: n for name, n, *_ in detail.subscriptions} == {"fo": 1, "sh": 1, **({"ex": 0} if release else {})}


@pytest.mark.parametrize("op, why", [
    (PubSub(NP, (("s", "Shared", 10), ("s", "Shared", 10)), (2,), close_consumers=(0,)), "after messages"),
    (PubSub(NP, (("s", "Shared", 10),), (), close_consumers=(1,)), "distinct indices"),
    (PubSub(NP, (("s", "Shared", 10),), (), close_consumers=(0,), close_after=True), "closes everything"),
    (PubSub(NP, (("s", "Shared", 10),), (), close_producer=True, api="client"), "wire-driver"),
])
def test_partial_closes_the_model_does_not_know_are_refused(op, why):
    with pytest.raises(ModelUsageError, match=why):
        apply(state(), op)


def test_deleting_a_subscription_keeps_its_counters_and_a_gone_one_is_404():
    s, _ = apply(state(), PubSub(NP, (("s", "Exclusive", 10),), (2,)))
    s, got = apply(s, DeleteSubscription(NP, "s"))
    assert got == Done()
    view = apply(s, GetTopicStats(NP))[1]
    assert (view.msg_out_counter, view.subscriptions) == (2, ())
    assert apply(s, DeleteSubscription(NP, "s"))[1] == RestError(404, f"Subscription s not found for topic {NP}")
    assert apply(state(), DeleteSubscription(NP, "s"))[1] == RestError(404, f"Topic {NP} not found")


@pytest.mark.parametrize("release, answer", [(None, "404"), ((3, 0, 7), "done")])
def test_deleting_the_subscription_of_a_consumer_that_left_depends_on_the_release(release, answer):
    s, _ = run(initial_state(era="any", release=release),
               [CreateNamespace(NS), PubSub(NP, (("s", "Exclusive", 10),), (1,), close_consumers=(0,))])
    got = apply(s, DeleteSubscription(NP, "s"))[1]
    assert (got == Done()) == (answer == "done")


def test_the_check_unloads_an_inactive_topic_and_keeps_an_active_one():
    gc = {"brokerDeleteInactiveTopicsFrequencySeconds": 1}
    s, _ = apply(state(**gc), PubSub(NP, (), (1,), close_after=True))
    s, got = apply(s, AwaitTopicGC(NP, 10))
    assert got == TopicLoaded(False) and not s.topic_exists(parse_topic(NP))
    assert apply(s, AwaitTopicGC(NP, 0))[1] == TopicLoaded(False)
    kept, _ = apply(state(**gc), PubSub(NP, (("s", "Exclusive", 10),), (), close_producer=True))
    assert apply(kept, AwaitTopicGC(NP, 5))[1] == TopicLoaded(True)
    off, _ = apply(state(brokerDeleteInactiveTopicsEnabled=False), PubSub(NP, (), (1,), close_after=True))
    assert apply(off, AwaitTopicGC(NP, 200))[1] == TopicLoaded(True)
    fresh, _ = apply(state(**gc), PubSub(NP, (), (1,), close_after=True))
    with pytest.raises(ModelUsageError, match="may not have unloaded it yet"):
        apply(fresh, AwaitTopicGC(NP, 3))


@pytest.mark.parametrize("release, loaded", [(None, False), ((3, 0, 7), True)])
def test_a_topic_whose_consumer_left_is_unloaded_from_3_1_only(release, loaded):
    s, _ = run(initial_state({"brokerDeleteInactiveTopicsFrequencySeconds": "1"}, era="any", release=release),
               [CreateNamespace(NS), PubSub(NP, (("s", "Exclusive", 10),), (1,), close_after=True)])
    assert apply(s, AwaitTopicGC(NP, 10))[1] == TopicLoaded(loaded)


@pytest.mark.parametrize("delete, partitioned", [("true", ()), ("false", (NP,))])
def test_unloading_a_partition_deletes_the_metadata_when_configured(delete, partitioned):
    s, _ = run(state(brokerDeleteInactiveTopicsFrequencySeconds=1, brokerDeleteInactivePartitionedTopicMetadataEnabled=delete),
               [CreatePartitionedTopic(NP, 2), PubSub(f"{NP}-partition-0", (), (1,), close_after=True),
                AwaitTopicGC(f"{NP}-partition-0", 10)])
    assert tuple(str(t) for t in s.partitioned) == partitioned


def test_the_model_refuses_a_lookup_permit_limit_below_one():
    with pytest.raises(ModelUsageError, match="at least one permit"):
        initial_state({"maxConcurrentLookupRequest": "0"})
