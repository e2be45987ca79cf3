"""Apache Pulsar releases and version ranges: which behaviour a broker of a given release has.

The spec states what the PIPs require; some answers differ by release (PIP-344 shipped in 3.0.6,
3.3.1 and 4.0.0, never in 3.1 or 3.2; some texts changed later). A rule of the model that
differs by release asks ``state.has(name)`` for a named range of ``BEHAVIOURS``, and a spec row
may carry a range (``releases:``) outside which it does not apply.

What a release and a range are belongs to the grammar in spec/versions.py (``parse_release``,
``parse_range``); ``NEWEST`` (None) is any broker that is not an Apache Pulsar release, above
every bound. Every entry of BEHAVIOURS (a ``Behaviour``) says what changes and cites what settles
its range: Pulsar's source at the release tags on both sides, the PR, or an observation of named
releases. ERAS are row vocabulary: ``pip344`` (the range of BEHAVIOURS["pip-344"]),
``pre-pip344`` (its complement) and ``any`` (every release). A broker's own era (``era_of``) is
one of the first two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from model.errors import ModelUsageError
from spec.versions import NEWEST, Proxied, Range, RangeError, Release, parse_release, proxy_of, release_text
from spec.versions import parse_range as _parse_range

__all__ = ["NEWEST", "Range", "Release", "parse_release", "release_text", "parse_range", "BEHAVIOURS", "ERAS",
           "REPRESENTATIVE", "era_of", "era_range", "has", "Proxied", "proxy_of", "PROXY_BEHAVIOURS", "proxy_has"]


def parse_range(text: str) -> Range:
    """spec/versions.py's grammar, its errors as the model's usage errors."""
    try:
        return _parse_range(text)
    except RangeError as exc:
        raise ModelUsageError(str(exc)) from None

@dataclass(frozen=True)
class Behaviour:
    """A change of Pulsar's answers, the releases that have it, and what settles them (a tag on
    each side, a PR, or an observation of named releases)."""

    range: Range
    what: str
    evidence: str


def _behaviour(versions: str, what: str, evidence: str) -> Behaviour:
    return Behaviour(parse_range(versions), what, evidence)


BEHAVIOURS: dict[str, Behaviour] = {
    "pip-344": _behaviour(
        ">=3.0.6 <3.1 | >=3.3.1",
        "PIP-344: PARTITIONED_METADATA honours field 6, CONNECTED advertises FeatureFlags field 5, "
        "REST partitions takes checkAllowAutoCreation",
        "apache/pulsar PR #22206 with #22773 and #22838, released in 3.0.6, 3.3.1 and 4.0.0; observed: "
        "3.0.2 and 3.2.3 lack it, 3.0.7, 4.0.7 and 4.2.4 have it"),
    # The next two changed in the releases that took PIP-344's lookup changes; the sources of 3.0.3 to
    # 3.0.6, 3.1.1 and 3.3.0 to 3.3.1 were not read, so each range starts at the first release read
    # that has it.
    "rest-lookup-skips-non-persistent": _behaviour(
        ">=3.0.7 <3.1 | >=3.3.2",
        "GET /lookup/v2/topic skips the existence check for every non-persistent name; before, only for a "
        "non-persistent name that is not a partition name",
        "TopicLookupBase#internalLookupTopicAsync: '!topicName.isPersistent() && !topicName.isPartitioned()' at "
        "v3.0.2, v3.1.0, v3.1.2, v3.2.0, v3.2.3; '!topicName.isPersistent()' at v3.0.7, v3.3.2, v4.0.7; observed: "
        "3.0.2 and 3.2.3 answer 404 for an absent non-persistent partition name with auto-creation off"),
    "domain-checked-before-topic-policies": _behaviour(
        ">=3.0.7 <3.1 | >=3.3.2",
        "BrokerService#getTopic refuses a disabled domain first, NotAllowedError 'Broker is unable to load "
        "persistent topic' for either domain; before, a disabled non-persistent domain said 'Broker is not unable "
        "to load non-persistent topic' and a persistent topic read its topic policies first, which fail on a "
        "broker that cannot load the persistent system topic: ServiceNotReady 'Topic creation encountered an "
        "exception by initialize topic policies service. ...'",
        "BrokerService#getTopic at v3.0.2, v3.1.2, v3.2.3 (policies first) against v3.0.7, v3.3.2, v4.0.7 (domain "
        "first); observed on 3.0.2, 3.2.3 (old) and 3.0.7, 4.0.7, 4.2.4 (new)"),
    "np-subscription-ends-with-its-consumers": _behaviour(
        ">=3.1",
        "a non-persistent subscription is removed when its last consumer leaves; before, only a non-durable one "
        "(a reader's), so a consumer's subscription stayed in the topic's stats",
        "NonPersistentSubscription#removeConsumer: 'Unsubscribe when all the consumers disconnected' at v3.1.0, "
        "v3.2.3, v4.0.7, 'if (!isDurable)' at v3.0.2 and v3.0.7 (PIP-245, apache/pulsar issue #19448); observed: "
        "3.0.2 and 3.0.7 keep the subscription, 3.2.3, 4.0.7 and 4.2.4 remove it"),
    "np-unacked-not-counted": _behaviour(
        ">=3.0.3 <3.1 | >=3.1.3",
        "a consumer of a non-persistent topic counts no unacked messages; before, a Shared or Key_Shared "
        "consumer counted every message sent to it, and only an acknowledgement lowered the count",
        "apache/pulsar PR #21592 (issue #21568), labelled release/3.0.3 and release/3.1.3; "
        "Consumer#addAndGetUnAckedMsgs: 'if (Subscription.isIndividualAckMode(subType))' at v3.0.2, "
        "'if (isPersistentTopic && Subscription.isIndividualAckMode(subType))' at v3.0.7, v4.0.7 and v4.2.4; "
        "observed: 3.0.2 counts them, 3.0.7, 3.2.3, 4.0.7 and 4.2.4 do not"),
    "producer-topic-not-found-names-it": _behaviour(
        ">=3.0.3 <3.1 | >=3.2",
        "a PRODUCER for a topic that is absent and may not be created fails TopicNotFound 'Topic not found <topic>'; "
        "before, 'Topic Not Found.'",
        "apache/pulsar PR #20932, labelled release/2.10.6, release/2.11.4 and release/3.0.3 (the 3.1 line was not "
        "read); ServerCnx#handleProducer: 'new TopicNotFoundException(\"Topic Not Found.\")' at v3.0.2, "
        "'String.format(\"Topic not found %s\", topicName.toString())' at v3.0.7; observed: 3.0.2 answers "
        "'Topic Not Found.', 3.0.7, 3.2.3, 4.0.7 and 4.2.4 name the topic"),
    # Topic names (model/refused_names.py). The sources of 4.1.x were not read, so the V1 range starts at
    # the first release read that has it.
    "topic-local-name-blank-refused": _behaviour(
        ">=3.0.9 <3.1 | >=3.3.4 <4 | >=4.0.2",
        "TopicName refuses a blank (whitespace only) local name, 'Invalid topic name: <name>. Topic local name "
        "must not be blank.'; before, only an empty one, 'Invalid topic name: <name>', and ' ' is a name",
        "apache/pulsar PR #23691 (issue #23690), labelled release/3.0.9, release/3.3.4 and release/4.0.2; "
        "TopicName(String): 'StringUtils.isBlank(localName)' at v4.0.7 and v4.2.4, 'localName.isEmpty()' at "
        "v3.0.2, v3.0.7 and v3.2.3; observed: 3.0.7 serves ' ', 4.0.7 and 4.2.4 refuse it"),
    "partition-suffix-refusal-says-than": _behaviour(
        ">=4.0.7",
        "PUT of a non-partitioned topic named '<t>-partition-<K>' with K at or past <t>'s partitions is refused "
        "with 'a number smaller than number of partition'; before, 'smaller then'",
        "PersistentTopicsBase#validateNonPartitionTopicNameAsync: 'smaller then' at v3.0.2, v3.0.7, v3.1.2, v3.2.3, "
        "v3.3.2; 'smaller than' at v4.0.7 and v4.2.4"),
    # Producers and consumers on partition names (model/attach.py, which model/client.py attaches by).
    # The sources of 3.0.8 to 4.0.6 and of 4.1.x were not read, so each range starts at the first
    # release read that has it.
    "partition-attach-follows-metadata": _behaviour(
        ">=4.0.7",
        "a producer or consumer on a persistent '<t>-partition-<K>' of a partitioned <t> may create it by <t>'s "
        "partitioned metadata alone: K below the count even with auto-creation off, K at or past it never "
        "(TopicNotFound); before, auto-creation decided: off, an absent partition was TopicNotFound; on, K at or "
        "past the count was refused with NotAllowedError 'Illegal topic partition name <name> with max allowed "
        "<N> partitions'",
        "apache/pulsar PR #24651; BrokerService#isAllowAutoTopicCreationAsync: 'if (allowed && "
        "topicName.isPartitioned())' then isPartitionedTopicBeingDeletedAsync at v3.0.2 and v3.0.7, "
        "'return partitionedTopicMetadata.get().partitions > topicName.getPartitionIndex();' at v4.0.7 and "
        "v4.2.4; observed: 3.0.7 answers NotAllowedError for t-partition-2 of a 2-partition t, 4.0.7 and 4.2.4 "
        "TopicNotFound"),
    "partition-name-needs-partitioned-metadata": _behaviour(
        ">=4.2",
        "a producer or consumer that would create or load '<t>-partition-<K>' when <t> has no partitioned "
        "metadata is refused, NotAllowedError 'Partition metadata not found for the partitioned topic: <name>' "
        "(a non-persistent one whatever auto-creation says, a persistent one when auto-creation allows it); "
        "before, a persistent one was created as an ordinary topic and a non-persistent one was TopicNotFound",
        "apache/pulsar PR #24118 (PIP-414, apache/pulsar#24213); BrokerService#validateTopicConsistency, called "
        "from createPersistentTopic0 and createNonPersistentTopic, at v4.2.4; absent at v3.0.7 and v4.0.7, whose "
        "getTopic says 'Allow creating non-partitioned persistent topic that name includes' (v3.0.7: 'Allow "
        "crate'); observed: 3.0.7 and 4.0.7 create t-partition-1, 4.2.4 refuses it"),
    "create-partitioned-checks-existing-partitions": _behaviour(
        ">=4.2",
        "PUT .../partitions of <t> with N reads <t>'s own name, then refuses 409 'The topic has a max partition "
        "index of <K>, the number of partitions must be at least <K+1>' when a persistent '<t>-partition-<K>' "
        "with K >= N is stored, and creates <t> beside lower ones; before, any listed partition name of <t> "
        "refused it, 409 'This topic already exists'",
        "apache/pulsar PR #24225; AdminResource#internalCreatePartitionedTopic and getMaxPartitionIndex at "
        "v4.2.4; AdminResource#checkTopicExistsAsync comparing getPartitionedTopicName() of the namespace's "
        "topics at v3.0.2, v3.0.7 and v4.0.7; observed: 3.0.2, 3.0.7 and 4.0.7 answer 409 'This topic already "
        "exists' for t with 1 partition beside t-partition-1"),
    "v1-topic-names-refused": _behaviour(
        ">=4.2",
        "TopicName parses with splitBySlash: a 4-part (tenant/cluster/namespace/topic) name is refused ('V1 topic "
        "names (with cluster component) are no longer supported. ...'), and so is an empty segment ('Invalid "
        "topic name <rest>'), before the domain, the local name and then the namespace are checked; before, "
        "Splitter.on(\"/\").limit(4), the namespace checked first and a 4-part name a legacy v1 name",
        "TopicName(String) and splitBySlash at v4.2.4 against v3.0.7 and v4.0.7"),
    "topic-delete-skips-policies-without-change-events": _behaviour(
        ">=3.0.11 <3.1 | >=3.3.6 <4 | >=4.0.4",
        "DELETE of a persistent topic that is not loaded deletes its topic policies only when the namespace's "
        "__change_events topic exists, so an absent topic in a missing namespace is 404 'Topic <t> not found'; "
        "before, it always wrote a DELETE event to __change_events through the broker's own client, whose lookup "
        "in a missing namespace fails: 500 with that client's relayed 'Namespace not found'",
        "apache/pulsar PR #24097, labelled release/3.0.11, release/3.3.6 and release/4.0.4; "
        "SystemTopicBasedTopicPoliciesService#deleteTopicPoliciesAsync: 'Skip delete topic-level policies because' "
        "at v4.0.7 and v4.2.4, 'return sendTopicPolicyEvent(topicName, ActionType.DELETE, null);' at v3.0.7; "
        "observed: 3.0.7 answers 500, 4.0.7 and 4.2.4 answer 404"),
    "topic-busy-names-client-kinds": _behaviour(
        ">=4.2",
        "DELETE of a loaded persistent topic with producers or consumers attached is refused (412) with 'Topic has "
        "N client(s) connected Including C consumers, P producers, and R replicators.'; before, 'Topic has N "
        "connected producers/consumers'. A non-persistent topic keeps the older words in every release",
        "apache/pulsar PR #24975 (merged November 2025; the 4.0.x and 4.1.x lines after 4.0.7 were not read); "
        "PersistentTopic#delete at v4.2.4 against v3.0.7 and v4.0.7, NonPersistentTopic#delete at all three"),
}

# Apache Pulsar's proxy (org.apache.pulsar:pulsar-proxy) in front of a broker (the target
# pulsar-proxy:P/B, model/proxy.py): a release seen through it is spec/versions.py's Proxied, the
# broker's release with the proxy's beside it; these behaviours are keyed by the proxy's release.
# Read in the proxy's sources jars of 3.0.0, 3.3.5, 4.0.6 and 4.0.8 (Maven Central serves the
# pulsar-proxy artifact of no 3.0.x release after 3.0.0, nor of 4.0.7); a range names the PR and its
# release labels where the line's first release with the change was not read.
PROXY_BEHAVIOURS: dict[str, Behaviour] = {
    "proxy-advertises-flag5": _behaviour(
        ">=3.0.6 <3.1 | >=3.3.1",
        "the proxy answers a client's CONNECT (no proxy_to_broker_url: the lookup connection) with a CONNECTED "
        "of its own, FeatureFlags field 5 set whatever broker is behind it; before PIP-344's Commands, no field 5",
        "ProxyConnection#completeConnect at v3.0.0, v3.3.5, v4.0.6 and v4.0.8: "
        "'Commands.newConnected(protocolVersionToAdvertise, false)', the Commands of the proxy's own "
        "pulsar-common, which set field 5 from PIP-344 on (apache/pulsar PR #22206: BEHAVIOURS['pip-344']); "
        "observed: a 4.0.8 proxy sets it in front of 4.0.7 and of 3.0.2, a 3.0.0 proxy in front of 4.0.7 does not"),
    "proxy-forwards-metadata-auto-creation": _behaviour(
        ">=3.0.6 <3.1 | >=3.3.1",
        "the proxy's PARTITIONED_METADATA to the broker carries the client's field 6 "
        "(metadata_auto_creation_enabled), except on a client connection's first request, where it reads the "
        "field after the command was cleared (spec/divergences/apache-pulsar.yaml "
        "proxy-loses-field-6-on-a-connections-first-request); before, the proxy built its own request "
        "without the client's value",
        "LookupProxyHandler#handlePartitionMetadataResponse at v3.3.5, v4.0.6 and v4.0.8: "
        "'partitionMetadata.isMetadataAutoCreationEnabled());' passed to Commands.newPartitionMetadataRequest, "
        "whose parameter came with PIP-344 (apache/pulsar PR #22206); at v3.0.0 "
        "'Commands.newPartitionMetadataRequest(topicName.toString(), requestId);'"),
    "proxy-keeps-partition-metadata-error": _behaviour(
        ">=3.0.12 <3.1 | >=3.3.7 <4 | >=4.0.6",
        "a PARTITIONED_METADATA the broker refuses is relayed with the broker's error as the proxy's client "
        "reads it (ClientCnx#getPulsarClientException, then ClientCnx#revertClientExToErrorCode); before, "
        "ServiceNotReady unless the refusal was about authentication or authorization",
        "apache/pulsar PR #24181, labelled release/3.0.12 and release/3.3.7; "
        "LookupProxyHandler#handlePartitionMetadataResponse at v4.0.6 and v4.0.8: "
        "'Commands.newLookupErrorResponse(clientCnx.revertClientExToErrorCode(pce),', at v3.0.0 and v3.3.5 "
        "'Commands.newLookupErrorResponse(getServerError(t),' (the 4.0.x releases before 4.0.6 were not read)"),
}

ERAS = ("pip344", "pre-pip344", "any")
ERA_BEHAVIOUR = "pip-344"
# The release a case of each era is bound to when no target's release is known (the spec review,
# the model-agreement tests): the newest behaviour, and the last 3.0.x before PIP-344.
REPRESENTATIVE: dict[str, Optional[Release]] = {"pip344": NEWEST, "pre-pip344": (3, 0, 5), "any": NEWEST}


def era_range(era: str) -> Range:
    if era not in ERAS:
        raise ModelUsageError(f"unknown era {era!r}: use one of {', '.join(ERAS)}")
    if era == "any":
        return parse_range("*")
    pip344 = BEHAVIOURS[ERA_BEHAVIOUR].range
    return pip344 if era == "pip344" else Range(f"!({pip344.text})", pip344.intervals, not pip344.negated)


def era_of(release: Optional[Release]) -> str:
    """The era of a broker of ``release``: ``pip344`` within BEHAVIOURS["pip-344"], else ``pre-pip344``."""
    return "pip344" if release in BEHAVIOURS[ERA_BEHAVIOUR].range else "pre-pip344"


def proxy_has(release: Optional[Release], behaviour: str) -> bool:
    """Whether the proxy in front of a proxied broker ``release`` has a behaviour of PROXY_BEHAVIOURS;
    False for a broker seen directly (no proxy has anything)."""
    try:
        entry = PROXY_BEHAVIOURS[behaviour]
    except KeyError:
        raise ModelUsageError(f"unknown proxy behaviour {behaviour!r}; model/releases.py PROXY_BEHAVIOURS lists "
                              f"{', '.join(sorted(PROXY_BEHAVIOURS))}") from None
    proxy = proxy_of(release)
    return proxy is not None and proxy in entry.range


def has(release: Optional[Release], behaviour: str) -> bool:
    try:
        entry = BEHAVIOURS[behaviour]
    except KeyError:
        raise ModelUsageError(f"unknown behaviour {behaviour!r}; model/releases.py BEHAVIOURS lists "
                              f"{', '.join(sorted(BEHAVIOURS))}") from None
    return release in entry.range
