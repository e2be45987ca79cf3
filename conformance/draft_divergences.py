"""``python -m conformance.draft_divergences RESULTS.jsonl... [--name my-broker]``: a first
known-divergences file for your broker, from the results of a run against it (docs/ci.md).

Every case that failed, or had no answer, and that no known divergence covers yet, goes into one
of two entries: ``failed-when-drafted`` and, with ``verdict: indefinite``,
``unanswered-when-drafted``. Both say they are not triaged: split them by cause, say why, and give
each the kind it is (``pip-deviation``, ``unimplemented``, ``defect``) as you read the failures
(docs/testing-your-broker.md). The file is printed; saved as ``<name>.yaml`` it is a valid
``--known-divergences`` file as it is (its ``target:`` is the name). With no such case it has no
entries, and still is one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Iterable, Sequence

import yaml

from conformance import verdicts as v
from conformance.results import ResultRecord, read_results

NOT_TRIAGED = "{what} when this file was drafted from the run's results; not triaged yet"


def draft(records: Iterable[ResultRecord], name: str, sources: Sequence[str]) -> str:
    """The file's text: a comment saying where it came from, then the YAML document."""
    failed, unanswered = set(), set()
    for record in records:
        if record.known_divergence:
            continue
        if record.verdict == v.FAILED:
            failed.add(record.case_id)
        elif record.verdict == v.INDEFINITE:
            unanswered.add(record.case_id)
    entries = []
    for ident, cases, what, verdict in (("failed-when-drafted", failed, "failed", None),
                                        ("unanswered-when-drafted", unanswered, "had no answer", v.INDEFINITE)):
        if not cases:
            continue
        entry = {"id": ident, "cases": sorted(cases), "releases": "*", "kind": "defect",
                 "summary": NOT_TRIAGED.format(what=f"{len(cases)} case{'s' if len(cases) != 1 else ''} {what}"),
                 "evidence": [f"results file {source}" for source in sources]}
        if verdict:
            entry["verdict"] = verdict
        entries.append(entry)
    document = {"schema": 1, "target": name, "title": name, "divergences": entries}
    header = (f"# Known divergences of {name}: save as {name}.yaml and pass --known-divergences {name}.yaml.\n"
              f"# Drafted by python -m conformance.draft_divergences; split each entry by cause as you triage.\n")
    return header + yaml.safe_dump(document, sort_keys=False, width=100)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.draft_divergences",
                                     description="a first known-divergences file for your broker, from a run's results")
    parser.add_argument("results", nargs="+", type=Path, metavar="RESULTS.jsonl", help="results of runs against the broker")
    parser.add_argument("--name", default="my-broker", help="the file's target: and name (default my-broker)")
    args = parser.parse_args(argv)
    records: list[ResultRecord] = []
    for path in args.results:
        try:
            records += read_results(path)
        except (OSError, ValueError) as exc:
            print(f"draft_divergences: error: {path}: {exc}", file=sys.stderr)
            return 2
    sys.stdout.write(draft(records, args.name, [path.name for path in args.results]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
