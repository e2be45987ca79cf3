"""The model against what Apache Pulsar releases answered (spec/observed/, `conformance record`).

Every recorded answer of a case must be the answer the model computes for that case, bound to the
same namespace and the same release, unless spec/divergences/apache-pulsar.yaml records the case
as a known divergence of that release. So the oracle stays honest on machines with no JVM, and a
change to the model that contradicts real Pulsar fails here at once.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from conformance.suite import load_cases
from conformance.divergences import APACHE_PULSAR, KnownDivergences
from conformance.record import OBSERVED_DIR, read_observations
from conformance.results import outcome_json
from spec.schema import DIVERGENCES_DIR, load_divergences
from spec.versions import parse_release

FILES = sorted(OBSERVED_DIR.glob("pulsar-*.jsonl"))


@functools.lru_cache(maxsize=None)
def _cases() -> dict:
    return {case.id: case for case in load_cases()}


def _observations():
    for path in FILES:
        for line in read_observations(path):
            yield pytest.param(path, line, id=f"{path.stem}:{line['case_id']}")


def test_observations_exist_for_the_releases_the_suite_covers():
    releases = {path.stem.removeprefix("pulsar-") for path in FILES}
    assert {"3.0.2", "3.0.7", "4.0.7", "4.2.4"} <= releases, releases


@pytest.mark.parametrize("path, line", list(_observations()))
def test_the_model_gives_what_the_release_answered(path: Path, line: dict):
    release = parse_release(line["release"])
    known = KnownDivergences(load_divergences(APACHE_PULSAR)).covering(line["case_id"], line["row_id"], release)
    if known is not None and not (known.intermittent and line["verdict"] == "passed"):
        assert line["verdict"] == "failed", (
            f"{line['case_id']} passed on {line['release']} but {known.file} lists it ({known.id}); remove the entry")
        return  # an intermittent entry's passes are answers like any other, checked below
    case = _cases().get(line["case_id"])
    assert case is not None, f"{path.name}: case {line['case_id']} is no longer in the spec; record the release again"
    bound = case.bind(line["namespace"], release=release)
    index = len(bound.steps) - 1 if line["step"] is None else line["step"]
    expected = outcome_json(bound.steps[index].expected)
    assert expected == line["actual"], (
        f"Apache Pulsar {line['release']} answered {line['actual']} at step {index} of {line['case_id']} "
        f"(run {line['run_id']}); the model says {expected}. Fix the model with evidence, or record a known "
        f"divergence in spec/divergences/apache-pulsar.yaml")


@pytest.mark.parametrize("profile", sorted(p.stem for p in DIVERGENCES_DIR.glob("*.yaml")))
def test_every_divergence_names_cases_that_exist(profile):
    cases = _cases()
    rows = {case.row_id for case in cases.values()}
    entries = load_divergences(profile)
    assert entries
    for entry in entries:
        for name in entry.cases:
            assert name in cases or name in rows, f"{entry.file}:{entry.line}: {entry.id} names unknown {name}"
