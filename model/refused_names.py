"""Topic names Pulsar refuses, and the exact words it refuses them with, by release.

``model.names`` parses the names the model reasons about; this module answers the question a
broker answers before anything else: does ``TopicName.get(name)`` throw, and with what message?
Both APIs ask it first (ServerCnx#validateTopicName for PARTITIONED_METADATA and LOOKUP,
AdminResource#validateTopicName for the admin REST paths), so a refused name never reaches a
namespace, a topic or the auto-creation rules.

Rule 1: ``refusal(name, release)`` is the IllegalArgumentException message of Pulsar's
        ``TopicName`` constructor for that release, or None when the name is accepted. Two
        parsers are reproduced: the one of 3.x and 4.0 (``Splitter.on("/").limit(4)``, a 4-part
        name is a legacy v1 name) and the one of 4.2 (``splitBySlash``: an empty segment and a v1
        name are refused), chosen by ``releases.has(release, "v1-topic-names-refused")``.
Rule 2: a blank local name (whitespace only) is refused with "Topic local name must not be
        blank." from ``topic-local-name-blank-refused`` on; before, only an empty one, with
        "Invalid topic name: <name>", so " " is an ordinary name there.
Rule 3: tenant, namespace and cluster parts follow NamedEntity's ``^[-=:.\\w]*$`` where Java's
        ``\\w`` is ASCII only, and must be non-empty (NamespaceName#validateNamespaceName).
Rule 4: the domain is read case-insensitively (TopicDomain#getEnum), so ``PERSISTENT://`` is a
        domain; anything else is "Invalid topic domain: '<text>'".
Rule 5: what each API shows: binary ``ServerError("InvalidTopicName", "Invalid topic name: " +
        message)`` (ServerCnx); REST ``412 "Topic name is not valid"`` (AdminResource), for a name
        whose domain, tenant, namespace and local name are the path's segments.
"""

from __future__ import annotations

import re
from typing import Optional

from model import releases
from model.outcomes import RestError, ServerError

_NAMED_ENTITY = re.compile(r"^[-=:.\w]*$", re.ASCII)
_DOMAINS = ("persistent", "non-persistent")
SHORT_NAME = "Invalid short topic name '{}', it should be in the format of <tenant>/<namespace>/<topic> or <topic>"
BLANK_LOCAL = "Invalid topic name: {}. Topic local name must not be blank."
V1_REFUSED = ("V1 topic names (with cluster component) are no longer supported. Please use the V2 format: "
              "'<domain>://tenant/namespace/topic'. Got: {}")
REST_REFUSAL = "Topic name is not valid"


class Refused(ValueError):
    """Pulsar's TopicName refuses the name; ``str()`` is its message."""


def _blank(text: str) -> bool:
    return not text.strip(" \t\n\x0b\f\r\x1c\x1d\x1e\x1f")  # Character.isWhitespace


def _check_entity(name: str) -> None:
    if not _NAMED_ENTITY.match(name):
        raise Refused(f"Invalid named entity: {name}")


def _check_namespace(*parts: str) -> None:
    """NamespaceName#validateNamespaceName (Rule 3)."""
    if any(not part for part in parts):
        raise Refused("Invalid namespace format. namespace: " + "/".join(parts))
    for part in parts:
        _check_entity(part)


def _domain(text: str) -> str:
    for domain in _DOMAINS:
        if text.lower() == domain:
            return domain
    raise Refused(f"Invalid topic domain: '{text}'")


def _local_name(local: str, complete: str, release) -> None:
    if releases.has(release, "topic-local-name-blank-refused"):
        if _blank(local):
            raise Refused(BLANK_LOCAL.format(complete))
    elif not local:
        raise Refused(f"Invalid topic name: {complete}")


def _classic(name: str, release) -> None:
    """TopicName(String) of 3.x and 4.0 (Rule 1)."""
    complete = name
    if "://" not in name:
        parts = [part for part in name.split("/") if part]  # StringUtils.split drops empty tokens
        if len(parts) == 3:
            complete = "persistent://" + name
        elif len(parts) == 1:
            complete = "persistent://public/default/" + parts[0]
        else:
            raise Refused(SHORT_NAME.format(name))
    domain_text, _, rest = complete.partition("://")
    _domain(domain_text)
    parts = rest.split("/", 3)
    if len(parts) == 3:
        _check_namespace(parts[0], parts[1])
    elif len(parts) == 4:
        _check_namespace(parts[0], parts[1], parts[2])
    else:
        raise Refused(f"Invalid topic name: {complete}")
    _local_name(parts[-1], complete, release)


def _split_by_slash(text: str, limit: int) -> list[str]:
    """TopicName#splitBySlash of 4.2: an empty segment, or nothing after the last one, is refused."""
    tokens: list[str] = []
    begin = 0
    for _ in range(limit - 1 if limit > 0 else len(text) + 1):
        end = text.find("/", begin)
        if end < 0:
            tokens.append(text[begin:])
            return tokens
        if end == begin:
            raise Refused(f"Invalid topic name {text}")
        tokens.append(text[begin:end])
        begin = end + 1
    if begin >= len(text):
        raise Refused(f"Invalid topic name {text}")
    tokens.append(text[begin:])
    return tokens


def _v2_only(name: str, release) -> None:
    """TopicName(String) of 4.2 (Rule 1)."""
    index = name.find("://")
    if index < 0:
        parts = _split_by_slash(name, 0)
        if len(parts) == 3:
            tenant, namespace, local = parts
        elif len(parts) == 1:
            tenant, namespace, local = "public", "default", parts[0]
        else:
            raise Refused(SHORT_NAME.format(name))
        complete = f"persistent://{tenant}/{namespace}/{local}"
    else:
        parts = _split_by_slash(name[index + 3:], 4)
        if len(parts) == 4:
            raise Refused(V1_REFUSED.format(name))
        if len(parts) != 3:
            raise Refused(f"Invalid topic name {name}")
        tenant, namespace, local = parts
        complete = name
        _domain(name[:index])
    _local_name(local, complete, release)
    _check_namespace(tenant, namespace)


def refusal(name: str, release=releases.NEWEST) -> Optional[str]:
    """Pulsar's message refusing ``name`` as a topic name, or None when it accepts it (Rule 1)."""
    try:
        if releases.has(release, "v1-topic-names-refused"):
            _v2_only(name, release)
        else:
            _classic(name, release)
    except Refused as exc:
        return str(exc)
    return None


def refused_answer(name: str, api: str, release) -> Optional[object]:
    """What a PARTITIONED_METADATA / LOOKUP (binary) or an admin REST topic path (rest) answers
    for a refused name, or None when the name is accepted (Rule 5)."""
    message = refusal(name, release)
    if message is None:
        return None
    return RestError(412, REST_REFUSAL) if api == "rest" else ServerError("InvalidTopicName",
                                                                           f"Invalid topic name: {message}")
