"""What every broker of a cluster answers: the relations only a target of several brokers shows.

The model is one broker (model/state.py); a cluster shares its metadata store, so what one broker
knows every broker knows, and what a broker does not own it asks its owner about (Pulsar's
NamespaceService). The rows of spec/pip344_cluster.yaml and spec/pip2_cluster.yaml ask every broker,
or the owner and another, and the model says what each answers:

- ``SameMetadataEverywhere``: each broker answers PARTITIONED_METADATA (or REST GET .../partitions)
  as the one broker of the model does (``lookups.get_partitioned_metadata``); the driver asks each
  and answers the common answer, or an Agreement(False) naming what differed, which no model
  answer equals. Pulsar's own GetPartitionMetadataMultiBrokerTest asks the same of two brokers
  (apache/pulsar@v4.0.7:pulsar-broker/src/test/java/org/apache/pulsar/broker/admin/GetPartitionMetadataMultiBrokerTest.java).
- ``LookupAtNonOwner``: a LOOKUP of a topic whose bundle a broker owns, sent to another broker, names
  the owner, authoritatively; the owner itself answers Connect. How it names the owner
  (``answer_elsewhere``): an Apache Pulsar release answers Connect with the owner's URL
  (NamespaceService#findBrokerServiceUrl completes with the owner's data, which
  TopicLookupBase#lookupTopicAsync answers as ``LookupType.Connect``, authoritative; Redirect is kept
  for a bundle nobody owns yet); another broker is held to this spec's cluster lookup,
  docs/pip35-decisions.md B6 ("an authoritative Redirect to the owner"). A lookup the one broker
  refuses is refused by every broker alike.
- ``PubSubAcrossBrokers`` (PIP-2): a non-persistent topic's producer attached through one broker's
  lookup and a subscription attached through the other's meet at the topic's owner, which
  dispatches in memory to the subscriptions attached there: the subscription receives what it
  receives on one broker (``nonpersistent.pub_sub`` of the same consumer and burst).

On a target of one broker these rows are unsupported: the drivers find one broker (conformance/drivers/cluster_relations.py), and a relation between brokers cannot be observed there.
"""

from __future__ import annotations

from model import lookups, nonpersistent
from model.ops import (GetPartitionedMetadata, Lookup, LookupAtNonOwner, PubSub, PubSubAcrossBrokers,
                       SameMetadataEverywhere)
from model.outcomes import LookupAnswer
from model.state import State


def same_metadata_everywhere(state: State, op: SameMetadataEverywhere):
    return lookups.get_partitioned_metadata(state, GetPartitionedMetadata(op.topic, op.api, op.auto_create))


def answer_elsewhere(state: State) -> LookupAnswer:
    """What a broker that does not own the topic's bundle answers, when another broker owns it."""
    if state.release is None:  # not an Apache Pulsar release: docs/pip35-decisions.md B6
        return LookupAnswer("Redirect", True)
    return LookupAnswer("Connect", True)  # TopicLookupBase#lookupTopicAsync@v4.0.7, an owned bundle


def lookup_at_non_owner(state: State, op: LookupAtNonOwner):
    state, answer = nonpersistent.lookup(state, Lookup(op.topic, op.api))
    if not isinstance(answer, LookupAnswer):
        return state, answer
    return state, answer_elsewhere(state)


CONSUMER = ("sub", "Exclusive", 1000)  # PubSubAcrossBrokers' one consumer (ops.py)


def as_pub_sub(op: PubSubAcrossBrokers) -> PubSub:
    """The one-broker PubSub whose outcome PubSubAcrossBrokers has: one consumer, then one burst."""
    return PubSub(op.topic, consumers=(CONSUMER,), bursts=(op.count,))


def pub_sub_across_brokers(state: State, op: PubSubAcrossBrokers):
    return nonpersistent.pub_sub(state, as_pub_sub(op))
