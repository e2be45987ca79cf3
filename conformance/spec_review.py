"""The spec as a reviewer reads it: ``python -m conformance.spec_review [--dir DIR] [--quiet]``.

The spec lint (spec/lint.py) checks the rows as data. This adds what needs the model and the
harness's case binding, which come after the spec in the import order:
  L6 every case of every row binds and the model answers it (no ModelUsageError), and the model
     agrees with what the row's source states (conformance.cases.stated_disagreements);
and then, unless ``--quiet``, prints every row with its info quote and, per api, the outcome the
model computes for the action and each observation: reviewers compare the quote with the outcome.
``--boundaries`` prints instead the boundary coverage (spec/boundaries.py): each limited rule and
collection x path[api] x boundary point -> the rows that cover it, MISSING where none does
(``--all-ids`` lists every covering row); the lint's L7 fails the run on any MISSING.
``--enumerations`` prints the enumeration coverage (spec/enumerations.py) the same way: each
enumeration x path[api] x value -> the rows that reach it; the lint's L9 fails on any MISSING.
Problems are reported as "<file>:<line>: <case id>: <problem>", like the lint's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Iterable, Optional

from conformance.cases import cases_of, stated_disagreements
from model.errors import ModelUsageError
from spec import boundaries
from spec import enumerations
from spec import lint as spec_lint
from spec.schema import SPEC_DIR, Row, SpecError, load_rows

REVIEW_NAMESPACE = "public/lint-ns"


def model_problems(rows: Iterable[Row]) -> list[str]:
    """L6."""
    problems = []
    for row in rows:
        for case in cases_of(row):
            try:
                bound = case.bind(REVIEW_NAMESPACE)
            except (ModelUsageError, ValueError) as exc:
                problems.append(f"{row.where}: {case.id}: the model cannot run this case: {exc}")
                continue
            problems.extend(f"{row.where}: {p}" for p in stated_disagreements(bound))
    return problems


def review(directory: Path = SPEC_DIR) -> list[str]:
    """The lint's problems, then L6's when the rows load and lint clean (empty list = clean)."""
    problems = spec_lint.lint(directory)
    if problems:
        return problems
    try:
        return model_problems(load_rows(directory))
    except SpecError as exc:
        return [str(exc)]


def listing(rows: Iterable[Row]) -> str:
    """Every row, its info quote and the model's outcomes per api."""
    lines = []
    for row in rows:
        lines.append(f"{row.id}  [{row.grade}, {row.era}{', tentative' if row.tentative else ''}]  {row.description}")
        lines.append(f"    info:   {row.info}")
        if row.stated:
            lines.append(f"    stated: {row.stated_json()}")
        for case in cases_of(row):
            bound = case.bind(REVIEW_NAMESPACE)
            lines.append(f"    {case.api:<13} {bound.action.expected}")
            for step in bound.observations:
                lines.append(f"    {'':<13}   then {type(step.op).__name__}: {step.expected}")
        if row.note:
            lines.append(f"    note:   {row.note}")
    return "\n".join(lines)


def boundary_report(directory: Path, shown: Optional[int]) -> int:
    """The coverage report; 1 when a point is missing or the files do not load."""
    try:
        cells = boundaries.coverage(boundaries.load_boundaries(Path(directory) / boundaries.BOUNDARIES_FILE.name),
                                    load_rows(directory))
    except SpecError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(boundaries.report(cells, shown))
    print(boundaries.summary(cells), file=sys.stderr)
    return 1 if any(not cell.rows for cell in cells) else 0


def enumeration_report(directory: Path, shown: Optional[int]) -> int:
    """The enumeration coverage; 1 when a value is unreached or the files do not load."""
    try:
        cells = enumerations.coverage(
            enumerations.load_enumerations(Path(directory) / enumerations.ENUMERATIONS_FILE.name), load_rows(directory))
    except SpecError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(enumerations.report(cells, shown))
    print(enumerations.summary(cells), file=sys.stderr)
    return 1 if any(not cell.rows for cell in cells) else 0


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.spec_review", description=__doc__.splitlines()[0])
    parser.add_argument("--quiet", action="store_true", help="only report problems")
    parser.add_argument("--dir", type=Path, default=SPEC_DIR, help="spec folder (default: the spec package)")
    parser.add_argument("--boundaries", action="store_true",
                        help="print rule x path x boundary point -> covering rows instead of the row listing")
    parser.add_argument("--enumerations", action="store_true",
                        help="print enumeration x path x value -> rows reaching it instead of the row listing")
    parser.add_argument("--all-ids", action="store_true",
                        help="with --boundaries or --enumerations: every covering row, not 3")
    args = parser.parse_args(argv)
    if args.boundaries:
        return boundary_report(args.dir, None if args.all_ids else 3)
    if args.enumerations:
        return enumeration_report(args.dir, None if args.all_ids else 3)
    problems = review(args.dir)
    if not args.quiet and not problems:
        print(listing(load_rows(args.dir)))
    return spec_lint.report("spec review", problems, args.dir)


if __name__ == "__main__":
    sys.exit(main())
