"""Pulsar's answer texts, verbatim, in one table per era — the strings a target must send back.

Every text here is quoted from the Pulsar source read for this model (class#method next to it,
at release v4.0.7 unless a release is named). ``[I]`` marks a text inferred from a
neighbouring code path and not confirmed by a test; the conformance run is what confirms it.

A text that differs between eras is a function of the era, never an if-statement in a
handler. A missing namespace and a missing tenant answer alike (``namespace_missing``): Pulsar
reads the namespace policies first and finds none either way (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync, Pulsar's ServerCnx.handlePartitionMetadataRequest).
"""

from __future__ import annotations

from pulsar_naming.names import NamespaceName, TopicName
from model.outcomes import RestError, ServerError, relayed_client_error

# -- REST, topic resources ---------------------------------------------------------------------


def topic_not_found(topic: TopicName) -> RestError:
    # Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync: "reply 404 with {"reason":"Topic <full-topic-name> not found"}" —
    # getTopicNotFoundErrorMessage, "Topic %s not found".
    return RestError(404, f"Topic {topic} not found")


def lookup_topic_not_found(topic: TopicName) -> RestError:
    # Pulsar's TopicLookupBase.internalLookupTopicAsync: "persistent topic that does not exist and may not be auto-created → 404
    # "Topic not found <topic>"".
    return RestError(404, f"Topic not found {topic}")


def partitioned_topic_not_found(topic: TopicName) -> RestError:
    # AdminResource#getPartitionedTopicNotFoundErrorMessage: "Partitioned Topic %s not found".
    return RestError(404, f"Partitioned Topic {topic} not found")


def delete_absent_partitioned_topic(era: str, topic: TopicName, non_partitioned_exists: bool) -> RestError:
    """DELETE .../{topic}/partitions when no partitioned metadata exists (row pip344-admin-delete-absent-*).

    PIP-344 era: PersistentTopicsBase#internalDeletePartitionedTopic (apache/pulsar PR #23002,
    released in 3.0.6, 3.2.4, 3.3.1) checks the non-partitioned topic when the metadata reads 0
    partitions: 409 "%s is a non-partitioned topic. Instead of calling delete-partitioned-topic
    please call delete." when it exists, else 404 "Topic %s not found." (note the full stop).
    Before that PR the delete went on, failed on the absent metadata node and answered 404
    getPartitionedTopicNotFoundErrorMessage (apache/pulsar issue #22771, on 3.2.3:
    "Partitioned Topic persistent://public/default/topic not found").
    """
    if era == "pip344":
        if non_partitioned_exists:
            return RestError(409, f"{topic} is a non-partitioned topic. Instead of calling "
                                  "delete-partitioned-topic please call delete.")
        return RestError(404, f"Topic {topic} not found.")
    return partitioned_topic_not_found(topic)


def delete_partitioned_as_topic(topic: TopicName) -> RestError:
    """DELETE /admin/v2/{domain}/{t}/{ns}/{topic} of a name with partitioned metadata: PersistentTopics
    #deleteTopic (the same at v3.0.7, v4.0.7 and v4.2.4; NonPersistentTopics inherits it) refuses it
    before anything else is read (rows pip344-admin-delete-topic-*)."""
    return RestError(409, f"{topic} is a partitioned topic, instead of calling delete topic, please call "
                          "delete-partitioned-topic.")


def topic_busy(topic: TopicName, producers: int, consumers: int, names_kinds: bool) -> RestError:
    """DELETE of a loaded topic with producers or consumers attached: PersistentTopic#delete and
    NonPersistentTopic#delete refuse it (TopicBusyException, which PersistentTopics#deleteTopic
    answers 412 without force), counting currentUsageCount; ``names_kinds`` is the persistent
    words of BEHAVIOURS["topic-busy-names-client-kinds"]."""
    users = producers + consumers
    if topic.persistent and names_kinds:
        return RestError(412, f"Topic has {users} {'client' if users == 1 else 'clients'} connected Including "
                              f"{consumers} consumers, {producers} producers, and 0 replicators.")
    return RestError(412, f"Topic has {users} connected producers/consumers")


# DELETE of an absent persistent topic in a missing namespace before apache/pulsar PR #24097: the
# topic-policies DELETE event goes to the namespace's __change_events through the broker's own
# client, whose lookup fails; PersistentTopics#deleteTopic answers 500 with that client's error
# (model/releases.py topic-delete-skips-policies-without-change-events).
DELETE_TOPIC_POLICIES_NAMESPACE_MISSING = RestError(500, relayed_client_error("Namespace not found"))


def namespace_missing(era: str, namespace: NamespaceName) -> RestError:
    """REST topic resources when the namespace (or its tenant) is missing.

    Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync: newest PulsarWebResource answers 404 "Namespace not found"; older 2.x/3.x
    answered 404 "Policies not found for <tenant>/<ns> namespace" (PulsarWebResource
    #checkLocalOrGetPeerReplicationCluster). The model gives the first to the pip344 era and the
    second to pre-pip344, as Pulsar's PersistentTopicsBase/ServerCnx does ("(new) / (old)").
    """
    if era == "pip344":
        return RestError(404, "Namespace not found")
    return RestError(404, f"Policies not found for {namespace} namespace")


# -- REST, namespace resources (AdminResource#getNamespacePoliciesAsync) ----------------------------

NAMESPACE_DOES_NOT_EXIST = RestError(404, "Namespace does not exist")  # Pulsar's BrokerService/AutoTopicCreationOverrideImpl


def invalid_override(detail: str) -> RestError:
    """An autoTopicCreationOverride that AutoTopicCreationOverrideImpl.validateOverride refuses.

    The reason is NamespacesBase's "Invalid configuration for autoTopicCreationOverride. the detail
    is " + errorInfo, with PRECONDITION_FAILED in every release: NamespacesBase
    #internalSetAutoTopicCreationAsync throws RestException(Status.PRECONDITION_FAILED, ...) at
    v3.0.2, v3.0.7, v3.2.3, v4.0.7 and v4.2.4 (pulsar-broker/src/main/java/org/apache/pulsar/
    broker/admin/impl/NamespacesBase.java), and 4.0.7 and 4.2.4 answered 412 when observed. An
    earlier reading gave the PIP-344 era 400; no release does. Rows pip344-admin-override-invalid-*.
    """
    return RestError(412, f"Invalid configuration for autoTopicCreationOverride. the detail is {detail}")


# -- REST, broker resources (BrokersBase#persistDynamicConfigurationAsync) ------------------------

# An unknown key passes BrokerService#validateDynamicConfiguration (it only runs a validator of a
# known dynamic key) and then fails isDynamicConfiguration, so unknown and non-dynamic keys answer
# alike: PRECONDITION_FAILED, "Can't update non-dynamic configuration".
NON_DYNAMIC_CONFIGURATION = RestError(412, "Can't update non-dynamic configuration")

# -- binary PARTITIONED_METADATA ----------------------------------------------------------------

# Pulsar's ServerCnx.handlePartitionMetadataRequest: "not found → Failed, error = TopicNotFound (11), message = "" (empty string)"
BINARY_TOPIC_NOT_FOUND = ServerError("TopicNotFound", "")


def binary_namespace_missing(era: str, namespace: NamespaceName, auto_creating: bool) -> ServerError:
    """PARTITIONED_METADATA for a topic whose namespace (or tenant) is missing.

    PIP-344 era, ServerCnx#handlePartitionMetadataRequest (v3.0.7, v4.0.7, v4.2.4): when the
    request may auto-create (field 6 true or absent, and the broker allows it) the auto-creating
    fetch fails on the namespace check with a 404, answered TopicNotFound with the exception's
    message, the REST reason of that check ("Namespace not found"); otherwise checkTopicExists
    finds nothing and the answer is TopicNotFound with an empty message. Observed so on 3.0.7,
    4.0.7 and 4.2.4. (The "Tenant or namespace or topic does not exist" text of the same method
    is the authorization check's, reached only with authorization enabled.)
    """
    if era == "pip344":
        if auto_creating:
            return ServerError("TopicNotFound", namespace_missing(era, namespace).reason)
        return BINARY_TOPIC_NOT_FOUND
    # Pulsar's ServerCnx.handlePartitionMetadataRequest: older brokers "answered MetadataError with "Policies not found for public/default
    # namespace"" (a client trace of 2021 kept in a comment of TestClientTopicsCommunication,
    # cornelk/pulsar-go@005a87ebafa659f448d2fdf022589af406e300b9:client_test.go).
    return ServerError("MetadataError", f"Policies not found for {namespace} namespace")


def binary_lookup_namespace_missing(era: str, namespace: NamespaceName) -> ServerError:
    # Pulsar's TopicLookupBase.lookupTopicAsync: "A 404 during the check → TopicNotFound(message)"; the message is the REST
    # reason of the same check.
    return ServerError("TopicNotFound", namespace_missing(era, namespace).reason)


def binary_list_namespace_missing(era: str, namespace: NamespaceName) -> ServerError:
    """GET_TOPICS_OF_NAMESPACE in mode NON_PERSISTENT (or ALL) for a missing namespace.

    NamespaceService#getListOfNonPersistentTopics first runs PulsarWebResource
    #checkLocalOrGetPeerReplicationCluster, which fails with RestException(404, "Namespace not
    found") (older: "Policies not found for <t/ns> namespace"); ServerCnx#handleGetTopicsOfNamespace
    answers "getClientErrorCode(new ServerMetadataException(ex)), ex.getMessage()": MetadataError,
    and the message of the CompletionException wrapping the RestException, which Java spells
    "<cause class>: <cause message>" [I]. Rows pip344-list-binary-missing-*.
    """
    return ServerError("MetadataError",
                       f"org.apache.pulsar.broker.web.RestException: {namespace_missing(era, namespace).reason}")


# -- creation limits ----------------------------------------------------------------------------

# AdminResource#validatePartitionedTopicName (create: any local name containing "-partition-") and
# PersistentTopics#deletePartitionedTopic (delete: a partition name): PRECONDITION_FAILED.
PARTITION_NAME_REFUSED = RestError(412, "Partitioned Topic Name should not contain '-partition-'")

# AdminResource#internalCreatePartitionedTopic (406, both texts) and its maxTopicsPerNamespace
# check (412); BrokerService#checkMaxTopicsPerNamespace's NotAllowedException has the same text.
PARTITIONS_NOT_POSITIVE = RestError(406, "Number of partitions should be more than 0")
TOO_MANY_TOPICS = "Exceed maximum number of topics in namespace."

# -- attaching a producer or a consumer (model/attach.py) ----------------------------------------

# What getTopic's empty answer (absent, not to be created) becomes, by the command that asked:
# ServerCnx#handleProducer turns getOrCreateTopic's NoSuchElementException into "Topic not found %s"
# (before BEHAVIOURS["producer-topic-not-found-names-it"], "Topic Not Found."); ServerCnx#handleSubscribe
# fails with its own text (alike at v3.0.2, v3.0.7, v4.0.7 and v4.2.4).
ATTACH_ABSENT = {"PRODUCER": "Topic not found {}", "SUBSCRIBE": "Topic {} does not exist"}
PRODUCER_ABSENT_UNNAMED = "Topic Not Found."
# BrokerService#validateTopicConsistency at v4.2.4 (the topic's full name follows each).
PARTITION_METADATA_NOT_FOUND = "Partition metadata not found for the partitioned topic: "
FOUND_PARTITIONED_METADATA = "Found partitioned metadata for non-partitioned topic: "


def illegal_partition_name(topic, partitions: int) -> str:
    """BrokerService#getTopic (v3.0.7, v4.0.7) and #validateTopicConsistency (v4.2.4)."""
    return f"Illegal topic partition name {topic} with max allowed {partitions} partitions"


def partitions_above_max(maximum: int) -> str:
    return f"Number of partitions should be less than or equal to {maximum}"


# Pulsar's BrokerService#createDefaultPartitionedTopicAsync: its checkArgument on auto-creation.
DEFAULT_PARTITIONS_NOT_POSITIVE = "Default number of partitions should be more than 0"
