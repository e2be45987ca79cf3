"""Spec lint (test262 tools/lint analogue) and the reviewer's listing: ``python -m spec.lint``.

Checks, each reported as "<file>:<line>: <row id>: <problem>":
  L1 ids are unique across files (well-formedness is the loader's job, spec/schema.py);
  L2 every ``source`` resolves in sources.yaml;
  L3 every feature is in features.yaml, and rows of a tentative feature say so (``tentative: true``,
     or in their note); ``tentative: true`` only on rows of a tentative feature; rows of a feature
     whose status is ``ours`` (shipped upstream, but no seed states it) are graded SHOULD;
  L4 descriptions are at most 100 characters;
  L5 MUST rows carry ``info``, and an ``info`` is found verbatim (whitespace collapsed) in one of
     the row's sources that is a local file (the seed or the facts), so quotes stay quotes;
  L6 every case of the row binds and the model answers it (no ModelUsageError), and the model
     agrees with what the row's source states.

Then, unless ``--quiet``, it prints every row with its info quote and, per api, the outcome the
model computes for the action and each observation: reviewers compare the quote with the outcome.

L6 and the listing import conformance.cases (and so the model): the lint is a tool at the top of
the import order, while spec/schema.py itself imports nothing from the project.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Iterable, Optional

from spec.schema import DESCRIPTION_MAX, SPEC_DIR, Row, SpecError, load_registry, load_rows

LINT_NAMESPACE = "public/lint-ns"


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _local_text(where: Optional[str], base: Path) -> Optional[str]:
    """The text of a source that is a local file: ``../shared/...`` or a file of this project
    (``docs/pip157-decisions.md``); None for upstream paths, which are not here, and for recorded
    observations (``spec/observed/``), which are answers, not prose a row could quote."""
    if not where or "://" in where or where.endswith(".jsonl"):
        return None
    path = (base / where.split("#", 1)[0]).resolve()
    return path.read_text(encoding="utf-8") if path.is_file() else None


def lint(directory: Path = SPEC_DIR, with_model: bool = True) -> list[str]:
    """All problems found in the spec folder (empty list = clean)."""
    try:
        rows = load_rows(directory)
        sources = load_registry(directory / "sources.yaml", "sources")
        features = load_registry(directory / "features.yaml", "features")
    except SpecError as exc:
        return [str(exc)]
    problems: list[str] = []
    base = Path(directory).resolve().parent  # "where" paths are relative to the project folder
    texts = {name: _local_text(entry.get("where"), base) for name, entry in sources.items()}

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
            report(row, "rows of a feature whose status is ours (no seed states them) are graded SHOULD")  # L3
        if len(row.description) > DESCRIPTION_MAX:
            report(row, f"description longer than {DESCRIPTION_MAX} characters")  # L4
        if row.grade == "MUST" and not row.info:
            report(row, "MUST rows carry an info quote from their source")  # L5
        quotable = [texts[a] for a in row.source if texts.get(a)]
        if row.info and quotable and not any(_collapse(row.info) in _collapse(t) for t in quotable):
            report(row, "info is not a verbatim quote of any of its local sources")
    if with_model:
        problems.extend(_model_problems(rows))  # L6
    return problems


def _model_problems(rows: Iterable[Row]) -> list[str]:
    from conformance.cases import cases_of, stated_disagreements
    from model.errors import ModelUsageError

    problems = []
    for row in rows:
        for case in cases_of(row):
            try:
                bound = case.bind(LINT_NAMESPACE)
            except (ModelUsageError, ValueError) as exc:
                problems.append(f"{row.where}: {case.id}: the model cannot run this case: {exc}")
                continue
            problems.extend(f"{row.where}: {p}" for p in stated_disagreements(bound))
    return problems


def listing(rows: Iterable[Row]) -> str:
    """Every row, its info quote and the model's outcomes per api (for review)."""
    from conformance.cases import cases_of

    lines = []
    for row in rows:
        lines.append(f"{row.id}  [{row.grade}, {row.era}{', tentative' if row.tentative else ''}]  {row.description}")
        lines.append(f"    info:   {row.info}")
        if row.stated:
            lines.append(f"    stated: {row.stated_json()}")
        for case in cases_of(row):
            bound = case.bind(LINT_NAMESPACE)
            lines.append(f"    {case.api:<13} {bound.action.expected}")
            for step in bound.observations:
                lines.append(f"    {'':<13}   then {type(step.op).__name__}: {step.expected}")
        if row.note:
            lines.append(f"    note:   {row.note}")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spec.lint", description=__doc__.splitlines()[0])
    parser.add_argument("--quiet", action="store_true", help="only report problems")
    parser.add_argument("--dir", type=Path, default=SPEC_DIR, help="spec folder (default: this package)")
    args = parser.parse_args(argv)
    problems = lint(args.dir)
    if not args.quiet and not problems:
        print(listing(load_rows(args.dir)))
    for problem in problems:
        print(problem, file=sys.stderr)
    rows = 0 if problems else len(load_rows(args.dir))
    print(f"spec lint: {len(problems)} problem(s)" + (f", {rows} rows" if rows else ""), file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
