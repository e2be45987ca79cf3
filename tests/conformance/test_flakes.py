"""conformance/flakes.py: the same run several times beside CPU hogs, and the cases whose verdict differed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import verdicts as v
from conformance.flakes import Repeat, differing, markdown, run_argv, start_hogs, stop_hogs, summary
from conformance.results import SCHEMA_VERSION, ResultRecord


def _record(case_id: str, verdict: str, reason: str = "", target: str = "reference", known: str = "") -> ResultRecord:
    return ResultRecord(schema_version=SCHEMA_VERSION, run_id="r", timestamp="2026-11-28T00:00:00+00:00",
                        case_id=case_id, row_id=case_id.split("[")[0], pip="344", table="t", grade="MUST",
                        era="pip344", api="binary", target=target, target_version="1", driver="wire", verdict=verdict,
                        reason=reason, expected=None, actual=None, failing_step=None, duration_s=0.1, source=[],
                        known_divergence=known)


def test_the_hunters_own_options_are_taken_out_of_the_runs_arguments():
    argv = ["--target", "reference", "--repeat", "3", "--cpu-hogs=2", "--out", "x", "--run-id=y", "-k", "flag"]
    assert run_argv(argv) == ["--target", "reference", "-k", "flag"]


def test_a_case_whose_verdict_differs_in_any_run_is_listed_with_every_runs_reason(tmp_path):
    repeats = [Repeat(i, tmp_path / str(i), exit_code=0, wall_s=1.0) for i in range(3)]
    for i, repeat in enumerate(repeats):
        repeat.records[("reference", "a[binary]")] = _record("a[binary]", "passed")
        repeat.records[("reference", "b[binary]")] = _record(
            "b[binary]", "failed" if i == 1 else "passed", "expected X, got Y" if i == 1 else "")
    del repeats[2].records[("reference", "a[binary]")]  # a run that has no record of it differs too
    found = differing(repeats)
    assert set(found) == {("reference", "a[binary]"), ("reference", "b[binary]")}
    report = summary(repeats, found, hogs=2)
    assert report["targets"] == {"reference": {"cases": 2, "differed": 2, "as recorded": 0}}
    b = next(e for e in report["differing"] if e["case_id"] == "b[binary]")
    assert [run["verdict"] for run in b["runs"]] == ["passed", "failed", "passed"]
    text = markdown(report)
    assert "run 2: failed: expected X, got Y" in text and "run 3: no record" in text and "2 CPU hog(s)" in text


def test_a_case_that_differs_as_its_intermittent_known_divergence_says_is_listed_apart(tmp_path):
    repeats = [Repeat(i, tmp_path / str(i), exit_code=0) for i in range(2)]
    for i, repeat in enumerate(repeats):
        repeat.records[("lite", "c[binary]")] = _record("c[binary]", ("failed", "passed")[i], target="lite",
                                                         known="redelivery")
        repeat.records[("lite", "d[binary]")] = _record("d[binary]", ("failed", "passed")[i], target="lite",
                                                         known="redelivery" if i == 0 else "")
    report = summary(repeats, differing(repeats), hogs=0)
    assert report["targets"]["lite"] == {"cases": 2, "differed": 1, "as recorded": 1}
    by_case = {e["case_id"]: e["known_divergence"] for e in report["differing"]}
    assert by_case == {"c[binary]": "redelivery", "d[binary]": None}, "a pass that names no entry is a change"
    assert "differed: 1, and 1 as their known divergence says they may" in markdown(report)


def test_hogs_keep_a_core_busy_and_are_gone_after():
    hogs = start_hogs(2)
    try:
        assert all(h.poll() is None for h in hogs)
    finally:
        stop_hogs(hogs)
    assert all(h.poll() is not None for h in hogs)


@pytest.mark.slow
def test_repeat_runs_the_same_cases_in_processes_of_their_own_and_compares_them(tmp_path):
    done = subprocess.run([sys.executable, "-m", "conformance", "run", "--target", "reference", "--pip", "344",
                           "-k", "flag-001 or seed-bg-001", "--repeat", "2", "--cpu-hogs", "1", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == v.EXIT_OK, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "flakes.json").read_text(encoding="utf-8"))
    assert report["repeats"] == 2 and report["cpu_hogs"] == 1 and report["differing"] == []
    assert [run["exit_code"] for run in report["runs"]] == [0, 0]
    assert report["runs"][0]["records"] == report["runs"][1]["records"] > 0
    for index in (1, 2):
        assert list((tmp_path / f"repeat-{index}" / "results").glob("*.jsonl"))
    assert "0 case(s) differed" in done.stdout
