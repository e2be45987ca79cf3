"""spec/pip157.yaml: the rows load, say which outcomes are our decisions, and the model agrees with what
they state (the general agreement test covers every stated row; here, PIP-157's own checks)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from conformance.cases import cases_of, stated_disagreements
from conformance.cases_pip157 import bucket_folder
from model.ops import CreateNamespace, ReadTopicLayout
from model.outcomes import LedgerPaths, TopicBuckets
from spec import lint as spec_lint
from spec.schema import SPEC_DIR, SpecError, load_file, load_registry, load_rows

ROWS = [r for r in load_rows() if r.pip == "157"]
BY_ID = {r.id: r for r in ROWS}


def bound(row_id: str, api_index: int = 0):
    return cases_of(BY_ID[row_id])[api_index].bind("public/p157")


def test_rows_load_with_the_feature_and_tables():
    assert len(ROWS) >= 50
    assert {r.table for r in ROWS} == {"pip-157/policy", "pip-157/immutable", "pip-157/topics", "pip-157/limits",
                                       "pip-157/layout", "pip-157/boundaries"}
    assert all(r.features == ("pip-157",) and r.era in ("pip344", "any") for r in ROWS)
    features = load_registry(SPEC_DIR / "features.yaml", "features")
    assert features["pip-157"]["status"] == "tentative"


def test_our_decisions_are_marked_tentative_and_cite_the_decisions_page():
    for row in ROWS:
        if row.tentative:
            assert any(s.startswith("decisions-157/") for s in row.source), row.id
        else:
            assert "tentative upstream" in (row.note or ""), row.id
    # the open points of the issue, each closed by at least one tentative row
    cited = {s for r in ROWS if r.tentative for s in r.source}
    assert {"decisions-157/a-hashed-string", "decisions-157/b-java-hashcode", "decisions-157/c-abs-min-value",
            "decisions-157/d-bucket-folders", "decisions-157/e-immutable", "decisions-157/f-range"} <= cited


def test_every_row_states_something_except_the_pure_observations():
    unstated = sorted(r.id for r in ROWS if not r.stated)
    assert unstated == ["pip157-layout-deleted-partitions", "pip157-layout-non-persistent",
                        "pip157-topics-delete-namespace-empty", "pip157-topics-delete-partitioned"]


def test_white_box_rows_observe_the_layout_and_act_through_the_apis():
    layout = [r for r in ROWS if r.table == "pip-157/layout"]
    assert len(layout) >= 12
    for row in layout:
        assert any(dict(o)["op"] == "ReadTopicLayout" for o in row.observe), row.id
        assert row.operation_json()["op"] != "ReadTopicLayout"
    # the boundaries table holds the layout at the largest bucket count (spec/boundaries.yaml)
    white_box = ("pip-157/layout", "pip-157/boundaries")
    assert not any(dict(o)["op"] == "ReadTopicLayout" for r in ROWS if r.table not in white_box for o in r.observe)


def test_setup_policies_create_the_namespace_with_them():
    steps = bound("pip157-change-post-other-value").steps
    assert steps[0].op == CreateNamespace("public/p157", (("numberOfTopicBuckets", 3),))
    assert steps[-1].expected == TopicBuckets(3)


def test_layout_rows_name_the_paths_the_model_computes():
    steps = bound("pip157-layout-example-partitioned").observations
    assert [s.expected for s in steps] == [
        LedgerPaths((f"/managed-ledgers/public/p157/persistent/${k}/ptopic-partition-{i}",))
        for i, k in enumerate((0, 1, 2, 0))] + [LedgerPaths(())]
    assert all(isinstance(s.op, ReadTopicLayout) and s.op.api == "metadata" for s in steps)


@pytest.mark.parametrize("row_id, wrong", [
    ("pip157-layout-example-nptopic1", LedgerPaths(("/managed-ledgers/public/p157/persistent/$1/nptopic1",))),
    ("pip157-layout-min-value-3", LedgerPaths(())),  # a literal-Java $-2 folder is never listed
    ("pip157-layout-default-unbucketed", LedgerPaths(("/managed-ledgers/public/p157/persistent/$0/nptopic1",))),
    ("pip157-change-post-other-value", TopicBuckets(5)),
])
def test_a_model_that_drifts_from_a_stated_row_is_caught(row_id, wrong):
    case = bound(row_id)
    first = next(i for i, s in enumerate(case.steps) if s.role == "observe")
    tampered = tuple(replace(s, expected=wrong) if i == first else s for i, s in enumerate(case.steps))
    assert stated_disagreements(replace(case, steps=tampered))


def test_bucket_folder_reads_paths_independently_of_the_model():
    assert bucket_folder(LedgerPaths(("/managed-ledgers/t/n/persistent/$12/x",))) == 12
    assert bucket_folder(LedgerPaths(("/managed-ledgers/t/n/persistent/x",))) is None
    for odd in (LedgerPaths(()), LedgerPaths(("/a/b", "/c/d")), LedgerPaths(("/managed-ledgers/t/n/p/$-2/x",))):
        assert bucket_folder(odd) == odd


# --- schema and lint extensions used by the rows ------------------------------------------------------

ROW = """\
schema: 1
feature: pip-157
pip: "157"
tables:
  - name: t
    title: T
    rows:
      - id: pip157-test-001
        description: A row
        source: [decisions-157/f-range]
        grade: SHOULD
        era: pip344
        apis: [rest]
        setup: {setup}
        operation: {operation}
        observe: [{{op: ReadTopicLayout, topic: t}}]
        stated: {stated}
        tentative: {tentative}
"""


def load(tmp_path, setup="{policies: {numberOfTopicBuckets: 3}}", operation="{op: CreateNonPartitionedTopic, topic: t}",
         stated="{layout: {t: 2}}", tentative="true"):
    path = tmp_path / "pip157.yaml"
    path.write_text(ROW.format(setup=setup, operation=operation, stated=stated, tentative=tentative))
    return load_file(path)


def test_a_good_test_row_loads(tmp_path):
    (row,) = load(tmp_path).rows
    assert row.setup.policies == (("numberOfTopicBuckets", 3),) and row.tentative
    assert row.stated_json() == {"layout": (("t", 2),)}


@pytest.mark.parametrize("kwargs, message", [
    ({"setup": "{namespace: missing, policies: {numberOfTopicBuckets: 3}}"}, "need namespace: present"),
    ({"setup": "{policies: {numberOfTopicBuckets: {n: 3}}}"}, "JSON scalars or lists"),
    ({"stated": "{layout: {t: -1}}"}, "stated layout must map"),
    ({"stated": "{buckets: two}"}, "stated buckets must be an int"),
    ({"tentative": "maybe"}, "tentative must be true or false"),
    ({"operation": "{op: ReadTopicLayout, topic: t}"}, "ReadTopicLayout cannot be performed through rest"),
    ({"operation": "{op: SetNumberOfTopicBuckets, buckets: {n: 1}}"}, "buckets must be a JSON scalar or list"),
])
def test_malformed_pip157_rows_are_refused(tmp_path, kwargs, message):
    with pytest.raises(SpecError, match=message):
        load(tmp_path, **kwargs)


def test_lint_checks_quotes_in_project_documents_and_the_tentative_flag(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "decisions.md").write_text("We decided: buckets are\n  $k folders.\n")
    spec_dir = tmp_path / "spec"
    spec_dir.mkdir()
    (spec_dir / "sources.yaml").write_text("schema: 1\nsources:\n  ours:\n    title: Ours\n    where: docs/decisions.md\n")
    (spec_dir / "features.yaml").write_text("schema: 1\nfeatures:\n  pip-157:\n    title: P\n    status: tentative\n"
                                            "  pip-344:\n    title: Q\n    status: shipped\n")

    def rows(info, tentative, feature="pip-157"):
        (spec_dir / "pip157.yaml").write_text(
            f'schema: 1\nfeature: {feature}\npip: "157"\ntables:\n  - name: t\n    title: T\n    rows:\n'
            f"      - id: pip157-lint-001\n        description: D\n        source: [ours]\n"
            f"        info: \"{info}\"\n        grade: MUST\n        era: pip344\n        apis: [rest]\n"
            f"        setup: {{}}\n        operation: {{op: GetNumberOfTopicBuckets}}\n        tentative: {tentative}\n")
        return spec_lint.lint(spec_dir)

    assert rows("buckets are $k folders.", "true") == []
    assert any("not a verbatim quote" in p for p in rows("buckets are named $k", "true"))
    assert any("mark the row tentative" in p for p in rows("buckets are $k folders.", "false"))
    assert any("tentative: true is for rows of a feature that is tentative" in p
               for p in rows("buckets are $k folders.", "true", feature="pip-344"))
