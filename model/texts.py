"""Pulsar's answer texts, verbatim, in one table per era — the strings a target must send back.

Every text here is quoted from reference/pulsar-facts.md (fact id next to it) or from the Pulsar
source read for this model (class#method next to it). ``[I]`` marks a text inferred from a
neighbouring code path and not confirmed by a test; the conformance run is what confirms it.

Rule 1: a text that differs between eras is a function of the era, never an if-statement in a
        handler.
Rule 2: a missing namespace and a missing tenant answer alike: Pulsar reads the namespace
        policies first and finds none either way (facts §1.2 step 5, §1.3 step 4).
"""

from __future__ import annotations

from model.names import NamespaceName, TopicName
from model.outcomes import RestError, ServerError

# -- REST, topic resources ---------------------------------------------------------------------


def topic_not_found(topic: TopicName) -> RestError:
    # facts §1.2 step 3: "reply 404 with {"reason":"Topic <full-topic-name> not found"}" —
    # getTopicNotFoundErrorMessage, "Topic %s not found".
    return RestError(404, f"Topic {topic} not found")


def lookup_topic_not_found(topic: TopicName) -> RestError:
    # facts §3.5: "persistent topic that does not exist and may not be auto-created → 404
    # "Topic not found <topic>"".
    return RestError(404, f"Topic not found {topic}")


def partitioned_topic_not_found(topic: TopicName) -> RestError:
    # AdminResource#getPartitionedTopicNotFoundErrorMessage: "Partitioned Topic %s not found";
    # used by DELETE .../partitions for an absent partitioned topic [I].
    return RestError(404, f"Partitioned Topic {topic} not found")


def namespace_missing(era: str, namespace: NamespaceName) -> RestError:
    """REST topic resources when the namespace (or its tenant) is missing.

    facts §1.2 step 5: newest PulsarWebResource answers 404 "Namespace not found"; older 2.x/3.x
    answered 404 "Policies not found for <tenant>/<ns> namespace" (PulsarWebResource
    #checkLocalOrGetPeerReplicationCluster). The model gives the first to the pip344 era and the
    second to pre-pip344, as facts §7 does ("(new) / (old)").
    """
    if era == "pip344":
        return RestError(404, "Namespace not found")
    return RestError(404, f"Policies not found for {namespace} namespace")


# -- REST, namespace resources (AdminResource#getNamespacePoliciesAsync) ----------------------------

NAMESPACE_DOES_NOT_EXIST = RestError(404, "Namespace does not exist")  # facts §1.5 errors list

# -- binary PARTITIONED_METADATA ----------------------------------------------------------------

# facts §1.3 step 5: "not found → Failed, error = TopicNotFound (11), message = "" (empty string)"
BINARY_TOPIC_NOT_FOUND = ServerError("TopicNotFound", "")


def binary_namespace_missing(era: str, namespace: NamespaceName) -> ServerError:
    if era == "pip344":
        # facts §1.3 step 4: "The authorization future fails with an HTTP 404 (namespace or tenant
        # missing): TopicNotFound, "Tenant or namespace or topic does not exist: <tenant/ns>"".
        return ServerError("TopicNotFound", f"Tenant or namespace or topic does not exist: {namespace}")
    # facts §1.3: older brokers "answered MetadataError with "Policies not found for public/default
    # namespace"" (captured Go client trace, index id 29451639921).
    return ServerError("MetadataError", f"Policies not found for {namespace} namespace")


def binary_lookup_namespace_missing(era: str, namespace: NamespaceName) -> ServerError:
    # facts §3.4: "A 404 during the check → TopicNotFound(message)"; the message is the REST
    # reason of the same check.
    return ServerError("TopicNotFound", namespace_missing(era, namespace).reason)


def binary_from_rest_status(status: int, message: str) -> ServerError:
    """ServerCnx's mapping of a failed metadata creation (facts §1.3 step 5): "RestException 404 →
    TopicNotFound; RestException with another code < 500 → MetadataError; anything else →
    ServiceNotReady. The message is the exception message." """
    if status == 404:
        return ServerError("TopicNotFound", message)
    if status < 500:
        return ServerError("MetadataError", message)
    return ServerError("ServiceNotReady", message)


# -- creation limits ----------------------------------------------------------------------------

# AdminResource#internalCreatePartitionedTopic (406, both texts) and its maxTopicsPerNamespace
# check (412, "Exceed maximum number of topics in namespace.").
PARTITIONS_NOT_POSITIVE = RestError(406, "Number of partitions should be more than 0")
TOO_MANY_TOPICS = "Exceed maximum number of topics in namespace."


def partitions_above_max(maximum: int) -> str:
    return f"Number of partitions should be less than or equal to {maximum}"


# BrokerService's checkArgument on auto-creation (facts §1.2 step 4: "checks defaultNumPartitions
# > 0"); the text is Pulsar's checkArgument message [I].
DEFAULT_PARTITIONS_NOT_POSITIVE = "Default number of partitions should be more than 0"
