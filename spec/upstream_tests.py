"""Pulsar's own tests for PIP-344 and PIP-2, assertion by assertion, and the rows that check each:
``spec/upstream_tests.yaml`` (schema: spec/README.md, "Upstream tests").

- ``load``: the file as data, refused with ``file:line`` where it is malformed.
- ``problems``: what the lint reports (L8): a test anchor that is not in sources.yaml or whose
  ``where`` is not the class's file at the anchor's tag, a tag the file does not read, a row that
  does not exist, an assertion in scope that no row checks, an id used twice, and
  docs/upstream-tests.md when it is not what ``render`` makes of the file.
- ``render``: docs/upstream-tests.md, per test class what is covered, in part, and out of scope,
  with the rows; ``python -m spec.upstream_tests --write`` writes it.

Like the rest of spec/, this reads the spec's data and imports nothing after it.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from spec import citations
from spec.schema import SPEC_DIR, SpecError, _Checker, load_registry, load_rows, read_yaml

FILE = "upstream_tests.yaml"
DOC = Path("docs") / "upstream-tests.md"
OUT_OF_SCOPE_KINDS = ("unobservable", "outside-pips")
_ANCHOR = re.compile(r"^(?P<cls>[A-Za-z0-9_/]+)#(?P<method>\w+)(?:@(?P<tag>v\d+\.\d+\.\d+))?\Z")
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*\Z")


@dataclass(frozen=True)
class Assertion:
    id: str
    test: str                        # an anchor of sources.yaml: Class#method or Class#method@vTAG
    states: str
    rows: tuple[str, ...] = ()
    case: Optional[str] = None       # the data-provider case(s), as the test names them
    partly: Optional[str] = None     # what of it the rows do not check
    out_of_scope: Optional[tuple[str, str]] = None  # (kind, why)
    line: int = 0

    @property
    def method(self) -> str:
        return _ANCHOR.match(self.test)["method"]

    @property
    def tag(self) -> Optional[str]:
        return _ANCHOR.match(self.test)["tag"]

    @property
    def status(self) -> str:
        if self.out_of_scope:
            return "out of scope"
        return "in part" if self.partly else "covered"


@dataclass(frozen=True)
class TestClass:
    name: str
    file: str                        # the class's file at the first tag, as an upstream where
    assertions: tuple[Assertion, ...]
    note: Optional[str] = None
    line: int = 0


@dataclass(frozen=True)
class Inventory:
    tags: tuple[str, ...]
    classes: tuple[TestClass, ...]
    path: str = ""

    @property
    def assertions(self) -> tuple[Assertion, ...]:
        return tuple(a for cls in self.classes for a in cls.assertions)


def load(directory: Path = SPEC_DIR) -> Inventory:
    path = Path(directory) / FILE
    root = read_yaml(path)
    check = _Checker(str(path), root, "(upstream tests)")
    top = check.keys(root, "the file", {"schema", "tags", "classes"}, set())
    if top["schema"] != 1:
        check.fail(root.child("schema"), "schema must be 1")
    tags = check.strings(root.child("tags"), "tags")
    classes = []
    for node in check.items(root.child("classes"), "classes"):
        fields = check.keys(node, "a class", {"class", "file", "assertions"}, {"note"})
        name = check.string(node.child("class"), "class")
        assertions = tuple(_assertion(check, item) for item in check.items(node.child("assertions"), "assertions"))
        classes.append(TestClass(name, check.string(node.child("file"), "file"), assertions,
                                 check.string(node.child("note"), "note") if "note" in fields else None, node.line))
    return Inventory(tags, tuple(classes), str(path))


def _assertion(check: _Checker, node) -> Assertion:
    fields = check.keys(node, "an assertion", {"id", "test", "states"}, {"case", "rows", "partly", "out_of_scope"})
    ident = check.string(node.child("id"), "id")
    check.row_id = ident
    if not _ID.match(ident):
        check.fail(node.child("id"), "ids are lowercase words joined by '-'")
    test = check.string(node.child("test"), "test")
    if not _ANCHOR.match(test):
        check.fail(node.child("test"), "test names an anchor Class#method or Class#method@vTAG")
    rows = check.strings(node.child("rows"), "rows") if "rows" in fields else ()
    out = None
    if "out_of_scope" in fields:
        scope = node.child("out_of_scope")
        check.keys(scope, "out_of_scope", {"kind", "why"}, set())
        out = (check.string(scope.child("kind"), "out_of_scope.kind", OUT_OF_SCOPE_KINDS),
               check.string(scope.child("why"), "out_of_scope.why"))
        if rows or "partly" in fields:
            check.fail(scope, "an assertion out of scope names no rows and nothing partly checked")
    elif not rows:
        check.fail(node, "an assertion in scope names the rows that check it (rows), or says why none can "
                         "(out_of_scope)")
    return Assertion(ident, test, check.string(node.child("states"), "states"), rows,
                     check.string(node.child("case"), "case") if "case" in fields else None,
                     check.string(node.child("partly"), "partly") if "partly" in fields else None, out, node.line)


def problems(directory: Path = SPEC_DIR, row_ids: Optional[set[str]] = None,
             sources: Optional[dict] = None) -> list[str]:
    """L8: every problem of the inventory (empty: clean)."""
    path = Path(directory) / FILE
    if not path.is_file():
        return []
    try:
        inventory = load(directory)
        row_ids = row_ids if row_ids is not None else {row.id for row in load_rows(directory)}
        sources = sources if sources is not None else load_registry(Path(directory) / "sources.yaml", "sources")
    except SpecError as exc:
        return [str(exc)]
    found = []

    def report(line: int, ident: str, message: str):
        found.append(f"{path}:{line}: {ident}: {message}")

    for ident, count in Counter(a.id for a in inventory.assertions).items():
        if count > 1:
            report(0, ident, f"assertion id used {count} times")
    for cls in inventory.classes:
        upstream = citations.UPSTREAM.match(cls.file)
        if upstream is None or upstream["tag"] != inventory.tags[0]:
            report(cls.line, cls.name, f"file must be an upstream file at {inventory.tags[0]}, got {cls.file!r}")
            continue
        for assertion in cls.assertions:
            where = (sources.get(assertion.test) or {}).get("where")
            if where is None:
                report(assertion.line, assertion.id, f"test {assertion.test!r} is not an anchor of sources.yaml")
            else:
                tag = assertion.tag or inventory.tags[0]
                if tag not in inventory.tags:
                    report(assertion.line, assertion.id, f"tag {tag} is not one the file reads ({', '.join(inventory.tags)})")
                elif not _same_test_file(where, cls.file, tag):
                    report(assertion.line, assertion.id, f"test {assertion.test!r} points to {where}, not to a "
                                                         f"test class this entry's class inherits from at {tag}")
            for row in assertion.rows:
                if row not in row_ids:
                    report(assertion.line, assertion.id, f"row {row!r} does not exist")
    docs = Path(directory).resolve().parent / DOC
    if docs.parent.is_dir() and (not docs.is_file() or docs.read_text(encoding="utf-8") != render(inventory)):
        found.append(f"{DOC}: not what spec/{FILE} makes of it (python -m spec.upstream_tests --write)")
    return found


def _same_test_file(where: str, file: str, tag: str) -> bool:
    """The anchor points to the class's test file at ``tag``, or (for a test the class inherits) to a
    test file of the same folder at that tag."""
    anchor, cls = citations.UPSTREAM.match(where), citations.UPSTREAM.match(file)
    if anchor is None or cls is None or anchor["tag"] != tag or anchor["repo"] != cls["repo"]:
        return False
    return anchor["path"].rsplit("/", 1)[0] == cls["path"].rsplit("/", 1)[0]


# -- docs/upstream-tests.md ---------------------------------------------------------------------------


def counts(inventory: Inventory) -> Counter:
    return Counter(a.status for a in inventory.assertions)


def render(inventory: Inventory) -> str:
    total = counts(inventory)
    lines = [
        "# Pulsar's own tests, assertion by assertion",
        "",
        f"Generated from `spec/{FILE}` by `python -m spec.upstream_tests --write`; `python -m spec.lint`",
        "fails when this page is not what the file makes. Each assertion of Apache Pulsar's own tests for",
        "PIP-344 and PIP-2 is stated in our words, with the rows that check it (`spec/pip*.yaml`), what",
        "of it they leave unchecked, or why no row can: nothing a broker shows from outside tells it",
        "(unobservable), or none of the four PIPs states it (outside the PIPs).",
        "",
        f"Tests read at {', '.join(inventory.tags)}: {len(inventory.assertions)} assertions, "
        f"{total['covered']} covered, {total['in part']} in part, {total['out of scope']} out of scope.",
        "",
        "| class | assertions | covered | in part | out of scope |",
        "|---|---|---|---|---|",
    ]
    for cls in inventory.classes:
        c = Counter(a.status for a in cls.assertions)
        lines.append(f"| [{cls.name}](#{_slug(cls.name)}) | {len(cls.assertions)} | {c['covered']} | "
                     f"{c['in part']} | {c['out of scope']} |")
    for cls in inventory.classes:
        lines += ["", f"## {cls.name}", "", f"`{cls.file}`", ""]
        if cls.note:
            lines += [" ".join(cls.note.split()), ""]
        for status, title in (("covered", "Covered"), ("in part", "Covered in part"), ("out of scope", "Out of scope")):
            chosen = [a for a in cls.assertions if a.status == status]
            if not chosen:
                continue
            lines += [f"### {title}", "", "| id | test | states | " + ("why" if status == "out of scope" else "rows")
                      + (" | not checked |" if status == "in part" else " |"),
                      "|---|---|---|---|" + ("---|" if status == "in part" else "")]
            for a in chosen:
                test = f"`{a.method}`" + (f" @{a.tag}" if a.tag else "") + (f" ({_cell(a.case)})" if a.case else "")
                if a.out_of_scope:
                    last = f"{a.out_of_scope[0]}: {_cell(a.out_of_scope[1])}"
                else:
                    last = ", ".join(f"`{row}`" for row in a.rows)
                    if a.partly:
                        last += f" | {_cell(a.partly)}"
                lines.append(f"| {a.id} | {test} | {_cell(a.states)} | {last} |")
            lines.append("")
        if lines[-1] == "":
            lines.pop()
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", name.lower()).replace(" ", "-")


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spec.upstream_tests", description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=SPEC_DIR, help="spec folder (default: this package)")
    parser.add_argument("--write", action="store_true", help=f"write {DOC} from spec/{FILE}")
    args = parser.parse_args(argv)
    try:
        inventory = load(args.dir)
    except SpecError as exc:
        print(exc, file=sys.stderr)
        return 1
    if args.write:
        target = Path(args.dir).resolve().parent / DOC
        target.write_text(render(inventory), encoding="utf-8")
    found = problems(args.dir)
    for problem in found:
        print(problem, file=sys.stderr)
    total = counts(inventory)
    print(f"upstream tests: {len(inventory.assertions)} assertions, {total['covered']} covered, "
          f"{total['in part']} in part, {total['out of scope']} out of scope; {len(found)} problem(s)", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
