"""Shared fixtures of the reports tests: one local SparkSession for the whole session, the fixed results."""

from __future__ import annotations

import shutil

import pytest

from tests.reports import fixtures


def _need_java() -> None:
    if shutil.which("java") is None:
        pytest.fail("java is not installed: run `make system-java` (Spark needs Java 17+)")


@pytest.fixture(scope="session")
def spark():
    """One local[2] SparkSession shared by every Spark test (start-up costs seconds)."""
    _need_java()
    from reports.aggregate import spark_session

    session = spark_session("local[2]")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def fixed_results(tmp_path_factory):
    """The fixed results (tests/reports/fixtures.py) under <tmp>/results, and what the report must find."""
    out = tmp_path_factory.mktemp("fixed")
    expected = fixtures.write_results(out)
    return out, expected


@pytest.fixture(scope="session")
def fixed_job(spark, fixed_results, tmp_path_factory):
    """The Spark job run once over the fixed results (local[2])."""
    from reports.aggregate import run_job

    source, expected = fixed_results
    out = tmp_path_factory.mktemp("fixed-report")
    result = run_job(spark, [source / "results"], out)
    return result, expected, out
