"""model/buckets.py: numberOfTopicBuckets in the model (docs/pip157-decisions.md (a)-(f)), the layout
the model predicts, and the invariants a bucketed namespace keeps under any sequence of operations."""

from __future__ import annotations

import urllib.parse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model import buckets
from model.errors import ModelUsageError
from pulsar_naming.hashing import INT_MIN, bucket_of, java_string_hash
from model.machine import apply, initial_state, run
from model.ops import (
    CreateNamespace, CreateNonPartitionedTopic, CreatePartitionedTopic, DeleteNamespace, DeletePartitionedTopic,
    GetNumberOfTopicBuckets, GetPartitionedMetadata, ListTopics, ReadTopicLayout, RemoveNumberOfTopicBuckets,
    SetAutoTopicCreation, SetNumberOfTopicBuckets,
)
from model.outcomes import Done, LedgerPaths, Partitions, RestError, TopicBuckets, TopicList

from tests.model.helpers import NS, answer, name

DONE = Done()
ML = "/managed-ledgers/public/ns1/persistent"
IMMUTABLE = RestError(412, "numberOfTopicBuckets can only be set when the namespace is created")


def bucketed(n, topics=(), config=None):
    """A state with NS created with ``{"numberOfTopicBuckets": n}`` and topics {local: partitions}."""
    ops = [CreateNamespace(NS, (("numberOfTopicBuckets", n),))]
    ops += [CreatePartitionedTopic(name(t), p) if p else CreateNonPartitionedTopic(name(t)) for t, p in dict(topics).items()]
    state, outcomes = run(initial_state(config), ops)
    assert all(o == DONE for o in outcomes), outcomes
    return state


# --- the policy (decision (f)) -----------------------------------------------------------------------


@pytest.mark.parametrize("body, count", [
    ((), 1), ((("numberOfTopicBuckets", None),), 1), ((("numberOfTopicBuckets", 1),), 1),
    ((("numberOfTopicBuckets", 3),), 3), ((("numberOfTopicBuckets", 1024),), 1024),
])
def test_valid_counts_are_kept(body, count):
    state, outcome = apply(initial_state(), CreateNamespace(NS, body))
    assert outcome == DONE
    assert answer(state, GetNumberOfTopicBuckets(NS)) == TopicBuckets(count)


@pytest.mark.parametrize("value, shown", [
    (0, "0"), (-1, "-1"), (1025, "1025"), ("3", '"3"'), (2.5, "2.5"), (True, "true"), (False, "false"),
    ((3,), "[3]"), ("", '""'),
])
def test_invalid_counts_are_refused_and_nothing_is_created(value, shown):
    state, outcome = apply(initial_state(), CreateNamespace(NS, (("numberOfTopicBuckets", value),)))
    assert outcome == RestError(412, f"Invalid numberOfTopicBuckets {shown}: must be an integer from 1 to 1024")
    assert answer(state, GetNumberOfTopicBuckets(NS)) == RestError(404, "Namespace does not exist")


def test_policies_are_validated_before_the_namespace_is_found_to_exist():
    state = bucketed(3)
    assert answer(state, CreateNamespace(NS, (("numberOfTopicBuckets", 0),))).status == 412
    assert answer(state, CreateNamespace(NS, (("numberOfTopicBuckets", 7),))) == RestError(409, "Namespace already exists")


def test_an_override_and_a_count_in_one_body():
    body = (("autoTopicCreationOverride", {"allowAutoTopicCreation": True, "topicType": "partitioned",
                                           "defaultNumPartitions": 2}), ("numberOfTopicBuckets", 5))
    state, outcome = apply(initial_state(), CreateNamespace(NS, body))
    assert outcome == DONE
    assert answer(state, GetNumberOfTopicBuckets(NS)) == TopicBuckets(5)
    assert answer(state, GetPartitionedMetadata(name("t"), "rest", True)) == Partitions(2)
    with pytest.raises(ModelUsageError, match="max_topics_per_namespace only"):
        apply(initial_state(), CreateNamespace(NS, (("retention_policies", {}),)))


# --- immutability (decision (e)) ----------------------------------------------------------------------


@pytest.mark.parametrize("op", [SetNumberOfTopicBuckets(NS, 5), SetNumberOfTopicBuckets(NS, 3),
                                SetNumberOfTopicBuckets(NS, 1), SetNumberOfTopicBuckets(NS, None),
                                SetNumberOfTopicBuckets(NS, "x"), RemoveNumberOfTopicBuckets(NS)])
def test_the_count_never_changes(op):
    state = bucketed(3, {"t": 0})
    after, outcome = apply(state, op)
    assert outcome == IMMUTABLE
    assert after == state


def test_a_missing_namespace_answers_404_first():
    state = initial_state()
    for op in (SetNumberOfTopicBuckets(NS, 2), RemoveNumberOfTopicBuckets(NS), GetNumberOfTopicBuckets(NS)):
        assert answer(state, op) == RestError(404, "Namespace does not exist")


def test_other_policies_keep_the_count_and_deletion_forgets_it():
    state = bucketed(3)
    state, outcome = apply(state, SetAutoTopicCreation(NS, False, "non-partitioned"))
    assert outcome == DONE and answer(state, GetNumberOfTopicBuckets(NS)) == TopicBuckets(3)
    state, outcome = apply(state, DeleteNamespace(NS))
    assert outcome == DONE
    state, outcome = apply(state, CreateNamespace(NS, (("numberOfTopicBuckets", 5),)))  # a new one may choose again
    assert outcome == DONE and answer(state, GetNumberOfTopicBuckets(NS)) == TopicBuckets(5)


# --- the layout (decisions (a)-(d)) -------------------------------------------------------------------

PIP_EXAMPLE = {"nptopic1": 2, "nptopic2": 1, "ptopic-partition-0": 0, "ptopic-partition-1": 1,
               "ptopic-partition-2": 2, "ptopic-partition-3": 0}  # PIP-157's pip/pip-157.md


def test_the_pips_example_layout():
    state = bucketed(3, {"nptopic1": 0, "nptopic2": 0, "ptopic": 4})
    for local, k in PIP_EXAMPLE.items():
        assert answer(state, ReadTopicLayout(name(local))) == LedgerPaths((f"{ML}/${k}/{local}",))
    assert answer(state, ReadTopicLayout(name("ptopic"))) == LedgerPaths(())  # metadata is not a ledger
    assert answer(state, ListTopics(NS)) == TopicList(frozenset(name(t) for t in PIP_EXAMPLE))


@pytest.mark.parametrize("body", [(), (("numberOfTopicBuckets", 1),), (("numberOfTopicBuckets", None),)])
def test_one_bucket_is_todays_path(body):
    state, _ = run(initial_state(), [CreateNamespace(NS, body), CreatePartitionedTopic(name("p"), 2)])
    assert answer(state, ReadTopicLayout(name("p-partition-1"))) == LedgerPaths((f"{ML}/p-partition-1",))


@pytest.mark.parametrize("local, n, k", [("polygenelubricants", 3, 2), ("GydZG_", 10, 8),
                                         ("polygenelubricants", 16, 0), ("GydZG_", 7, 2)])
def test_min_value_names_get_the_magnitude_never_a_negative_bucket(local, n, k):
    assert java_string_hash(local) == INT_MIN
    state = bucketed(n, {local: 0})
    assert answer(state, ReadTopicLayout(name(local))) == LedgerPaths((f"{ML}/${k}/{local}",))


def test_the_decoded_name_is_hashed_and_the_encoded_one_stored():
    state = bucketed(3, {"café": 0})
    assert answer(state, ReadTopicLayout(name("café"))) == LedgerPaths((f"{ML}/$0/caf%C3%A9",))
    assert bucket_of("caf%C3%A9", 3) != 0  # the row tells the two readings apart


def test_absent_non_persistent_and_deleted_topics_have_no_ledger():
    state = bucketed(3, {"p": 2})
    assert answer(state, ReadTopicLayout(name("absent"))) == LedgerPaths(())
    assert answer(state, ReadTopicLayout(name("x", "non-persistent"))) == LedgerPaths(())
    state, _ = apply(state, DeletePartitionedTopic(name("p")))
    assert answer(state, ReadTopicLayout(name("p-partition-0"))) == LedgerPaths(())


def test_ledger_paths_normalise_order_and_json_lists():
    assert LedgerPaths(["/b", "/a"]) == LedgerPaths(("/a", "/b"))


def test_max_topics_counts_every_topic_of_the_namespace():
    """Pulsar's TopicResources/NamespaceResources: the limit counts getExistingPartitions, i.e. every managed ledger of the namespace;
    t0..t3 lie in buckets 2, 0, 1, 2 of 3."""
    state = bucketed(3, {f"t{i}": 0 for i in range(4)}, config={"maxTopicsPerNamespace": "5"})
    assert answer(state, CreatePartitionedTopic(name("p"), 1)) == DONE
    assert answer(state, CreatePartitionedTopic(name("p"), 2)) == RestError(412, "Exceed maximum number of topics in namespace.")


# --- properties ---------------------------------------------------------------------------------------

LOCAL = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/"), min_size=1, max_size=20) \
    .filter(lambda s: "-partition-" not in s)


@settings(max_examples=200, deadline=None)
@given(local=LOCAL, n=st.integers(1, 1024))
def test_the_predicted_path_holds_the_bucket_of_the_decoded_name(local, n):
    topic = name(local)
    state, outcomes = run(initial_state(), [CreateNamespace(NS, (("numberOfTopicBuckets", n),)),
                                            CreateNonPartitionedTopic(topic)])
    assert outcomes == (DONE, DONE)
    (path,) = answer(state, ReadTopicLayout(topic)).paths
    folder, _, child = path.rpartition("/")
    assert urllib.parse.unquote(child) == local
    if n == 1:
        assert folder == ML
    else:
        assert folder == f"{ML}/${bucket_of(local, n)}" and 0 <= bucket_of(local, n) < n


OPS = st.one_of(
    st.builds(lambda t: CreateNonPartitionedTopic(name(t)), st.sampled_from(["a", "b", "c", "polygenelubricants"])),
    st.builds(lambda t, p: CreatePartitionedTopic(name(t), p), st.sampled_from(["p", "q"]), st.integers(1, 4)),
    st.builds(lambda t: DeletePartitionedTopic(name(t)), st.sampled_from(["p", "q"])),
    st.builds(lambda b: SetNumberOfTopicBuckets(NS, b), st.one_of(st.none(), st.integers(-2, 2000))),
    st.just(RemoveNumberOfTopicBuckets(NS)),
    st.builds(lambda b: CreateNamespace(NS, (("numberOfTopicBuckets", b),)), st.integers(1, 9)),
)


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 12), ops=st.lists(OPS, max_size=12))
def test_neither_the_count_nor_a_topics_bucket_ever_changes(n, ops):
    state = bucketed(n)
    seen: dict[str, tuple] = {}
    for op in ops:
        state, _ = apply(state, op)
        assert answer(state, GetNumberOfTopicBuckets(NS)) == TopicBuckets(n)
        for topic in state.topics:
            paths = answer(state, ReadTopicLayout(str(topic))).paths
            assert len(paths) == 1
            assert seen.setdefault(str(topic), paths) == paths
