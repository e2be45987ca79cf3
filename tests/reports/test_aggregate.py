"""The Spark job on local[2] over the fixed results: every table, bad lines, outputs on disk."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from reports.aggregate import ReportError, find_result_files, run_job, wilson
from reports.ingest import ingest
from reports.schema import BAD_REASONS
from tests.reports import fixtures

pytestmark = [pytest.mark.slow, pytest.mark.timeout(360)]


def _by(rows, *keys):
    return {tuple(r[k] for k in keys): r for r in rows}


def test_matrix_counts_the_latest_run_per_target(fixed_job):
    result, _, _ = fixed_job
    matrix = _by(result.tables["matrix"], "target", "pip", "grade")
    assert set(matrix) == {(t, p, g) for t in ("reference", "lite")
                           for p, g in (("344", "MUST"), ("344", "SHOULD"), ("157", "MUST"), ("157", "MAY"))}
    ref = matrix[("reference", "344", "MUST")]
    assert (ref["total"], ref["passed"], ref["failed"], ref["pass_rate"]) == (2, 2, 0, 1.0)
    assert matrix[("reference", "344", "SHOULD")]["failed"] == 1
    unsupported = matrix[("reference", "157", "MUST")]
    assert (unsupported["unsupported"], unsupported["pass_rate"]) == (1, None)  # never counted as a pass or fail
    indefinite = matrix[("reference", "157", "MAY")]
    assert (indefinite["indefinite"], indefinite["passed"], indefinite["pass_rate"]) == (1, 0, None)
    lite = matrix[("lite", "344", "MUST")]
    assert (lite["passed"], lite["failed"], lite["pass_rate"]) == (1, 1, 0.5)
    # the failure is a known divergence: still a failure, counted apart
    assert lite["expected_failure"] == 1 and ref["expected_failure"] == 0
    assert lite["run_id"] == fixtures.RUNS[2][0]
    assert matrix[("lite", "157", "MUST")]["pass_rate"] == 0.0


def test_runs_and_history(fixed_job):
    result, expected, _ = fixed_job
    runs = result.tables["runs"]
    assert len(runs) == 6 and result.records == expected["records"]
    assert {r["run_date"] for r in runs} == {"2026-07-01", "2026-07-02"}
    assert {(r["target"], r["run_id"]) for r in runs if r["recency"] == 1} == {
        ("reference", fixtures.RUNS[2][0]), ("lite", fixtures.RUNS[2][0])}
    history = _by(result.tables["history"], "target", "case_id")
    c2 = history[("reference", "pip344-a-002[binary]")]
    assert (c2["runs"], c2["passed"], c2["failed"], c2["last_verdict"], c2["flaky"]) == (3, 2, 1, "passed", True)
    c5 = history[("lite", "pip157-b-002[rest]")]
    assert (c5["broken"], c5["passed"], c5["flaky"]) == (1, 2, False)
    c4 = history[("lite", "pip157-b-001[binary]")]
    assert (c4["last_version"], c4["last_verdict"], c4["flaky"]) == ("0.2", "failed", False)


def test_flaky_cases_at_the_same_target_version_with_wilson_bounds(fixed_job):
    result, _, _ = fixed_job
    flaky = _by(result.tables["flaky"], "target", "target_version", "case_id")
    assert set(flaky) == {("reference", "1.0", "pip344-a-002[binary]"), ("reference", "1.0", "pip344-a-003[rest]"),
                          ("lite", "0.1", "pip344-a-001[binary]")}  # lite c4 failed only at 0.2: not flaky
    row = flaky[("reference", "1.0", "pip344-a-002[binary]")]
    low, high = wilson(2, 3)
    assert (row["passed"], row["failed"]) == (2, 1)
    assert row["pass_rate"] == pytest.approx(2 / 3, abs=1e-6)
    assert row["wilson_low"] == pytest.approx(low, abs=1e-6) and row["wilson_high"] == pytest.approx(high, abs=1e-6)
    lite = flaky[("lite", "0.1", "pip344-a-001[binary]")]
    assert lite["wilson_low"] == pytest.approx(wilson(1, 2)[0], abs=1e-6)


def test_run_diff_between_the_last_two_runs(fixed_job):
    result, _, _ = fixed_job
    diff = {(r["target"], r["case_id"]): (r["change"], r["before"], r["after"]) for r in result.tables["diff"]}
    assert diff == {
        ("reference", "pip344-a-002[binary]"): ("fix", "failed", "passed"),
        ("reference", "pip344-a-003[rest]"): ("regression", "passed", "failed"),
        ("reference", "pip157-b-002[rest]"): ("changed", "passed", "indefinite"),
        ("lite", "pip344-a-002[binary]"): ("intermittent", "failed", "passed"),
        ("lite", "pip157-b-001[binary]"): ("regression", "passed", "failed"),
    }
    assert {r["before_run"] for r in result.tables["diff"]} == {fixtures.RUNS[1][0]}


def _nearest_rank(values, p):
    values = sorted(values)
    return values[max(0, math.ceil(p * len(values)) - 1)]


def test_duration_percentiles_per_case_and_per_target(fixed_job):
    result, _, _ = fixed_job
    cases = _by(result.tables["durations_case"], "target", "case_id")
    c1 = cases[("reference", "pip344-a-001[binary]")]
    assert (c1["samples"], c1["p50_s"], c1["p99_s"]) == (3, 0.2, 0.9)
    assert ("reference", "pip157-b-001[binary]") not in cases  # unsupported: never executed
    for target in fixtures.TABLE:
        executed = [fixtures.duration(target, case, run) for case in fixtures.CASES for run in range(3)
                    if fixtures.TABLE[target][case][run] != "U"]
        row = _by(result.tables["durations_target"], "target")[(target,)]
        assert row["samples"] == len(executed)
        assert row["p50_s"] == _nearest_rank(executed, 0.5)
        assert row["p99_s"] == _nearest_rank(executed, 0.99)


def test_bad_lines_are_counted_with_file_and_line_and_not_fatal(fixed_job):
    result, expected, out = fixed_job
    assert result.bad_count == len(expected["bad"])
    found = [(b.file, b.line, b.reason) for b in result.bad_lines]
    assert found == [(f, n, BAD_REASONS[why]) for f, n, why in expected["bad"]]
    with open(out / "csv" / "bad_lines.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["file"], int(r["line"])) for r in rows] == [(f, n) for f, n, _ in expected["bad"]]


def test_outputs_parquet_partitioned_and_csv(fixed_job, spark):
    result, expected, out = fixed_job
    partitions = sorted(p.relative_to(out / "dataset").as_posix() for p in (out / "dataset").glob("run_date=*/*"))
    assert partitions == ["run_date=2026-07-01/target=lite", "run_date=2026-07-01/target=reference",
                          "run_date=2026-07-02/target=lite", "run_date=2026-07-02/target=reference"]
    dataset = spark.read.parquet(str(out / "dataset"))
    assert dataset.count() == expected["records"]
    assert {"run_date", "target", "result_file", "line", "source"} <= set(dataset.columns)
    assert not {"expected", "actual"} & set(dataset.columns)  # outcome objects stay in the result files
    # ``line`` is the record's line in ``result_file``: that line is the full record, expected/actual included.
    for row in dataset.collect():
        lines = Path(row["result_file"]).read_text(encoding="utf-8").split("\n")
        record = json.loads(lines[row["line"] - 1])
        assert {k: record[k] for k in ("run_id", "target", "case_id", "verdict", "duration_s")} == {
            k: row[k] for k in ("run_id", "target", "case_id", "verdict", "duration_s")}
        assert set(record["expected"]) == {"kind", "partitions"}
    for name in result.tables:
        assert spark.read.parquet(str(out / "tables" / f"{name}.parquet")).count() == len(result.tables[name]), name
        with open(out / "csv" / f"{name}.csv", encoding="utf-8") as handle:
            assert len(list(csv.DictReader(handle))) == len(result.tables[name]), name
    assert (out / "report.json").exists()


def test_no_valid_record_is_a_clear_error(spark, tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "bad.jsonl").write_text('{"schema_version": 1, "run_id": "x\nnot json\n', encoding="utf-8")
    with pytest.raises(ReportError, match=r"no valid result record in 1 result file\(s\) \(2 bad line\(s\), "
                                          r"e\.g\. .*bad\.jsonl:1"):
        run_job(spark, [tmp_path / "results"], tmp_path / "out")


def test_the_ingestion_and_the_line_rules_agree_on_odd_lines(spark, tmp_path):
    """Every line the ingestion refuses is named by number with line_problem's reason, and no other."""
    from reports.schema import line_problem

    good = fixtures.record(0, "reference", "c1").to_json()
    data = json.loads(good)
    odd = ["   ", "[1, 2]", '[{"a": 1}]', '{"a": 1}', '"text"', "42", "null", "\t",
           json.dumps({**data, "duration_s": "slow"}), json.dumps({**data, "duration_s": "NaN"}),
           json.dumps({**data, "failing_step": "x"}), json.dumps({**data, "source": "not a list"}),
           json.dumps({**data, "schema_version": True}), json.dumps({**data, "schema_version": 1.0}),
           json.dumps({**data, "case_id": 5}), json.dumps({**data, "source": [1, 2]}),
           json.dumps({**data, "expected": [1]}), good[:-1]]
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "odd.jsonl").write_text("\n".join([good, *odd]) + "\n", encoding="utf-8")
    files = find_result_files([tmp_path / "results"])
    result = ingest(spark, files, tmp_path / "dataset")
    python_bad = [(n, line_problem(line)) for n, line in enumerate([good, *odd], start=1) if line_problem(line)]
    assert [(line, reason) for line, reason, _ in result.entries[str(files[0])].bad] == python_bad
    assert result.bad_count == len(python_bad)
    records = spark.read.parquet(str(tmp_path / "dataset")).count()
    assert records == result.records == 1 + len(odd) - len(python_bad) - 2  # two blank lines are not records
