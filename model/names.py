"""Topic and namespace names, parsed the way Pulsar's ``TopicName`` and ``NamedEntity`` do.

This is a *value helper*: the model, the harness and the reference broker all use it, which is
allowed because it decides nothing about behaviour (STYLE R1). What it owns:

Rule 1: a short name ``t`` means ``persistent://public/default/t``; ``tenant/ns/t`` means
        ``persistent://tenant/ns/t``; a full name carries its domain.
Rule 2: only v2 names (three parts after the domain) are accepted. Pulsar would read a fourth
        part as the legacy v1 ``tenant/cluster/ns/t`` form; we refuse it as invalid, and say so.
Rule 3: a local name ending in ``-partition-K`` (K a non-negative decimal int) is partition K of
        the base name; anything else has partition index -1, as in Pulsar.
Rule 4: tenant and namespace names follow NamedEntity's pattern ``[-=:.\\w]*`` and are non-empty.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass


PERSISTENT = "persistent"
NON_PERSISTENT = "non-persistent"
DOMAINS = (PERSISTENT, NON_PERSISTENT)
PARTITION_SUFFIX = "-partition-"
DEFAULT_TENANT = "public"
DEFAULT_NAMESPACE = "default"

_NAMED_ENTITY = re.compile(r"^[-=:.\w]+$")
_PARTITION = re.compile(r"^(?P<base>.+)-partition-(?P<index>\d+)$")


class InvalidName(ValueError):
    """A topic or namespace name Pulsar would refuse; the message says what is wrong."""


def check_named_entity(kind: str, value: str) -> str:
    if not value or not _NAMED_ENTITY.match(value):
        raise InvalidName(f"Invalid {kind} name: {value!r} (allowed: letters, digits and -=:._)")
    return value


@dataclass(frozen=True, order=True)
class NamespaceName:
    tenant: str
    namespace: str

    @classmethod
    def parse(cls, text: str) -> "NamespaceName":
        parts = text.split("/")
        if len(parts) != 2:
            raise InvalidName(f"Invalid namespace name {text!r}: expected <tenant>/<namespace>")
        return cls(check_named_entity("tenant", parts[0]), check_named_entity("namespace", parts[1]))

    def __str__(self) -> str:
        return f"{self.tenant}/{self.namespace}"


@dataclass(frozen=True, order=True)
class TopicName:
    domain: str
    tenant: str
    namespace: str
    local_name: str

    @classmethod
    def parse(cls, text: str) -> "TopicName":
        """The name ``text`` denotes (Rules 1-4), or InvalidName saying what is wrong."""
        if not isinstance(text, str) or not text:
            raise InvalidName("Invalid topic name: empty")
        if "://" in text:
            domain, _, rest = text.partition("://")
            if domain not in DOMAINS:
                raise InvalidName(f"Invalid topic domain {domain!r} in {text!r}: expected persistent or non-persistent")
        else:
            domain, rest = PERSISTENT, text
            if "/" not in rest:
                rest = f"{DEFAULT_TENANT}/{DEFAULT_NAMESPACE}/{rest}"
        parts = rest.split("/")
        if len(parts) == 4:
            raise InvalidName(f"Invalid topic name {text!r}: v1 names (tenant/cluster/namespace/topic) are not supported")
        if len(parts) != 3:
            raise InvalidName(f"Invalid topic name {text!r}: expected [domain://]tenant/namespace/topic")
        tenant, namespace, local = parts
        check_named_entity("tenant", tenant)
        check_named_entity("namespace", namespace)
        if not local:
            raise InvalidName(f"Invalid topic name {text!r}: empty local name")
        return cls(domain, tenant, namespace, local)

    @property
    def namespace_name(self) -> NamespaceName:
        return NamespaceName(self.tenant, self.namespace)

    @property
    def persistent(self) -> bool:
        return self.domain == PERSISTENT

    @property
    def partition_index(self) -> int:
        match = _PARTITION.match(self.local_name)
        return int(match.group("index")) if match else -1

    @property
    def is_partition(self) -> bool:
        return self.partition_index >= 0

    @property
    def partitioned_base(self) -> "TopicName":
        """The partitioned topic this partition belongs to (itself when not a partition)."""
        if self.partition_index < 0:
            return self
        match = _PARTITION.match(self.local_name)
        return TopicName(self.domain, self.tenant, self.namespace, match.group("base"))

    def partition(self, index: int) -> "TopicName":
        return TopicName(self.domain, self.tenant, self.namespace, f"{self.local_name}{PARTITION_SUFFIX}{index}")

    @property
    def encoded_local_name(self) -> str:
        """URL-encoded local name, as in Pulsar's persistence paths (Codec.encode)."""
        return urllib.parse.quote(self.local_name, safe="")

    def __str__(self) -> str:
        return f"{self.domain}://{self.tenant}/{self.namespace}/{self.local_name}"
