"""reports/needs.py: what the reports stage needs beyond the core install, each missing piece named with
its fix before anything starts."""

from __future__ import annotations

from reports import __main__ as cli
from reports import allure, needs


def test_java_major_reads_old_and_new_version_strings():
    assert needs.java_major('openjdk version "17.0.9" 2023-10-17') == 17
    assert needs.java_major('openjdk version "21" 2023-09-19') == 21
    assert needs.java_major('java version "1.8.0_392"') == 8
    assert needs.java_major("no version here") is None


def test_missing_python_packages_are_named_with_the_extra_that_brings_them(monkeypatch):
    monkeypatch.setattr(needs, "missing_python_packages", lambda: ["pyspark", "pyarrow"])
    monkeypatch.setattr(needs, "java_problem", lambda: None)
    (problem,) = needs.spark_problems()
    assert "pyspark, pyarrow" in problem and "pip install 'pulsar-conformance[reports]'" in problem


def test_an_old_or_absent_java_is_named_with_how_to_get_one(monkeypatch):
    monkeypatch.setattr(needs.shutil, "which", lambda name: None)
    assert "java is not on PATH" in needs.java_problem() and "openjdk-17" in needs.java_problem()


def test_the_stage_stops_before_spark_and_says_why(monkeypatch, tmp_path, capsys):
    results = tmp_path / "results"
    results.mkdir()
    (results / "r.jsonl").write_text("{}\n")
    monkeypatch.setattr(needs, "missing_python_packages", lambda: ["pyspark"])
    assert cli.main(["--results", str(results), "--out", str(tmp_path / "out")]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert "cannot start here" in err and "pulsar-conformance[reports]" in err
    assert not (tmp_path / "out").exists()


def test_a_missing_allure_cli_names_the_pinned_npm_package(tmp_path):
    hint = needs.allure_hint()
    assert "npm install allure@3." in hint and "--allure-cli" in hint and "--no-allure" in hint
    assert allure.find_cli(tmp_path / "no-such-allure") is None
