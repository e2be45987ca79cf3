"""The mutation check (conformance/mutation_check.py): variants of the reference broker started by their
launcher, judged by the cases the unbroken broker passes, scored and reported."""

from __future__ import annotations

import json
import sys

import pytest

from conformance import mutation_check
from conformance.suite import load_cases

VARIANTS = mutation_check.list_variants()


def test_a_mutant_target_is_the_reference_target_started_by_the_launcher():
    target = mutation_check.resolve_target("reference-mutant:p2-drop-receipt-zero", timeout=3.0)
    assert target.name == "reference-mutant:p2-drop-receipt-zero"
    argv = target.argv()
    assert argv[:5] == [sys.executable, "-m", "mutation.launch", "--mutant", "p2-drop-receipt-zero"]
    assert argv[5:9] == ["--broker-port", "0", "--web-port", "0"]
    zk = mutation_check.mutant_target("p157-bucket-off-by-one", "reference-zk", timeout=3.0)
    assert zk.argv()[:5] == [sys.executable, "-m", "mutation.launch", "--mutant", "p157-bucket-off-by-one"]
    assert mutation_check.resolve_target("reference").name == "reference"


def test_the_variants_are_read_from_the_launcher():
    assert len(VARIANTS) >= 40 and {v.pip for v in VARIANTS.values()} == {"344", "2", "157", "35"}
    assert VARIANTS["p344-rest-ignores-check"].api == "rest"
    assert mutation_check.chosen_variants(["p2-drop-receipt-zero"], VARIANTS) == [VARIANTS["p2-drop-receipt-zero"]]
    with pytest.raises(mutation_check.UnknownVariant, match="unknown mutant 'nope'"):
        mutation_check.chosen_variants(["p2-drop-receipt-zero", "nope"], VARIANTS)


def test_case_order_puts_the_hint_then_the_api_then_interleaves_tables():
    cases = {c.id: c for c in load_cases({"344"})}
    ids = list(cases)
    mutant = VARIANTS["p344-rest-ignores-check"]
    hint = next(i for i in ids if i.endswith("[binary]"))
    order = mutation_check.case_order(mutant, ids, cases, hint)
    assert sorted(order) == sorted(ids) and order[0] == hint
    rest_count = sum(cases[i].api == "rest" for i in ids if i != hint)
    assert all(cases[i].api == "rest" for i in order[1:1 + rest_count])
    first_tables = [cases[i].table for i in order[1:6]]
    assert len(set(first_tables)) == len(first_tables)  # one case per table first


@pytest.mark.slow
def test_a_variant_is_caught_by_a_failing_case_and_survives_cases_that_ignore_it(tmp_path):
    caught = mutation_check.run_cases("p344-bin-ignores-field6", ["pip344-seed-new-005[binary]"], timeout=5.0,
                               log_dir=str(tmp_path), pips=["344"])
    assert caught["status"] == "caught" and caught["killer"] == "pip344-seed-new-005[binary]"
    survived = mutation_check.run_cases("p344-bin-ignores-field6", ["pip344-seed-new-005[rest]"], timeout=5.0,
                                 log_dir=str(tmp_path), pips=["344"])
    assert survived["status"] == "survived" and survived["cases_run"] == 1


@pytest.mark.slow
def test_quality_scores_and_reports_survivors(tmp_path):
    out = []

    class Stream:
        def write(self, text):
            out.append(text)

        def flush(self):
            pass

    code = mutation_check.quality(["p344-rest-ignores-check", "p344-bin-no-flag5"], jobs=1, timeout=5.0, out_dir=tmp_path,
                           keyword="pip344-seed-new-00", stream=Stream())
    report = json.loads((tmp_path / "quality.json").read_text())
    assert report["total"] == 2 and report["caught"] == 1 and report["score"] == 0.5
    assert [s["mutant"] for s in report["survivors"]] == ["p344-bin-no-flag5"]  # no flag row selected by -k
    assert code == 1
    text = "".join(out)
    assert "mutation score: 1/2 = 50.0%" in text and "p344-bin-no-flag5" in text
