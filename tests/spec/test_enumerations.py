"""spec/enumerations.py and spec/enumerations.yaml: every value of every enumeration the PIPs' paths
take reaches a row, found from the rows' setup, action and observations, and the lint fails when one
does not."""

import shutil

import pytest

from conformance import spec_review
from spec import enumerations
from spec import lint as spec_lint
from spec.schema import SPEC_DIR, load_rows
from tests.spec.helpers import make_spec_dir, row, write_rows

ENUMS = """\
schema: 1
enumerations:
  - id: name-form
    title: T
    source: [quoted-doc]
    reader: name-form
    values: [plain, partition, two-partition-suffixes, non-numeric-suffix, digits-not-an-index]
    paths:
      - path: partitioned-metadata
        ops: [GetPartitionedMetadata]
        apis: [rest, binary]
        values: [plain, partition]
"""


def named(id, topic):
    return row(id=id).replace("operation: {op: GetPartitionedMetadata, topic: t,",
                              f"operation: {{op: GetPartitionedMetadata, topic: {topic},")


@pytest.fixture
def spec_dir(tmp_path):
    directory = make_spec_dir(tmp_path)
    (directory / "enumerations.yaml").write_text(ENUMS)
    return directory


def test_the_real_spec_reaches_every_value():
    cells = enumerations.coverage(enumerations.load_enumerations(), load_rows())
    assert cells and [cell.label for cell in cells if not cell.rows] == []
    labels = {cell.label for cell in cells}
    # the values the PIPs' paths take, ALL and the odd name forms included
    assert {"topics-of-namespace-mode binary-listing[binary] ALL", "subscription-type non-persistent-subscribe[binary] Key_Shared",
            "attached read-by-inactive-check[binary] producers",
            "name-form partitioned-metadata[binary] two-partition-suffixes"} <= labels


def test_rows_are_placed_by_what_they_ask(spec_dir):
    write_rows(spec_dir, named("pip344-lint-001", "t"), named("pip344-lint-002", "t-partition-1"))
    cells = enumerations.coverage(enumerations.load_enumerations(spec_dir / "enumerations.yaml"), load_rows(spec_dir))
    assert {cell.label: cell.rows for cell in cells} == {
        "name-form partitioned-metadata[rest] plain": ("pip344-lint-001",),
        "name-form partitioned-metadata[rest] partition": ("pip344-lint-002",),
        "name-form partitioned-metadata[binary] plain": ("pip344-lint-001",),
        "name-form partitioned-metadata[binary] partition": ("pip344-lint-002",)}
    assert spec_lint.lint(spec_dir) == []


def test_the_lint_and_the_review_report_a_value_no_row_reaches(spec_dir, capsys):
    write_rows(spec_dir, named("pip344-lint-001", "t"))
    problems = spec_lint.lint(spec_dir)
    assert [p.split(": ", 1)[1] for p in problems] == [
        "name-form partitioned-metadata[rest] partition: no row reaches this value",
        "name-form partitioned-metadata[binary] partition: no row reaches this value"], problems
    assert spec_review.main(["--dir", str(spec_dir), "--enumerations"]) == 1
    out = capsys.readouterr()
    assert "partitioned-metadata[binary]" in out.out and "MISSING" in out.out and "1 missing" not in out.err
    assert "2 missing" in out.err


def test_a_row_removed_from_the_real_spec_is_reported(tmp_path):
    copy = tmp_path / "spec"
    shutil.copytree(SPEC_DIR, copy, ignore=shutil.ignore_patterns("observed", "__pycache__"))
    path = copy / "pip2.yaml"
    text = path.read_text()
    start = text.index("      - id: pip2-list-003-mode-all-non-persistent\n")
    end = text.index("      - id: pip2-lookup-001-partitioned\n")
    path.write_text(text[:start] + text[end:])
    assert enumerations.problems(copy) == [
        f"{copy / 'enumerations.yaml'}:{_line(copy, 'binary-listing')}: "
        "topics-of-namespace-mode binary-listing[binary] ALL: no row reaches this value"]


def _line(directory, path_name):
    lines = (directory / "enumerations.yaml").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.strip() == f"- path: {path_name}")


@pytest.mark.parametrize("topic, form", [
    ("t", "plain"), ("t-partition-3", "partition"), ("t-partition-\u0661", "partition"),
    ("t-partition-0-partition-1", "two-partition-suffixes"), ("t-partition-x", "non-numeric-suffix"),
    ("t-partition-", "non-numeric-suffix"), ("t-partition-01", "digits-not-an-index"),
    ("t-partition-2147483648", "digits-not-an-index"), ("t-partition-2147483647", "partition"),
])
def test_name_forms_follow_getPartitionIndex(topic, form):
    assert enumerations._name_form(None, {"topic": topic}) == {form}


def test_an_enumeration_names_known_readers_values_and_sources(spec_dir):
    write_rows(spec_dir, named("pip344-lint-001", "t"), named("pip344-lint-002", "t-partition-1"))
    (spec_dir / "enumerations.yaml").write_text(ENUMS.replace("values: [plain, partition]\n", "values: [plain, nope]\n"))
    assert any("values" in p and "nope" in p for p in spec_lint.lint(spec_dir))
    (spec_dir / "enumerations.yaml").write_text(ENUMS.replace("reader: name-form", "reader: guess"))
    assert any("reader" in p for p in spec_lint.lint(spec_dir))
    (spec_dir / "enumerations.yaml").write_text(ENUMS.replace("source: [quoted-doc]", "source: [no-such-anchor]"))
    assert any("no-such-anchor" in p and "not an anchor" in p for p in spec_lint.lint(spec_dir))
