"""conformance/draft_divergences.py: a first known-divergences file from a run's results, valid as
it is, that covers exactly what the run did not expect."""

from conformance import draft_divergences
from conformance.divergences import KnownDivergences
from conformance.results import ResultWriter
from spec.schema import load_divergences
from tests.conformance.test_results import _record


def _records():
    return [
        _record(case_id="pip344-a-001[binary]", row_id="pip344-a-001", verdict="failed"),
        _record(case_id="pip344-a-001[rest]", row_id="pip344-a-001", api="rest", driver="rest", verdict="failed"),
        _record(case_id="pip2-b-002[binary]", row_id="pip2-b-002", verdict="indefinite"),
        _record(case_id="pip344-c-003[binary]", row_id="pip344-c-003", verdict="failed", known_divergence="listed"),
        _record(case_id="pip344-d-004[binary]", row_id="pip344-d-004", verdict="passed"),
        _record(case_id="pip344-e-005[binary]", row_id="pip344-e-005", verdict="unsupported"),
    ]


def test_the_draft_is_a_valid_file_covering_what_the_run_did_not_expect(tmp_path):
    text = draft_divergences.draft(_records(), "my-broker", ["run.jsonl"])
    (tmp_path / "my-broker.yaml").write_text(text)
    entries = load_divergences("my-broker", tmp_path)
    assert [(e.id, e.cases, e.verdict) for e in entries] == [
        ("failed-when-drafted", ("pip344-a-001[binary]", "pip344-a-001[rest]"), "failed"),
        ("unanswered-when-drafted", ("pip2-b-002[binary]",), "indefinite")]
    assert all(e.releases == "*" and "not triaged" in e.summary and e.evidence == ("results file run.jsonl",)
               for e in entries)
    known = KnownDivergences(entries)
    assert known.applies("failed", "pip344-a-001[rest]", "pip344-a-001", None).id == "failed-when-drafted"
    assert known.applies("indefinite", "pip2-b-002[binary]", "pip2-b-002", None).id == "unanswered-when-drafted"
    assert known.covering("pip344-d-004[binary]", "pip344-d-004", None) is None
    assert text.startswith("# Known divergences of my-broker: save as my-broker.yaml")


def test_a_run_without_surprises_drafts_a_file_without_entries(tmp_path):
    text = draft_divergences.draft(_records()[3:], "quiet", ["run.jsonl"])
    (tmp_path / "quiet.yaml").write_text(text)
    assert load_divergences("quiet", tmp_path) == ()


def test_the_command_reads_results_files_and_prints_the_draft(tmp_path, capsys):
    writer = ResultWriter(tmp_path, "run")
    for record in _records():
        writer.write(record)
    writer.close()
    assert draft_divergences.main([str(tmp_path / "results" / "run.jsonl"), "--name", "lite"]) == 0
    assert "target: lite" in capsys.readouterr().out
    assert draft_divergences.main([str(tmp_path / "missing.jsonl")]) == 2
