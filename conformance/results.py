"""Result records: one JSON line per case x target x driver. The contract reports/ reads.

Written to ``<out>/results/<run_id>.jsonl``, one object per line, keys in ``FIELDS`` order.

- ``SCHEMA_VERSION`` is bumped whenever a field is added, removed or changes meaning; readers
  refuse a version they do not know (``ResultRecord.from_json``).
- ``expected`` and ``actual`` are ``model.outcomes.outcome_to_json`` values of the step where the
  case stopped (the failing step, or the last one for passed; ``outcome_json``); ``actual`` may be
  ``{"kind": "ProtocolViolation", "reason": ...}`` when the target's answer was not a Pulsar
  answer; either is null when there is none (e.g. unsupported before any step).
- ``verdict`` is one of conformance.verdicts.VERDICTS; ``failing_step`` is the step index for
  failed/unsupported/indefinite/broken at a step, else null.
- ``known_divergence`` is the id of the entry of spec/divergences/ that covers a failed case, or
  a passed one when the entry is intermittent (conformance/divergences.py), else "";
  ``namespace`` is the namespace the case ran in ("" when it never ran), so a recorded answer can
  be compared with the model's again. Schema 1 records lack both and are read with both empty.
- Schema 3 adds the verdict ``target-error`` (verdicts.target_error: the target could not start,
  stopped serving, or could not be restarted); records of schemas 1 and 2 never carry it and are
  read as they are.
- Schema 4 adds ``client``: the client library and its version that performed the action
  (``github.com/apache/pulsar-client-go 0.21.0``), "" when the action went through no client
  library (the wire codec, REST); records of schemas 1 to 3 are read with it empty.
"""

from __future__ import annotations

import datetime
import json
import secrets
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Iterable, Optional

from conformance.verdicts import VERDICTS

SCHEMA_VERSION = 4
READABLE_VERSIONS = (1, 2, 3, SCHEMA_VERSION)


@dataclass(frozen=True)
class ResultRecord:
    schema_version: int
    run_id: str
    timestamp: str  # ISO 8601, UTC, when the case finished
    case_id: str
    row_id: str
    pip: str
    table: str
    grade: str
    era: str
    api: str
    target: str
    target_version: Optional[str]
    driver: str
    verdict: str
    reason: str
    expected: Optional[dict]
    actual: Optional[dict]
    failing_step: Optional[int]
    duration_s: float
    source: list[str]
    namespace: str = ""
    known_divergence: str = ""
    client: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=False, ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> "ResultRecord":
        data = json.loads(line)
        if data.get("schema_version") == 1:  # no namespace nor known_divergence yet: both read empty
            data = {**data, "schema_version": 3, "namespace": "", "known_divergence": ""}
        if data.get("schema_version") == 2:  # the same fields; only target-error is new in 3
            data = {**data, "schema_version": 3}
        if data.get("schema_version") == 3:  # no client yet: read empty
            data = {**data, "schema_version": SCHEMA_VERSION, "client": ""}
        if data.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(f"result schema_version {data.get('schema_version')!r} is not {SCHEMA_VERSION}; "
                             "use a reader of the matching version")
        missing = [name for name in FIELDS if name not in data]
        extra = [name for name in data if name not in FIELDS]
        if missing or extra:
            raise ValueError(f"result record fields wrong: missing {missing}, unknown {extra}")
        if data["verdict"] not in VERDICTS:
            raise ValueError(f"unknown verdict {data['verdict']!r}; expected one of {VERDICTS}")
        return cls(**data)


FIELDS: tuple[str, ...] = tuple(f.name for f in fields(ResultRecord))


def outcome_json(value: Any) -> Optional[dict]:
    """An outcome (or ProtocolViolation) as JSON, or None when there is none."""
    if value is None:
        return None
    if hasattr(value, "to_json") and not isinstance(value, ResultRecord):
        return value.to_json()
    from model.outcomes import outcome_to_json
    return outcome_to_json(value)


def new_run_id() -> str:
    """Sortable and unique: ``20260722T101500Z-1a2b3c``."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


class ResultWriter:
    """Appends records to ``<out>/results/<run_id>.jsonl``, flushing each line."""

    def __init__(self, out_dir: Path, run_id: str):
        self.path = Path(out_dir) / "results" / f"{run_id}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8")

    def write(self, record: ResultRecord) -> None:
        from conformance.security import redact  # a token never reaches a results file
        self._file.write(redact(record.to_json()) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_results(path: Path) -> list[ResultRecord]:
    """Every record of one results file (blank lines ignored)."""
    with open(path, encoding="utf-8") as handle:
        return [ResultRecord.from_json(line) for line in handle if line.strip()]


def records_by_verdict(records: Iterable[ResultRecord]) -> dict[str, list[ResultRecord]]:
    grouped: dict[str, list[ResultRecord]] = {name: [] for name in VERDICTS}
    for record in records:
        grouped[record.verdict].append(record)
    return grouped
