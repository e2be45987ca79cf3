"""Generated sequences (conformance/fuzz/), saved as cases (conformance/generated.py), with
coverage (conformance/coverage.py): on an in-process target answered by the model, so a correct
target shows no divergence and a target with one wrong rule is found, shrunk and saved."""

from __future__ import annotations

import random
import time

import pytest
import yaml

from conformance import generated
from conformance.fuzz import context, vocabulary
from conformance.fuzz.run import fuzz
from conformance import verdicts as v
from conformance.suite import load_cases
from model import ops
from model.errors import ModelUsageError
from model.machine import apply, initial_state
from model.outcomes import Partitions, ServerError
from tests.conformance.model_target import model_session

ALL_CAPS = frozenset({"admin", "explicit", "client", "client-http"})


def test_every_rule_builds_an_op_the_model_answers_or_refuses():
    names = vocabulary.Names("public/cabc", "cabc-t")
    for op_rule in vocabulary.RULES:
        for values in _samples(op_rule.args(ALL_CAPS)):
            op = op_rule.build(names, **values)
            assert type(op).__name__ in ops.OPERATION_TYPES, op_rule.name
            try:
                apply(initial_state({}, "pip344"), op)
            except ModelUsageError:
                pass  # skipped by the machine, never performed


def _samples(pools: dict, count: int = 12):
    rng = random.Random(1)
    for _ in range(count):
        yield {k: rng.choice(v) for k, v in pools.items()}


def test_the_machine_has_one_rule_per_operation_family_its_target_can_perform():
    from conformance.fuzz.context import FuzzContext
    from conformance.fuzz.machine import machine_class

    lite = frozenset({"client"})
    ctx = FuzzContext(model_session(), None, lite, None, 0, 1.0, 1.0)
    machine = machine_class(ctx)
    families = {r.name for r in vocabulary.rules_for(lite)}
    assert families <= set(vars(machine)) and not {"set_config", "create_namespace"} & set(vars(machine))


def test_rules_follow_capabilities():
    lite = frozenset({"client"})
    names = {r.name for r in vocabulary.rules_for(lite)}
    assert "partitioned_metadata" in names and "create_non_partitioned" in names
    assert not names & {"set_config", "create_namespace", "set_override", "list_partitioned"}
    pools = next(r for r in vocabulary.rules_for(lite) if r.name == "partitioned_metadata").args(lite)
    assert pools["api"] == ("binary",)


def test_random_programs_are_reproducible_from_the_seed():
    names = vocabulary.Names("{ns}", "{tenant}")
    first = vocabulary.random_program(random.Random(7), ALL_CAPS, names, 8)
    assert first == vocabulary.random_program(random.Random(7), ALL_CAPS, names, 8)
    assert first[0] == ops.CreateNamespace("{ns}", first[0].policies)


def test_a_target_that_is_the_model_never_diverges():
    session = model_session()
    report = fuzz(session, examples=40, seed=3, budget_s=60, shrink_budget_s=10)
    assert report.findings == [] and report.error == "" and not report.broken
    assert report.sequences >= 40 and report.steps > 100
    assert report.exit_code == v.EXIT_OK
    cov = report.coverage
    assert cov["operation_types_exercised"] >= 12
    assert "GetPartitionedMetadata" not in cov["operations_never_exercised"]
    assert any(k.startswith("RestError:404") for k in cov["expected_outcomes"])


def _field6_ignored(state, op):
    """A broker that ignores binary field 6: a PARTITIONED_METADATA always asks to auto-create."""
    from model.lookups import get_partitioned_metadata
    if op.api == "binary":
        op = ops.GetPartitionedMetadata(op.topic, "binary", True)
    return get_partitioned_metadata(state, op)


def test_a_wrong_rule_is_found_shrunk_replayed_and_saved(tmp_path):
    session = model_session(handlers={ops.GetPartitionedMetadata: _field6_ignored})
    report = fuzz(session, examples=500, seed=11, budget_s=30, shrink_budget_s=5, save_dir=tmp_path)
    assert report.exit_code == v.EXIT_FAILED
    binary = [f for f in report.findings if f.signature.startswith("GetPartitionedMetadata[binary,auto_create=False]")]
    assert binary, [f.signature for f in report.findings]
    finding = binary[0]
    # Hypothesis' own account reads as steps: one rule per operation family, its drawn arguments named.
    assert finding.hypothesis_steps[0].startswith("state.start(policies=")
    assert finding.hypothesis_steps[-1].startswith("state.partitioned_metadata(api='binary', auto=False")
    assert any("as Hypothesis shrank it: state.start(" in line for line in report.lines())
    # Minimal: the namespace, then the lookup (one partitioned-by-default config step at most).
    assert len(finding.steps) <= 3
    assert finding.steps[-1]["op"] == "GetPartitionedMetadata" and finding.steps[-1]["auto_create"] is False
    assert finding.confirmed == v.FAILED and finding.path
    doc = yaml.safe_load(open(finding.path, encoding="utf-8"))
    assert doc["seed"] == 11 and doc["found_on"] == "model" and doc["steps"] == finding.steps
    assert doc["expected"][-1]["kind"] != doc["actual"][-1]["kind"] or doc["expected"] != doc["actual"]
    assert "{ns}" in yaml.safe_dump(doc["steps"])
    # It loads as an ordinary case, bound to a fresh namespace, expectation recomputed by the model.
    # (A field 6 ignored on a missing namespace is a second finding, with a message of its own.)
    (case,) = [c for c in generated.load_generated(directory=tmp_path) if c.path == str(finding.path)]
    assert case.id == f"{doc['id']}[binary]" and case.pip == "344" and case.table == "pip-344/generated"
    bound = case.bind("public/c-gen1")
    assert bound.action is bound.steps[-1] and bound.action.op.topic.startswith(("persistent://", "non-persistent://"))
    assert "{ns}" not in repr(bound.steps) and "public/c-gen1" in repr(bound.steps)
    assert isinstance(bound.action.expected, ServerError)
    # ... and fails on the broken target, passes on a correct one.
    assert session.run_case(case).verdict.verdict == v.FAILED
    assert model_session().run_case(case).verdict.verdict == v.PASSED


def test_known_divergences_are_counted_not_saved(tmp_path):
    session = model_session(handlers={ops.GetPartitionedMetadata: _field6_ignored})
    report = fuzz(session, examples=500, seed=11, budget_s=30, shrink_budget_s=3, save_dir=tmp_path,
                           known=("GetPartitionedMetadata[binary",))
    assert not [f for f in report.findings if f.signature.startswith("GetPartitionedMetadata[binary")]
    assert sum(report.known_seen.values()) >= 1
    assert not list(tmp_path.glob("*.yaml"))


def test_a_hanging_target_is_indefinite_and_the_run_stays_in_budget():
    session = model_session(hang=lambda op: isinstance(op, (ops.ListTopics, ops.Lookup)), delay=0.2)
    started = time.monotonic()
    report = fuzz(session, examples=200, seed=5, budget_s=4, shrink_budget_s=2)
    assert time.monotonic() - started < 90  # the budget holds; generous for a loaded machine
    assert report.indefinite and report.findings == []
    # Each hanging variant is waited on at most HANG_LIMIT times.
    per_variant = {}
    for item in report.indefinite:
        per_variant[item["op"]] = per_variant.get(item["op"], 0) + 1
    assert max(per_variant.values()) <= context.HANG_LIMIT
    assert report.exit_code == v.EXIT_INDEFINITE


def test_generated_cases_are_ordinary_cases():
    for case in [c for c in load_cases() if isinstance(c, generated.GeneratedCase)]:
        bound = case.bind("public/c-ordinary")
        assert sum(s.role == "action" for s in bound.steps) == 1 and bound.steps[-1].role == "action"
        assert case.id.startswith(f"pip{case.pip}-gen-") and case.era == "pip344"


def test_placeholders_round_trip():
    names = vocabulary.Names("public/c1234", "c1234-t")
    steps = generated.steps_json([ops.Lookup(names.topic("persistent", "ns2", "t"), "binary")], names.placeholders())
    assert steps == [{"op": "Lookup", "topic": "persistent://{tenant}/n2/t", "api": "binary"}]
    filled = generated.fill(steps[0], generated.placeholder_names("public/c9"))
    assert filled["topic"] == "persistent://c9-t/n2/t"


def test_partitioned_metadata_answer_of_the_model_target_is_the_models():
    session = model_session()
    session.start()
    from conformance.executor import Stepper
    stepper = Stepper(session)
    stepper.begin({})
    stepper.perform(ops.CreateNamespace("public/cx"))
    stepper.perform(ops.CreatePartitionedTopic("persistent://public/cx/t", 2))
    result = stepper.perform(ops.GetPartitionedMetadata("persistent://public/cx/t", "binary", False))
    assert result.answered and result.actual == Partitions(2) and result.driver == "wire"


@pytest.mark.slow
def test_fuzz_against_the_reference_broker_runs_sequences(tmp_path):
    from conformance.execute import TargetSession
    from conformance.targets.registry import make_target

    session = TargetSession(make_target("reference", timeout=5.0, log_dir=tmp_path))
    try:
        report = fuzz(session, examples=10, seed=1, budget_s=8, shrink_budget_s=2, save_dir=None)
    finally:
        session.stop()
    # Divergences it finds are the reference's or the model's to fix; the machinery must run clean.
    assert report.sequences >= 5 and report.steps > 20 and not report.broken and not report.indefinite
    assert report.duration_s < 8 + 2 * 2 + 60  # the budgets hold; generous for a loaded machine


def test_another_minimal_sequence_of_a_saved_finding_is_not_saved_again(tmp_path):
    from conformance import generated

    def doc(local, actual=False):
        steps = [{"op": "CreateNamespace", "namespace": "{ns}", "policies": []},
                 {"op": "Lookup", "api": "binary", "topic": f"persistent://{{ns}}/{local}"}]
        return generated.to_document(
            target="lite", target_version="1", seed=1, era="pip344", steps=steps,
            expected=[{"kind": "LookupAnswer", "response": "Connect", "authoritative": True}],
            actual=[{"kind": "LookupAnswer", "response": "Connect", "authoritative": actual}],
            signature="Lookup[binary]: expected LookupAnswer:Connect, got LookupAnswer:Connect", found_at="now")

    first = generated.save(doc("t"), tmp_path)
    assert generated.save(doc("u"), tmp_path) == first  # same divergence, another topic: kept once
    other = generated.save(doc("u", actual=None), tmp_path)  # another actual outcome: a new finding
    assert other != first and sorted(p.name for p in tmp_path.iterdir()) == sorted([first.name, other.name])
