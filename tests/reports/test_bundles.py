"""The ingestion (reports/ingest.py, bundles.py, partials.py, manifest.py): many result files per bundle and
part, the summary partials, pruning a changed or removed file out of its bundle. The tables are checked against an oracle computed here in plain
Python from the result lines, and must not depend on how the files were bundled."""

from __future__ import annotations

import json
import math
import random
from dataclasses import asdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from reports import dataset_layout, ingest
from reports.aggregate import run_job
from reports.manifest import MANIFEST
from tests.reports import fixtures

pytestmark = [pytest.mark.slow, pytest.mark.timeout(360)]

TARGETS = ("reference", "lite")
CASES = list(fixtures.CASES)
VERDICTS = ("passed", "failed", "unsupported", "indefinite", "broken")


def _write_runs(results: Path, runs: range, seed: int = 1) -> list[Path]:
    """One file per run: every target x case, verdicts drawn, line order shuffled in some files (timestamps
    then go back), timestamps tied across runs on purpose, a version change at run 6, a null duration."""
    rng = random.Random(seed)
    results.mkdir(parents=True, exist_ok=True)
    paths = []
    for run in runs:
        day = 1 + run // 4
        run_id = f"202607{day:02d}T{10 + run % 4:02d}0000Z-{run:06x}"
        lines = []
        for target in TARGETS:
            for number, case in enumerate(CASES):
                data = asdict(fixtures.record(0, target, case))
                # Runs 2k and 2k+1 share their timestamps: ties that only the file and line break.
                stamp = f"2026-07-{day:02d}T{10 + (run - run % 2) % 4:02d}:00:{number:02d}.000+00:00"
                data.update(run_id=run_id, timestamp=stamp, verdict=rng.choice(VERDICTS),
                            target_version="1.0" if run < 6 else "2.0",
                            duration_s=None if (run, number) == (3, 1) else round(rng.uniform(0.01, 3.0), 3))
                lines.append(json.dumps(data))
        if run % 3 == 1:
            rng.shuffle(lines)
        path = results / f"{run_id}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def _records(results: Path) -> list[dict]:
    rows = []
    for path in sorted(results.glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            rows.append({**json.loads(line), "file": str(path.resolve()), "line": number})
    return rows


def _nearest(values: list[float], q: float):
    values = sorted(values)
    return values[max(0, math.ceil(q * len(values)) - 1)] if values else None


def _oracle(results: Path) -> dict:
    """history (counts, first/last seen, last verdict by (timestamp, file, line)) and the durations tables."""
    history, durations = {}, {}
    for row in _records(results):
        key = (row["target"], row["case_id"], row["driver"])
        entry = history.setdefault(key, {"runs": 0, **{v: 0 for v in VERDICTS}, "seen": []})
        entry["runs"] += 1
        entry[row["verdict"]] += 1
        entry["seen"].append((row["timestamp"], row["file"], row["line"], row["verdict"]))
        if row["verdict"] != "unsupported":
            case = durations.setdefault((row["target"], row["case_id"]), {"samples": 0, "values": []})
            case["samples"] += 1
            if row["duration_s"] is not None:
                case["values"].append(row["duration_s"])
    for entry in history.values():
        seen = sorted(entry.pop("seen"))
        entry.update(first_seen=seen[0][0], last_seen=seen[-1][0], last_verdict=seen[-1][3])
    return {"history": history,
            "durations_case": {key: (d["samples"], _nearest(d["values"], 0.5), _nearest(d["values"], 0.99))
                               for key, d in durations.items()}}


def _found(result) -> dict:
    columns = ("runs", *VERDICTS, "first_seen", "last_seen", "last_verdict")
    return {"history": {(r["target"], r["case_id"], r["driver"]): {c: r[c] for c in columns}
                        for r in result.tables["history"]},
            "durations_case": {(r["target"], r["case_id"]): (r["samples"], r["p50_s"], r["p99_s"])
                               for r in result.tables["durations_case"]}}


def _dataset_rows(out: Path) -> list[tuple]:
    rows = []
    for part in sorted((out / "dataset").glob("run_date=*/target=*/*.parquet")):
        table = pq.read_table(part, columns=["result_file", "line", "case_id", "verdict"])
        rows.extend(zip(*table.to_pydict().values()))
    return sorted(rows)


def _csvs(out: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted((out / "csv").glob("*.csv"))}


@pytest.fixture
def few_bundles(monkeypatch):
    """Two bundles on local[2] (one per core), so that each holds several result files."""
    monkeypatch.setattr(ingest, "BUNDLES_PER_CORE", 1)


def test_bundles_cut_files_in_order_into_about_equal_bytes():
    sizes = [5, 1, 1, 1, 1, 1, 1, 1, 30, 2]
    for parallelism in (1, 2, 4, 64):
        bounds = ingest.bundles_for(sizes, parallelism)
        assert [b for bound in bounds for b in range(*bound)] == list(range(len(sizes)))  # contiguous, all once
        assert len(bounds) <= min(len(sizes), max(parallelism * ingest.BUNDLES_PER_CORE, 1))
    assert len(ingest.bundles_for([ingest.BUNDLE_BYTES // 2] * 40, 1)) >= 20  # never more than BUNDLE_BYTES-ish
    assert ingest.bundles_for([], 2) == []


def test_one_part_per_bundle_and_partition_holds_many_files(spark, tmp_path, few_bundles):
    paths = _write_runs(tmp_path / "results", range(12))
    out = tmp_path / "out"
    result = run_job(spark, [tmp_path / "results"], out)
    manifest = json.loads((out / "dataset" / MANIFEST).read_text())["files"]
    bundles = {entry["bundle"] for entry in manifest.values()}
    assert len(bundles) == 2 and len(manifest) == len(paths)
    parts = sorted((out / "dataset").glob("run_date=*/target=*/*.parquet"))
    # 3 days x 2 targets, each day in one bundle but the one the cut splits.
    assert len(parts) <= (3 + 1) * len(TARGETS)
    assert max(len(set(pq.read_table(p, columns=["result_file"])["result_file"].to_pylist())) for p in parts) >= 4
    for path, entry in manifest.items():  # each file's parts are exactly those holding its rows
        holding = [p.relative_to(out / "dataset").as_posix() for p in parts
                   if path in pq.read_table(p, columns=["result_file"])["result_file"].to_pylist()]
        assert entry["parts"] == holding
    assert sorted((out / "dataset" / dataset_layout.PARTIALS).iterdir()) == sorted(
        out / "dataset" / dataset_layout.partial_path(b, kind) for b in bundles for kind in dataset_layout.PARTIAL_KINDS)
    assert _found(result) == _oracle(tmp_path / "results")


def test_the_tables_do_not_depend_on_the_bundling(spark, tmp_path, monkeypatch):
    _write_runs(tmp_path / "results", range(12))
    monkeypatch.setattr(ingest, "BUNDLES_PER_CORE", 1)
    two = run_job(spark, [tmp_path / "results"], tmp_path / "two")
    monkeypatch.setattr(ingest, "BUNDLES_PER_CORE", 64)  # one file per bundle
    many = run_job(spark, [tmp_path / "results"], tmp_path / "many")
    assert len({e["bundle"] for e in json.loads(
        (tmp_path / "many" / "dataset" / MANIFEST).read_text())["files"].values()}) == 12
    assert _csvs(tmp_path / "two") == _csvs(tmp_path / "many")
    assert two.tables == many.tables
    assert _dataset_rows(tmp_path / "two") == _dataset_rows(tmp_path / "many")


def test_changed_removed_and_new_files_inside_bundles_match_a_rebuild(spark, tmp_path, few_bundles):
    paths = _write_runs(tmp_path / "results", range(12))
    out = tmp_path / "out"
    run_job(spark, [tmp_path / "results"], out)
    before = json.loads((out / "dataset" / MANIFEST).read_text())["files"]
    changed, removed = paths[2], paths[9]  # one in each bundle
    assert before[str(changed.resolve())]["bundle"] != before[str(removed.resolve())]["bundle"]
    lines = [json.loads(line) for line in changed.read_text(encoding="utf-8").splitlines()]
    changed.write_text("".join(json.dumps({**d, "verdict": "broken"}) + "\n" for d in lines
                               if d["target"] == "reference"), encoding="utf-8")  # lite's rows of it go
    removed.unlink()
    _write_runs(tmp_path / "results", range(12, 13), seed=2)
    after = run_job(spark, [tmp_path / "results"], out)
    assert (after.timings["files_ingested"], after.timings["files_removed"]) == (2, 1)
    assert after.timings["files_unchanged"] == 10
    manifest = json.loads((out / "dataset" / MANIFEST).read_text())["files"]
    for path, entry in before.items():  # the unchanged files stay in their bundles, not read again
        if path in manifest and Path(path) != changed.resolve():
            assert manifest[path]["bundle"] == entry["bundle"]
    rows = _dataset_rows(out)
    assert not [r for r in rows if r[0] == str(removed.resolve())]
    assert sorted({r[3] for r in rows if r[0] == str(changed.resolve())}) == ["broken"]
    assert _found(after) == _oracle(tmp_path / "results")
    rebuilt = run_job(spark, [tmp_path / "results"], tmp_path / "rebuilt")
    assert after.tables == rebuilt.tables and _csvs(out) == _csvs(tmp_path / "rebuilt")
    assert rows == _dataset_rows(tmp_path / "rebuilt")
    assert after.records == len(rows) == spark.read.parquet(str(out / "dataset")).count()
    # A partition that only the removed file's rows filled is gone with them, folder and all.
    assert not list((out / "dataset").glob("run_date=*/target=*/.*"))


def test_removing_every_file_of_a_bundle_deletes_it(spark, tmp_path, few_bundles):
    paths = _write_runs(tmp_path / "results", range(8))
    out = tmp_path / "out"
    run_job(spark, [tmp_path / "results"], out)
    manifest = json.loads((out / "dataset" / MANIFEST).read_text())["files"]
    first = manifest[str(paths[0].resolve())]["bundle"]
    for path in paths:
        if manifest[str(path.resolve())]["bundle"] == first:
            path.unlink()
    after = run_job(spark, [tmp_path / "results"], out)
    assert after.timings["files_ingested"] == 0
    assert not list((out / "dataset").glob(f"**/*{first}*"))
    assert _found(after) == _oracle(tmp_path / "results")


def test_a_bundle_with_a_part_or_partial_missing_is_read_again(spark, tmp_path, few_bundles):
    _write_runs(tmp_path / "results", range(8))
    out = tmp_path / "out"
    first = run_job(spark, [tmp_path / "results"], out)
    manifest = json.loads((out / "dataset" / MANIFEST).read_text())["files"]
    bundle = sorted({e["bundle"] for e in manifest.values()})[0]
    members = sum(1 for e in manifest.values() if e["bundle"] == bundle)
    (out / "dataset" / dataset_layout.partial_path(bundle, "versions")).unlink()
    stray = out / "dataset" / dataset_layout.partial_path("stray-0123456789ab", "runs")  # left by a run that died
    stray.write_bytes((out / "dataset" / dataset_layout.partial_path(bundle, "runs")).read_bytes())
    second = run_job(spark, [tmp_path / "results"], out)
    assert second.timings["files_ingested"] == members and second.tables == first.tables
    assert not stray.exists() and not (out / "dataset" / dataset_layout.partial_path(bundle, "runs")).exists()
    part = next((out / "dataset").glob("run_date=*/target=*/*.parquet"))
    part.unlink()
    third = run_job(spark, [tmp_path / "results"], out)
    assert third.timings["files_ingested"] >= 1 and third.tables == first.tables
    assert _dataset_rows(out) == sorted(
        (r["file"], r["line"], r["case_id"], r["verdict"]) for r in _records(tmp_path / "results"))
