"""The model's entry points: ``initial_state`` and ``apply(state, op) -> (state, outcome)``.

``apply`` is pure: same state and op, same answer; the input state is never changed. There is one
handler per operation type, in the HANDLERS table (h11's READERS idea); an op type without a
handler is a ModelUsageError naming the table to extend.

A state belongs to a broker release (model/releases.py). Its era is ``pip344`` for a release with
PIP-344 (3.0.6+, 3.3.1+, 4.x) or any broker that is not an Apache Pulsar release, and
``pre-pip344`` otherwise, which reproduces PIP-344's Background table ("Now
pulsarClient.getPartitionsForTopic's behavior"). Answers that changed in other releases are named
behaviours with version ranges (``State.has``).
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Optional

from model import (admin, auth, batch_lookup, buckets, client, client_libraries, cluster, lookups, nonpersistent, ops,
                   proxy, releases)
from model.config import BrokerConfig
from model.errors import ModelUsageError
from model.ops import (
    CreateNamespace, CreateNonPartitionedTopic, CreatePartitionedTopic, CreateTenant, DeleteNamespace,
    DeletePartitionedTopic, GetPartitionedMetadata, GetPartitionsForTopic, ListPartitionedTopics, ListTopics,
    BadCommand, GetInternalStats, GetPartitionedStats, GetTopicStats, Handshake, Lookup, ProduceConsume, PubSub,
    RemoveAutoTopicCreation, SetAutoTopicCreation, SetBrokerConfig,
)
from model.releases import ERAS
from model.state import State

HANDLERS: dict[type, Callable] = {
    SetBrokerConfig: admin.set_broker_config,
    CreateTenant: admin.create_tenant,
    CreateNamespace: admin.create_namespace,
    DeleteNamespace: admin.delete_namespace,
    SetAutoTopicCreation: admin.set_auto_topic_creation,
    ops.GetAutoTopicCreation: admin.get_auto_topic_creation,
    RemoveAutoTopicCreation: admin.remove_auto_topic_creation,
    CreatePartitionedTopic: admin.create_partitioned_topic,
    CreateNonPartitionedTopic: admin.create_non_partitioned_topic,
    DeletePartitionedTopic: admin.delete_partitioned_topic,
    ops.DeleteTopic: admin.delete_topic,
    GetPartitionedMetadata: lookups.get_partitioned_metadata,
    GetPartitionsForTopic: client.get_partitions_for_topic,
    ListTopics: admin.list_topics,
    ListPartitionedTopics: admin.list_partitioned_topics,
    Lookup: nonpersistent.lookup,  # PIP-2 isolation first, then lookups.lookup
    Handshake: lookups.handshake,
    ProduceConsume: client.produce_consume,
    PubSub: nonpersistent.pub_sub,
    BadCommand: nonpersistent.bad_command,
    GetTopicStats: nonpersistent.get_topic_stats,
    GetPartitionedStats: nonpersistent.get_partitioned_stats,
    GetInternalStats: nonpersistent.get_internal_stats,
    ops.DeleteSubscription: nonpersistent.delete_subscription,
    ops.AwaitTopicGC: nonpersistent.await_topic_gc,
}
HANDLERS.update({  # PIP-157 (model/buckets.py)
    ops.GetNumberOfTopicBuckets: buckets.get_number_of_topic_buckets,
    ops.SetNumberOfTopicBuckets: buckets.set_number_of_topic_buckets,
    ops.RemoveNumberOfTopicBuckets: buckets.remove_number_of_topic_buckets,
    ops.ReadTopicLayout: buckets.read_topic_layout,
})
HANDLERS.update({  # PIP-35 (model/batch_lookup.py; TENTATIVE)
    ops.BatchLookup: batch_lookup.batch_lookup,
    ops.BatchEqualsSingles: batch_lookup.batch_equals_singles,
    ops.SameOwnerEverywhere: batch_lookup.same_owner_everywhere,
})
HANDLERS.update({  # PIP-344's client API through each client library (model/client_libraries.py, java_client.py)
    ops.JavaGetPartitionsForTopic: client_libraries.get_partitions_for_topic,
    ops.JavaProduceConsume: client_libraries.produce_consume,
    ops.JavaGetPartitionedTopicMetadata: client_libraries.get_partitioned_topic_metadata,
})
HANDLERS.update({  # a cluster of several brokers (model/cluster.py)
    ops.SameMetadataEverywhere: cluster.same_metadata_everywhere,
    ops.LookupAtNonOwner: cluster.lookup_at_non_owner,
    ops.PubSubAcrossBrokers: cluster.pub_sub_across_brokers,
})
HANDLERS[ops.WithCredentials] = auth.with_credentials  # token authentication and authorization (ours)
HANDLERS.update({  # through Apache Pulsar's proxy, which asks the broker again and relays a refusal (model/proxy.py)
    Lookup: proxy.relaying(HANDLERS[Lookup]),
    ListTopics: proxy.relaying(HANDLERS[ListTopics]),
})


_UNSET = object()


def initial_state(broker_config: Optional[Mapping[str, str]] = None, era: str = "pip344",
                  release=_UNSET) -> State:
    """A fresh Pulsar standalone of ``release``: Pulsar's config defaults overlaid with
    ``broker_config``. Without a release, the era's representative release
    (model/releases.py REPRESENTATIVE); a release outside ``era`` is a ModelUsageError."""
    if era not in ERAS:
        raise ModelUsageError(f"Unknown era {era!r}: use one of {', '.join(ERAS)}")
    if release is _UNSET:
        release = releases.REPRESENTATIVE[era]
    elif era != "any" and releases.era_of(release) != era:
        raise ModelUsageError(f"release {releases.release_text(release)} is not of era {era!r}")
    return State(release=release, config=BrokerConfig.from_strings(broker_config))


def apply(state: State, op):
    """Apply one operation; returns (new state, outcome). Broker errors are outcomes, not raises."""
    handler = HANDLERS.get(type(op))
    if handler is None:
        raise ModelUsageError(f"No model handler for {type(op).__name__}: add one to model.machine.HANDLERS")
    return handler(state, op)


def run(state: State, ops: Iterable) -> tuple[State, tuple]:
    """Apply ``ops`` in order; returns the final state and every outcome."""
    outcomes = []
    for op in ops:
        state, outcome = apply(state, op)
        outcomes.append(outcome)
    return state, tuple(outcomes)
