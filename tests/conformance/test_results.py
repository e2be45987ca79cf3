"""conformance/results.py: the versioned JSONL record the reports package reads."""

import json

import pytest

from conformance import results
from conformance.errors import ProtocolViolation
from model.outcomes import ServerError, TopicList, outcome_from_json


def _record(**overrides):
    values = dict(
        schema_version=results.SCHEMA_VERSION, run_id="r1", timestamp=results.utc_now(),
        case_id="pip344-x-001[binary]", row_id="pip344-x-001", pip="344", table="t", grade="MUST",
        era="pip344", api="binary", target="reference", target_version="1.0", driver="wire",
        verdict="failed", reason="step 1 differs",
        expected=results.outcome_json(ServerError("TopicNotFound", "")),
        actual=results.outcome_json(TopicList(frozenset({"b", "a"}))), failing_step=1, duration_s=0.25,
        source=["Pulsar's ServerCnx.handlePartitionMetadataRequest"])
    values.update(overrides)
    return results.ResultRecord(**values)


def test_round_trip_through_one_json_line():
    record = _record()
    line = record.to_json()
    assert "\n" not in line
    assert results.ResultRecord.from_json(line) == record
    assert list(json.loads(line)) == list(results.FIELDS)


def test_outcomes_are_stored_as_model_json_and_read_back():
    record = _record()
    assert outcome_from_json(record.expected) == ServerError("TopicNotFound", "")
    assert record.actual == {"kind": "TopicList", "topics": ["a", "b"]}
    assert results.outcome_json(None) is None
    assert results.outcome_json(ProtocolViolation("bad frame")) == {"kind": "ProtocolViolation", "reason": "bad frame"}


def test_schema_version_and_fields_are_enforced():
    data = json.loads(_record().to_json())
    with pytest.raises(ValueError, match="schema_version"):
        results.ResultRecord.from_json(json.dumps({**data, "schema_version": 99}))
    with pytest.raises(ValueError, match="unknown"):
        results.ResultRecord.from_json(json.dumps({**data, "extra": 1}))
    del data["reason"]
    with pytest.raises(ValueError, match="missing"):
        results.ResultRecord.from_json(json.dumps(data))
    with pytest.raises(ValueError, match="verdict"):
        results.ResultRecord.from_json(_record(verdict="green").to_json())


def test_older_schemas_are_read_and_target_error_is_a_verdict():
    data = json.loads(_record(verdict="target-error", reason="target could not start: gone").to_json())
    assert data["schema_version"] == results.SCHEMA_VERSION == 4
    assert results.ResultRecord.from_json(json.dumps(data)).verdict == "target-error"
    without_client = {key: value for key, value in data.items() if key != "client"}
    older = results.ResultRecord.from_json(json.dumps({**without_client, "verdict": "passed", "schema_version": 2}))
    assert older.schema_version == 4 and older.verdict == "passed" and older.client == ""
    assert results.ResultRecord.from_json(json.dumps({**without_client, "schema_version": 3})).client == ""


def test_writer_appends_to_out_results_run_id_jsonl(tmp_path):
    writer = results.ResultWriter(tmp_path, "run-7")
    writer.write(_record(case_id="a"))
    writer.write(_record(case_id="b", verdict="passed"))
    writer.close()
    assert writer.path == tmp_path / "results" / "run-7.jsonl"
    records = results.read_results(writer.path)
    assert [r.case_id for r in records] == ["a", "b"]
    assert [len(g) for g in results.records_by_verdict(records).values()] == [1, 1, 0, 0, 0, 0]


def test_run_ids_sort_by_time_and_differ():
    first, second = results.new_run_id(), results.new_run_id()
    assert first != second and len(first) == len("20260722T101500Z-1a2b3c")
