"""Partitioned-metadata and topic lookups, per API and per era: the heart of PIP-344.

PIP-344 era (brokers 3.0.6+, 3.3.1+, 4.x; apache/pulsar#22206):

- REST (``rest_partitioned_metadata``; Pulsar's
  PersistentTopicsBase#internalGetPartitionedMetadataAsync): ``checkAllowAutoCreation`` defaults
  to false. With it true, the broker may create metadata (only metadata:
  model/autocreation.py's ``fetch_metadata_check_allow_auto_creation``). Then "partitions == 0:
  if checkAllowAutoCreation && brokerAllow: return {"partitions":0} without checking existence
  ... Otherwise: if the non-partitioned topic exists, return {"partitions":0}. If not, reply 404
  with {"reason":"Topic <full-topic-name> not found"}".
- binary (``binary_partitioned_metadata``; Pulsar's ServerCnx#handlePartitionMetadataRequest):
  field 6 ``metadata_auto_creation_enabled`` defaults to true; "autoCreateIfNotExist =
  cmd.metadata_auto_creation_enabled && isAllowAutoTopicCreationAsync(topic)". False → existence
  check, "not found → Failed, error = TopicNotFound (11), message = "" (empty string)"; true → the
  auto-creating fetch.
- a missing namespace or tenant answers before any of this (model/texts.py).

Rows: pip344-seed-new-*, pip344-seed-list-005, pip344-gpmt-*, pip344-matrix-*, pip344-override-*.

Pre-PIP-344 era (Pulsar's PersistentTopicsBase/ServerCnx; PIP-344's Background table "Now
getPartitionsForTopic's behavior"):

- binary: "binary field 6 is ignored, so they behave as if it were true": the binary path always
  runs the auto-creating fetch.
- REST: with ``checkAllowAutoCreation`` true it answers 0 for an absent topic whatever the broker
  allows ("broker disallows, param true → REST and binary both return partitions: 0"). With it
  false, an absent topic is 404 "Topic <topic> not found", as in the PIP-344 era:
  PersistentTopicsBase#internalGetPartitionedMetadataAsync runs internalCheckTopicExists when the
  metadata says 0 and the parameter is false (v3.0.2, v3.2.3), and 3.0.2 and 3.2.3 answered so
  when observed. PIP-344's Background table says "partitions: 0" for that case; real releases
  settle what the old behaviour was. Rows: pip344-seed-bg-*.

Lookup (``lookup``; Pulsar's TopicLookupBase.lookupTopicAsync, Pulsar's
TopicLookupBase.internalLookupTopicAsync), both eras:

- REST: "persistent topic that does not exist and may not be auto-created → 404 "Topic not found
  <topic>". Non-persistent topics skip the existence check." Otherwise the single broker answers
  itself (Connect, authoritative). Releases without the behaviour
  ``rest-lookup-skips-non-persistent`` (model/releases.py) skip it only for non-persistent names
  that are not partition names.
- binary: LOOKUP has no existence check: after the cluster check it asks for the owner, and a
  single broker "otherwise → Connect, authoritative = true". Rows: pip344-lookup-*.
"""

from __future__ import annotations

from typing import Optional

from model import proxy, texts
from model.autocreation import Refused, fetch_metadata_check_allow_auto_creation, is_allow_auto_topic_creation, topic_existence
from model.errors import ModelUsageError
from pulsar_naming.names import TopicName
from model.ops import GetPartitionedMetadata, Handshake, Lookup
from model.outcomes import FeatureFlag, LookupAnswer, Partitions, RestError, ServerError
from model.refused_names import refused_answer
from model.state import State, parse_topic

CONNECT = LookupAnswer("Connect", True)


# Flags a broker of each era advertises in CONNECTED. "The broker sets flag 5 to true
# unconditionally in CONNECTED (Commands.newConnectedCommand)" (Pulsar's ServerCnx.handlePartitionMetadataRequest); brokers before
# PIP-344 have no field 5, which reads as false (proto default).
# The current spec also has field 10, supports_batch_lookup: ours, TENTATIVE (spec/pip35.md; no
# Apache Pulsar release sets it, so real brokers fail row pip35-flag-001, a SHOULD).
ADVERTISED_FLAGS = {
    "pip344": frozenset({"supports_get_partitioned_metadata_without_auto_creation", "supports_batch_lookup"}),
    "pre-pip344": frozenset({"supports_batch_lookup"}),
}


def advertised_flags(state: State) -> frozenset[str]:
    """The FeatureFlags a client's CONNECTED sets: the broker's, or a proxy's own (model/proxy.py)."""
    return proxy.advertised_flags(state) if proxy.proxied(state) else ADVERTISED_FLAGS[state.era]


def handshake(state: State, op: Handshake):
    # Field 5 is PIP-344's, so a release without it lacks the flag; field 10 is what this spec
    # requires of every broker (PIP-35, tentative), whatever else the release has.
    return state, FeatureFlag(op.feature, op.feature in advertised_flags(state))


def get_partitioned_metadata(state: State, op: GetPartitionedMetadata):
    refused = refused_answer(op.topic, op.api, state.release)  # both APIs parse the name first
    if refused is not None:
        if op.api == "binary" and proxy.proxied(state):  # the proxy parses it first (model/proxy.py)
            return state, proxy.refused_name(state, op.topic, refused)
        return state, refused
    topic = parse_topic(op.topic)
    if op.api == "rest":
        # REST: "checkAllowAutoCreation | query, boolean, default false" (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync).
        return rest_partitioned_metadata(state, topic, bool(op.auto_create))
    if op.api == "binary":
        # binary: "metadata_auto_creation_enabled (bool, default true)" (Pulsar's ServerCnx.handlePartitionMetadataRequest).
        return binary_partitioned_metadata(state, topic, True if op.auto_create is None else op.auto_create)
    raise ModelUsageError(
        "GetPartitionedMetadata(api='client') has no official-client call: the C++-based client has "
        "not implemented PIP-344 (apache/pulsar-client-cpp#496); use GetPartitionsForTopic for the client")


def rest_partitioned_metadata(state: State, topic: TopicName, check_allow_auto_creation: bool):
    """GET /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions?checkAllowAutoCreation=..."""
    if not state.namespace_exists(topic.namespace_name):
        return state, texts.namespace_missing(state.era, topic.namespace_name)
    if check_allow_auto_creation:
        fetched = fetch_metadata_check_allow_auto_creation(state, topic)
        if isinstance(fetched, Refused):
            return state, RestError(fetched.status, fetched.message)
        state, partitions = fetched
    else:
        # fetchPartitionedTopicMetadataAsync "reads only the metadata store and returns 0
        # partitions when the znode is absent" (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync).
        partitions = state.partition_count(topic)
    if partitions > 0:
        return state, Partitions(partitions)
    if check_allow_auto_creation and (state.era == "pre-pip344" or is_allow_auto_topic_creation(state, topic)):
        return state, Partitions(0)  # without checking existence; before PIP-344 whatever the broker allows
    if state.topic_exists(topic):
        return state, Partitions(0)
    return state, texts.topic_not_found(topic)


def binary_partitioned_metadata(state: State, topic: TopicName, metadata_auto_creation_enabled: bool,
                                era: Optional[str] = None):
    """PARTITIONED_METADATA (21) → PARTITIONED_METADATA_RESPONSE (22), as a broker of ``era`` (default:
    the state's own) handles it; model/proxy.py asks for the PIP-344 era where a proxy promised it."""
    if era is None and proxy.proxied(state):  # asked through a proxy, which asks the broker
        return proxy.partitioned_metadata(state, topic, metadata_auto_creation_enabled, binary_partitioned_metadata)
    era = era or state.era
    # old brokers ignored field 6: they always ran the auto-creating fetch, which answers 0 without creating
    # anything when creation is not allowed.
    auto_creating = era == "pre-pip344" or (
        metadata_auto_creation_enabled and is_allow_auto_topic_creation(state, topic))
    if not state.namespace_exists(topic.namespace_name):
        return state, texts.binary_namespace_missing(era, topic.namespace_name, auto_creating)
    if auto_creating:
        fetched = fetch_metadata_check_allow_auto_creation(state, topic)
        if isinstance(fetched, Refused):
            return state, ServerError(fetched.binary, fetched.message)
        state, partitions = fetched
        return state, Partitions(partitions)
    existing = topic_existence(state, topic)
    if existing is None:
        return state, texts.BINARY_TOPIC_NOT_FOUND
    return state, Partitions(existing)


def lookup(state: State, op: Lookup):
    refused = refused_answer(op.topic, op.api, state.release)
    if refused is not None:
        return state, refused
    topic = parse_topic(op.topic)
    if not state.namespace_exists(topic.namespace_name):
        if op.api == "rest":
            return state, texts.namespace_missing(state.era, topic.namespace_name)
        if op.api == "binary":
            return state, texts.binary_lookup_namespace_missing(state.era, topic.namespace_name)
    if op.api == "rest":
        if topic.persistent:
            exists = topic_existence(state, topic) is not None
        elif topic.is_partition and not state.has("rest-lookup-skips-non-persistent"):
            # NamespaceService#checkTopicExists (v3.0.2): a non-persistent partition name exists when
            # its partitioned topic has that partition
            exists = topic.partition_index < state.partition_count(topic.partitioned_base)
        else:
            exists = True
        if not exists and not is_allow_auto_topic_creation(state, topic):  # persistent, absent, not creatable
            return state, texts.lookup_topic_not_found(topic)
        return state, CONNECT
    if op.api == "binary":
        return state, CONNECT  # binary LOOKUP has no existence check
    raise ModelUsageError("Lookup(api='client'): the official Python client exposes no lookup call; use rest or binary")
