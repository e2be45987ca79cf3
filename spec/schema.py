"""Spec rows: frozen dataclasses, the YAML loader, and per-row validation. Pure: reads files only.

- a row is data (test262 style): it states a setup, one operation, optional observations and
  what its source states — never an expected outcome; the model computes those.
- a malformed row is refused with ``SpecError("<file>:<line>: <row id>: <what to fix>")``; lines
  come from the YAML node tree (``yaml.compose``), so they point at the offending field.
- rows write names relative to the case: topics as local names, no namespace, no api; the loader
  refuses anything that would escape the per-case namespace.
- this module imports nothing from the project but spec/ (spec sits first in the import order);
  the vocabulary of operations a row may use comes from spec/operations.py's registry, and
  tests/test_operations.py checks it against the model and the drivers.

The row schema itself is documented in spec/README.md (SCHEMA_VERSION below).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from spec.operations import OPERATIONS as REGISTRY, Operation
from spec.versions import RangeError, parse_range

SCHEMA_VERSION = 1
SPEC_DIR = Path(__file__).resolve().parent

GRADES = ("MUST", "SHOULD")
# pip344: PIP-344 releases and every other broker; pre-pip344: releases without it; any: every broker,
# its expectations computed for the broker's own release (model/releases.py).
ERAS = ("pip344", "pre-pip344", "any")
APIS = ("rest", "binary", "client-binary", "client-http",
        "java-client-binary", "java-client-http", "java-admin",  # the Java client and admin client
        "go-client-binary", "go-client-http", "go-admin",  # the Go client (model/client_libraries.py)
        "rust-client-binary", "rust-client-http", "rust-admin")  # the Rust crate
DOMAINS = ("persistent", "non-persistent")
PRESENCE = ("present", "missing")
ID_PATTERN = re.compile(r"^pip\d+(-[a-z0-9]+)+\Z")
LOCAL_NAME = re.compile(r"^[-=:.\w]+\Z")
# A full name in the case's namespace whose domain is written otherwise than Pulsar's words (in
# another letter case); whether Pulsar reads it is the model's to say, so the row states that too.
DOMAIN_AS_WRITTEN = re.compile(r"^[^:/{}]+://\{ns\}/[-=:.\w]+\Z")
DESCRIPTION_MAX = 100
ERROR_KINDS = ("not-found", "metadata-error", "not-allowed", "service-not-ready", "connection-closed",
               "precondition-failed", "conflict",  # PIP-157: REST 412, REST 409
               "too-many-requests",  # PIP-35: binary TooManyRequests, REST 413 (batch too big)
               "not-supported",  # the Java client refuses a call the broker cannot honour
               "not-authenticated", "not-authorized",  # token auth (model/auth.py): spec/README.md
               "invalid-name")  # a name Pulsar's TopicName refuses (model/refused_names.py)
# A topic that is not a local name: a name Pulsar refuses, sent as written (an empty or blank local
# name, a name with its own domain, or one with {ns} for the case's namespace); only the action of a
# GetPartitionedMetadata or Lookup row may carry one, and the row states error invalid-name.
REFUSED_TOPIC = re.compile(r"^\s*$|://|\{ns\}")
REFUSED_TOPIC_OPERATIONS = tuple(name for name, op in REGISTRY.items() if op.refused_topic)
RECEIPT_KINDS = ("0:0", "-1:-1", "stored")  # model/outcomes.py ACCEPTED, DROPPED, STORED


# The operations rows may write, and what each may carry: spec/operations.py's registry.
OPERATIONS: dict[str, Operation] = {name: op for name, op in REGISTRY.items() if op.in_rows}
# An action may be made with other credentials than the harness's own (model/auth.py: ours):
# ``credentials: none`` or ``{role: R, token: valid|forged|expired}``; these operations only.
CREDENTIAL_OPERATIONS = tuple(name for name, op in OPERATIONS.items() if op.credentials)
TOKEN_KINDS = ("valid", "forged", "expired")
ROLE_NAME = re.compile(r"^[a-z][a-z0-9-]*\Z")
# CreateTenant and SetBrokerConfig act outside the per-case namespace (a tenant name, the whole
# broker); rows put broker settings in setup.broker instead, so a shared target stays isolated.
ROW_FORBIDDEN_OPERATIONS = tuple(name for name, op in REGISTRY.items() if not op.in_rows)

# What ``stated`` may say, and the observation each key needs (spec/README.md, "stated").
STATED_KEYS = {
    "partitions": None,
    "error": None,
    "lookup": None,
    "delivered": None,
    "advertised": None,
    "metadata_created": "ListPartitionedTopics",
    "topics_created": "ListTopics",
    # PIP-2 (spec/README.md, "stated")
    "receipts": None,
    "some_dropped": None,
    "send_errors": None,
    "in_order": None,
    "publisher_drops": "GetTopicStats",
    "subscription_drops": "GetTopicStats",
    "rate_out_positive": "GetTopicStats",
    "counters_survive": "GetTopicStats",
    "nothing_stored": "GetTopicStats",
    "subscription_types": "GetTopicStats",
    "cursors": "GetInternalStats",
    "collected": "AwaitTopicGC",
}
STATED_KEYS.update({  # PIP-35 (spec/README.md, "stated")
    "entries": None,
    "failed": None,
    "agreement": None,
})
STATED_KEYS.update({  # PIP-157 (spec/README.md, "stated")
    "buckets": None,
    "layout": "ReadTopicLayout",
    "listed": None,
})


class SpecError(ValueError):
    """A spec file or row is malformed; the message starts with file:line."""


@dataclass(frozen=True)
class TopicSetup:
    name: str
    partitions: int  # 0 = non-partitioned


@dataclass(frozen=True)
class Setup:
    broker: tuple[tuple[str, str], ...] = ()
    override: Optional[tuple[tuple[str, Any], ...]] = None  # autoTopicCreationOverride JSON body
    topics: tuple[TopicSetup, ...] = ()
    namespace: str = "present"
    tenant: str = "present"
    domain: str = "persistent"
    policies: tuple[tuple[str, Any], ...] = ()  # the namespace-create Policies body (PIP-157)
    admin_roles: tuple[str, ...] = ()  # the case runs in a tenant of its own with these adminRoles

    @property
    def namespace_present(self) -> bool:
        return self.namespace == "present" and self.tenant == "present"


@dataclass(frozen=True)
class Row:
    id: str
    description: str
    source: tuple[str, ...]
    info: Optional[str]
    grade: str
    era: str
    apis: tuple[str, ...]
    setup: Setup
    operation: tuple[tuple[str, Any], ...]
    observe: tuple[tuple[tuple[str, Any], ...], ...] = ()
    stated: tuple[tuple[str, Any], ...] = ()
    note: Optional[str] = None
    features: tuple[str, ...] = ()
    tentative: bool = False  # the outcome rests on our decision where upstream never decided
    releases: Optional[str] = None  # a version range (spec/versions.py); the row applies only inside it
    table: str = ""
    pip: str = ""
    file: str = ""
    line: int = 0

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def operation_json(self) -> dict:
        return dict(self.operation)

    def observe_json(self) -> list[dict]:
        return [dict(o) for o in self.observe]

    def stated_json(self) -> dict:
        return dict(self.stated)


@dataclass(frozen=True)
class SpecFile:
    path: str
    feature: str
    pip: str
    rows: tuple[Row, ...] = field(default_factory=tuple)


# -- YAML with line numbers ------------------------------------------------------------------------


class _Node:
    """Wraps a composed YAML node: ``value`` is plain Python, ``line`` 1-based."""

    def __init__(self, value, line: int, children=None):
        self.value, self.line, self.children = value, line, children or {}

    def child(self, key):
        return self.children.get(key, self)


def _convert(node, path: str) -> _Node:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        value, children = {}, {}
        for key_node, value_node in node.value:
            key = _convert(key_node, path).value
            if key in value:
                raise SpecError(f"{path}:{key_node.start_mark.line + 1}: duplicate key {key!r}")
            child = _convert(value_node, path)
            value[key], children[key] = child.value, child
        return _Node(value, line, children)
    if isinstance(node, yaml.SequenceNode):
        items = [_convert(item, path) for item in node.value]
        return _Node([i.value for i in items], line, dict(enumerate(items)))
    return _Node(_SCALARS.construct_object(node), line)


_SCALARS = yaml.constructor.SafeConstructor()  # scalar nodes hold no state between calls
# libyaml's composer when PyYAML was built with it (the nodes are the same, with their lines)
_COMPOSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path: Path) -> _Node:
    try:
        composed = yaml.compose(Path(path).read_text(encoding="utf-8"), Loader=_COMPOSER)
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not valid YAML: {exc}") from None
    if composed is None:
        raise SpecError(f"{path}:1: empty file")
    return _convert(composed, str(path))


# -- loading ---------------------------------------------------------------------------------------


class _Checker:
    def __init__(self, path: str, node: _Node, row_id: str = "?"):
        self.path, self.node, self.row_id = path, node, row_id

    def fail(self, node: _Node, message: str):
        raise SpecError(f"{self.path}:{node.line}: {self.row_id}: {message}")

    def mapping(self, node: _Node, what: str) -> dict:
        if not isinstance(node.value, dict):
            self.fail(node, f"{what} must be a mapping")
        return node.value

    def keys(self, node: _Node, what: str, required: set, optional: set) -> dict:
        value = self.mapping(node, what)
        missing = required - set(value)
        if missing:
            self.fail(node, f"{what} lacks {', '.join(sorted(missing))}")
        unknown = set(value) - required - optional
        if unknown:
            key = sorted(unknown, key=str)[0]
            self.fail(node.child(key), f"{what} has unknown field {key!r} (allowed: {', '.join(sorted(required | optional))})")
        return value

    def string(self, node: _Node, what: str, choices=None) -> str:
        if not isinstance(node.value, str) or not node.value:
            self.fail(node, f"{what} must be a non-empty string, got {node.value!r}")
        if choices and node.value not in choices:
            self.fail(node, f"{what} must be one of {', '.join(choices)}, got {node.value!r}")
        return node.value

    def items(self, node: _Node, what: str) -> list[_Node]:
        """The entries of a list that must not be empty."""
        if not isinstance(node.value, list) or not node.value:
            self.fail(node, f"{what} must be a non-empty list")
        return [node.child(i) for i in range(len(node.value))]

    def strings(self, node: _Node, what: str, choices=None) -> tuple[str, ...]:
        return tuple(self.string(item, f"{what}[{i}]", choices) for i, item in enumerate(self.items(node, what)))


_ROW_REQUIRED = {"id", "description", "source", "grade", "era", "apis", "setup", "operation"}
_ROW_OPTIONAL = {"info", "observe", "stated", "note", "features", "tentative", "releases"}  # lint requires info on MUST rows


def load_file(path: Path) -> SpecFile:
    """Load and validate one ``pip*.yaml`` file."""
    path = Path(path)
    root = read_yaml(path)
    check = _Checker(str(path), root, "(file)")
    top = check.keys(root, "file", {"schema", "feature", "pip", "tables"}, set())
    if top["schema"] != SCHEMA_VERSION:
        check.fail(root.child("schema"), f"schema must be {SCHEMA_VERSION} (spec/README.md), got {top['schema']!r}")
    feature = check.string(root.child("feature"), "feature")
    pip = str(top["pip"])
    tables = root.child("tables")
    if not isinstance(tables.value, list):
        check.fail(tables, "tables must be a list")
    rows = []
    for i in range(len(tables.value)):
        table = tables.child(i)
        spec = check.keys(table, "table", {"name", "title", "rows"}, {"note"})
        name = check.string(table.child("name"), "table name")
        row_list = table.child("rows")
        if not isinstance(row_list.value, list) or not row_list.value:
            check.fail(row_list, "rows must be a non-empty list")
        for j in range(len(spec["rows"])):
            rows.append(_load_row(str(path), row_list.child(j), f"{feature}/{name}", feature, pip))
    return SpecFile(str(path), feature, pip, tuple(rows))


def _load_row(path: str, node: _Node, table: str, feature: str, pip: str) -> Row:
    raw_id = node.value.get("id", "?") if isinstance(node.value, dict) else "?"
    check = _Checker(path, node, str(raw_id))
    value = check.keys(node, "row", _ROW_REQUIRED, _ROW_OPTIONAL)
    row_id = check.string(node.child("id"), "id")
    if not ID_PATTERN.match(row_id):
        check.fail(node.child("id"), f"id {row_id!r} must look like pip344-seed-new-003 (lowercase words joined by -)")
    description = check.string(node.child("description"), "description")
    if len(description) > DESCRIPTION_MAX:
        check.fail(node.child("description"), f"description is {len(description)} chars; keep it <= {DESCRIPTION_MAX}")
    apis = check.strings(node.child("apis"), "apis", APIS)
    if len(set(apis)) != len(apis):
        check.fail(node.child("apis"), "apis lists an api twice")
    setup = _load_setup(check, node.child("setup"))
    operation = _load_operation(check, node.child("operation"), observe=False)
    shape = OPERATIONS[operation[0][1]]
    wrong = [a for a in apis if a not in shape.apis]
    if wrong:
        check.fail(node.child("apis"), f"{operation[0][1]} cannot be performed through {', '.join(wrong)} "
                                       f"(it can through {', '.join(shape.apis)})")
    observe = ()
    if "observe" in value:
        obs = node.child("observe")
        if not isinstance(obs.value, list) or not obs.value:
            check.fail(obs, "observe must be a non-empty list of operations")
        observe = tuple(_load_operation(check, obs.child(i), observe=True) for i in range(len(obs.value)))
    stated = _load_stated(check, node.child("stated"), observe) if "stated" in value else ()
    topic = dict(operation).get("topic")
    if (isinstance(topic, str) and not LOCAL_NAME.match(topic) and not DOMAIN_AS_WRITTEN.match(topic)
            and dict(stated).get("error") != "invalid-name"):
        check.fail(node.child("operation"), f"topic {topic!r} is not a local name, so it is a name Pulsar refuses: "
                                            "the row states error: invalid-name")
    note = check.string(node.child("note"), "note") if "note" in value else None
    features = check.strings(node.child("features"), "features") if "features" in value else (feature,)
    tentative = value.get("tentative", False)
    if not isinstance(tentative, bool):
        check.fail(node.child("tentative"), f"tentative must be true or false, got {tentative!r}")
    releases = None
    if "releases" in value:
        releases = check.string(node.child("releases"), "releases")
        try:
            parse_range(releases)
        except RangeError as exc:
            check.fail(node.child("releases"), str(exc))
    return Row(
        id=row_id, description=description, source=check.strings(node.child("source"), "source"),
        info=check.string(node.child("info"), "info") if "info" in value else None, grade=check.string(node.child("grade"), "grade", GRADES),
        era=check.string(node.child("era"), "era", ERAS), apis=apis, setup=setup, operation=operation,
        observe=observe, stated=stated, note=note, features=features, tentative=tentative, releases=releases,
        table=table, pip=pip,
        file=path, line=node.line)


def _load_setup(check: _Checker, node: _Node) -> Setup:
    value = check.keys(node, "setup", set(), {"broker", "autoTopicCreationOverride", "topics", "namespace", "tenant",
                                              "domain", "policies", "admin_roles"})
    broker = ()
    if "broker" in value:
        items = check.mapping(node.child("broker"), "setup.broker")
        for key, val in items.items():
            if not isinstance(val, str):
                check.fail(node.child("broker").child(key), f"setup.broker.{key} must be a quoted string as in broker.conf, e.g. \"{val}\"")
        broker = tuple(sorted(items.items()))
    override = None
    if "autoTopicCreationOverride" in value:
        body = check.keys(node.child("autoTopicCreationOverride"), "autoTopicCreationOverride",
                          {"allowAutoTopicCreation", "topicType"}, {"defaultNumPartitions"})
        override = tuple(sorted(body.items()))
    topics = []
    for i, item in enumerate(value.get("topics") or []):
        tnode = node.child("topics").child(i)
        spec = check.keys(tnode, "setup.topics item", {"name", "partitions"}, set())
        _local_name(check, tnode.child("name"))
        if not isinstance(spec["partitions"], int) or isinstance(spec["partitions"], bool) or spec["partitions"] < 0:
            check.fail(tnode.child("partitions"), "partitions must be an int >= 0 (0 = non-partitioned)")
        topics.append(TopicSetup(spec["name"], spec["partitions"]))
    setup = Setup(
        broker=broker, override=override, topics=tuple(topics),
        namespace=check.string(node.child("namespace"), "setup.namespace", PRESENCE) if "namespace" in value else "present",
        tenant=check.string(node.child("tenant"), "setup.tenant", PRESENCE) if "tenant" in value else "present",
        domain=check.string(node.child("domain"), "setup.domain", DOMAINS) if "domain" in value else "persistent",
        policies=_policies(check, node.child("policies"), "setup.policies") if "policies" in value else (),
        admin_roles=_roles(check, node.child("admin_roles")) if "admin_roles" in value else ())
    if setup.admin_roles and not setup.namespace_present:
        check.fail(node.child("admin_roles"), "setup.admin_roles are the adminRoles of the case's own tenant: "
                                              "they need tenant: present")
    if setup.policies and not setup.namespace_present:
        check.fail(node.child("policies"), "setup.policies are the body of the namespace's creation: they need "
                                           "namespace: present")
    if not setup.namespace_present and (setup.topics or setup.override):
        check.fail(node, "topics or an override need the namespace: a missing namespace or tenant cannot hold them")
    return setup


def _roles(check: _Checker, node: _Node) -> tuple[str, ...]:
    roles = check.strings(node, "setup.admin_roles")
    for i, role in enumerate(roles):
        if not ROLE_NAME.match(role):
            check.fail(node.child(i), f"role {role!r} must be lowercase words joined by -, e.g. tenant-admin")
    return roles


def _credentials(check: _Checker, node: _Node):
    """``credentials: none`` or ``{role: R, token: valid|forged|expired}`` (model/auth.py)."""
    if node.value == "none":
        return "none"
    value = check.keys(node, "credentials", {"role"}, {"token"})
    role = check.string(node.child("role"), "credentials.role")
    if not ROLE_NAME.match(role):
        check.fail(node.child("role"), f"role {role!r} must be lowercase words joined by -, e.g. tenant-admin")
    token = check.string(node.child("token"), "credentials.token", TOKEN_KINDS) if "token" in value else "valid"
    return (("role", role), ("token", token))


def _local_name(check: _Checker, node: _Node, refusable: bool = False) -> str:
    if refusable and isinstance(node.value, str) and REFUSED_TOPIC.search(node.value):
        return node.value
    name = check.string(node, "topic")
    if "/" in name or not LOCAL_NAME.match(name):
        check.fail(node, f"topic {name!r} must be a local name such as t or t-partition-1; the case binds its namespace")
    return name


def _load_operation(check: _Checker, node: _Node, observe: bool) -> tuple[tuple[str, Any], ...]:
    value = check.mapping(node, "operation")
    name = value.get("op")
    if name in ROW_FORBIDDEN_OPERATIONS:
        check.fail(node, f"{name} acts outside the per-case namespace; put broker settings in setup.broker")
    if name not in OPERATIONS:
        check.fail(node, f"op must be one of {', '.join(OPERATIONS)}, got {name!r}")
    shape = OPERATIONS[name]
    allowed = {"op"} | set(shape.fields)
    if name in ("ListTopics", "ListPartitionedTopics"):
        allowed.add("domain")  # defaults to the row's setup.domain
    if observe and shape.selector:
        allowed.update(shape.selector.split("+"))  # observations are not expanded: they name their api
    if observe and name == "GetPartitionedMetadata" and "api" not in value:
        check.fail(node, "an observed GetPartitionedMetadata must name its api (rest or binary)")
    if not observe and name in CREDENTIAL_OPERATIONS:
        allowed.add("credentials")
    required = {"op"} | ({"topic", "topics"} & shape.fields)
    if name == "SetAutoTopicCreation":  # the override's fields, or its raw body alone
        fields = {"allow_auto_topic_creation", "topic_type", "default_num_partitions"}
        if "body" in value:
            allowed -= fields
        else:
            allowed.discard("body")
            required |= fields - {"default_num_partitions"}
    check.keys(node, name, required, allowed - required)
    for key in value:
        if key == "credentials":
            continue
        if key == "topic":
            _local_name(check, node.child(key), refusable=not observe and name in REFUSED_TOPIC_OPERATIONS)
        elif key == "topics":
            _batch_topics(check, node.child(key))
        elif key != "op":
            _field_value(check, node.child(key), key, shape)
    return tuple((k, _policies(check, node.child(k), k) if k == "policies" else
                  _credentials(check, node.child(k)) if k == "credentials" else _frozen(value[k]))
                 for k in ["op", *sorted(k for k in value if k != "op")])


# A batch name that is not a local name: a template with {ns} once, which the case replaces with its
# namespace and sends as written (invalid names, a derived missing namespace). Only forms that stay
# in the case's own names: an optional "<word>://" before {ns}, and "/" or "-" right after it.
BATCH_TEMPLATE = re.compile(r"^(?:[a-z-]+://)?\{ns\}[-/][^{}]*\Z")


def _batch_topics(check: _Checker, node: _Node) -> None:
    """``topics`` of a PIP-35 operation: a list (maybe empty) of local names or {ns} templates."""
    if not isinstance(node.value, list):
        check.fail(node, "topics must be a list of local names (t, t-partition-1) or {ns} templates")
    for i, item in enumerate(node.value):
        if not isinstance(item, str) or not (LOCAL_NAME.match(item) or BATCH_TEMPLATE.match(item)):
            check.fail(node.child(i), f"topics[{i}] = {item!r} must be a local name such as t, or a template "
                                      "with {ns} once, e.g. \"{ns}/a/b\" or \"bogus://{ns}/t\"")


def _frozen(value):
    """Lists become tuples so a Row stays hashable (PubSub consumers and bursts)."""
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def _policies(check: _Checker, node: _Node, what: str) -> tuple[tuple[str, Any], ...]:
    """A Policies JSON body (PIP-157 ``numberOfTopicBuckets``...) as sorted (key, value) pairs; values
    are JSON scalars or lists (lists frozen to tuples), so the row stays hashable."""
    body = check.mapping(node, what)
    for key, val in body.items():
        if not isinstance(key, str) or isinstance(val, dict):
            check.fail(node.child(key), f"{what}.{key}: keys are Policies field names and values JSON scalars or "
                                        f"lists, got {val!r}")
    return tuple((key, _frozen(val)) for key, val in sorted(body.items()))


_FIELD_TYPES = {"auto_create": bool, "allow_auto_topic_creation": bool, "count": int, "partitions": int,
                "default_num_partitions": int, "topic_type": str, "feature": str, "sends_before": int,
                "flow_after": int, "close_after": bool, "body": str, "detail": bool,
                "close_producer": bool, "close_consumers": list, "subscription": str, "seconds": int}
SUB_TYPES = ("Exclusive", "Shared", "Failover", "Key_Shared")
_FIELD_CHOICES = {"initial_position": ("Latest", "Earliest"), "view": ("exact", "bounds"),
                  "sub_type": SUB_TYPES,
                  "command": ("send-after-close-producer", "flow-negative-permits", "flow-zero-permits",
                              "subscribe-unknown-subtype")}


def _field_value(check: _Checker, node: _Node, key: str, shape: Operation) -> None:
    if key == "domain":  # a listing may ask both domains at once (GET_TOPICS_OF_NAMESPACE's mode ALL)
        check.string(node, key, DOMAINS + (("all",) if shape is REGISTRY["ListTopics"] else ()))
    elif key == "policies":
        _policies(check, node, key)
    elif key == "buckets":  # PIP-157: any JSON value may be POSTed; the endpoint refuses them all
        if isinstance(node.value, dict):
            check.fail(node, f"buckets must be a JSON scalar or list, got {node.value!r}")
    elif key in _FIELD_CHOICES:
        check.string(node, key, _FIELD_CHOICES[key])
    elif key == "consumers":
        items = node.value if isinstance(node.value, list) else None
        if items is None:
            check.fail(node, "consumers must be a list of [subscription, subType, permits]")
        for i, item in enumerate(items):
            ok = (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str) and item[0]
                  and item[1] in SUB_TYPES and isinstance(item[2], int) and not isinstance(item[2], bool)
                  and item[2] >= 0)
            if not ok:
                check.fail(node.child(i), f"consumers[{i}] must be [subscription, one of {', '.join(SUB_TYPES)}, "
                                          f"permits >= 0], got {item!r}")
    elif key == "bursts":
        items = node.value
        # Empty is legal: a producer that attaches and sends nothing is a state stats must show.
        if not isinstance(items, list) or any(
                not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in items):
            check.fail(node, f"bursts must be a list of ints >= 1 (SENDs per socket write), got {items!r}")
    elif key == "api":
        check.string(node, key, ("rest", "binary", "client") if shape.selector == "api+transport" else ("rest", "binary"))
    elif key == "transport":
        check.string(node, key, ("binary", "http"))
    else:
        kind = _FIELD_TYPES[key]
        if not isinstance(node.value, kind) or (kind is int and isinstance(node.value, bool)):
            check.fail(node, f"{key} must be {kind.__name__}, got {node.value!r}")


def _load_stated(check: _Checker, node: _Node, observe) -> tuple[tuple[str, Any], ...]:
    value = check.mapping(node, "stated")
    observed = {dict(o)["op"] for o in observe}
    for key, val in value.items():
        if key not in STATED_KEYS:
            check.fail(node.child(key), f"stated key {key!r} is not one of {', '.join(STATED_KEYS)}")
        needed = STATED_KEYS[key]
        if needed and needed not in observed:
            check.fail(node.child(key), f"stated {key} needs an observe step {needed}")
        if key in ("partitions", "delivered", "send_errors", "cursors", "buckets", "listed") and (
                not isinstance(val, int) or isinstance(val, bool) or val < 0):
            check.fail(node.child(key), f"stated {key} must be an int >= 0")
        if key == "receipts" and (not isinstance(val, dict) or any(
                k not in RECEIPT_KINDS or not isinstance(n, int) or isinstance(n, bool) or n < 0
                for k, n in val.items())):
            check.fail(node.child(key), f"stated receipts must map receipt kinds ({', '.join(RECEIPT_KINDS)}) to counts")
        if key in ("metadata_created", "topics_created", "advertised", "some_dropped", "in_order",
                   "publisher_drops", "subscription_drops", "rate_out_positive", "counters_survive",
                   "nothing_stored", "collected") \
                and not isinstance(val, bool):
            check.fail(node.child(key), f"stated {key} must be true or false")
        if key in ("entries",) and (not isinstance(val, list) or any(not isinstance(n, str) for n in val)):
            check.fail(node.child(key), f"stated {key} must be a list of entry names (local names or {{ns}} templates)")
        if key == "failed" and (not isinstance(val, dict) or any(
                not isinstance(n, str) or not isinstance(e, str) for n, e in val.items())):
            check.fail(node.child(key), "stated failed must map entry names to ServerError names, e.g. {t: TopicNotFound}")
        if key == "subscription_types" and (not isinstance(val, dict) or not val or any(
                not isinstance(n, str) or t not in SUB_TYPES for n, t in val.items())):
            check.fail(node.child(key), f"stated subscription_types must map subscription names to one of "
                                        f"{', '.join(SUB_TYPES)}")
        if key == "agreement" and not isinstance(val, bool):
            check.fail(node.child(key), "stated agreement must be true or false")
        if key == "lookup" and val != "Connect":
            check.fail(node.child(key), "stated lookup must be Connect")
        if key == "layout" and (not isinstance(val, dict) or not val or any(
                not isinstance(k, str) or not (v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0))
                for k, v in val.items())):
            check.fail(node.child(key), "stated layout must map observed topic local names to their bucket k (the "
                                        "folder $k) or null (no bucket folder)")
        if key == "error":
            kinds = val if isinstance(val, list) else [val]
            if not kinds or any(k not in ERROR_KINDS for k in kinds):
                check.fail(node.child(key), f"stated error must be one of {', '.join(ERROR_KINDS)} or a list of them")
    return tuple((k, tuple(v) if isinstance(v, list) else tuple(sorted(v.items())) if isinstance(v, dict) else v)
                 for k, v in sorted(value.items()))


# -- registries ------------------------------------------------------------------------------------


def load_rows(directory: Path = SPEC_DIR) -> tuple[Row, ...]:
    """Every row of every ``pip*.yaml`` in ``directory``, in file order."""
    rows: list[Row] = []
    for path in sorted(Path(directory).glob("pip*.yaml")):
        rows.extend(load_file(path).rows)
    return tuple(rows)


def load_registry(path: Path, key: str) -> dict[str, dict]:
    """``sources.yaml`` (key "sources") or ``features.yaml`` (key "features"): anchor -> entry."""
    root = read_yaml(path)
    check = _Checker(str(path), root, "(registry)")
    top = check.keys(root, "registry", {"schema", key}, set())
    if top["schema"] != SCHEMA_VERSION:
        check.fail(root.child("schema"), f"schema must be {SCHEMA_VERSION}")
    entries = check.mapping(root.child(key), key)
    for name, entry in entries.items():
        check.keys(root.child(key).child(name), f"{key}.{name}", {"title"}, {"where", "quote", "status", "kind",
                                                                               "link", "first_versions", "note",
                                                                               "field", "pip_name"})
    return entries


# -- known divergences (one file per kind of target, like wpt's expectation files) -----------------

DIVERGENCES_DIR = SPEC_DIR / "divergences"
DIVERGENCE_KINDS = (
    "pip-deviation",   # the release does not do what the PIP states; the spec keeps the PIP's text
    "unimplemented",   # the release never implemented the (tentative) PIP the rows state
    "defect",          # a bug of the implementation, against its own documented behaviour
)
DIVERGENCE_VERDICTS = ("failed", "indefinite")  # indefinite: a request the target never answers
CASE_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*(?:\[[a-z-]+\])?\Z")
DIVERGENCE_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*\Z")


@dataclass(frozen=True)
class Divergence:
    """A case a target is known to fail, why, and where that is recorded upstream."""

    id: str
    cases: tuple[str, ...]      # row ids (every api of the row) or case ids "row[api]"
    releases: str               # a version range (spec/versions.py); "*" for targets that are not releases
    kind: str
    summary: str
    evidence: tuple[str, ...]
    upstream: Optional[str] = None
    intermittent: Optional[str] = None  # why the target fails it in some runs only (timing, scheduling)
    verdict: str = "failed"  # "indefinite": the target is recorded never to answer these cases
    file: str = ""
    line: int = 0

    def covers(self, case_id: str, row_id: str, release) -> bool:
        return (case_id in self.cases or row_id in self.cases) and release in parse_range(self.releases)


def load_divergences(name: str, directory: Path = DIVERGENCES_DIR) -> tuple[Divergence, ...]:
    """``spec/divergences/<name>.yaml``; a profile without a file has no known divergences."""
    path = Path(directory) / f"{name}.yaml"
    if not path.is_file():
        return ()
    root = read_yaml(path)
    check = _Checker(str(path), root, "(divergences)")
    top = check.keys(root, "file", {"schema", "target", "title", "divergences"}, set())
    if top["schema"] != SCHEMA_VERSION:
        check.fail(root.child("schema"), f"schema must be {SCHEMA_VERSION}")
    if top["target"] != name:
        check.fail(root.child("target"), f"target must be {name!r}, the file's name")
    entries = root.child("divergences")
    if not isinstance(entries.value, list):
        check.fail(entries, "divergences must be a list")
    found, seen = [], set()
    for i in range(len(entries.value)):
        node = entries.child(i)
        entry = _Checker(str(path), node, str(node.value.get("id", "?")) if isinstance(node.value, dict) else "?")
        value = entry.keys(node, "divergence", {"id", "cases", "releases", "kind", "summary", "evidence"},
                           {"upstream", "intermittent", "verdict"})
        ident = entry.string(node.child("id"), "id")
        if not DIVERGENCE_ID.match(ident) or ident in seen:
            entry.fail(node.child("id"), f"id {ident!r} must be unique, lowercase words joined by -")
        seen.add(ident)
        cases = entry.strings(node.child("cases"), "cases")
        for j, case in enumerate(cases):
            if not CASE_PATTERN.match(case):
                entry.fail(node.child("cases").child(j), f"{case!r} is neither a row id nor a case id row[api]")
        releases = entry.string(node.child("releases"), "releases")
        try:
            parse_range(releases)
        except RangeError as exc:
            entry.fail(node.child("releases"), str(exc))
        found.append(Divergence(
            id=ident, cases=cases, releases=releases, kind=entry.string(node.child("kind"), "kind", DIVERGENCE_KINDS),
            summary=entry.string(node.child("summary"), "summary"),
            evidence=entry.strings(node.child("evidence"), "evidence"),
            upstream=entry.string(node.child("upstream"), "upstream") if "upstream" in value else None,
            intermittent=entry.string(node.child("intermittent"), "intermittent") if "intermittent" in value else None,
            verdict=entry.string(node.child("verdict"), "verdict", DIVERGENCE_VERDICTS) if "verdict" in value
            else "failed",
            file=str(path), line=node.line))
    return tuple(found)
