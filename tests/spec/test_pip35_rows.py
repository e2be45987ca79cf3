"""spec/pip35.yaml: the rows load, are marked tentative, need the flag they test for, and the model
reproduces what each states (the generic test does every row; these pin PIP-35's own rules)."""

from dataclasses import replace

import pytest

from conformance.cases import cases_of, stated_disagreements
from conformance.cases_pip35 import bind_topics, row_name
from model.ops import BatchLookup
from model.outcomes import Agreement, BatchLookupResult
from spec.schema import SPEC_DIR, SpecError, load_file, load_registry

ROWS = load_file(SPEC_DIR / "pip35.yaml").rows
BY_ID = {r.id: r for r in ROWS}


def test_rows_load_tentative_should_and_stating_something():
    assert len(ROWS) == 30
    assert all(r.pip == "35" and r.tentative and r.grade == "SHOULD" and r.stated for r in ROWS)
    assert sum(len(r.apis) for r in ROWS) == 55


def test_every_row_but_the_flag_row_needs_the_flag():
    features = load_registry(SPEC_DIR / "features.yaml", "features")
    assert features["supports_batch_lookup"]["kind"] == "protocol-feature-flag"
    assert features["supports_batch_lookup"]["field"] == 10
    assert BY_ID["pip35-flag-001"].features == ("pip-35",)
    assert all(r.features == ("pip-35", "supports_batch_lookup") for r in ROWS if r.id != "pip35-flag-001")


@pytest.mark.parametrize("case", [c for r in ROWS for c in cases_of(r)], ids=lambda c: c.id)
def test_the_model_reproduces_every_statement(case):
    assert stated_disagreements(case.bind("public/p35")) == []


def _tamper(row_id, api, outcome):
    case = next(c for c in cases_of(BY_ID[row_id]) if c.api == api)
    bound = case.bind("public/p35")
    steps = tuple(replace(s, expected=outcome) if s.role == "action" else s for s in bound.steps)
    return stated_disagreements(replace(bound, steps=steps))


def test_a_drifting_model_is_caught():
    ns = "persistent://public/p35/"
    # no expansion: the partitioned name answered as itself
    assert _tamper("pip35-batch-002-partitioned-expands", "binary", BatchLookupResult(
        ((ns + "p", None, "Connect", True, None), (ns + "a", None, "Connect", True, None))))
    # an invalid name answered Connect
    assert _tamper("pip35-batch-005-invalid-names", "rest", BatchLookupResult(
        tuple((ns + n, None, "Connect", True, None) for n in ("a", "b"))))
    # order matters on binary, not on REST
    swapped = BatchLookupResult(((ns + "p-partition-0", None, "Connect", True, None),
                                 (ns + "p-partition-2", None, "Connect", True, None)))
    assert _tamper("pip35-batch-003-partition-names", "binary", swapped)
    assert not _tamper("pip35-batch-003-partition-names", "rest", swapped)
    assert _tamper("pip35-meta-003-rest-existence-check", "rest", Agreement(False, ("t: batch Connect, single HTTP 404",)))
    # the REST batch without the single REST lookup's existence check
    assert _tamper("pip35-batch-015-rest-absent-topic-no-auto-creation", "rest", BatchLookupResult(
        tuple((ns + n, None, "Connect", True, None) for n in ("a", "never-created"))))
    assert _tamper("pip35-batch-009-too-many-names", "binary", BatchLookupResult(()))


def test_topics_bind_to_the_case_namespace_and_back():
    def full(local):
        return f"persistent://public/c1/{local}"

    items = ("a", "{ns}/x/y", "bogus://{ns}/t", "persistent://{ns}/", "{ns}-missing/t")
    bound = bind_topics(items, "public/c1", full)
    assert bound == ("persistent://public/c1/a", "public/c1/x/y", "bogus://public/c1/t", "persistent://public/c1/",
                     "public/c1-missing/t")
    assert [row_name(t, "public/c1", "persistent") for t in bound] == list(items)
    case = cases_of(BY_ID["pip35-batch-005-invalid-names"])[0]
    assert case.bind("public/c1").action.op == BatchLookup(bound[:4] + ("persistent://public/c1/b",), "binary")


GOOD = """schema: 1
feature: pip-35
pip: "35"
tables:
  - name: t
    title: T
    rows:
      - id: pip35-test-001
        description: a row
        source: [spec-pip35]
        grade: SHOULD
        era: pip344
        tentative: true
        apis: [binary]
        setup: {}
        operation: {op: BatchLookup, topics: TOPICS}
"""


@pytest.mark.parametrize("topics, ok", [
    ("[]", True), ("[a, b]", True), ('["{ns}/a/b", "bogus://{ns}/t", "{ns}-x/t"]', True),
    ('["other/ns/t"]', False), ('["x{ns}/t"]', False), ('["{ns}"]', False), ("a", False), ('["{ns}{ns}/t"]', False),
])
def test_batch_topics_are_local_names_or_ns_templates(tmp_path, topics, ok):
    path = tmp_path / "pip35.yaml"
    path.write_text(GOOD.replace("TOPICS", topics))
    if ok:
        assert load_file(path).rows[0].operation_json()["op"] == "BatchLookup"
    else:
        with pytest.raises(SpecError, match="topics"):
            load_file(path)


def test_batch_operations_need_topics(tmp_path):
    path = tmp_path / "pip35.yaml"
    path.write_text(GOOD.replace(", topics: TOPICS", ""))
    with pytest.raises(SpecError, match="lacks topics"):
        load_file(path)
