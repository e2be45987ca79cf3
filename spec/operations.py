"""The operation registry: every operation a row, a generated sequence or the harness performs, one
entry each, with what the rest of the project needs to know about it.

Adding an operation is one entry here, its frozen dataclass in model/ops.py (Pulsar's vocabulary, the
same name), its answer in the model (a handler in model/machine.py's ``HANDLERS``), and a method of
each driver its apis name. tests/test_operations.py fails while any of those is missing, and
everything else is derived from this table: which fields a row may write (spec/schema.py), which
PIP a generated case belongs to (conformance/generated.py), which steps the executor may perform
again (model/ops.py ``repeatable``), which operations rows may not write or may make with other
credentials. Like the rest of spec/, this module imports nothing of the project.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

PIPS = ("344", "2", "157", "35")


@dataclass(frozen=True)
class Operation:
    """One operation. ``fields``: what a row writes (``topic`` is a local name); ``apis``: the spec
    apis it can be performed through (none: a white-box observation only the metadata driver
    makes); ``selector``: which field(s) a case's api fills ("api", "transport", "api+transport");
    ``repeatable``: performing it twice in a row answers the same and leaves the broker as once
    does (reads, and lookups whose auto-creation the second time finds what the first made), so a
    step whose answer was lost may be asked again; ``in_rows``: False for operations that act
    outside a case's namespace (a tenant, the whole broker), which rows may not write;
    ``credentials``: an action of a row may make it with other credentials than the harness's;
    ``refused_topic``: an action of a row may name a topic Pulsar refuses, sent as written."""
    pip: str
    fields: frozenset[str] = frozenset()
    apis: tuple[str, ...] = ("rest",)
    selector: Optional[str] = None
    repeatable: bool = False
    in_rows: bool = True
    credentials: bool = False
    refused_topic: bool = False


_REST_BINARY = ("rest", "binary")
_CLIENT = ("client-binary", "client-http")
# PIP-344's client API through each client library: the api says which library and which transport
# (model/client_libraries.py); a library without the http transport has the api all the same, and its
# driver declines the call.
_LIBRARY_CLIENT = ("java-client-binary", "java-client-http", "go-client-binary", "go-client-http",
                   "rust-client-binary", "rust-client-http")
_LIBRARY_ADMIN = ("java-admin", "go-admin", "rust-admin")

OPERATIONS: dict[str, Operation] = {
    # PIP-344 and the admin API around it (model/lookups.py, model/admin.py, model/client.py)
    "SetBrokerConfig": Operation("344", frozenset({"key", "value"}), repeatable=True, in_rows=False),
    "CreateTenant": Operation("344", frozenset({"tenant", "admin_roles"}), in_rows=False),
    "CreateNamespace": Operation("344", frozenset({"policies"})),
    "DeleteNamespace": Operation("344"),
    # ``body``: the JSON text POSTed verbatim instead of the three fields (model/override_body.py)
    "SetAutoTopicCreation": Operation("344", frozenset({"allow_auto_topic_creation", "topic_type",
                                                       "default_num_partitions", "body"})),
    "GetAutoTopicCreation": Operation("344", repeatable=True),
    "RemoveAutoTopicCreation": Operation("344"),
    "CreatePartitionedTopic": Operation("344", frozenset({"topic", "partitions"})),
    "CreateNonPartitionedTopic": Operation("344", frozenset({"topic"})),
    "DeletePartitionedTopic": Operation("344", frozenset({"topic"})),
    "DeleteTopic": Operation("344", frozenset({"topic"})),
    "GetPartitionedMetadata": Operation("344", frozenset({"topic", "auto_create"}), _REST_BINARY, "api",
                                        repeatable=True, credentials=True, refused_topic=True),
    "GetPartitionsForTopic": Operation("344", frozenset({"topic"}), _CLIENT, "transport", repeatable=True),
    "ProduceConsume": Operation("344", frozenset({"topic", "count"}), _CLIENT, "transport"),
    "Lookup": Operation("344", frozenset({"topic"}), _REST_BINARY, "api", repeatable=True, credentials=True,
                        refused_topic=True),
    # ``domain``: the row's own by default; "all" is GET_TOPICS_OF_NAMESPACE's mode ALL, binary only
    "ListTopics": Operation("344", frozenset({"domain"}), _REST_BINARY, "api", repeatable=True, credentials=True),
    "ListPartitionedTopics": Operation("344", repeatable=True),
    "Handshake": Operation("344", frozenset({"feature"}), ("binary",), repeatable=True, credentials=True),
    # PIP-2 (model/nonpersistent.py). PubSub runs on the wire (binary) or through the official client.
    "PubSub": Operation("2", frozenset({"topic", "consumers", "bursts", "sends_before", "flow_after",
                                        "initial_position", "close_after", "view", "close_producer",
                                        "close_consumers"}),
                        ("binary", "client-binary", "client-http"), "api+transport"),
    "BadCommand": Operation("2", frozenset({"topic", "command"}), ("binary",), "api"),
    "GetTopicStats": Operation("2", frozenset({"topic", "detail"}), repeatable=True),
    "GetPartitionedStats": Operation("2", frozenset({"topic"}), repeatable=True),
    "DeleteSubscription": Operation("2", frozenset({"topic", "subscription"})),
    "AwaitTopicGC": Operation("2", frozenset({"topic", "seconds"}), repeatable=True),
    "GetInternalStats": Operation("2", frozenset({"topic"}), repeatable=True),
    # PIP-157 (model/buckets.py). ReadTopicLayout reads the target's metadata store (the metadata
    # driver): an observation only, which no row api performs.
    "GetNumberOfTopicBuckets": Operation("157", repeatable=True),
    "SetNumberOfTopicBuckets": Operation("157", frozenset({"buckets"})),
    "RemoveNumberOfTopicBuckets": Operation("157"),
    "ReadTopicLayout": Operation("157", frozenset({"topic"}), (), repeatable=True),
    # PIP-35 (model/batch_lookup.py; spec/pip35.md). ``topics``: spec/schema.py's _batch_topics.
    "BatchLookup": Operation("35", frozenset({"topics"}), _REST_BINARY, "api", repeatable=True),
    "BatchEqualsSingles": Operation("35", frozenset({"topics"}), _REST_BINARY, "api", repeatable=True),
    "SameOwnerEverywhere": Operation("35", frozenset({"topics"}), _REST_BINARY, "api", repeatable=True),
    # A cluster of several brokers (model/cluster.py): relations between its brokers' answers.
    "SameMetadataEverywhere": Operation("344", frozenset({"topic", "auto_create"}), _REST_BINARY, "api",
                                        repeatable=True),
    "LookupAtNonOwner": Operation("344", frozenset({"topic"}), ("binary",), "api", repeatable=True),
    "PubSubAcrossBrokers": Operation("2", frozenset({"topic", "count"}), ("binary",), "api"),
    # PIP-344's client API: the Java client and admin client, and the other client libraries
    # (model/java_client.py, model/client_libraries.py)
    "JavaGetPartitionsForTopic": Operation("344", frozenset({"topic", "auto_create"}), _LIBRARY_CLIENT,
                                           "library+transport", repeatable=True),
    "JavaProduceConsume": Operation("344", frozenset({"topic", "sub_type", "count"}), _LIBRARY_CLIENT,
                                    "library+transport"),
    "JavaGetPartitionedTopicMetadata": Operation("344", frozenset({"topic"}), _LIBRARY_ADMIN, "library",
                                                 repeatable=True),
}

# An action made with other credentials than the harness's (model/auth.py): not an entry of its own,
# since rows write it as the action's ``credentials`` field; it repeats when what it wraps does.
WITH_CREDENTIALS = "WithCredentials"
