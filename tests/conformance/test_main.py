"""conformance/__main__.py: the CLI, including one real end-to-end run against pulsar-lite."""

import json
import subprocess
import sys

import pytest

from conformance.__main__ import main
from conformance.results import read_results


def test_cases_lists_every_case_with_grade_and_source(capsys):
    assert main(["cases", "--pip", "344"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines
    case_id, grade, source = lines[0].split("\t")
    assert case_id.startswith("pip344-") and "[" in case_id and grade in ("MUST", "SHOULD", "MAY") and source
    assert main(["cases", "--pip", "nosuch"]) == 2


def test_pulsar_versions_adds_one_standalone_target_per_version(monkeypatch, tmp_path):
    import conformance.__main__ as cli
    seen = {}

    def fake_run(targets, **kwargs):
        seen["targets"] = targets
        return 0

    monkeypatch.setattr(cli, "run", fake_run)
    assert main(["run", "--target", "reference", "--pulsar-versions", "3.0.2,4.0.7,4.2.4",
                 "--out", str(tmp_path)]) == 0
    assert seen["targets"] == ["reference", "pulsar-standalone:3.0.2", "pulsar-standalone:4.0.7",
                               "pulsar-standalone:4.2.4"]
    assert main(["run", "--pulsar-versions", "", "--out", str(tmp_path)]) == 2
    assert main(["run", "--pulsar-versions", "4.0.7,bad tag", "--out", str(tmp_path)]) == 2


def test_exitfirst_stops_each_target_at_its_first_failed_case(monkeypatch, tmp_path):
    import conformance.__main__ as cli
    seen = []
    monkeypatch.setattr(cli, "run", lambda targets, **kwargs: seen.append(kwargs["stop_at_failure"]) or 0)
    assert main(["run", "--target", "reference", "-x", "--out", str(tmp_path)]) == 0
    assert main(["run", "--target", "reference", "--out", str(tmp_path)]) == 0
    assert seen == [True, False]


@pytest.mark.slow
def test_end_to_end_run_against_pulsar_lite(tmp_path):
    before = _pulsar_lite_pids()
    proc = subprocess.run([sys.executable, "-m", "conformance", "run", "--target", "pulsar-lite", "--pip", "344",
                           "--out", str(tmp_path), "--run-id", "e2e", "--timeout", "5"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1, 3), proc.stdout[-3000:] + proc.stderr[-3000:]
    records = read_results(tmp_path / "results" / "e2e.jsonl")
    assert records and {r.target for r in records} == {"pulsar-lite"}
    assert any(r.verdict == "passed" for r in records)
    # pulsar-lite is not an Apache release, so it is held to the current spec: the pre-PIP-344 rows
    # are unsupported with that reason, and the flag row's verdict follows what CONNECTED advertised.
    assert all(r.verdict == "unsupported" and "pre-PIP-344" in r.reason for r in records if r.era == "pre-pip344")
    assert (tmp_path / "junit.xml").exists()
    env = (tmp_path / "allure-results" / "environment.properties").read_text()
    advertised = "pulsar-lite.flag5=yes" in env
    [flag_row] = [r for r in records if r.row_id == "pip344-flag-001"]
    assert (flag_row.verdict == "passed") == advertised
    assert "pulsar-lite.version=Pulsar-Lite" in env
    assert any(json.loads(p.read_text())["name"].endswith("[pulsar-lite-wire]")
               for p in (tmp_path / "allure-results").glob("*-result.json"))
    assert _pulsar_lite_pids() <= before  # the run stopped the broker it started


def _pulsar_lite_pids() -> set[str]:
    found = subprocess.run(["pgrep", "-f", "conformance-pulsar-lite-"], capture_output=True, text=True).stdout
    return set(found.split())
