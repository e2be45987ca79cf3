"""model/attach.py: what the wire answers a PRODUCER or SUBSCRIBE for one topic name, rule by rule and
release by release."""

import pytest

from model.machine import run, initial_state
from model.ops import BadCommand, CreateNamespace, CreateNonPartitionedTopic, CreatePartitionedTopic, PubSub
from model.outcomes import Done, PubSubResult, ServerError

NS = "public/at"
OLD, MIDDLE, NEW = (3, 0, 7), (4, 0, 7), (4, 2, 4)


def attach(local, release=NEW, domain="persistent", partitioned=None, plain=(), command="PRODUCER", **config):
    """The outcome of attaching to ``local`` in a namespace holding ``partitioned`` {name: count} and
    ``plain`` non-partitioned topics."""
    ops = [CreateNamespace(NS)]
    ops += [CreatePartitionedTopic(f"{domain}://{NS}/{n}", k) for n, k in (partitioned or {}).items()]
    ops += [CreateNonPartitionedTopic(f"persistent://{NS}/{n}") for n in plain]
    topic = f"{domain}://{NS}/{local}"
    ops.append(PubSub(topic, bursts=(1,)) if command == "PRODUCER" else BadCommand(topic, "flow-zero-permits"))
    state, outcomes = run(initial_state({k: str(v) for k, v in config.items()}, era="any", release=release), ops)
    assert all(o == Done() for o in outcomes[:-1]), outcomes
    return outcomes[-1]


def refused(error, text):
    return ServerError(error, text)


@pytest.mark.parametrize("command, text", [("PRODUCER", "Topic not found {}"), ("SUBSCRIBE", "Topic {} does not exist")])
@pytest.mark.parametrize("release", [OLD, MIDDLE, NEW])
def test_an_absent_topic_that_may_not_be_created_is_not_found_in_the_words_of_its_command(command, text, release):
    got = attach("t", release, command=command, allowAutoTopicCreation="false")
    assert got == refused("TopicNotFound", text.format(f"persistent://{NS}/t"))


@pytest.mark.parametrize("release, expected", [
    (OLD, None), (MIDDLE, None),
    (NEW, refused("NotAllowedError", f"Partition metadata not found for the partitioned topic: persistent://{NS}/t-partition-1")),
])
def test_a_partition_name_without_metadata_is_created_until_4_2_checks_it(release, expected):
    got = attach("t-partition-1", release)
    assert got == expected if expected else isinstance(got, PubSubResult)


@pytest.mark.parametrize("release, expected", [
    (OLD, refused("NotAllowedError", f"Illegal topic partition name persistent://{NS}/t-partition-2 with max allowed 2 partitions")),
    (MIDDLE, refused("TopicNotFound", f"Topic not found persistent://{NS}/t-partition-2")),
    (NEW, refused("TopicNotFound", f"Topic not found persistent://{NS}/t-partition-2")),
])
def test_a_persistent_partition_past_the_count(release, expected):
    assert attach("t-partition-2", release, partitioned={"t": 2}) == expected


@pytest.mark.parametrize("release, expected", [
    (OLD, refused("TopicNotFound", f"Topic not found non-persistent://{NS}/t-partition-2")),
    (NEW, refused("NotAllowedError", f"Illegal topic partition name non-persistent://{NS}/t-partition-2 with max allowed 2 partitions")),
])
def test_a_non_persistent_partition_past_the_count(release, expected):
    assert attach("t-partition-2", release, domain="non-persistent", partitioned={"t": 2}) == expected


@pytest.mark.parametrize("release", [OLD, NEW])
@pytest.mark.parametrize("domain", ["persistent", "non-persistent"])
def test_a_partition_below_the_count_attaches_with_auto_creation_off(release, domain):
    got = attach("t-partition-1", release, domain=domain, partitioned={"t": 2}, allowAutoTopicCreation="false")
    assert isinstance(got, PubSubResult)


@pytest.mark.parametrize("release", [OLD, MIDDLE, NEW])
def test_the_topic_count_is_checked_before_the_partitioned_metadata(release):
    got = attach("t-partition-1", release, plain=["u"], maxTopicsPerNamespace="1")
    assert got == refused("NotAllowedError", "Exceed maximum number of topics in namespace.")


def test_a_non_persistent_topic_is_never_counted():
    assert isinstance(attach("t", NEW, domain="non-persistent", plain=["u"], maxTopicsPerNamespace="1"), PubSubResult)


@pytest.mark.parametrize("release, creation, expected", [
    (NEW, "false", refused("TopicNotFound", f"Topic not found persistent://{NS}/t")),
    (NEW, "true", refused("NotAllowedError", f"Found partitioned metadata for non-partitioned topic: persistent://{NS}/t")),
    (MIDDLE, "true", None),
])
def test_the_base_name_of_a_partitioned_topic(release, creation, expected):
    got = attach("t", release, partitioned={"t": 1}, allowAutoTopicCreation=creation)
    assert got == expected if expected else isinstance(got, PubSubResult)
