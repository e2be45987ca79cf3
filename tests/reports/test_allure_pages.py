"""End to end: two runs' results and allure-pytest output -> the reports CLI (Spark local[2]) -> the
summary page and the single-file Allure report, opened in headless Chromium.

Screenshots are kept in reports/out/test-screenshots/ for a person to look at.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

import pytest

from conformance.plugin import ConformancePlugin
from conformance.results import SCHEMA_VERSION, ResultRecord, ResultWriter
from reports import allure
from reports.__main__ import main
from tests.reports import browser

pytestmark = [pytest.mark.slow, pytest.mark.timeout(360)]

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "reports" / "out" / "test-screenshots"
RUN_IDS = ("20260801T090000Z-e2e001", "20260802T090000Z-e2e002")
VERDICTS = [  # run -> target -> case -> verdict
    {"reference": {"c1": "passed", "c2": "failed", "c3": "unsupported", "c4": "indefinite"},
     "lite": {"c1": "failed", "c2": "passed", "c3": "broken", "c4": "unsupported"}},
    {"reference": {"c1": "passed", "c2": "passed", "c3": "unsupported", "c4": "passed"},
     "lite": {"c1": "failed", "c2": "failed", "c3": "passed", "c4": "unsupported"}},
]
TEST_MODULE = '''
import json, allure, pytest
CASES = json.loads({cases!r})
VERDICT = {{(t, c): v for t, c, v in CASES}}

@pytest.mark.parametrize("target,case", [(t, c) for t, c, _ in CASES], ids=[f"{{t}}-{{c}}" for t, c, _ in CASES])
def test_case(target, case):
    verdict = VERDICT[(target, case)]  # not a parameter: Allure's history id must stay the same across runs
    allure.dynamic.suite(target)
    allure.dynamic.epic("PIP-344")
    allure.dynamic.parameter("target", target)
    allure.attach(f"transcript of {{case}} on {{target}}", name="wire transcript",
                  attachment_type=allure.attachment_type.TEXT)
    if verdict == "failed":
        raise AssertionError("action step 1: expected Partitions(0), got Partitions(1)")
    if verdict == "unsupported":
        pytest.skip("unsupported: the target has no admin API")
    if verdict == "indefinite":
        raise RuntimeError("indefinite: no answer within 10.0 s")
    if verdict == "broken":
        raise RuntimeError("broken: KeyError in the harness")
'''


def _one_run(out: Path, run: int, work: Path, verdicts: Optional[dict] = None, run_id: Optional[str] = None) -> None:
    """What `python -m conformance run` leaves: allure-results (appended), environment, <run_id>.jsonl."""
    run_id, verdicts = run_id or RUN_IDS[run], verdicts or VERDICTS[run]
    cases = [(t, c, v) for t, by_case in verdicts.items() for c, v in by_case.items()]
    folder = work / f"run{run}"  # same module name every run: Allure's history follows test ids
    folder.mkdir()
    module = folder / "test_synthetic.py"
    module.write_text(textwrap.dedent(TEST_MODULE.format(cases=json.dumps(cases))), encoding="utf-8")
    started = datetime.datetime.now(datetime.timezone.utc)
    done = subprocess.run([sys.executable, "-m", "pytest", str(module), "-q", "-p", "no:cacheprovider",
                           "-c", "/dev/null", "--rootdir", str(folder), f"--alluredir={out / 'allure-results'}"],
                          capture_output=True, text=True, timeout=120, cwd=folder)
    assert done.returncode == 1, done.stdout[-2000:]  # failures are expected
    plugin = ConformancePlugin([], [], out_dir=out, run_id=run_id)
    plugin.sessions = [SimpleNamespace(target=SimpleNamespace(
        name=target, describe=lambda target=target: {"version": "1.0" if target == "reference" else f"0.{run + 1}",
                                                      "era": "pip344", "service_url": "pulsar://127.0.0.1:6650"}))
        for target in verdicts]
    plugin.write_environment(out / "allure-results")
    writer = ResultWriter(out, run_id)
    for index, (target, case, verdict) in enumerate(cases):
        stamp = (started + datetime.timedelta(milliseconds=200 + 10 * index)).isoformat(timespec="milliseconds")
        writer.write(ResultRecord(
            schema_version=SCHEMA_VERSION, run_id=run_id, timestamp=stamp, case_id=f"pip344-e2e-{case}[binary]",
            row_id=f"pip344-e2e-{case}", pip="344", table="pip-344/e2e", grade="MUST", era="pip344", api="binary",
            target=target, target_version="1.0" if target == "reference" else f"0.{run + 1}", driver="wire",
            verdict=verdict, reason="", expected=None, actual=None, failing_step=None, duration_s=0.1,
            source=["e2e"]))
    writer.close()


@pytest.fixture(scope="module")
def e2e(tmp_path_factory, spark):
    if allure.find_cli() is None:
        pytest.fail("the allure CLI is not installed: run `make node_modules`")
    work = tmp_path_factory.mktemp("e2e")
    out = work / "out"
    _one_run(out, 0, work)
    first = allure.render(out / "allure-results", out, result_files=list((out / "results").glob("*.jsonl")))
    first_results = json.loads((first.parent / "test-results.json").read_text(encoding="utf-8"))
    time.sleep(1.5)  # runs never overlap: the second starts after the first has ended
    _one_run(out, 1, work)
    # The CLI in-process on the shared local[2] session (test_cluster runs it as a subprocess).
    stdout, stderr = io.StringIO(), io.StringIO()
    # A relative --out, as `make report` passes it (reports/out): every path must survive the CLI's cwd.
    here = os.getcwd()
    os.chdir(work)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main(["--out", "out", "--master", "local[2]"], spark=spark)
    finally:
        os.chdir(here)
    assert not (Path(here) / "out" / "dataset").exists(), "a relative --out was resolved against another cwd"
    done = subprocess.CompletedProcess(["python", "-m", "reports"], code, stdout.getvalue(), stderr.getvalue())
    return {"out": out, "cli": done, "first_results": first_results}


def test_cli_writes_every_output(e2e):
    done, out = e2e["cli"], e2e["out"]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "## Pulsar conformance summary" in done.stdout and "| reference | 344 | MUST |" in done.stdout
    for name in ("summary.html", "summary.md", "matrix.png", "report.json", "csv/matrix.csv", "csv/diff.csv",
                 "allure-report/index.html"):
        assert (out / name).exists(), name
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["runs"] == 2 and report["records"] == 16 and report["bad_lines"] == 0
    diff = {(d["target"], d["case_id"]): d["change"] for d in report["diff"]}
    assert diff == {("reference", "pip344-e2e-c2[binary]"): "fix", ("reference", "pip344-e2e-c4[binary]"): "changed",
                    ("lite", "pip344-e2e-c2[binary]"): "regression", ("lite", "pip344-e2e-c3[binary]"): "changed"}


def test_allure_report_is_one_file_of_the_latest_run_with_history(e2e):
    out = e2e["out"]
    top = out / "allure-report"
    index = top / "awesome" / "index.html"  # every target; the top page is the summary of the reports
    for page_path in (top / "index.html", index, top / "target-reference" / "index.html"):
        page = page_path.read_text(encoding="utf-8")
        assert "googletagmanager" not in page
        assert not re.search(r"<script[^>]+src=\"(?!data:)", page), "scripts must be inlined (single file)"
        assert not re.search(r"<link[^>]+href=\"(?!data:)[^\"]+\.css", page), "styles must be inlined (single file)"
    assert len(e2e["first_results"]["byId"]) == 8
    results = json.loads((top / "test-results.json").read_text(encoding="utf-8"))["byId"]
    assert len(results) == 8, "only the latest run's 8 results, not both runs' 16"
    assert {r["environment"] for r in results.values()} == {"reference", "lite"}, "targets are environments"
    summary = json.loads((index.parent / "summary.json").read_text(encoding="utf-8"))  # the all-targets report
    assert summary["stats"]["total"] == 8 and not summary["stats"].get("new"), "the first run is in the history"
    for target in ("reference", "lite"):  # a headline per target, each counting its own cases only
        own = json.loads((top / f"target-{target}" / "summary.json").read_text(encoding="utf-8"))
        assert own["stats"]["total"] == len(VERDICTS[1][target]), target
    history = (out / "allure-history.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(history) == 2, "one history entry per run"
    assert (out / "allure-history.runs").read_text(encoding="utf-8").split() == list(RUN_IDS)


def test_allure_report_renders_targets_named_with_dots_colons_and_slashes(tmp_path):
    """Target names as the harness makes them (a release, a URL, a proxy in front of a broker) are not
    ids in Allure's alphabet; each still gets its environment and its own report."""
    if allure.find_cli() is None:
        pytest.fail("the allure CLI is not installed: run `make node_modules`")
    names = ["pulsar-4.0.7", "url:pulsar://127.0.0.1:6650,http://127.0.0.1:8080", "pulsar-proxy:4.0.8/4.0.7"]
    out = tmp_path / "out"
    _one_run(out, 0, tmp_path, verdicts={name: {"c1": "passed", "c2": "failed"} for name in names},
             run_id="20260803T090000Z-names1")
    properties = allure.read_properties(out / "allure-results" / "environment.properties")
    assert properties[f"{names[1]}.service_url"] == "pulsar://127.0.0.1:6650", "keys with colons survive"
    index = allure.render(out / "allure-results", out)
    results = json.loads((index.parent / "test-results.json").read_text(encoding="utf-8"))["byId"]
    assert {r["environment"] for r in results.values()} == {allure.environment_name(n) for n in names}
    for name in names:
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", allure.environment_id(name)), name
        assert "/" not in allure.environment_name(name) and len(allure.environment_name(name)) <= 64, name
        own = json.loads((index.parent / allure.plugin_id(name) / "summary.json").read_text(encoding="utf-8"))
        assert own["stats"]["total"] == 2, name
    assert allure.allure_id("pulsar-4.0.7") != allure.allure_id("pulsar-4_0_7")
    assert allure.allure_id("reference") == "reference"


def test_allure_verdict_labels_and_categories(tmp_path):
    result = {"status": "broken", "statusDetails": {"message": "conformance.plugin.HarnessTrouble: indefinite: x"},
              "parameters": [{"name": "target", "value": "'lite'"}], "labels": []}
    assert allure.verdict_of(result) == "indefinite"
    assert allure.verdict_of({**result, "statusDetails": {"message": "HarnessTrouble: broken: x"}}) == "broken"
    assert allure.verdict_of({"status": "skipped"}) == "unsupported"
    down = {**result, "statusDetails": {"message": "HarnessTrouble: target-error: target could not start: x"}}
    assert allure.verdict_of(down) == "target-error"
    assert allure._target_of(result) == "lite"
    categories = allure.categories_json()
    names = [c["name"] for c in categories]
    assert len(names) == 5 and any(n.startswith("Unsupported") for n in names)
    rules = {c["name"].split(":")[0]: re.compile(c["messageRegex"]) for c in categories if "messageRegex" in c}
    assert rules["Target error"].match(down["statusDetails"]["message"])
    assert not rules["Broken"].match(down["statusDetails"]["message"])
    config = allure.write_config(tmp_path / "allurerc.mjs", output=tmp_path / "o", history=tmp_path / "h.jsonl",
                                 targets=["lite", "reference"], variables={"lite": {"version": "0.1"}},
                                 report_name="x", append_history=True).read_text(encoding="utf-8")
    assert 'byTarget("lite")' in config and "singleFile: true" in config
    for verdict in ("failed", "unsupported", "indefinite", "broken", "target-error"):
        assert f'verdict: "{verdict}"' in config


def test_summary_page_shows_the_matrix_in_chromium(e2e):
    page = e2e["out"] / "summary.html"
    dom = browser.dump_dom(page)
    assert '<table id="matrix">' in dom
    cells = re.findall(r'<td class="cell" data-target="([^"]+)" data-pip="344" data-grade="MUST"', dom)
    assert sorted(cells) == ["lite", "reference"]
    assert re.search(r'data-target="reference"[^>]*data-pass-rate="1\.0"', dom)  # 3 passed of 3 executed
    assert re.search(r'data-target="lite"[^>]*data-pass-rate="0\.333333"', dom)   # 1 of 3
    assert "alt=\"compliance matrix heat-map\"" in dom
    browser.screenshot(page, SHOTS / "summary.png")


def test_allure_report_opens_in_chromium(e2e):
    top = e2e["out"] / "allure-report" / "index.html"
    dom = browser.dump_dom(top, budget_ms=15000)
    for text in ("Pulsar conformance: reference", "Pulsar conformance: lite"):
        assert text in dom, text
    browser.screenshot(top, SHOTS / "allure-summary.png", budget_ms=15000)
    index = e2e["out"] / "allure-report" / "awesome" / "index.html"
    dom = browser.dump_dom(index, budget_ms=15000)
    assert 'id="app"' in dom
    for text in ("reference", "lite", "test_case"):
        assert text in dom, text
    browser.screenshot(index, SHOTS / "allure.png", budget_ms=15000)
