"""The ingestion (reports/ingest.py, parse.py, bundles.py, manifest.py): the fast and slow paths agree, the
layout, the incremental manifest, the per-target summaries, and tasks that need no project code."""

from __future__ import annotations

import csv
import json
import math
import os
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from conformance.results import ResultWriter
from reports import bundles, dataset_layout, ingest
from reports.aggregate import run_job, summarize_target
from reports.manifest import MANIFEST
from reports.schema import BAD_REASONS, line_problem
from tests.reports import fixtures

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(360)]


def _good(run: int = 0, target: str = "reference", case: str = "c1") -> str:
    return fixtures.record(run, target, case).to_json()


def _ingest_both_ways(tmp_path: Path, lines: list[str]) -> tuple[dict, dict]:
    path = tmp_path / "results" / "20260701T100000Z-aaaaaa.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    fast = bundles.ingest_file(str(path), "f", str(tmp_path / "fast"))
    slow = bundles.ingest_file(str(path), "s", str(tmp_path / "slow"), force_slow=True)
    return fast["entry"], slow["entry"]


def _rows(dataset: Path) -> list[dict]:
    import pyarrow.parquet as pq

    rows = []
    for part in sorted(dataset.glob("*/*/*.parquet")):
        rows.extend(pq.read_table(part).to_pylist())
    return sorted(rows, key=lambda r: r["line"])


ODD_BUT_PARSEABLE = [  # pyarrow reads each of these with the explicit schema: Arrow compute must refuse them
    lambda d: {**d, "schema_version": 4}, lambda d: {**d, "verdict": "great"}, lambda d: {**d, "case_id": ""},
    lambda d: {k: v for k, v in d.items() if k != "run_id"}, lambda d: {**d, "target": None},
    lambda d: {}, lambda d: {**d, "duration_s": None}, lambda d: {**d, "source": ["x", None]},
    lambda d: {**d, "extra_field": {"nested": [1, 2]}}, lambda d: {**d, "target_version": None},
]


def test_fast_path_refuses_what_line_problem_refuses_with_the_same_reason(tmp_path):
    data = json.loads(_good())
    lines = [_good()] + [json.dumps(change(data)) for change in ODD_BUT_PARSEABLE] + ["null", _good(1)]
    lines.append('{"schema_version": 1, "run_id": "r", "timestamp": "t", "case_id": "c", "target": "x", '
                 '"verdict": "passed", "duration_s": NaN}')  # Python's json writes NaN bare: refused
    fast, slow = _ingest_both_ways(tmp_path, lines)
    assert fast["parser"] == "fast" and slow["parser"] == "slow"
    expected = [[n, line_problem(line)] for n, line in enumerate(lines, start=1) if line_problem(line)]
    assert [b[:2] for b in fast["bad"]] == [b[:2] for b in slow["bad"]] == expected
    assert fast["records"] == slow["records"] == len(lines) - len(expected)
    fast_rows, slow_rows = _rows(tmp_path / "fast"), _rows(tmp_path / "slow")
    assert [r["line"] for r in fast_rows] == [n for n in range(1, len(lines) + 1) if not line_problem(lines[n - 1])]
    for a, b in zip(fast_rows, slow_rows, strict=True):
        assert {k: v for k, v in a.items() if k != "result_file"} == {k: v for k, v in b.items() if k != "result_file"}


def test_blank_lines_and_a_truncated_line_take_the_slow_path_with_exact_line_numbers(tmp_path):
    lines = [_good(), "", _good(0, "lite"), "   ", _good(0, "reference", "c2")[:50], _good(0, "lite", "c2")]
    fast, slow = _ingest_both_ways(tmp_path, lines)
    assert fast["parser"] == "slow"  # blank lines: pyarrow's rows would not be the file's lines
    assert fast["bad"] == slow["bad"] == [[5, BAD_REASONS["json"], lines[4][:120]]]
    rows = _rows(tmp_path / "fast")
    assert [(r["line"], r["case_id"]) for r in rows] == [
        (1, fixtures.CASES["c1"][0]), (3, fixtures.CASES["c1"][0]), (6, fixtures.CASES["c2"][0])]


def test_values_pyarrow_refuses_are_read_as_the_rules_say(tmp_path):
    data = json.loads(_good())
    lines = [json.dumps({**data, "case_id": 5}), json.dumps({**data, "source": [1, "a"]}),
             json.dumps({**data, "failing_step": 2 ** 70}), json.dumps({**data, "duration_s": "slow"}),
             json.dumps({**data, "reason": "\ud800"})]  # a lone surrogate: no UTF-8 for it, not storable
    fast, _ = _ingest_both_ways(tmp_path, lines)
    assert fast["parser"] == "slow"
    assert fast["bad"] == [[3, BAD_REASONS["json"], lines[2][:120]], [4, BAD_REASONS["json"], lines[3][:120]],
                           [5, BAD_REASONS["json"], lines[4][:120]]]
    rows = _rows(tmp_path / "fast")
    assert (rows[0]["case_id"], rows[1]["source"]) == ("5", ["1", "a"])  # a JSON value as its text, as Spark read it


def test_partition_folders_are_escaped_as_spark_escapes_them(spark, tmp_path):
    writer = ResultWriter(tmp_path, "20260701T100000Z-aaaaaa")
    for target in ("url:pulsar://host:6650,http://host:8080", "a=b%c"):
        writer.write(replace(fixtures.record(0, "reference", "c1"), target=target))
    writer.close()
    result = ingest.ingest(spark, sorted((tmp_path / "results").glob("*.jsonl")), tmp_path / "dataset")
    assert result.records == 2
    assert sorted(p.name for p in (tmp_path / "dataset" / "run_date=2026-07-01").iterdir()) == [
        "target=a%3Db%25c", "target=url%3Apulsar%3A%2F%2Fhost%3A6650,http%3A%2F%2Fhost%3A8080"]
    targets = {r["target"] for r in spark.read.parquet(str(tmp_path / "dataset")).collect()}
    assert targets == {"url:pulsar://host:6650,http://host:8080", "a=b%c"}


def test_the_dataset_is_readable_by_duckdb(fixed_job):
    import duckdb

    _, expected, out = fixed_job
    rows = duckdb.sql(f"SELECT target, run_date, count(*) FROM read_parquet('{out}/dataset/*/*/*.parquet', "
                      "hive_partitioning = true) GROUP BY ALL").fetchall()
    assert sum(n for _, _, n in rows) == expected["records"]
    assert {t for t, _, _ in rows} == set(fixtures.TABLE)


# -- incremental -------------------------------------------------------------------------------------

def _tables(out: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted((out / "csv").glob("*.csv"))}


def _dataset_count(spark, out: Path) -> int:
    return spark.read.parquet(str(out / "dataset")).count()


def _parts(out: Path) -> dict[str, int]:
    return {p.relative_to(out / "dataset").as_posix(): p.stat().st_mtime_ns for p in (out / "dataset").glob("*/*/*")}


def test_a_second_report_ingests_nothing_and_gives_the_same_tables(spark, tmp_path):
    fixtures.write_results(tmp_path)
    out = tmp_path / "out"
    first = run_job(spark, [tmp_path / "results"], out)
    tables, parts = _tables(out), _parts(out)
    second = run_job(spark, [tmp_path / "results"], out)
    assert (second.timings["files_ingested"], second.timings["files_unchanged"]) == (0, 4)
    assert _tables(out) == tables and _parts(out) == parts  # not one part rewritten
    assert second.tables == first.tables
    assert [(b.file, b.line, b.reason) for b in second.bad_lines] == [(b.file, b.line, b.reason)
                                                                      for b in first.bad_lines]
    rebuilt = run_job(spark, [tmp_path / "results"], out, rebuild=True)
    assert rebuilt.timings["files_ingested"] == 4 and _tables(out) == tables


def test_appending_a_run_ingests_only_it(spark, tmp_path):
    fixtures.write_results(tmp_path)
    out = tmp_path / "out"
    before = run_job(spark, [tmp_path / "results"], out)
    writer = ResultWriter(tmp_path, "20260703T100000Z-dddddd")
    for target in fixtures.TABLE:
        for case in fixtures.CASES:
            writer.write(replace(fixtures.record(0, target, case), run_id="20260703T100000Z-dddddd",
                                 timestamp="2026-07-03T10:00:00.000+00:00", verdict="passed"))
    writer.close()
    after = run_job(spark, [tmp_path / "results"], out)
    assert (after.timings["files_ingested"], after.timings["files_unchanged"]) == (1, 4)
    assert after.records == before.records + 10 == _dataset_count(spark, out)
    latest = {r["target"]: r["run_id"] for r in after.tables["runs"] if r["recency"] == 1}
    assert latest == {"reference": "20260703T100000Z-dddddd", "lite": "20260703T100000Z-dddddd"}
    assert {r["before_run"] for r in after.tables["diff"]} == {fixtures.RUNS[2][0]}


def test_removing_a_file_removes_its_records(spark, tmp_path):
    fixtures.write_results(tmp_path)
    out = tmp_path / "out"
    before = run_job(spark, [tmp_path / "results"], out)
    gone = tmp_path / "results" / f"{fixtures.RUNS[0][0]}.jsonl"
    gone.unlink()
    after = run_job(spark, [tmp_path / "results"], out)
    assert after.timings["files_removed"] == 1 and after.timings["files_ingested"] == 0
    assert after.records == before.records - 10 == _dataset_count(spark, out)
    assert fixtures.RUNS[0][0] not in {r["run_id"] for r in after.tables["runs"]}
    assert not list((out / "dataset").glob("run_date=2026-07-01"))  # its only partition folder went with it
    assert str(gone) not in json.loads((out / "dataset" / MANIFEST).read_text())["files"]


def test_changing_a_file_replaces_its_records(spark, tmp_path):
    fixtures.write_results(tmp_path)
    out = tmp_path / "out"
    before = run_job(spark, [tmp_path / "results"], out)
    changed = tmp_path / "results" / f"{fixtures.RUNS[1][0]}.jsonl"
    # R2 again, but only the reference target and every case failed: lite's R2 part must go.
    lines = [json.loads(line) for line in changed.read_text(encoding="utf-8").splitlines()]
    changed.write_text("".join(json.dumps({**d, "verdict": "failed"}) + "\n" for d in lines
                               if d["target"] == "reference"), encoding="utf-8")
    after = run_job(spark, [tmp_path / "results"], out)
    assert (after.timings["files_ingested"], after.timings["files_unchanged"]) == (1, 3)
    assert after.records == before.records - 5 == _dataset_count(spark, out)
    r2 = {(r["target"], r["run_id"]): r for r in after.tables["runs"] if r["run_id"] == fixtures.RUNS[1][0]}
    assert list(r2) == [("reference", fixtures.RUNS[1][0])] and r2[("reference", fixtures.RUNS[1][0])]["failed"] == 5
    dataset = spark.read.parquet(str(out / "dataset"))
    assert dataset.filter(f"run_id = '{fixtures.RUNS[1][0]}' AND verdict = 'passed'").count() == 0


def test_leftovers_of_a_run_that_died_and_an_old_dataset_are_cleared(spark, tmp_path):
    fixtures.write_results(tmp_path)
    out = tmp_path / "out"
    (out / "dataset" / "run_date=2026-07-01" / "target=reference").mkdir(parents=True)
    old = out / "dataset" / "run_date=2026-07-01" / "target=reference" / "part-00000-spark.snappy.parquet"
    old.write_bytes(b"a dataset the Spark writer left, without a manifest")
    (out / "dataset" / "_SUCCESS").write_text("")
    first = run_job(spark, [tmp_path / "results"], out)
    assert not old.exists() and not (out / "dataset" / "_SUCCESS").exists()
    stray = out / "dataset" / "run_date=2026-07-02" / "target=lite" / "part-stray-0123456789ab.parquet"
    stray.write_bytes((out / "dataset" / next(iter(_parts(out)))).read_bytes())  # a part no entry claims
    (stray.parent / ".part-stray.parquet.123.tmp").write_bytes(b"half")
    second = run_job(spark, [tmp_path / "results"], out)
    assert not stray.exists() and not (stray.parent / ".part-stray.parquet.123.tmp").exists()
    assert second.records == first.records == _dataset_count(spark, out)


def test_report_cli_rebuild_flag(tmp_path):
    fixtures.write_results(tmp_path)
    command = [sys.executable, "-m", "reports", "--results", str(tmp_path / "results"), "--out", str(tmp_path / "out"),
               "--no-allure", "--quiet"]
    first = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert first.returncode == 0, first.stderr[-3000:]
    again = subprocess.run([*command, "--rebuild"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "'files_ingested': 4" in again.stderr and "'files_ingested': 4" in first.stderr
    with open(tmp_path / "out" / "csv" / "bad_lines.csv", encoding="utf-8") as handle:
        assert len(list(csv.DictReader(handle))) == 5


# -- the per-target summaries --------------------------------------------------------------------------

def test_percentiles_are_exact_beyond_what_percentile_approx_kept_exact(tmp_path):
    rng = random.Random(5)
    base = json.loads(_good())
    durations = [round(rng.lognormvariate(-4.5, 1.2), 6) for _ in range(25_000)]
    path = tmp_path / "results" / "20260701T100000Z-aaaaaa.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps({**base, "duration_s": d, "timestamp": f"2026-07-01T10:00:{i % 60:02d}"})
                            + "\n" for i, d in enumerate(durations)), encoding="utf-8")
    entry = bundles.ingest_file(str(path), "x", str(tmp_path / "dataset"))["entry"]
    summary = summarize_target(str(tmp_path / "dataset"), base["target"], [entry["bundle"]])
    ordered = sorted(durations)
    nearest = [ordered[max(0, math.ceil(q * len(ordered)) - 1)] for q in (0.5, 0.99)]
    row = summary["durations_target"][0]
    assert (row["samples"], row["p50_s"], row["p99_s"]) == (len(durations), *nearest)
    assert [(r["samples"], r["p50_s"], r["p99_s"]) for r in summary["durations_case"]] == [(len(durations), *nearest)]


# -- executors need no project code ------------------------------------------------------------------

def test_the_tasks_run_where_the_project_cannot_be_imported(tmp_path):
    """What Spark ships (cloudpickle, by value) runs in an interpreter where ``reports`` and ``conformance``
    cannot be imported: executors of a cluster need only pyarrow."""
    from pyspark import cloudpickle

    import reports.aggregate as aggregate
    from reports.bundles import run_item

    fixtures.write_results(tmp_path)
    source = sorted((tmp_path / "results").glob("*.jsonl"))[0]
    ingest.ship_by_value(aggregate)  # as aggregate.summarize does before its job
    dataset = str(tmp_path / "dataset")
    # The same closures as ingest.ingest and aggregate.summarize hand to Spark: an ingestion, a summary, a prune.
    task = cloudpickle.dumps((lambda item: run_item(item, dataset),
                              lambda target, bundles: summarize_target(dataset, target, bundles),
                              ("ingest", dataset_layout.file_id(str(source)), [str(source)])))
    (tmp_path / "task.pickle").write_bytes(task)
    script = (
        "import sys, pickle, json\n"
        "sys.path = [p for p in sys.path if p not in ('', %r)]\n"
        "for name in ('reports', 'conformance', 'tests'): sys.modules[name] = None  # any import of them fails\n"
        "run, summarize, item = pickle.loads(open(%r, 'rb').read())\n"
        "done = run(item)['files']\n"
        "summary = summarize('reference', [done[0]['entry']['bundle']])\n"
        "entry = done[0]['entry']\n"
        "pruned = run(('prune', entry['bundle'], entry['parts'], [done[0]['file']]))['pruned']\n"
        "print(json.dumps({'records': entry['records'], 'runs': len(summary['runs']),\n"
        "                  'recent': len(summary['recent']), 'pruned': pruned['deleted'] == entry['parts']}))\n"
    ) % (str(ROOT), str(tmp_path / "task.pickle"))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"records": 10, "runs": 1, "recent": 5, "pruned": True}
