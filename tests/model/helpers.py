"""Builders for model tests: a standalone broker with one fresh namespace, topics named in it."""

from __future__ import annotations

from model.machine import apply, initial_state, run
from model.ops import CreateNamespace, CreateNonPartitionedTopic, CreatePartitionedTopic, SetAutoTopicCreation
from model.outcomes import Done

NS = "public/ns1"


def name(local: str, domain: str = "persistent", namespace: str = NS) -> str:
    return f"{domain}://{namespace}/{local}"


def broker(config=None, era="pip344", override=None, topics=(), domain="persistent"):
    """A state with namespace NS, an optional override ({...} JSON body) and topics {local: partitions}."""
    ops = [CreateNamespace(NS)]
    if override is not None:
        ops.append(SetAutoTopicCreation(NS, override["allowAutoTopicCreation"], override["topicType"],
                                        override.get("defaultNumPartitions")))
    for local, partitions in dict(topics).items():
        full = name(local, domain)
        ops.append(CreatePartitionedTopic(full, partitions) if partitions else CreateNonPartitionedTopic(full))
    state, outcomes = run(initial_state(config, era), ops)
    assert all(o == Done() for o in outcomes), outcomes
    return state


def answer(state, op):
    """Only the outcome of ``op``."""
    return apply(state, op)[1]
