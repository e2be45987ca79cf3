"""``python -m conformance record``: keep what Apache Pulsar releases answered, as spec data.

A run's result records hold, per case, the answer of the step where the case stopped: the
failing step's for ``failed``, the last step's for ``passed`` (every earlier step matched). This
command copies those answers from result files into ``spec/observed/pulsar-<release>.jsonl``,
one line per case, so the model can be checked against real Pulsar on any machine, JVM or not
(tests/spec/test_observations.py).

- ``observation``: only targets whose version is an Apache Pulsar release are recorded, and only
  the verdicts that carry an answer (passed, failed) of a case that ran in a namespace. Each line
  keeps what re-binding the case needs: the namespace it ran in, the step index, the answer, and
  the run it came from.
- A release seen through Apache Pulsar's proxy (the target ``pulsar-proxy:P/B``, whose version reads
  ``<broker> via proxy <proxy>``) is a release of its own here: its lines name the pair and go to
  ``spec/observed/pulsar-proxy-<proxy>-on-<broker>.jsonl``, never into the bare broker's file.
- ``record``: a file holds one line per case id, sorted by case id, so a new recording shows as a
  reviewable diff; a case recorded again replaces its line, cases not in the new run keep
  theirs. Files are written whole and atomically.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Optional

from conformance.results import ResultRecord, read_results
from spec.schema import SPEC_DIR
from spec.versions import parse_release, proxy_of, release_text

OBSERVED_DIR = SPEC_DIR / "observed"
FIELDS = ("case_id", "row_id", "release", "namespace", "verdict", "step", "actual", "known_divergence", "run_id")


def observation(record: ResultRecord) -> Optional[dict]:
    """The line a record becomes (with what re-binding the case needs), or None when it is not an
    observation: not an Apache Pulsar release, no answer, or no namespace."""
    release = parse_release(record.target_version)
    if release is None or record.verdict not in ("passed", "failed") or not record.namespace:
        return None
    return {"case_id": record.case_id, "row_id": record.row_id, "release": release_text(release),
            "namespace": record.namespace, "verdict": record.verdict,
            "step": record.failing_step,  # None for passed: the last step
            "actual": record.actual, "known_divergence": record.known_divergence, "run_id": record.run_id}


def observed_path(release: str, directory: Path = OBSERVED_DIR) -> Path:
    """``pulsar-4.0.7.jsonl``; for a broker seen through a proxy, ``pulsar-proxy-4.0.8-on-4.0.7.jsonl``."""
    parsed = parse_release(release)
    proxy = proxy_of(parsed)
    if proxy is not None:
        return Path(directory) / f"pulsar-proxy-{release_text(proxy)}-on-{release_text(parsed.broker)}.jsonl"
    return Path(directory) / f"pulsar-{release}.jsonl"


def read_observations(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def record(records: Iterable[ResultRecord], directory: Path = OBSERVED_DIR) -> dict[str, int]:
    """Merge the observations of ``records`` into their files, one line per case id,
    sorted; returns lines per file."""
    by_release: dict[str, dict[str, dict]] = {}
    for rec in records:
        line = observation(rec)
        if line is not None:
            by_release.setdefault(line["release"], {})[line["case_id"]] = line
    written = {}
    Path(directory).mkdir(parents=True, exist_ok=True)
    for release, new in sorted(by_release.items()):
        path = observed_path(release, directory)
        merged = {line["case_id"]: line for line in read_observations(path)} if path.is_file() else {}
        merged.update(new)
        temporary = path.with_suffix(".jsonl.partial")
        with open(temporary, "w", encoding="utf-8") as handle:
            for case_id in sorted(merged):
                handle.write(json.dumps({key: merged[case_id].get(key) for key in FIELDS}, ensure_ascii=False) + "\n")
        os.replace(temporary, path)
        written[str(path)] = len(merged)
    return written


def main(paths: list[Path], directory: Path = OBSERVED_DIR) -> int:
    records: list[ResultRecord] = []
    for path in paths:
        records.extend(read_results(path))
    written = record(records, directory)
    if not written:
        print("conformance record: no observation of an Apache Pulsar release in "
              f"{', '.join(map(str, paths))}; nothing written")
        return 2
    for path, count in written.items():
        print(f"conformance record: {path}: {count} cases")
    return 0
