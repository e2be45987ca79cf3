"""The broker's topic auto-creation decision and the namespace override's binding and validation.

What this module owns: three pure functions the core asks before it creates anything, and the
reading of an ``autoTopicCreationOverride`` value: its binding from a JSON body, as Pulsar's
Jackson binds it, then its check. Inputs are the topic, the namespace ``Policies`` JSON (a dict,
or None when absent), a parsed JSON body and the broker config; nothing here reads the store.

``is_allow_auto_topic_creation`` decides as Pulsar's BrokerService/AutoTopicCreationOverrideImpl
"How the broker decides" (``BrokerService.isAllowAutoTopicCreationAsync``), in this order:

- deleted namespace: "The namespace policies have ``deleted=true`` -> false."
- "The topic is an ExtensibleLoadManager internal topic -> false." We run no extensible load
  manager, so no topic is one of its internal topics; the check has nothing to match.
- system topic: "``systemTopicEnabled`` and the name is a system topic -> true."
- partition of a partitioned topic: a partition name of a topic that has partitioned metadata
  may be created exactly when its index is below the count ("return
  partitionedTopicMetadata.get().partitions > topicName.getPartitionIndex();" at v4.2.4),
  whatever the override or the broker says, in either domain; false while that partitioned topic
  is being deleted, which our atomic deletions never show. The caller gives the count, since
  nothing here reads the store.
- override, then broker: "if the namespace ``autoTopicCreationOverride`` is set, use its
  ``allowAutoTopicCreation``; else use the broker's ``allowAutoTopicCreation``. There is no
  topic-level override for topic creation."

``isDefaultTopicTypePartitioned``: "always false for names ending with the DLQ or retry
suffixes (PR #22705). Otherwise the override's ``topicType``, falling back to the broker config."
``getDefaultNumPartitions``: "the override's value, or else the broker's ``defaultNumPartitions``."
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from pulsar_naming.names import TopicName
from reference_broker.config import BrokerConfig
from reference_broker.errors import InvalidOverride, InvalidPolicies, NotAllowed

PARTITIONED = "partitioned"
NON_PARTITIONED = "non-partitioned"
TOPIC_TYPES = (PARTITIONED, NON_PARTITIONED)

# Java client defaults for dead-letter and retry topics ("<topic>-<subscription>-DLQ" / "-RETRY");
# isDefaultTopicTypePartitioned tests the partitioned-topic name's suffix (Pulsar's BrokerService/AutoTopicCreationOverrideImpl, PR #22705).
DLQ_SUFFIX = "-DLQ"
RETRY_SUFFIX = "-RETRY"

# System topics (allowed while systemTopicEnabled). Only the namespace-events topic is recognised here; it is the one system
# topic a client can name in an ordinary namespace. [I] the full list is inferred.
SYSTEM_TOPIC_LOCAL_NAMES = ("__change_events",)

OVERRIDE_KEY = "autoTopicCreationOverride"


def _override(policies: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if not policies:
        return None
    value = policies.get(OVERRIDE_KEY)
    if value is None or isinstance(value, dict):  # the usual two: the ABC check costs more than the rest of the rule
        return value
    return value if isinstance(value, Mapping) else None


def is_system_topic(topic: TopicName) -> bool:
    return topic.partitioned_base.local_name in SYSTEM_TOPIC_LOCAL_NAMES


def is_allow_auto_topic_creation(topic: TopicName, policies: Mapping[str, Any] | None, config: BrokerConfig, *,
                                 base_partitions: int) -> bool:
    """``isAllowAutoTopicCreationAsync`` (the module's order of checks); ``base_partitions``: the partition count of the
    topic a partition name belongs to (0: no metadata, or not a partition name)."""
    if policies and policies.get("deleted"):
        return False  # a deleted namespace
    if config.systemTopicEnabled and is_system_topic(topic):
        return True  # a system topic
    if topic.is_partition and base_partitions > 0:
        return base_partitions > topic.partition_index  # a partition: below the count
    override = _override(policies)
    if override is not None:
        return bool(override.get("allowAutoTopicCreation"))  # the namespace's override first
    return bool(config.allowAutoTopicCreation)  # then the broker


def _override_in_force(policies: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    # The override's type and count only mean something when it allows creation: a refusing
    # override was never validated (validateOverride runs only when allowAutoTopicCreation is true).
    override = _override(policies)
    return override if override is not None and override.get("allowAutoTopicCreation") else None


def is_default_topic_type_partitioned(topic: TopicName, policies: Mapping[str, Any] | None, config: BrokerConfig) -> bool:
    base = topic.partitioned_base.local_name
    if base.endswith(DLQ_SUFFIX) or base.endswith(RETRY_SUFFIX):
        return False  # PR #22705: never auto-create a partitioned DLQ/retry topic
    override = _override_in_force(policies)
    topic_type = override.get("topicType") if override is not None else config.allowAutoTopicCreationType
    return topic_type == PARTITIONED


def default_num_partitions(topic: TopicName, policies: Mapping[str, Any] | None, config: BrokerConfig) -> int:
    override = _override_in_force(policies)
    if override is not None and override.get("defaultNumPartitions") is not None:
        return int(override["defaultNumPartitions"])
    return int(config.defaultNumPartitions)


# --- binding and validation of an override value (Pulsar's Namespaces#setAutoTopicCreation) ----------------
#
# Pulsar binds the body to AutoTopicCreationOverrideImpl with Jackson before its resource method
# runs, so a body Jackson refuses answers 400 whatever the namespace, and a JSON null (or no body)
# reaches internalSetAutoTopicCreationAsync as null, which removes the override. Jackson's answer is
# 400 text/plain with its message; we answer its first line as the reason (what follows is a parser
# location). The messages are the ones Pulsar 3.0.7, 4.0.7 and 4.2.4 answered; [I] marks the ones
# no release was seen saying.

_IMPL = "org.apache.pulsar.common.policies.data.impl.AutoTopicCreationOverrideImpl"
_JAVA_BOOLEANS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_JAVA_INT = range(-2 ** 31, 2 ** 31)
_JAVA_DIGITS = re.compile(r"-?[0-9]+")  # [I] what Jackson reads as an int from a string; "2" was seen

# [I] the REST layer joins the fixed prefix and validateOverride's detail; Pulsar's BrokerService/AutoTopicCreationOverrideImpl give both texts.
_INVALID_OVERRIDE = "Invalid configuration for autoTopicCreationOverride. the detail is "


def _java_text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _described(value: Any) -> str:
    """How Jackson names the JSON value it could not bind."""
    if isinstance(value, bool):
        return f"Boolean value (token `JsonToken.{'VALUE_TRUE' if value else 'VALUE_FALSE'}`)"
    if isinstance(value, dict):
        return "Object value (token `JsonToken.START_OBJECT`)"  # [I]
    if isinstance(value, list):
        return "Array value (token `JsonToken.START_ARRAY`)"
    return "Floating-point value (token `JsonToken.VALUE_NUMBER_FLOAT`)"  # [I]


def _no_creator(kind: str, what: str) -> InvalidPolicies:
    return InvalidPolicies(f"Cannot construct instance of `{_IMPL}` (although at least one Creator exists): "
                           f"no {kind}-argument constructor/factory method to deserialize from {what}")


def _bind_boolean(value: Any) -> bool:
    """``private boolean allowAutoTopicCreation``: null stays Java's false."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        if value in _JAVA_BOOLEANS:
            return _JAVA_BOOLEANS[value]
        raise InvalidPolicies(f'Cannot deserialize value of type `boolean` from String "{value}": '
                              'only "true"/"True"/"TRUE" or "false"/"False"/"FALSE" recognized')
    if isinstance(value, int):
        return value != 0  # [I] Jackson's int-to-boolean coercion
    raise InvalidPolicies(f"Cannot deserialize value of type `boolean` from {_described(value)}")  # [I]


def _bind_string(value: Any) -> str | None:
    """``private String topicType``: a scalar becomes its text."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        raise InvalidPolicies(f"Cannot deserialize value of type `java.lang.String` from {_described(value)}")  # [I]
    return _java_text(value)


def _bind_integer(value: Any) -> int | None:
    """``private Integer defaultNumPartitions``: a float is cut toward zero, a string of digits read."""
    if value is None:
        return None
    if isinstance(value, (bool, dict, list)):  # [I] for an object or an array
        raise InvalidPolicies(f"Cannot deserialize value of type `java.lang.Integer` from {_described(value)}")
    if isinstance(value, str):
        if not _JAVA_DIGITS.fullmatch(value):
            raise InvalidPolicies(f'Cannot deserialize value of type `java.lang.Integer` from String "{value}": '
                                  "not a valid `java.lang.Integer` value")
    number = int(value)  # truncates a float toward zero, as Java's (int) cast
    if number not in _JAVA_INT:
        low, high = _JAVA_INT[0], _JAVA_INT[-1]
        if isinstance(value, str):  # Jackson's two texts, spaced as each is
            raise InvalidPolicies(f'Cannot deserialize value of type `java.lang.Integer` from String "{value}": '
                                  f"Overflow: numeric value ({value}) out of range of `java.lang.Integer` ({low} -{high})")
        raise InvalidPolicies(f"Numeric value ({value}) out of range of int ({low} - {high})")  # [I] for a float
    return number


def bind_override(value: Any) -> dict[str, Any] | None:
    """The override a parsed JSON body binds to (None for null), or InvalidPolicies (400)."""
    if value is None:
        return None
    if isinstance(value, list):
        raise InvalidPolicies(f"Cannot deserialize value of type `{_IMPL}` from {_described(value)}")
    if isinstance(value, str):
        if value == "":
            raise InvalidPolicies(f'Cannot coerce empty String ("") to `{_IMPL}` value '
                                  "(but could if coercion was enabled using `CoercionConfig`)")
        raise _no_creator("String", f"String value ('{value}')")
    if isinstance(value, bool):
        raise _no_creator("boolean/Boolean", f"boolean value ({_java_text(value)})")
    if isinstance(value, int):
        raise _no_creator("int/Int", f"Number value ({value})")
    if not isinstance(value, Mapping):
        raise _no_creator("double/Double", f"Number value ({value})")  # [I]
    # Unknown properties are ignored (ObjectMapperFactory: FAIL_ON_UNKNOWN_PROPERTIES false).
    return {"allowAutoTopicCreation": _bind_boolean(value.get("allowAutoTopicCreation")),
            "topicType": _bind_string(value.get("topicType")),
            "defaultNumPartitions": _bind_integer(value.get("defaultNumPartitions"))}


def validate_override(body: Mapping[str, Any], config: BrokerConfig) -> dict[str, Any]:
    """Check a bound ``autoTopicCreationOverride`` and return its stored form; raises on refusal.

    Pulsar's BrokerService/AutoTopicCreationOverrideImpl, ``AutoTopicCreationOverrideImpl.validateOverride``, applied only when
    ``allowAutoTopicCreation`` is true:
      "unknown type -> ``Unknown topic type [<t>]``;
       partitioned with null count -> ``[defaultNumPartitions] cannot be null when the type is partitioned.``;
       partitioned with count <= 0 -> ``[defaultNumPartitions] cannot be less than 1 for partition type.``;
       non-partitioned with a count set -> ``[defaultNumPartitions] is not allowed to be set when the type is non-partition.``"
    Then 406 "Number of partitions should be less than or equal to <max>" when the count exceeds
    ``maxNumPartitionsPerPartitionedTopic`` (> 0). The stored form leaves null fields out, as
    Pulsar's ObjectMapper prints them (NON_NULL).
    """
    allow = body["allowAutoTopicCreation"]
    topic_type = body.get("topicType")
    count = body.get("defaultNumPartitions")
    if allow:
        if topic_type not in TOPIC_TYPES:
            raise InvalidOverride(_INVALID_OVERRIDE + f"Unknown topic type [{_java_text(topic_type)}]")
        if topic_type == PARTITIONED:
            if count is None:
                raise InvalidOverride(
                    _INVALID_OVERRIDE + "[defaultNumPartitions] cannot be null when the type is partitioned."
                )
            if count <= 0:
                raise InvalidOverride(
                    _INVALID_OVERRIDE + "[defaultNumPartitions] cannot be less than 1 for partition type."
                )
            limit = config.maxNumPartitionsPerPartitionedTopic
            if limit > 0 and count > limit:
                raise NotAllowed(f"Number of partitions should be less than or equal to {limit}", http_status=406)
        elif count is not None:
            raise InvalidOverride(
                _INVALID_OVERRIDE
                + "[defaultNumPartitions] is not allowed to be set when the type is non-partition."
            )
    stored: dict[str, Any] = {"allowAutoTopicCreation": allow}
    if topic_type is not None:
        stored["topicType"] = topic_type
    if count is not None:
        stored["defaultNumPartitions"] = count
    return stored
