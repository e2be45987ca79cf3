"""Results of generated mutants, kept in a committed file and reused while what decided them holds.

- a committed file: the results live in ``mutation/generated-results.jsonl``, in the
  repository, one line per mutant. Every key is a hash of content, never of a machine or a date,
  so a result is as good on any clone as where it was made; a cache in the home directory would
  be empty on every fresh clone or machine, and a budgeted run would never get through the whole
  set.
- when a result holds (``still_holds``, ``Keys``):

  - its ``module_key`` holds: the mutant's id and changed lines and the unmutated source of its
    module (another edit of that module can change what the mutant does);
  - its ``harness_key`` holds: the source of what turns rows into verdicts (spec/*.py, model/,
    pulsar_codec/, pulsar_naming/, conformance/ but for the two files that only start mutation checks);
  - its ``plan`` holds: the targets and PIPs of the runs that judged it (``scope.Module.runs``);
  - and either its ``cases_key`` holds (every spec file of those PIPs, plus the files every PIP
    shares), or it was caught (killed, or an error or a time-out: ``run.judge``) and the row it
    was caught at is unchanged: adding or changing other rows cannot make that row pass, nor
    start a broker that did not start for it, so only survivors are tried again when rows are
    added;
  - and a survivor was judged by the current way of judging (``JUDGE``, ``run.judge``).

- changed rows only (``rows_to_retry``): a survivor for which only the ``cases_key`` fails is tried
  again on the rows that are new or changed since it was judged, and on no others: with the same
  broker code and harness the rows it passed pass again. That needs what the rows were: each
  ``cases_key`` a result was judged under keeps a snapshot line (``rows:<cases_key>``: every row's
  hash and a hash of the files every PIP shares, ``snapshot``). No snapshot, or a changed shared
  file (a feature or source every row may read), and the survivor is tried on everything again.
- appended, then compacted (``append``, ``compact``): the file is appended to as results come (a
  stopped run keeps what it finished) and written back compacted, one line per current mutant
  sorted by id, at the end of a run: results of mutants that no longer exist are dropped.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

import yaml

from mutation.generated import scope
from mutation.generated.mutants import Mutant

RESULTS_FILE = Path("mutation") / "generated-results.jsonl"
SHARED_SPEC = ("spec/features.yaml", "spec/sources.yaml")
# Not harness: these start mutation checks; no conformance run executes them.
NOT_HARNESS = ("conformance/mutation_check.py", "conformance/power_commands.py")
HARNESS_DIRS = ("conformance", "model", "pulsar_codec", "pulsar_naming")
# How a survivor was judged (``run.judge``); a survivor judged an older way is tested again.
JUDGE = 2
CAUGHT = ("killed", "error", "timeout")
_PIP_LINE = re.compile(r'^pip:\s*"?([0-9A-Za-z]+)"?\s*$', re.MULTILINE)


def _sha(parts: Iterable[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()[:20]


def module_key(mutant: Mutant, original_source: str) -> str:
    return _sha([mutant.id.encode(), mutant.before.encode(), mutant.after.encode(), original_source.encode()])


def harness_files(root: Path) -> list[Path]:
    files = sorted(root.glob("spec/*.py"))
    for folder in HARNESS_DIRS:
        files += sorted(p for p in (root / folder).rglob("*.py")
                        if "__pycache__" not in p.parts and not p.name.endswith("_pb2.py"))
    excluded = {root / name for name in NOT_HARNESS}
    return [p for p in files if p not in excluded]


def harness_key(root: Path) -> str:
    files = harness_files(root)
    return _sha([p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() for p in files])


def spec_files_of(root: Path, pips: Iterable[str]) -> list[Path]:
    """The spec files whose ``pip:`` is one of ``pips``, and the files every PIP shares."""
    wanted = set(pips)
    chosen = [root / name for name in SHARED_SPEC]
    for path in sorted([*root.glob("spec/*.yaml"), *root.glob("spec/generated/*.yaml")]):
        match = _PIP_LINE.search(path.read_text(encoding="utf-8"))
        if match and match.group(1) in wanted:
            chosen.append(path)
    return chosen


def cases_key(root: Path, pips: Iterable[str]) -> str:
    return _sha([p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() for p in spec_files_of(root, pips)])


def broker_key(root: Path) -> str:
    """The whole unmutated broker: what a baseline run depends on besides the harness and the spec."""
    files = sorted(p for p in (root / "reference_broker").rglob("*.py") if "__pycache__" not in p.parts)
    return _sha([p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() for p in files])


def baseline_id(run: scope.Run) -> str:
    return f"baseline:{plan_key([run])}"


def baseline_key(root: Path, run: scope.Run, harness: str, broker: str) -> str:
    return _sha([harness.encode(), broker.encode(), cases_key(root, run.pips).encode(), plan_key([run]).encode()])


def plan_key(runs: Iterable[scope.Run]) -> str:
    return ";".join(f"{run.target}:{','.join(run.pips)}" for run in runs)


def _row_digests(paths: Iterable[Path]) -> dict[str, str]:
    """Row id -> a hash of the row as data (with its table's name), over ``paths``."""
    digests: dict[str, str] = {}
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for path in paths:
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=loader) or {}
        for table in document.get("tables", []) if isinstance(document, dict) else []:
            for row in table.get("rows", []) or []:
                if isinstance(row, dict) and "id" in row:
                    text = json.dumps({"table": table.get("name"), "row": row}, sort_keys=True, default=str)
                    digests[str(row["id"])] = _sha([text.encode()])
    return digests


class RowIndex:
    """Row id -> a hash of the row as data, over every spec file (read once, on first use)."""

    def __init__(self, root: Path):
        self.root = root
        self._rows: Optional[dict[str, str]] = None

    def digest(self, row_id: str) -> Optional[str]:
        if self._rows is None:
            self._rows = _row_digests(sorted([*self.root.glob("spec/*.yaml"), *self.root.glob("spec/generated/*.yaml")]))
        return self._rows.get(row_id)


def shared_key(root: Path) -> str:
    return _sha([(root / name).read_bytes() for name in SHARED_SPEC])


def snapshot_id(cases: str) -> str:
    return f"rows:{cases}"


def snapshot(root: Path, pips: Iterable[str], cases: str) -> dict:
    """Changed rows only: what the rows of ``pips`` are now, kept beside the results judged under ``cases``."""
    files = [p for p in spec_files_of(root, pips) if p.relative_to(root).as_posix() not in SHARED_SPEC]
    return {"id": snapshot_id(cases), "rows": _row_digests(files), "shared": shared_key(root)}


def rows_of(root: Path, pips: Iterable[str]) -> set[str]:
    """The ids of the rows of ``pips``."""
    return set(_row_digests(p for p in spec_files_of(root, pips) if p.relative_to(root).as_posix() not in SHARED_SPEC))


def rows_to_retry(result: dict, keys: Keys, before: Optional[dict], now: dict) -> Optional[tuple[str, ...]]:
    """Changed rows only: the rows a survivor must still pass (none: its result holds), or None when it must
    be tried on every row. ``before``: the snapshot of the result's ``cases_key``; ``now``: one of
    the current rows."""
    if result.get("status") != "survived" or result.get("judge") != JUDGE or before is None:
        return None
    if (result.get("module_key"), result.get("harness_key"), result.get("plan")) != (keys.module, keys.harness,
                                                                                       keys.plan):
        return None
    if before.get("shared") != now.get("shared"):
        return None
    old = before.get("rows") or {}
    return tuple(sorted(row for row, digest in now["rows"].items() if old.get(row) != digest))


@dataclass
class Keys:
    """What a result must match to be reused (``still_holds``), for one mutant now."""

    module: str
    harness: str
    cases: str
    plan: str


def still_holds(result: dict, keys: Keys, rows: RowIndex) -> bool:
    if (result.get("module_key"), result.get("harness_key"), result.get("plan")) != (keys.module, keys.harness,
                                                                                       keys.plan):
        return False
    if result.get("status") == "survived" and result.get("judge") != JUDGE:
        return False
    if result.get("cases_key") == keys.cases:
        return True
    killer_row = result.get("killer_row")
    return result.get("status") in CAUGHT and bool(killer_row) and \
        result.get("killer_row_digest") is not None and rows.digest(killer_row) == result["killer_row_digest"]


def load(path: Path) -> dict[str, dict]:
    """mutant id -> its latest result (later lines win: ``append`` adds them as results come)."""
    results: dict[str, dict] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return results
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line cut by a stopped run
        if isinstance(entry, dict) and "id" in entry:
            results[entry["id"]] = entry
    return results


def append(path: Path, result: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(result, sort_keys=True) + "\n")


def compact(path: Path, current_ids: set[str]) -> None:
    """One line per current mutant, sorted by id, and the row snapshots those lines name (``snapshot``)."""
    results = load(path)
    kept = {i for i in results if i in current_ids}
    kept |= {snapshot_id(results[i]["cases_key"]) for i in list(kept) if results[i].get("cases_key")}
    lines = [json.dumps(results[i], sort_keys=True) for i in sorted(results) if i in kept]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
