"""conformance/runner.py + plugin.py: whole runs with a fake target and fake cases."""

import io
import json
import xml.etree.ElementTree as ET

from conformance import verdicts as v
from conformance.__main__ import main
from conformance.errors import Indefinite
from conformance.results import read_results
from conformance.runner import run
from conformance.targets.base import ERA_PRE_PIP344
from model import ops
from model.outcomes import Done, Partitions
from tests.conformance.helpers import FakeCase, FakeDriver, FakeTarget, Step


def _case(case_id, expected=Partitions(3), **kwargs):
    def steps(ns):
        return (Step(ops.CreateNamespace(ns), "setup", Done()),
                Step(ops.GetPartitionedMetadata(f"persistent://{ns}/t", "binary", False), "action", expected))
    return FakeCase(case_id, steps, row_id=case_id.split("[")[0], **kwargs)


def _factory(answer):
    def factory(target):
        return {name: FakeDriver(name, answer) for name in ("rest", "wire", "client")}
    return factory


def _answer(op):
    return Done() if isinstance(op, ops.CreateNamespace) else Partitions(3)


def _run(tmp_path, cases, targets=None, answer=_answer, keyword=None):
    stream = io.StringIO()
    code = run([], cases=cases, targets=targets or [FakeTarget()], out_dir=tmp_path, run_id="run-1",
               driver_factory=_factory(answer), keyword=keyword, stream=stream)
    records = read_results(tmp_path / "results" / "run-1.jsonl") if (tmp_path / "results" / "run-1.jsonl").exists() else []
    return code, records, stream.getvalue()


def test_all_passed_exits_0_and_writes_every_output(tmp_path):
    code, records, text = _run(tmp_path, [_case("a-001[binary]"), _case("a-002[binary]")])
    assert code == v.EXIT_OK, text
    assert [r.verdict for r in records] == ["passed", "passed"]
    assert records[0].driver == "wire" and records[0].target == "fake"
    junit = ET.parse(tmp_path / "junit.xml").getroot()
    names = [tc.get("name") for tc in junit.iter("testcase")]
    assert names == ["a-001[binary][fake-wire]", "a-002[binary][fake-wire]"]
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert props["verdict"] == "passed"
    allure = tmp_path / "allure-results"
    results = [json.loads(p.read_text()) for p in allure.glob("*-result.json")]
    labels = {(lab["name"], lab["value"]) for r in results for lab in r["labels"]}
    assert {("epic", "PIP-344"), ("feature", "fake-table"), ("story", "a-001")} <= labels
    assert {p["name"] for r in results for p in r["parameters"]} >= {"target", "driver"}
    assert any(a["name"] == "wire transcript" for r in results for a in r.get("attachments", []))
    assert "fake.version=Fake Server 1.0" in (allure / "environment.properties").read_text()
    assert "where the time went: " in text and "cases on fake: 2 taking" in text


def test_a_failure_exits_1(tmp_path):
    code, records, _ = _run(tmp_path, [_case("a-001[binary]"), _case("a-002[binary]", expected=Partitions(0))])
    assert code == v.EXIT_FAILED
    failed = records[1]
    assert failed.verdict == "failed" and failed.failing_step == 1
    assert failed.expected == {"kind": "Partitions", "partitions": 0}
    assert failed.actual == {"kind": "Partitions", "partitions": 3}


def test_only_indefinite_exits_3(tmp_path):
    def slow(op):
        if isinstance(op, ops.CreateNamespace):
            return Done()
        raise Indefinite("no answer within 10 s")

    code, records, _ = _run(tmp_path, [_case("a-001[binary]")], answer=slow)
    assert code == v.EXIT_INDEFINITE
    assert records[0].verdict == "indefinite" and records[0].reason.startswith("no answer within 10 s")
    assert "after 3 attempts" in records[0].reason  # a lookup repeats, so it was asked again


def test_a_harness_error_exits_2_and_is_not_a_spec_failure(tmp_path):
    def buggy(op):
        raise RuntimeError("driver bug")

    code, records, _ = _run(tmp_path, [_case("a-001[binary]")], answer=buggy)
    assert code == v.EXIT_HARNESS
    assert records[0].verdict == "broken" and "RuntimeError" in records[0].reason


def test_zero_cases_exit_2_with_a_message(tmp_path):
    code, records, text = _run(tmp_path, [])
    assert code == v.EXIT_HARNESS and "no cases selected" in text
    code, records, text = _run(tmp_path, [_case("a-001[binary]")], keyword="nothing_matches_this")
    assert code == v.EXIT_HARNESS and "no case selected by -k" in text and records == []


def test_keyword_selects_items_by_name(tmp_path):
    code, records, _ = _run(tmp_path, [_case("a-001[binary]"), _case("b-002[binary]")], keyword="b-002")
    assert code == v.EXIT_OK and [r.case_id for r in records] == ["b-002[binary]"]


class _CountedTarget(FakeTarget):
    def __init__(self, name):
        super().__init__(name)
        self.launches_made = 0

    def _launch(self) -> None:
        self.launches_made += 1
        super()._launch()


def test_every_target_starts_once_and_one_that_k_leaves_without_cases_never_starts(tmp_path):
    one, two = _CountedTarget("one"), _CountedTarget("two")
    code, records, _ = _run(tmp_path, [_case("a-001[binary]")], targets=[one, two])
    assert code == v.EXIT_OK and [r.target for r in records] == ["one", "two"]
    assert one.launches_made == two.launches_made == 1  # started before collection, and once
    one, two = _CountedTarget("one"), _CountedTarget("two")
    code, records, _ = _run(tmp_path / "k", [_case("a-001[binary]")], targets=[one, two], keyword="two")
    assert code == v.EXIT_OK and [r.target for r in records] == ["two"]
    assert not one.started and two.started


def test_unsupported_only_is_never_a_green_run(tmp_path):
    code, records, text = _run(tmp_path, [_case("a-001[binary]", era=ERA_PRE_PIP344)])
    assert code == v.EXIT_HARNESS
    assert records[0].verdict == "unsupported"
    assert records[0].reason.startswith("[era-mismatch] row judges pre-PIP-344 Apache Pulsar releases")
    assert "no case was executed" in text


def test_target_that_cannot_start_is_a_target_error_shown_first_and_exit_2(tmp_path):
    good, bad = FakeTarget("good"), FakeTarget("bad", fail_start="exec format error")
    code, records, text = _run(tmp_path, [_case("a-001[binary]")], targets=[good, bad])
    assert code == v.EXIT_HARNESS, text  # a target that is down is a finding, never a quiet run
    by_target = {r.target: r for r in records}
    assert by_target["good"].verdict == "passed"
    assert by_target["bad"].verdict == "target-error"
    assert by_target["bad"].reason == "target could not start: exec format error"
    summary = text[text.index("conformance run "):]
    assert summary.index("TARGET ERROR bad: 1 case(s) not judged: target could not start: exec format error") \
        < summary.index("  good (")  # first, before the per-target counts
    assert "bad (could not start: exec format error): passed 0, failed 0, unsupported 0, indefinite 0, " \
           "broken 0, target-error 1" in text
    assert "good (" in text and "target-error" not in text[text.index("  good ("):].splitlines()[0]
    assert text.rstrip().endswith("exit 2: target error")
    assert good.stopped >= 1 and bad.stopped >= 1


def test_a_failure_on_the_target_that_ran_still_exits_2_beside_one_that_could_not_start(tmp_path):
    good, bad = FakeTarget("good"), FakeTarget("bad", fail_start="no Docker engine reachable")
    code, records, text = _run(tmp_path, [_case("a-001[binary]", expected=Partitions(0))], targets=[good, bad])
    assert code == v.EXIT_HARNESS, text
    assert sorted(r.verdict for r in records) == ["failed", "target-error"]


def test_no_target_started_is_exit_2(tmp_path):
    bad1, bad2 = FakeTarget("bad1", fail_start="no Docker engine"), FakeTarget("bad2", fail_start="gone")
    code, records, text = _run(tmp_path, [_case("a-001[binary]")], targets=[bad1, bad2])
    assert code == v.EXIT_HARNESS
    assert [r.verdict for r in records] == ["target-error", "target-error"]
    assert "TARGET ERROR bad1: 1 case(s) not judged: target could not start: no Docker engine" in text
    assert "TARGET ERROR bad2: 1 case(s) not judged: target could not start: gone" in text
    assert "no case was executed on any target (2 target(s) down or misbehaving, see above)" in text


def test_targets_are_stopped_even_when_the_run_is_interrupted(tmp_path):
    def interrupt(op):
        raise KeyboardInterrupt

    target = FakeTarget()
    code, _, _ = _run(tmp_path, [_case("a-001[binary]")], targets=[target], answer=interrupt)
    assert code == v.EXIT_HARNESS and target.stopped >= 1


def test_cli_rejects_unknown_target_names(tmp_path, capsys):
    code = main(["run", "--target", "nosuch", "--out", str(tmp_path)])
    assert code == v.EXIT_HARNESS
    err = capsys.readouterr().out
    assert "unknown target 'nosuch'" in err and "pulsar-lite" in err and "reference" in err
    assert main(["run", "--target", "url:http://x:1", "--out", str(tmp_path)]) == v.EXIT_HARNESS
    assert main(["run", "--out", str(tmp_path)]) == v.EXIT_HARNESS
    assert main(["bogus"]) == 2


def test_an_intermittent_known_divergence_that_passes_is_named_and_not_taken_for_a_stale_entry(tmp_path):
    from spec.schema import Divergence

    def entry(ident, case, intermittent=None):
        return Divergence(id=ident, cases=(case,), releases="*", kind="defect", summary="s", evidence=("e",),
                          intermittent=intermittent, file="mine.yaml")

    target = FakeTarget()
    target.known_divergences = (entry("timing", "a-001", "fails when its dispatcher is late"), entry("fixed", "a-002"),
                                entry("still", "a-003"))
    code, records, text = _run(tmp_path, [_case("a-001[binary]"), _case("a-002[binary]"),
                                          _case("a-003[binary]", expected=Partitions(0))], targets=[target])
    assert [(r.verdict, r.known_divergence) for r in records] == [
        ("passed", "timing"), ("passed", ""), ("failed", "still")]
    assert code == v.EXIT_OK and "failed 1 (1 known divergences)" in text, text
    assert "a-002[binary] passed on fake" in text and "a-001[binary] passed" not in text


def test_a_request_a_target_is_recorded_never_to_answer_stays_indefinite_and_is_counted_apart(tmp_path):
    from spec.schema import Divergence

    def silent(op):
        if isinstance(op, ops.CreateNamespace):
            return Done()
        raise Indefinite("no answer to GET_TOPICS_OF_NAMESPACE within 10 s")

    target = FakeTarget()
    target.known_divergences = (Divergence(id="never-answers", cases=("a-001",), releases="*", kind="unimplemented",
                                           summary="s", evidence=("e",), verdict="indefinite"),)
    code, records, text = _run(tmp_path, [_case("a-001[binary]")], targets=[target], answer=silent)
    assert (records[0].verdict, records[0].known_divergence) == ("indefinite", "never-answers")
    assert code == v.EXIT_OK and "indefinite 1 (1 known divergences)" in text, text
    code, records, _ = _run(tmp_path / "other", [_case("a-002[binary]")], targets=[FakeTarget()], answer=silent)
    assert (code, records[0].known_divergence) == (v.EXIT_INDEFINITE, "")
