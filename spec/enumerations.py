"""Enumeration coverage: every value of every enumeration the four PIPs' paths take reaches a row.

``spec/enumerations.yaml`` names the enumerations (the modes of GET_TOPICS_OF_NAMESPACE, the
subscription types, the topic domains, what a topic has attached when it is read, the forms of a
topic name) and, per enumeration, its paths: the operations and apis that take it and the values
each must see. As spec/boundaries.py does for limits, this module reads the rows themselves (setup,
action and observations) to place each on those values; nothing here lists row ids.

- ``values_of``: the values a row takes on a path through one api. A row's action goes through
  each api the row lists; an observation through the api it names, or the operation's first.
- ``coverage`` / ``problems`` / ``report`` / ``summary``: as spec/boundaries.py's, one cell per
  enumeration x path x api x value. The lint (L9) reports every cell no row reaches;
  ``python -m conformance.spec_review --enumerations`` prints them all.

Like the rest of spec/, this reads the spec's data and imports nothing after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional

from spec.operations import OPERATIONS
from spec.schema import APIS, SPEC_DIR, Row, SpecError, _Checker, load_registry, load_rows, read_yaml

ENUMERATIONS_FILE = SPEC_DIR / "enumerations.yaml"

_PARTITION = "-partition-"
_INT_MAX = 2**31 - 1
_MODES = {"persistent": "PERSISTENT", "non-persistent": "NON_PERSISTENT", "all": "ALL"}


def _steps(row: Row, api: str) -> list[tuple[dict, str]]:
    """(operation, the api it goes through) for the action (through ``api``) and each observation."""
    steps = [(row.operation_json(), api)]
    for observed in row.observe_json():
        registered = OPERATIONS.get(observed["op"])
        steps.append((observed, observed.get("api") or (registered.apis[0] if registered and registered.apis else "")))
    return steps


def _list_mode(row: Row, op: dict) -> set[str]:
    return {_MODES[op.get("domain", row.setup.domain)]}


def _sub_types(row: Row, op: dict) -> set[str]:
    if "sub_type" in op:
        return {op["sub_type"]}
    return {consumer[1] for consumer in op.get("consumers") or () if len(consumer) > 1}


def _domain(row: Row, op: dict) -> set[str]:
    topic = op.get("topic")
    if isinstance(topic, str) and "://" in topic:
        return {topic.split("://", 1)[0]}
    return {row.setup.domain}


def _attached(row: Row, op: dict) -> set[str]:
    """What a PubSub leaves attached to its non-persistent topic for the reads after it: its producer
    unless it closed it, its consumers unless it closed them all (NonPersistentTopic#isActive)."""
    if _domain(row, op) != {"non-persistent"}:
        return set()
    if op.get("close_after"):
        return {"neither"}
    producer = not op.get("close_producer")
    consumers = len(op.get("consumers") or ()) > len(op.get("close_consumers") or ())
    return {("both" if consumers else "producers") if producer else ("consumers" if consumers else "neither")}


def _name_form(row: Row, op: dict) -> set[str]:
    """The local name's form: plain, a partition (``-partition-N``), two partition suffixes, a suffix
    that is not a number, or digits that are no index. TopicName#getPartitionIndex reads the text after
    the last suffix with Integer.parseInt (any decimal digit) and keeps it only when it is as long as the
    int written back (no leading zero, nothing past Integer.MAX_VALUE)."""
    topic = op.get("topic")
    if not isinstance(topic, str):
        return set()
    local = topic.rsplit("/", 1)[-1]
    if local.count(_PARTITION) >= 2:
        return {"two-partition-suffixes"}
    if _PARTITION not in local:
        return {"plain"}
    suffix = local.rsplit(_PARTITION, 1)[1]
    if not suffix or not suffix.isdecimal():
        return {"non-numeric-suffix"}
    index = int(suffix)
    return {"partition" if index <= _INT_MAX and len(str(index)) == len(suffix) else "digits-not-an-index"}


READERS: dict[str, Callable[[Row, dict], set[str]]] = {
    "list-mode": _list_mode,
    "sub-type": _sub_types,
    "domain": _domain,
    "attached": _attached,
    "name-form": _name_form,
}


@dataclass(frozen=True)
class Path_:
    name: str
    ops: tuple[str, ...]
    apis: tuple[str, ...]
    values: tuple[str, ...]
    observed_by: tuple[str, ...] = ()  # the action counts only when an observation of these reads it
    note: Optional[str] = None
    line: int = 0


@dataclass(frozen=True)
class Enumeration:
    id: str
    title: str
    source: tuple[str, ...]
    reader: str
    values: tuple[str, ...]
    paths: tuple[Path_, ...]
    line: int = 0


def load_enumerations(path: Path = ENUMERATIONS_FILE) -> tuple[Enumeration, ...]:
    root = read_yaml(path)
    check = _Checker(str(path), root, "(enumerations)")
    check.keys(root, "file", {"schema", "enumerations"}, set())
    if root.child("schema").value != 1:
        check.fail(root.child("schema"), "schema must be 1")
    found = []
    for node in check.items(root.child("enumerations"), "enumerations"):
        ident = str(node.value.get("id", "?")) if isinstance(node.value, dict) else "?"
        enum = _Checker(str(path), node, ident)
        value = enum.keys(node, "enumeration", {"id", "title", "source", "reader", "values", "paths"}, {"note"})
        enum.string(node.child("reader"), "reader", tuple(READERS))
        values = enum.strings(node.child("values"), "values")
        paths = []
        for pnode in enum.items(node.child("paths"), "paths"):
            spec = enum.keys(pnode, "path", {"path", "ops", "apis", "values"}, {"observed_by", "note"})
            enum.strings(pnode.child("apis"), "apis", APIS)
            enum.strings(pnode.child("ops"), "ops", tuple(OPERATIONS))
            wanted = enum.strings(pnode.child("values"), "values", values)
            observed_by = enum.strings(pnode.child("observed_by"), "observed_by", tuple(OPERATIONS)) \
                if "observed_by" in spec else ()
            paths.append(Path_(spec["path"], tuple(spec["ops"]), tuple(spec["apis"]), tuple(wanted),
                               tuple(observed_by), spec.get("note"), pnode.line))
        found.append(Enumeration(value["id"], value["title"], tuple(value["source"]), value["reader"],
                                 tuple(values), tuple(paths), node.line))
    if len({e.id for e in found}) != len(found):
        check.fail(root.child("enumerations"), "enumeration ids must be unique")
    return tuple(found)


def values_of(enum: Enumeration, path: Path_, row: Row, api: str) -> set[str]:
    """The values ``row`` takes on ``path[api]``: those of each of its steps made through ``api``
    with one of the path's operations (the action only when the row lists ``api``)."""
    if api not in path.apis:
        return set()
    found: set[str] = set()
    for index, (op, through) in enumerate(_steps(row, api)):
        if op["op"] not in path.ops or through != api or "credentials" in op:
            continue
        if index == 0 and api not in row.apis:
            continue
        if path.observed_by and not any(o["op"] in path.observed_by for o in row.observe_json()[index:]):
            continue
        found |= READERS[enum.reader](row, op)
    return found & set(path.values)


@dataclass(frozen=True)
class Cell:
    enum: Enumeration
    path: Path_
    api: str
    value: str
    rows: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.enum.id} {self.path.name}[{self.api}] {self.value}"


def coverage(enums: Iterable[Enumeration], rows: Iterable[Row]) -> list[Cell]:
    """Every enumeration x path x api x value with the ids of the rows that reach it."""
    rows = tuple(rows)
    cells = []
    for enum in enums:
        for path in enum.paths:
            for api in path.apis:
                found: dict[str, list[str]] = {value: [] for value in path.values}
                for row in rows:
                    for value in values_of(enum, path, row, api):
                        found[value].append(row.id)
                cells.extend(Cell(enum, path, api, value, tuple(ids)) for value, ids in found.items())
    return cells


def problems(directory: Path = SPEC_DIR, rows: Optional[Iterable[Row]] = None,
             sources: Optional[dict] = None) -> list[str]:
    """L9: one line per value of a path no row reaches, and per source that is not an anchor of
    sources.yaml."""
    path = Path(directory) / ENUMERATIONS_FILE.name
    if not path.is_file():
        return []
    try:
        enums = load_enumerations(path)
        rows = load_rows(directory) if rows is None else rows
        sources = load_registry(Path(directory) / "sources.yaml", "sources") if sources is None else sources
    except SpecError as exc:
        return [str(exc)]
    found = [f"{path}:{enum.line}: {enum.id}: source {source!r} is not an anchor of sources.yaml"
             for enum in enums for source in enum.source if source not in sources]
    return found + [f"{path}:{cell.path.line}: {cell.label}: no row reaches this value"
                    for cell in coverage(enums, rows) if not cell.rows]


def report(cells: Iterable[Cell], shown: Optional[int] = 3) -> str:
    """enumeration x path x value -> row ids, one line per cell, the unreached marked MISSING."""
    lines, current = [], None
    for cell in cells:
        if cell.enum.id != current:
            current = cell.enum.id
            lines.append(f"{cell.enum.id}: {cell.enum.title}")
        ids = list(cell.rows if shown is None else cell.rows[:shown])
        if len(cell.rows) > len(ids):
            ids.append(f"(+{len(cell.rows) - len(ids)} more)")
        lines.append(f"    {cell.path.name + '[' + cell.api + ']':<44} {cell.value:<24} {', '.join(ids) or 'MISSING'}")
    return "\n".join(lines)


def summary(cells: list[Cell]) -> str:
    missing = sum(1 for cell in cells if not cell.rows)
    enums = len({cell.enum.id for cell in cells})
    return f"enumerations: {enums} enumerations, {len(cells)} values on paths, {len(cells) - missing} reached, " \
           f"{missing} missing"
