"""Topic and namespace names, parsed the way Pulsar's ``TopicName`` and ``NamedEntity`` do.

This is a *value helper*: the model, the harness and the reference broker all use it, which is
allowed because it decides nothing about behaviour (the broker may import the model's value
helpers, never its decisions). What it owns:

- ``TopicName.parse``: a short name ``t`` means ``persistent://public/default/t``; ``tenant/ns/t``
  means ``persistent://tenant/ns/t``; a full name carries its domain, written in any letter case
  (``domain_named``: TopicDomain#getEnum compares with String#equalsIgnoreCase, so
  ``Persistent://`` and even ``persıstent://``, a dotless i, name the persistent domain); the
  value holds it in lower case. Only v2 names (three parts after the domain) are accepted. Pulsar
  would read a fourth part as the legacy v1 ``tenant/cluster/ns/t`` form; we refuse it as
  invalid, and say so.
- ``TopicName.partition_index``: a local name whose text after its last ``-partition-`` is K is
  partition K of the name before it when K is a Java int written the way Java writes it
  (TopicName#getPartitionIndex: Integer.parseInt, then the length of String.valueOf must match):
  ``-partition-01``, ``-partition-1`` followed by a newline and ``-partition-99999999999`` are
  ordinary names. Integer.parseInt reads every decimal digit of the Basic Multilingual Plane
  (Character#digit), so ``t-partition-`` followed by ARABIC-INDIC DIGIT ONE (U+0661) is partition
  1 of ``t``. Anything else has partition index -1, as in Pulsar.
- ``check_named_entity``: tenant and namespace names follow NamedEntity's pattern ``[-=:.\\w]*``
  and are non-empty.
- ``pulsar_refusal`` is Pulsar's own TopicName parser, for the names it refuses and its words:
  the one of 3.x and 4.0 (``Splitter.on("/").limit(4)``: 4 parts are a legacy v1 name, the
  namespace is checked before the local name) or the one of 4.2 (``splitBySlash``: an empty
  segment and a v1 name are refused, the namespace checked last); Java's ``\\w`` is ASCII only;
  the domain is read case-insensitively (TopicDomain#getEnum). Which release has which is
  model/refused_names.py's to say.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from typing import Optional


PERSISTENT = "persistent"
NON_PERSISTENT = "non-persistent"
DOMAINS = (PERSISTENT, NON_PERSISTENT)
PARTITION_SUFFIX = "-partition-"
DEFAULT_TENANT = "public"
DEFAULT_NAMESPACE = "default"

_NAMED_ENTITY = re.compile(r"^[-=:.\w]+\Z")


def java_parse_integer(text: str, bits: int) -> Optional[int]:
    """Integer#parseInt (``bits`` 32) or Long#parseLong (64) in base 10, or None where Java throws
    NumberFormatException: an optional sign, then one or more chars Character#digit reads as a
    decimal digit, which includes every decimal digit of the Basic Multilingual Plane (a char
    beyond it is two UTF-16 chars to Java, neither a digit), within the type's range."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not all(c.isdecimal() and ord(c) <= 0xFFFF for c in digits):
        return None
    value = int(text)  # Python's int reads the same digits and sign
    return value if -2 ** (bits - 1) <= value < 2 ** (bits - 1) else None


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
        """The name ``text`` denotes (short, tenant/ns/t or full; v2 only), or InvalidName saying what is wrong."""
        if not isinstance(text, str) or not text:
            raise InvalidName("Invalid topic name: empty")
        if "://" in text:
            written, _, rest = text.partition("://")
            domain = domain_named(written)
            if domain is None:
                raise InvalidName(f"Invalid topic domain {written!r} in {text!r}: expected persistent or non-persistent")
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
        """K for a local name ending ``-partition-K`` with K a Java int as Java writes it, else -1."""
        if PARTITION_SUFFIX not in self.local_name:
            return -1
        text = self.local_name.rpartition(PARTITION_SUFFIX)[2]
        index = java_parse_integer(text, 32)
        return index if index is not None and index >= 0 and len(str(index)) == len(text) else -1

    @property
    def is_partition(self) -> bool:
        return self.partition_index >= 0

    @property
    def partitioned_base(self) -> "TopicName":
        """The partitioned topic this partition belongs to (itself when not a partition)."""
        if self.partition_index < 0:
            return self
        return TopicName(self.domain, self.tenant, self.namespace, self.local_name.rpartition(PARTITION_SUFFIX)[0])

    def partition(self, index: int) -> "TopicName":
        return TopicName(self.domain, self.tenant, self.namespace, f"{self.local_name}{PARTITION_SUFFIX}{index}")

    @property
    def encoded_local_name(self) -> str:
        """URL-encoded local name, as in Pulsar's persistence paths (Codec.encode)."""
        return urllib.parse.quote(self.local_name, safe="")

    def __str__(self) -> str:
        return f"{self.domain}://{self.tenant}/{self.namespace}/{self.local_name}"


# -- Pulsar's own parser (pulsar_refusal) ------------------------------------------------------------

_JAVA_NAMED_ENTITY = re.compile(r"^[-=:.\w]*\Z", re.ASCII)
SHORT_NAME = "Invalid short topic name '{}', it should be in the format of <tenant>/<namespace>/<topic> or <topic>"
BLANK_LOCAL = "Invalid topic name: {}. Topic local name must not be blank."
V1_REFUSED = ("V1 topic names (with cluster component) are no longer supported. Please use the V2 format: "
              "'<domain>://tenant/namespace/topic'. Got: {}")


class PulsarRefused(ValueError):
    """Pulsar's TopicName refuses the name; ``str()`` is its message."""


def _blank(text: str) -> bool:
    return not text.strip(" \t\n\x0b\f\r\x1c\x1d\x1e\x1f")  # Character.isWhitespace


def _check_entity(name: str) -> None:
    if not _JAVA_NAMED_ENTITY.match(name):
        raise PulsarRefused(f"Invalid named entity: {name}")


def _check_namespace(*parts: str) -> None:
    """NamespaceName#validateNamespaceName."""
    if any(not part for part in parts):
        raise PulsarRefused("Invalid namespace format. namespace: " + "/".join(parts))
    for part in parts:
        _check_entity(part)


# Character#toLowerCase's one-char mapping where Python's full mapping has more chars and the
# simple one (UnicodeData.txt) is not the char itself; for every other such char it is.
_SIMPLE_LOWER = {"\u0130": "i"}


def _java_equals_ignore_case(a: str, b: str) -> bool:
    """String#equalsIgnoreCase: char by char, equal once upper-cased or once upper- then lower-cased,
    with Character's one-char mappings."""
    def upper(c: str) -> str:
        mapped = c.upper()
        return mapped if len(mapped) == 1 else c

    def lower(c: str) -> str:
        mapped = c.lower()
        return mapped if len(mapped) == 1 else _SIMPLE_LOWER.get(c, c)

    return len(a) == len(b) and all(
        x == y or upper(x) == upper(y) or lower(upper(x)) == lower(upper(y)) for x, y in zip(a, b))


def domain_named(text: str) -> Optional[str]:
    """The domain TopicDomain#getEnum reads in ``text``, or None when it names none (any letter case)."""
    for domain in DOMAINS:
        if _java_equals_ignore_case(text, domain):
            return domain
    return None


def _domain(text: str) -> str:
    domain = domain_named(text)
    if domain is None:
        raise PulsarRefused(f"Invalid topic domain: '{text}'")
    return domain


def _local_name(local: str, complete: str, blank_refused: bool) -> None:
    if blank_refused:
        if _blank(local):
            raise PulsarRefused(BLANK_LOCAL.format(complete))
    elif not local:
        raise PulsarRefused(f"Invalid topic name: {complete}")


def _classic(name: str, blank_refused: bool) -> None:
    """TopicName(String) of 3.x and 4.0 (``pulsar_refusal`` with ``v1_refused=False``)."""
    complete = name
    if "://" not in name:
        parts = [part for part in name.split("/") if part]  # StringUtils.split drops empty tokens
        if len(parts) == 3:
            complete = "persistent://" + name
        elif len(parts) == 1:
            complete = "persistent://public/default/" + parts[0]
        else:
            raise PulsarRefused(SHORT_NAME.format(name))
    domain_text, _, rest = complete.partition("://")
    _domain(domain_text)
    parts = rest.split("/", 3)
    if len(parts) == 3:
        _check_namespace(parts[0], parts[1])
    elif len(parts) == 4:
        _check_namespace(parts[0], parts[1], parts[2])
    else:
        raise PulsarRefused(f"Invalid topic name: {complete}")
    _local_name(parts[-1], complete, blank_refused)


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
            raise PulsarRefused(f"Invalid topic name {text}")
        tokens.append(text[begin:end])
        begin = end + 1
    if begin >= len(text):
        raise PulsarRefused(f"Invalid topic name {text}")
    tokens.append(text[begin:])
    return tokens


def _v2_only(name: str, blank_refused: bool) -> None:
    """TopicName(String) of 4.2 (``pulsar_refusal`` with ``v1_refused=True``)."""
    index = name.find("://")
    if index < 0:
        parts = _split_by_slash(name, 0)
        if len(parts) == 3:
            tenant, namespace, local = parts
        elif len(parts) == 1:
            tenant, namespace, local = "public", "default", parts[0]
        else:
            raise PulsarRefused(SHORT_NAME.format(name))
        complete = f"persistent://{tenant}/{namespace}/{local}"
    else:
        parts = _split_by_slash(name[index + 3:], 4)
        if len(parts) == 4:
            raise PulsarRefused(V1_REFUSED.format(name))
        if len(parts) != 3:
            raise PulsarRefused(f"Invalid topic name {name}")
        tenant, namespace, local = parts
        complete = name
        _domain(name[:index])
    _local_name(local, complete, blank_refused)
    _check_namespace(tenant, namespace)


def pulsar_refusal(name: str, *, blank_refused: bool = True, v1_refused: bool = True) -> Optional[str]:
    """The message Pulsar's ``TopicName.get(name)`` throws, or None when it accepts the name.
    ``v1_refused`` picks the parser of 4.2 (splitBySlash) over the one of 3.x and 4.0; ``blank_refused``
    refuses a whitespace-only local name as 3.0.9, 3.3.4, 4.0.2 and later do. The defaults are the newest release's."""
    try:
        if v1_refused:
            _v2_only(name, blank_refused)
        else:
            _classic(name, blank_refused)
    except PulsarRefused as exc:
        return str(exc)
    return None
