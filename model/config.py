"""Broker configuration subset and the namespace ``autoTopicCreationOverride`` policy.

Owns: the broker.conf keys the PIP-344 behaviour depends on, with Pulsar's key names and defaults;
parsing their string values; which of them are dynamic; and the override's validation texts.

Keys are Pulsar's ``broker.conf`` names verbatim and values are strings, as in broker.conf and in
``POST /admin/v2/brokers/configuration/{key}/{value}``. An unknown key or a value the model cannot
read is a ModelUsageError, never a guess. (Pulsar itself reads any boolean other than "true" as
false; a spec row that wrote "yes" would be a typo, so the model refuses it.)

The override is validated only when it allows auto-creation (Pulsar's
BrokerService/AutoTopicCreationOverrideImpl, ``AutoTopicCreationOverrideImpl.validateOverride``).
A value set on a running broker (``with_dynamic_update``) may differ from the same value in
broker.conf (``from_strings``): rows configure brokers as broker.conf does.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Mapping, Optional

from model.errors import ModelUsageError

NON_PARTITIONED = "non-partitioned"
PARTITIONED = "partitioned"
# TopicType.NON_PARTITIONED / PARTITIONED, whose toString() gives these strings (Pulsar's BrokerService/AutoTopicCreationOverrideImpl).
TOPIC_TYPES = (NON_PARTITIONED, PARTITIONED)


@dataclass(frozen=True)
class BrokerConfig:
    """The broker.conf subset, field names = Pulsar keys (Pulsar's BrokerService/AutoTopicCreationOverrideImpl, defaults from its table)."""
    allowAutoTopicCreation: bool = True
    allowAutoTopicCreationType: str = NON_PARTITIONED
    defaultNumPartitions: int = 1
    # 0 = unlimited: "limits auto-creation and explicit creation" (Pulsar's BrokerService/AutoTopicCreationOverrideImpl).
    maxNumPartitionsPerPartitionedTopic: int = 0
    # 0 = unlimited; checked when partitioned metadata is created (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync).
    maxTopicsPerNamespace: int = 0
    # PIP-2 (Pulsar's ServiceConfiguration): which domains the broker loads, and the per-connection in-flight cap.
    enablePersistentTopics: bool = True
    enableNonPersistentTopics: bool = True
    maxConcurrentNonPersistentMessagePerConnection: int = 1000
    # PIP-35 (ours, TENTATIVE; docs/pip35-decisions.md C3): names per batch lookup. Not a Pulsar
    # key, so to_strings leaves it out at its default (a case sends it only when its row sets it).
    maxBatchLookupTopics: int = 10000
    # Token authentication and authorization (model/auth.py; ours: not in the PIPs). Pulsar's keys
    # and defaults; not dynamic. Sent to a target only when a row sets them (SENT_WHEN_SET).
    authenticationEnabled: bool = False
    authorizationEnabled: bool = False
    superUserRoles: str = ""
    # Pulsar's keys a few rows set (ServiceConfiguration's defaults), sent to a target only when a
    # row sets them (SENT_WHEN_SET): the lookup permits of the binary protocol (ServerCnx
    # #handlePartitionMetadataRequest takes one per request and gives it back before it answers;
    # rows ask one at a time, so the answers do not depend on it), and the check for inactive topics
    # (BrokerService#checkGC every brokerDeleteInactiveTopicsFrequencySeconds; a topic unused for
    # brokerDeleteInactiveTopicsMaxInactiveDurationSeconds, which defaults to the frequency, is
    # deleted, with the partitioned metadata of its base name when the last key is true).
    maxConcurrentLookupRequest: int = 50000
    brokerDeleteInactiveTopicsEnabled: bool = True
    brokerDeleteInactiveTopicsFrequencySeconds: int = 60
    brokerDeleteInactivePartitionedTopicMetadataEnabled: bool = False

    @classmethod
    def from_strings(cls, values: Optional[Mapping[str, str]] = None) -> "BrokerConfig":
        """Pulsar defaults overlaid with ``values`` ({broker.conf key: string value})."""
        config = cls()
        for key, value in (values or {}).items():
            config = config.with_value(key, value)
        return config

    def with_value(self, key: str, value: str) -> "BrokerConfig":
        if key not in KEYS:
            raise ModelUsageError(
                f"Unknown broker config key {key!r}: the model knows {', '.join(KEYS)}; "
                "add the key to model/config.py if a row needs it")
        parsed = _parse(key, value)
        if key == "maxConcurrentLookupRequest" and parsed < 1:
            raise ModelUsageError("maxConcurrentLookupRequest below 1 refuses every binary lookup (TooManyRequests), "
                                  "which the model does not answer; rows keep at least one permit")
        return replace(self, **{key: parsed})

    def with_dynamic_update(self, key: str, value: str) -> "BrokerConfig":
        """``key`` set on a running broker, which may differ from broker.conf: Pulsar's listeners of the two partition keys
        (BrokerService#updateDefaultNumPartitions, #updateMaxNumPartitionsPerPartitionedTopic,
        v3.0.2 to v4.2.4) lower defaultNumPartitions to a non-zero maximum below it, whichever of
        the two was set; a broker.conf holding both keeps them as written."""
        config = self.with_value(key, value)
        if key in PARTITION_KEYS and config.maxNumPartitionsPerPartitionedTopic != 0 \
                and config.defaultNumPartitions > config.maxNumPartitionsPerPartitionedTopic:
            config = replace(config, defaultNumPartitions=config.maxNumPartitionsPerPartitionedTopic)
        return config

    def to_strings(self, keep: frozenset[str] = frozenset()) -> dict[str, str]:
        """Every key with its value written the way broker.conf writes it (SENT_WHEN_SET keys only
        when set away from their default, or named in ``keep``: a broker without the tentative
        feature has no such key, and a row that sets a security key to its default means it)."""
        return {f.name: _format(getattr(self, f.name)) for f in fields(self)
                if f.name not in SENT_WHEN_SET or f.name in keep or getattr(self, f.name) != f.default}

    @property
    def super_users(self) -> frozenset[str]:
        """``superUserRoles`` as a set (a comma-separated list in broker.conf)."""
        return frozenset(role.strip() for role in self.superUserRoles.split(",") if role.strip())


KEYS: tuple[str, ...] = tuple(f.name for f in fields(BrokerConfig))
PARTITION_KEYS: frozenset[str] = frozenset({"defaultNumPartitions", "maxNumPartitionsPerPartitionedTopic"})
# Keys of never-upstream features (ours): not Pulsar's, so never sent to a target at their default.
TENTATIVE_KEYS: frozenset[str] = frozenset({"maxBatchLookupTopics"})
# Security keys: a target the harness starts gets them with its key material only when a row sets
# them (conformance/security.py), so every other case's configuration is as it was.
AUTH_KEYS: frozenset[str] = frozenset({"authenticationEnabled", "authorizationEnabled", "superUserRoles"})
# Pulsar's keys that only some rows set (the lookup permits, the check for inactive topics): sent only
# then, so every other case's configuration is as it was, and a target without them runs the rest.
SET_BY_ROWS_KEYS: frozenset[str] = frozenset({
    "maxConcurrentLookupRequest", "brokerDeleteInactiveTopicsEnabled", "brokerDeleteInactiveTopicsFrequencySeconds",
    "brokerDeleteInactivePartitionedTopicMetadataEnabled"})
SENT_WHEN_SET: frozenset[str] = TENTATIVE_KEYS | AUTH_KEYS | SET_BY_ROWS_KEYS

# Keys a running broker accepts through the dynamic-configuration REST call. The first three are
# verified dynamic ("the tests set them through admin.brokers().updateDynamicConfiguration",
# Pulsar's BrokerService/AutoTopicCreationOverrideImpl); the two limits are marked dynamic in ServiceConfiguration [I]. The PIP-2 keys are
# not dynamic (Pulsar's ServiceConfiguration, "dynamic: no").
PIP2_KEYS: frozenset[str] = frozenset({"enablePersistentTopics", "enableNonPersistentTopics",
                                       "maxConcurrentNonPersistentMessagePerConnection"})
# The check for inactive topics is scheduled at start-up with its frequency; the harness restarts a
# broker for all three of its keys rather than trust a release to take them at run time.
INACTIVE_TOPIC_KEYS: frozenset[str] = frozenset({
    "brokerDeleteInactiveTopicsEnabled", "brokerDeleteInactiveTopicsFrequencySeconds",
    "brokerDeleteInactivePartitionedTopicMetadataEnabled"})
DYNAMIC_KEYS: frozenset[str] = frozenset(KEYS) - PIP2_KEYS - AUTH_KEYS - INACTIVE_TOPIC_KEYS


def _parse(key: str, value: str):
    if not isinstance(value, str):
        raise ModelUsageError(
            f"Broker config {key}={value!r}: values are strings as in broker.conf; write {str(value).lower()!r}")
    kind = type(getattr(BrokerConfig(), key))
    if kind is bool:
        if value.lower() not in ("true", "false"):
            raise ModelUsageError(f"Broker config {key}={value!r}: write 'true' or 'false'")
        return value.lower() == "true"
    if kind is int:
        try:
            return int(value)
        except ValueError:
            raise ModelUsageError(f"Broker config {key}={value!r}: write a decimal integer") from None
    if key == "allowAutoTopicCreationType" and value not in TOPIC_TYPES:
        raise ModelUsageError(f"Broker config {key}={value!r}: write one of {', '.join(TOPIC_TYPES)}")
    return value


def _format(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class AutoTopicCreationOverride:
    """Namespace policy ``autoTopicCreationOverride``; field names = the REST JSON body's. A raw
    body may leave ``topicType`` null (model/override_body.py)."""
    allowAutoTopicCreation: bool
    topicType: Optional[str]
    defaultNumPartitions: Optional[int] = None

    @classmethod
    def from_json(cls, body: Mapping) -> "AutoTopicCreationOverride":
        unknown = set(body) - {"allowAutoTopicCreation", "topicType", "defaultNumPartitions"}
        if unknown or "allowAutoTopicCreation" not in body or "topicType" not in body:
            raise ModelUsageError(
                f"autoTopicCreationOverride {dict(body)!r}: write allowAutoTopicCreation (bool), "
                "topicType (string) and optionally defaultNumPartitions (int)")
        return cls(bool(body["allowAutoTopicCreation"]), body["topicType"], body.get("defaultNumPartitions"))


def validate_override(override: AutoTopicCreationOverride) -> Optional[str]:
    """Pulsar's error detail for an invalid override, or None when it is valid.

    Texts verbatim from Pulsar's BrokerService/AutoTopicCreationOverrideImpl (``AutoTopicCreationOverrideImpl.validateOverride``).
    """
    # "applied only when allowAutoTopicCreation is true" (Pulsar's BrokerService/AutoTopicCreationOverrideImpl)
    if not override.allowAutoTopicCreation:
        return None
    if override.topicType not in TOPIC_TYPES:
        # String.format prints a null topicType as "null"
        return f"Unknown topic type [{'null' if override.topicType is None else override.topicType}]"
    if override.topicType == PARTITIONED:
        if override.defaultNumPartitions is None:
            return "[defaultNumPartitions] cannot be null when the type is partitioned."
        if override.defaultNumPartitions <= 0:
            return "[defaultNumPartitions] cannot be less than 1 for partition type."
    elif override.defaultNumPartitions is not None:
        return "[defaultNumPartitions] is not allowed to be set when the type is non-partition."
    return None
