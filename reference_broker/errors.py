"""Broker-level errors: one root, ``BrokerError``, and the subclasses the core raises.

What this module owns: the *texts and codes* a refusal carries to each API. Pulsar answers the
same refusal differently on its two APIs, so every error carries both answers:

- ``server_error`` is the binary ``ServerError`` enum NAME (Pulsar's PulsarApi.proto), e.g.
  ``"TopicNotFound"``; the binary layer looks the number up in the proto enum.
- ``http_status`` and ``reason`` are the admin REST answer; the body is ``{"reason": reason}``
  (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync, ``ErrorData.reason``).
- ``binary_message`` is the ``message`` field of the binary error reply. It is often NOT the REST
  reason: an absent topic is REST "Topic persistent://public/default/t not found" but binary
  ``TopicNotFound`` with message "" (Pulsar's
  PersistentTopicsBase.internalGetPartitionedMetadataAsync, Pulsar's
  ServerCnx.handlePartitionMetadataRequest).

The texts depend on the operation (lookup vs partitioned metadata vs admin), so the core builds
each error with the texts of the operation that failed; the constructors below only give the
defaults. Each call site cites the fact it follows.

Errors are raised by the core and turned into replies at the edge (admin/errors.py for REST,
commands.py's ServerCnx for binary). Nothing here knows about HTTP or frames.
"""

from __future__ import annotations


class BrokerError(Exception):
    """Root of every refusal the reference broker gives; carries both APIs' answers."""

    server_error: str = "UnknownError"
    http_status: int = 500

    def __init__(
        self,
        reason: str,
        *,
        binary_message: str | None = None,
        server_error: str | None = None,
        http_status: int | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.binary_message = reason if binary_message is None else binary_message
        if server_error is not None:
            self.server_error = server_error
        if http_status is not None:
            self.http_status = http_status

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(server_error={self.server_error!r}, http_status={self.http_status}, "
            f"reason={self.reason!r}, binary_message={self.binary_message!r})"
        )


# --- not found ---------------------------------------------------------------------------------


class TopicNotFound(BrokerError):
    """The topic does not exist and may not be created by this operation."""

    server_error = "TopicNotFound"
    http_status = 404


class NamespaceNotFound(BrokerError):
    """The namespace (or its tenant) is missing. Binary answers use TopicNotFound (Pulsar's PersistentTopicsBase/ServerCnx)."""

    server_error = "TopicNotFound"
    http_status = 404


class TenantNotFound(BrokerError):
    server_error = "TopicNotFound"
    http_status = 404


class ClusterNotFound(BrokerError):
    server_error = "MetadataError"
    http_status = 404


class PartitionedTopicNotFound(BrokerError):
    # Swagger of PersistentTopics: 404 "Partitioned topic does not exist" (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync).
    server_error = "TopicNotFound"
    http_status = 404


# --- conflicts and refusals --------------------------------------------------------------------


class AlreadyExists(BrokerError):
    """Tenant, namespace or topic already exists: REST 409 Conflict."""

    server_error = "MetadataError"
    http_status = 409


class NotEmpty(BrokerError):
    """A tenant or namespace still has children: REST 409 Conflict."""

    server_error = "MetadataError"
    http_status = 409


class InvalidTopicName(BrokerError):
    """A topic, namespace or tenant name Pulsar refuses: REST 412, binary InvalidTopicName."""

    server_error = "InvalidTopicName"
    http_status = 412


class TopicBusy(BrokerError):
    """A loaded topic with producers or consumers attached cannot be deleted without force: REST 412
    (only the admin API deletes a topic)."""

    http_status = 412


class NotAllowed(BrokerError):
    """A rule refuses the operation (limits, disabled domains): binary NotAllowedError (22)."""

    server_error = "NotAllowedError"
    http_status = 412


class InvalidPolicies(BrokerError):
    """A namespace policies body (e.g. autoTopicCreationOverride) failed validation: REST 400."""

    server_error = "MetadataError"
    http_status = 400


class InvalidOverride(BrokerError):
    """An autoTopicCreationOverride refused by its validation: REST 412, as NamespacesBase
    #internalSetAutoTopicCreationAsync answers (PRECONDITION_FAILED in every release)."""

    server_error = "MetadataError"
    http_status = 412


class TooManyRequests(BrokerError):
    """No lookup permit free (maxConcurrentLookupRequest); REST 503 (Pulsar's TopicLookupBase.internalLookupTopicAsync)."""

    server_error = "TooManyRequests"
    http_status = 503


class ServiceNotReady(BrokerError):
    server_error = "ServiceNotReady"
    http_status = 503


class MetadataStoreError(BrokerError):
    """The metadata store failed or was used inconsistently (Pulsar's ServerCnx.handlePartitionMetadataRequest: MetadataError)."""

    server_error = "MetadataError"
    http_status = 500


class ConfigError(BrokerError):
    """A broker.conf key or value is refused. The CLI exits 2; the REST update answers 412."""

    server_error = "UnknownError"
    http_status = 412


# --- message builders shared by the core (one place per quoted text) ---------------------------


def topic_not_found_reason(topic: object) -> str:
    # Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync: getTopicNotFoundErrorMessage is "Topic %s not found" with the full name.
    return f"Topic {topic} not found"


def lookup_topic_not_found_reason(topic: object) -> str:
    # Pulsar's TopicLookupBase.internalLookupTopicAsync: REST lookup of an absent persistent topic -> 404 "Topic not found <topic>".
    return f"Topic not found {topic}"


def tenant_or_namespace_missing_binary(namespace: object) -> str:
    # Pulsar's ServerCnx.handlePartitionMetadataRequest and Pulsar's PersistentTopicsBase/ServerCnx: binary TopicNotFound "Tenant or namespace or topic does not exist: <t/ns>".
    return f"Tenant or namespace or topic does not exist: {namespace}"
