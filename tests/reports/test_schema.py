"""reports/schema.py and the job's pure parts: record rules, Wilson bounds, finding inputs. No Spark."""

from __future__ import annotations

import json

import pytest

from conformance.results import FIELDS
from reports import schema as S
from reports.__main__ import main
from reports.aggregate import ReportError, find_result_files, wilson
from tests.reports import fixtures


def test_spark_types_cover_exactly_the_result_fields():
    assert tuple(S.SPARK_TYPES) == FIELDS
    assert S.spark_schema().fieldNames() == list(FIELDS)


def test_line_rules():
    good = fixtures.record(0, "reference", "c1").to_json()
    assert S.line_problem(good) is None
    assert S.line_problem("   ") is None  # blank lines are not records
    assert S.line_problem(good[:40]) == S.BAD_REASONS["json"]
    assert S.line_problem("[1, 2]") == S.BAD_REASONS["json"]
    data = json.loads(good)
    assert S.line_problem(json.dumps({**data, "schema_version": 5})) == S.BAD_REASONS["schema_version"]
    assert S.line_problem(json.dumps({key: value for key, value in {**data, "schema_version": 3}.items()
                                      if key != "client"})) is None  # schema 4 only adds client
    assert S.line_problem(json.dumps({**data, "schema_version": 2})) is None  # schema 3 only adds a verdict
    assert S.line_problem(json.dumps({**data, "verdict": "target-error"})) is None
    # a record written before namespace and known_divergence existed is still read
    older = {key: value for key, value in data.items() if key not in ("namespace", "known_divergence")}
    assert S.line_problem(json.dumps({**older, "schema_version": 1})) is None
    assert S.line_problem(json.dumps({**data, "verdict": "ok"})) == S.BAD_REASONS["verdict"]
    assert S.line_problem(json.dumps({**data, "case_id": ""})) == S.BAD_REASONS["missing"]
    assert S.line_problem(json.dumps({**data, "duration_s": "slow"})) == S.BAD_REASONS["json"]


def test_wilson_interval():
    low, high = wilson(2, 3)
    assert low == pytest.approx(0.2077, abs=1e-4) and high == pytest.approx(0.9385, abs=1e-4)
    low, high = wilson(1, 2)
    assert low == pytest.approx(0.0945, abs=1e-4) and high == pytest.approx(0.9055, abs=1e-4)
    assert wilson(0, 0) == (None, None)
    low, high = wilson(50, 50)
    assert high == 1.0 and 0.92 < low < 0.93


def test_empty_results_folder_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "results").mkdir()
    with pytest.raises(ReportError, match=r"no result files \(\*\.jsonl\) in .*results.*conformance run"):
        find_result_files([tmp_path / "results"])
    with pytest.raises(ReportError, match="does not exist"):
        find_result_files([tmp_path / "missing"])
    assert main(["--results", str(tmp_path / "results"), "--out", str(tmp_path / "out")]) == 2
    assert "no result files" in capsys.readouterr().err


def test_result_files_are_found_in_a_run_folder_or_named(tmp_path):
    fixtures.write_results(tmp_path)
    files = find_result_files([tmp_path])
    assert [f.name for f in files] == sorted(f.name for f in (tmp_path / "results").glob("*.jsonl"))
    assert find_result_files([files[0]]) == [files[0]]
