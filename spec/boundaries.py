"""Boundary coverage: which rows exercise each limited rule at its limit, one past it and at its
smallest legal value, and each collection empty, with one element and with many.

``spec/boundaries.yaml`` names the rules. Each rule has paths (the broker code paths that apply it:
admin create, auto-creation by a lookup, by a producer, the namespace override...), and each path
says which rows belong to it (their operation, apis and a few conditions), how to read the measured
value from a row, and which boundary points it must cover. This module reads the rows themselves
(setup and operation) to place each of them, per api, on those points; nothing here lists row ids.

- data only. The readers below interpret a row as Pulsar's documented configuration would (the
  override before the broker's keys, Pulsar's BrokerService#isAllowAutoTopicCreationAsync); they
  never compute an outcome, which stays the model's job. A row that a reader cannot place is
  simply not counted.
- points (``points_of``): a point is a predicate on (value, limit):

      at            the limit is in force and value == limit
      past          the limit is in force and value == limit + 1
      smallest      value == the rule's smallest legal value (with the limit in force, if any)
      below         value == smallest - 1 (the first illegal value)
      limit-smallest / limit-smallest-past
                    the limit at ITS smallest legal value, and value at it / one past it
      empty / one / many
                    value == 0 / == 1 / >= 2 (collections)

- a path's apis split it: a row covers a point on ``path[api]`` for each api it lists, so a limit
  checked differently by REST and binary needs rows through both.
- an action made with other credentials (token-auth rows) covers no point: it tests who may ask,
  not the rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional

from spec.schema import APIS, SPEC_DIR, Row, SpecError, _Checker, load_rows, read_yaml

BOUNDARIES_FILE = SPEC_DIR / "boundaries.yaml"
POINTS = ("at", "past", "smallest", "below", "limit-smallest", "limit-smallest-past", "empty", "one", "many")
LIMIT_POINTS = ("at", "past", "limit-smallest", "limit-smallest-past")
# When a limit is not in force: Pulsar's creation limits read 0 or less as unlimited.
UNLIMITED = ("non-positive", "never")

PARTITION_SUFFIX = "-partition-"
DLQ_RETRY_SUFFIXES = ("-DLQ", "-RETRY")  # never auto-created partitioned (apache/pulsar#22705)


# -- reading a row ---------------------------------------------------------------------------------


def _op(row: Row) -> dict:
    return row.operation_json()


def _broker(row: Row, key: str, default: str) -> str:
    return dict(row.setup.broker).get(key, default)


def _int(text) -> Optional[int]:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _override(row: Row) -> Optional[dict]:
    return dict(row.setup.override) if row.setup.override is not None else None


def _setup_partitions(row: Row, name: Optional[str]) -> Optional[int]:
    """Partitions of a setup topic (0 = non-partitioned), None when the setup does not create it."""
    for topic in row.setup.topics:
        if topic.name == name:
            return topic.partitions
    return None


def _policies(row: Row) -> dict:
    op = _op(row)
    if op["op"] == "CreateNamespace":
        return dict(op.get("policies") or ())
    return dict(row.setup.policies)


def _buckets(row: Row) -> Optional[int]:
    value = dict(row.setup.policies).get("numberOfTopicBuckets")
    return 1 if value is None else value if isinstance(value, int) and not isinstance(value, bool) else None


def default_partitions(row: Row) -> Optional[int]:
    """The count auto-creation would use: the override's, else the broker's (Pulsar's BrokerService#getDefaultNumPartitions)."""
    override = _override(row)
    if override is not None and override.get("defaultNumPartitions") is not None:
        return override["defaultNumPartitions"]
    return _int(_broker(row, "defaultNumPartitions", "1"))


def _allowed(row: Row) -> bool:
    override = _override(row)
    if override is not None:
        return bool(override["allowAutoTopicCreation"])
    return _broker(row, "allowAutoTopicCreation", "true") == "true"


def _partitioned_type(row: Row, topic: str) -> bool:
    if topic.endswith(DLQ_RETRY_SUFFIXES):
        return False
    override = _override(row)
    if override is not None:
        return override["topicType"] == "partitioned"
    return _broker(row, "allowAutoTopicCreationType", "non-partitioned") == "partitioned"


def _asks_auto_creation(row: Row, api: str) -> bool:
    """Whether the action, through ``api``, may auto-create (Pulsar's PersistentTopicsBase#internalGetPartitionedMetadataAsync and ServerCnx#handlePartitionMetadataRequest)."""
    op = _op(row)
    name = op["op"]
    if name == "GetPartitionedMetadata":
        return op.get("auto_create") is True if api == "rest" else op.get("auto_create") is not False
    if name in ("GetPartitionsForTopic", "ProduceConsume", "JavaProduceConsume"):
        return True
    if name == "JavaGetPartitionsForTopic":
        return op.get("auto_create") is not False
    return False


def _absent_plain_topic(row: Row) -> Optional[str]:
    topic = _op(row).get("topic")
    if not topic or not row.setup.namespace_present or PARTITION_SUFFIX in topic:
        return None
    return topic if _setup_partitions(row, topic) is None else None


def auto_creates_metadata(row: Row, api: str) -> bool:
    topic = _absent_plain_topic(row)
    return (topic is not None and _asks_auto_creation(row, api) and _allowed(row)
            and _partitioned_type(row, topic))


def auto_creates_topic(row: Row, api: str) -> bool:
    """A producer or consumer creates the (non-partitioned) topic itself."""
    topic = _absent_plain_topic(row)
    return (topic is not None and _op(row)["op"] in ("ProduceConsume", "JavaProduceConsume") and _allowed(row)
            and not _partitioned_type(row, topic))


def _stored_topics(row: Row) -> int:
    """Topics the namespace's domain holds after setup, as maxTopicsPerNamespace counts them: the
    managed ledgers (Pulsar's TopicResources#getExistingPartitions), so none in the non-persistent domain (nothing is stored there)."""
    if row.setup.domain != "persistent":
        return 0
    return sum(max(1, t.partitions) for t in row.setup.topics)


def namespace_topics(row: Row, api: str) -> Optional[int]:
    """Stored topics of the namespace's domain once the action created what it asks for."""
    op = _op(row)
    name = op["op"]
    if name == "CreatePartitionedTopic":
        added = op.get("partitions")
    elif name == "CreateNonPartitionedTopic":
        added = 1 if row.setup.domain == "persistent" else 0
    elif auto_creates_metadata(row, api):
        added = default_partitions(row)
    elif auto_creates_topic(row, api):
        added = 1 if row.setup.domain == "persistent" else 0
    else:
        return None
    return None if added is None else _stored_topics(row) + added


def _listed(row: Row, api: str) -> Optional[int]:
    """What a listing action names, read from the setup: ListTopics gives non-partitioned topics
    and the partitions admin creation made (persistent only), ListPartitionedTopics the metadata."""
    op = _op(row)
    domain = op.get("domain", row.setup.domain)
    if domain != row.setup.domain or not row.setup.namespace_present:
        return 0 if domain != row.setup.domain else None
    if op["op"] == "ListPartitionedTopics":
        return sum(1 for t in row.setup.topics if t.partitions > 0)
    if domain == "persistent":
        return sum(max(1, t.partitions) for t in row.setup.topics)
    return sum(1 for t in row.setup.topics if t.partitions == 0)


def _batch_names(row: Row) -> list:
    return list(_op(row).get("topics") or ())


def batch_entries(row: Row) -> int:
    """Distinct entries after partition expansion (pip35.md C4, C7), read from the setup."""
    seen: dict[str, None] = {}
    for name in _batch_names(row):
        partitions = _setup_partitions(row, name) if "{" not in name else None
        members = [f"{name}{PARTITION_SUFFIX}{i}" for i in range(partitions)] if partitions else [name]
        for member in members:
            seen.setdefault(member)
    return len(seen)


def _field(name: str) -> Callable[[Row, str], Optional[int]]:
    def read(row: Row, api: str):
        value = _op(row).get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    return read


def _bursts(row: Row, api: str) -> Optional[int]:
    bursts = _op(row).get("bursts")
    return max(bursts) - 1 if bursts else None


VALUES: dict[str, Callable[[Row, str], Optional[int]]] = {
    "operation.partitions": _field("partitions"),
    "operation.default_num_partitions": _field("default_num_partitions"),
    "operation.count": _field("count"),
    "default-partitions": lambda row, api: default_partitions(row),
    "namespace-topics": namespace_topics,
    # the SENDs in flight when the last SEND of the largest one-write burst arrives (Pulsar's ServerCnx#handleSend)
    "in-flight": _bursts,
    "consumers": lambda row, api: len(_op(row).get("consumers") or ()),
    # a row's binary lookups are asked one at a time (the action, then each observation), so the
    # broker reads each with one in flight: its own (ServerCnx#handlePartitionMetadataRequest)
    "lookups-in-flight": lambda row, api: 1,
    "names": lambda row, api: len(_batch_names(row)),
    "entries": lambda row, api: batch_entries(row),
    "listed": _listed,
    "topic-partitions": lambda row, api: _setup_partitions(row, _op(row).get("topic")),
    "policies.numberOfTopicBuckets": lambda row, api: _policies(row).get("numberOfTopicBuckets"),
    "setup.numberOfTopicBuckets": lambda row, api: _buckets(row),
}

CONDITIONS: dict[str, Callable[[Row, str], bool]] = {
    "auto-creates-metadata": auto_creates_metadata,
    "auto-creates-topic": auto_creates_topic,
    "override-sets-partitions": lambda row, api: (_override(row) or {}).get("defaultNumPartitions") is not None,
    "broker-sets-partitions": lambda row, api: (_override(row) or {}).get("defaultNumPartitions") is None,
    "override-partitioned": lambda row, api: _op(row).get("allow_auto_topic_creation") is True
    and _op(row).get("topic_type") == "partitioned",
    "existing-topic": lambda row, api: _setup_partitions(row, _op(row).get("topic")) is not None,
    "persistent": lambda row, api: row.setup.domain == "persistent",
    "non-persistent": lambda row, api: row.setup.domain == "non-persistent",
    "exact": lambda row, api: _op(row).get("view", "exact") == "exact",
    "bucketed": lambda row, api: (_buckets(row) or 1) > 1,
    "unbucketed": lambda row, api: _buckets(row) == 1,
    "observes-layout": lambda row, api: any(dict(o)["op"] == "ReadTopicLayout" for o in row.observe),
    "namespace-present": lambda row, api: row.setup.namespace_present,
    "topics-policy-set": lambda row, api: dict(row.setup.policies).get("max_topics_per_namespace") is not None,
}


# -- the rules ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limit:
    broker: Optional[str] = None     # the broker.conf key holding the limit, or
    const: Optional[int] = None      # a fixed bound (PIP-157's 1024)
    policy: Optional[str] = None     # a namespace Policies field that replaces the broker key when set
    default: int = 0                 # the key's default
    unlimited: str = "never"         # non-positive: 0 or less turns the limit off
    smallest: Optional[int] = None   # the smallest legal value of the limit itself

    def of(self, row: Row) -> Optional[int]:
        if self.const is not None:
            return self.const
        if self.policy is not None and dict(row.setup.policies).get(self.policy) is not None:
            value = dict(row.setup.policies)[self.policy]
            return value if isinstance(value, int) and not isinstance(value, bool) else None
        return _int(_broker(row, self.broker, str(self.default)))

    def in_force(self, limit: Optional[int]) -> bool:
        return limit is not None and (self.unlimited == "never" or limit > 0)


@dataclass(frozen=True)
class Path_:
    name: str
    ops: tuple[str, ...]
    apis: tuple[str, ...]
    value: str
    points: tuple[str, ...]
    when: tuple[str, ...] = ()
    note: Optional[str] = None
    line: int = 0


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    source: tuple[str, ...]
    pip: str
    paths: tuple[Path_, ...]
    limit: Optional[Limit] = None
    smallest: Optional[int] = None  # the smallest legal measured value
    line: int = 0


def load_boundaries(path: Path = BOUNDARIES_FILE) -> tuple[Rule, ...]:
    root = read_yaml(path)
    check = _Checker(str(path), root, "(boundaries)")
    check.keys(root, "file", {"schema", "rules"}, set())
    rules_node = root.child("rules")
    rules = []
    for node in check.items(rules_node, "rules"):
        rule = _Checker(str(path), node, str(node.value.get("id", "?")) if isinstance(node.value, dict) else "?")
        value = rule.keys(node, "rule", {"id", "title", "source", "pip", "paths"}, {"limit", "smallest", "note"})
        limit = None
        if "limit" in value:
            spec = rule.keys(node.child("limit"), "limit", set(), {"broker", "const", "policy", "default", "unlimited", "smallest"})
            if ("broker" in spec) == ("const" in spec):
                rule.fail(node.child("limit"), "limit names either a broker key or a const bound")
            if spec.get("unlimited", "never") not in UNLIMITED:
                rule.fail(node.child("limit"), f"limit unlimited must be one of {', '.join(UNLIMITED)}")
            limit = Limit(**spec)
        paths = []
        for pnode in rule.items(node.child("paths"), "paths"):
            spec = rule.keys(pnode, "path", {"path", "ops", "apis", "value", "points"}, {"when", "note"})
            rule.strings(pnode.child("apis"), "apis", APIS)
            rule.strings(pnode.child("ops"), "ops")
            rule.string(pnode.child("value"), "value", tuple(VALUES))
            points = rule.strings(pnode.child("points"), "points", POINTS)
            when = rule.strings(pnode.child("when"), "when", tuple(CONDITIONS)) if "when" in spec else ()
            if limit is None and set(points) & set(LIMIT_POINTS):
                rule.fail(pnode.child("points"), f"points {', '.join(LIMIT_POINTS)} need the rule's limit")
            if value.get("smallest") is None and set(points) & {"smallest", "below"}:
                rule.fail(pnode.child("points"), "points smallest and below need the rule's smallest value")
            paths.append(Path_(spec["path"], tuple(spec["ops"]), tuple(spec["apis"]), spec["value"], points, when,
                               spec.get("note"), pnode.line))
        rules.append(Rule(value["id"], value["title"], tuple(value["source"]), str(value["pip"]), tuple(paths),
                          limit, value.get("smallest"), node.line))
    ids = [r.id for r in rules]
    if len(set(ids)) != len(ids):
        check.fail(rules_node, "rule ids must be unique")
    return tuple(rules)


def points_of(rule: Rule, path: Path_, row: Row, api: str) -> tuple[str, ...]:
    """The boundary points ``row`` covers on ``path[api]`` (at, past, smallest, ...); () when it is not on the path."""
    if row.pip != rule.pip or api not in row.apis or api not in path.apis or _op(row)["op"] not in path.ops:
        return ()
    if "credentials" in _op(row):
        return ()  # an action with other credentials tests authentication, not this rule
    if not all(CONDITIONS[c](row, api) for c in path.when):
        return ()
    value = VALUES[path.value](row, api)
    if not isinstance(value, int) or isinstance(value, bool):
        return ()  # not measurable here (a policy written as "3", a list...): not a boundary row
    limit = rule.limit.of(row) if rule.limit else None
    in_force = rule.limit.in_force(limit) if rule.limit else False
    found = []
    if in_force and value == limit:
        found.append("at")
    if in_force and value == limit + 1:
        found.append("past")
    if rule.smallest is not None and value == rule.smallest and (rule.limit is None or in_force):
        found.append("smallest")
    if rule.smallest is not None and value == rule.smallest - 1:
        found.append("below")
    if in_force and rule.limit.smallest is not None and limit == rule.limit.smallest:
        if value == limit:
            found.append("limit-smallest")
        if value == limit + 1:
            found.append("limit-smallest-past")
    found.extend(("empty",) if value == 0 else ("one",) if value == 1 else ("many",) if value >= 2 else ())
    return tuple(p for p in found if p in path.points)


@dataclass(frozen=True)
class Cell:
    rule: Rule
    path: Path_
    api: str
    point: str
    rows: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.rule.id} {self.path.name}[{self.api}] {self.point}"


def coverage(rules: Iterable[Rule], rows: Iterable[Row]) -> list[Cell]:
    """Every rule x path x api x point with the ids of the rows that cover it."""
    rows = tuple(rows)
    cells = []
    for rule in rules:
        for path in rule.paths:
            for api in path.apis:
                found: dict[str, list[str]] = {point: [] for point in path.points}
                for row in rows:
                    for point in points_of(rule, path, row, api):
                        found[point].append(row.id)
                cells.extend(Cell(rule, path, api, point, tuple(ids)) for point, ids in found.items())
    return cells


def problems(directory: Path = SPEC_DIR) -> list[str]:
    """One line per boundary point no row covers, as "<file>:<line>: <rule> <path>[api] <point>: ..."."""
    path = Path(directory) / BOUNDARIES_FILE.name
    if not path.is_file():
        return []
    try:
        rules = load_boundaries(path)
        rows = load_rows(directory)
    except SpecError as exc:
        return [str(exc)]
    return [f"{path}:{cell.path.line}: {cell.label}: no row covers this boundary point"
            for cell in coverage(rules, rows) if not cell.rows]


def report(cells: Iterable[Cell], shown: Optional[int] = 3) -> str:
    """rule x path x point -> row ids, one line per cell, the uncovered marked MISSING; at most
    ``shown`` ids per cell (None: all), then how many more."""
    lines, current = [], None
    for cell in cells:
        if cell.rule.id != current:
            current = cell.rule.id
            lines.append(f"{cell.rule.id}: {cell.rule.title}")
        ids = list(cell.rows if shown is None else cell.rows[:shown])
        if len(cell.rows) > len(ids):
            ids.append(f"(+{len(cell.rows) - len(ids)} more)")
        lines.append(f"    {cell.path.name + '[' + cell.api + ']':<44} {cell.point:<20} {', '.join(ids) or 'MISSING'}")
    return "\n".join(lines)


def summary(cells: list[Cell]) -> str:
    missing = sum(1 for cell in cells if not cell.rows)
    rules = len({cell.rule.id for cell in cells})
    return f"boundaries: {rules} rules, {len(cells)} points, {len(cells) - missing} covered, {missing} missing"
