"""Differential mode (conformance/diff.py): same cases and sequences on several targets, grouped by
identical answers, reported with the model's answer beside them."""

from __future__ import annotations

from conformance import diff
from conformance.suite import load_cases
from model import ops
from model.lookups import get_partitioned_metadata
from tests.conformance.model_target import model_session


def test_normalise_drops_what_may_differ_and_puts_placeholders_back():
    names = {"public/c1": "{ns}"}
    value = {"kind": "LookupAnswer", "brokerServiceUrl": "pulsar://h:1", "request_id": 7,
             "topics": ["persistent://public/c1/t"]}
    assert diff.normalise(value, names) == {"kind": "LookupAnswer", "topics": ["persistent://{ns}/t"]}


def test_compare_groups_targets_by_identical_answers():
    program = diff.Program("p", "sequence", {}, "pip344", [({"op": "Handshake"}, "action", "binary")] * 2,
                           model=[{"kind": "Done"}, {"kind": "Partitions", "partitions": 0}])
    program.answers = {
        "a": [{"status": "answered", "outcome": {"kind": "Done"}},
              {"status": "answered", "outcome": {"kind": "Partitions", "partitions": 0}}],
        "b": [{"status": "answered", "outcome": {"kind": "Done"}},
              {"status": "answered", "outcome": {"kind": "Partitions", "partitions": 0}}],
        "c": [{"status": "answered", "outcome": {"kind": "Done"}},
              {"status": "answered", "outcome": {"kind": "ServerError", "error": "TopicNotFound", "message": ""}}],
        "d": [{"status": "unsupported", "reason": "no admin API"}],
    }
    found = diff.compare(program)
    assert found.step == 1
    assert [targets for _, targets in found.groups] == [["a", "b"], ["c"]]
    assert found.model == {"kind": "Partitions", "partitions": 0}
    text = "\n".join(found.lines())
    assert "a, b: " in text and "(= model)" in text and "c: " in text
    program.answers.pop("c")
    assert diff.compare(program) is None


def _field6_ignored(state, op):
    if op.api == "binary":
        op = ops.GetPartitionedMetadata(op.topic, "binary", True)
    return get_partitioned_metadata(state, op)


def test_two_targets_that_agree_and_one_that_does_not():
    cases = [c for c in load_cases({"344"}) if "gpmt-00" in c.id][:12]
    good, twin = model_session("good"), model_session("twin")
    bad = model_session("bad", handlers={ops.GetPartitionedMetadata: _field6_ignored})
    report = diff.diff([good, twin], cases=cases, sequences=10, seed=4)
    assert report.disagreements == [] and report.agreements >= 20
    report = diff.diff([good, twin, bad], cases=cases, sequences=40, seed=4)
    assert report.disagreements
    first = report.disagreements[0]
    assert [sorted(t) for _, t in first.groups if "bad" not in t] == [["good", "twin"]]
    assert any(g[0] == first.model for g in first.groups)  # the majority agrees with the model here
    lines = "\n".join(report.lines())
    assert "groups good,twin | bad" in lines or "groups bad | good,twin" in lines
    assert report.to_json()["disagreements"][0]["program"] == first.program


def test_sequences_are_the_same_for_every_target_and_seed():
    caps = frozenset({"admin", "explicit", "client", "client-http"})
    import random
    one = diff.program_of_sequence(0, random.Random(9), caps, 6)
    two = diff.program_of_sequence(0, random.Random(9), caps, 6)
    assert one.steps == two.steps and "{ns}" in str(one.steps)
