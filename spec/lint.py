"""Spec lint (test262 tools/lint analogue): ``python -m spec.lint``.

Checks, each reported as "<file>:<line>: <row id>: <problem>":
  L1 ids are unique across files (well-formedness is the loader's job, spec/schema.py);
  L2 every ``source`` resolves in sources.yaml, and every anchor there resolves from a clone: its
     ``where`` is one of the citable forms (spec/citations.py: an upstream file at a release tag, a
     release's sources jar, a PR or issue, a PIP's wiki URL, a file of this project, an observation
     of a named release), a file of this project exists, and an upstream file is recorded in
     spec/upstream.yaml as verified at its tag (``python -m spec.upstream_check``);
  L3 every feature is in features.yaml, and rows of a tentative feature say so (``tentative: true``,
     or in their note); ``tentative: true`` only on rows of a tentative feature; rows of a feature
     whose status is ``ours`` (shipped upstream, but no PIP states it) are graded SHOULD;
  L4 descriptions are at most 100 characters;
  L5 MUST rows carry ``info``, and an ``info`` (and an anchor's ``quote``) is found verbatim
     (whitespace collapsed) in one of the row's sources that has text: a file of this project, or an
     upstream file whose recorded quote digests (spec/upstream.yaml) include it; so quotes stay quotes.
  L7 every boundary point spec/boundaries.yaml asks for (a limit at, one past and at its smallest
     value on each path that applies it; a collection empty, with one element and with many) is
     covered by a row, found by reading the rows (spec/boundaries.py); its rules cite sources.yaml.
  L8 every assertion of Pulsar's own tests spec/upstream_tests.yaml lists names a test anchor of
     sources.yaml in its class's file, and rows that exist, or says why it is out of scope; none in
     scope goes without a row; docs/upstream-tests.md is what the file makes (spec/upstream_tests.py).
  L9 every value of every enumeration spec/enumerations.yaml names (the modes of GET_TOPICS_OF_NAMESPACE,
     subscription types, topic domains, what a topic has attached, name forms) reaches a row on each
     path that takes it, found by reading the rows (spec/enumerations.py).

These read the spec's data and nothing after it in the import order. Whether the model answers every
row and agrees with what its source states, and the reviewer's listing of each row's quote beside the
model's outcomes, need the model and the harness's case binding: ``python -m conformance.spec_review``
runs these checks and those.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Optional

from spec import citations
from spec import boundaries
from spec import enumerations
from spec import upstream_tests
from spec.schema import DESCRIPTION_MAX, SPEC_DIR, Row, SpecError, load_registry, load_rows


class _Quotable:
    """What a quote of an anchor can be checked against: a file of this project (its text), or an
    upstream file (the digests of the quotes spec/upstream.yaml records as found in it). Observations,
    PRs, issues and wiki pages have no text here; quotes of them are not checked."""

    def __init__(self, text: Optional[str] = None, digests: Optional[set[str]] = None):
        self.text, self.digests = text, digests

    def holds(self, quote: str) -> bool:
        if self.text is not None:
            return citations.collapse(quote) in self.text
        return citations.quote_digest(quote) in self.digests


def _anchors(sources: dict[str, dict], root: Path, manifest: dict[str, dict],
             registry: Path) -> tuple[dict[str, _Quotable], list[str]]:
    """Each anchor's quotable text, and the anchors that do not resolve (L2) or misquote (L5)."""
    quotable, problems = {}, []
    for name, entry in sources.items():
        where, why = citations.resolve(entry.get("where"), root)
        if where is None:
            problems.append(f"{registry}: {name}: where {entry.get('where')!r} {why}")  # L2
            continue
        if where.kind == "local":
            quotable[name] = _Quotable(text=citations.collapse(where.path.read_text(encoding="utf-8")))
        elif where.kind in ("upstream", "artifact"):
            if where.text not in manifest:
                problems.append(f"{registry}: {name}: {where.text} is not recorded in spec/{citations.MANIFEST} as "
                                "verified at its tag (python -m spec.upstream_check --write)")  # L2
                continue
            quotable[name] = _Quotable(digests=set(manifest[where.text].get("quotes") or ()))
        if entry.get("quote") and name in quotable and not quotable[name].holds(entry["quote"]):
            problems.append(f"{registry}: {name}: quote is not a verbatim quote of {where.text}")  # L5
    return quotable, problems


def lint(directory: Path = SPEC_DIR) -> list[str]:
    """All problems L1-L9 find in the spec folder (empty list = clean)."""
    try:
        rows = load_rows(directory)
        sources = load_registry(directory / "sources.yaml", "sources")
        features = load_registry(directory / "features.yaml", "features")
    except SpecError as exc:
        return [str(exc)]
    root = Path(directory).resolve().parent  # "where" paths are relative to the project folder
    quotable, problems = _anchors(sources, root, citations.load_manifest(directory), Path(directory) / "sources.yaml")

    def report(row: Row, message: str):
        problems.append(f"{row.where}: {row.id}: {message}")

    for row_id, count in Counter(r.id for r in rows).items():
        if count > 1:
            for row in (r for r in rows if r.id == row_id):
                report(row, f"id used {count} times; ids are stable and never reused")  # L1
    for row in rows:
        for anchor in row.source:
            if anchor not in sources:
                report(row, f"source {anchor!r} is not in sources.yaml")  # L2
        for feature in row.features:
            if feature not in features:
                report(row, f"feature {feature!r} is not in features.yaml")  # L3
            elif features[feature].get("status") == "tentative" and not row.tentative \
                    and "tentative" not in (row.note or ""):
                report(row, f"feature {feature!r} is tentative upstream; mark the row tentative: true or say so "
                            "in its note")
        if row.tentative and not any(features.get(f, {}).get("status") == "tentative" for f in row.features):
            report(row, "tentative: true is for rows of a feature that is tentative upstream")  # L3
        if any(features.get(f, {}).get("status") == "ours" for f in row.features) and row.grade != "SHOULD":
            report(row, "rows of a feature whose status is ours (no PIP states them) are graded SHOULD")  # L3
        if len(row.description) > DESCRIPTION_MAX:
            report(row, f"description longer than {DESCRIPTION_MAX} characters")  # L4
        if row.grade == "MUST" and not row.info:
            report(row, "MUST rows carry an info quote from their source")  # L5
        held = [quotable[a] for a in row.source if a in quotable]
        if row.info and held and not any(q.holds(row.info) for q in held):
            report(row, "info is not a verbatim quote of any of its sources (files of this project, or upstream "
                        f"files as spec/{citations.MANIFEST} records them)")  # L5
    problems.extend(boundary_problems(directory, sources))  # L7
    problems.extend(upstream_tests.problems(directory, {r.id for r in rows}, sources))  # L8
    problems.extend(enumerations.problems(directory, rows, sources))  # L9
    return problems


def boundary_problems(directory: Path, sources: dict) -> list[str]:
    """L7: boundary points no row covers, and rule sources missing from sources.yaml."""
    path = Path(directory) / boundaries.BOUNDARIES_FILE.name
    if not path.is_file():
        return []
    try:
        rules = boundaries.load_boundaries(path)
    except SpecError as exc:
        return [str(exc)]
    found = [f"{path}:{rule.line}: {rule.id}: source {anchor!r} is not in sources.yaml"
             for rule in rules for anchor in rule.source if anchor not in sources]
    return found + boundaries.problems(directory)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spec.lint", description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=SPEC_DIR, help="spec folder (default: this package)")
    args = parser.parse_args(argv)
    return report("spec lint", lint(args.dir), args.dir)


def report(label: str, problems: list[str], directory: Path) -> int:
    """Prints the problems and a summary line to stderr; the exit code of a check of the rows."""
    for problem in problems:
        print(problem, file=sys.stderr)
    rows = 0 if problems else len(load_rows(directory))
    print(f"{label}: {len(problems)} problem(s)" + (f", {rows} rows" if rows else ""), file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
