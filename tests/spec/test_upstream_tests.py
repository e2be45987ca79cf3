"""spec/upstream_tests.py: Pulsar's own tests assertion by assertion (spec/upstream_tests.yaml), the
lint's L8 over it, and docs/upstream-tests.md generated from it."""

from pathlib import Path

import pytest

from spec import citations
from spec import lint as spec_lint
from spec import upstream_tests
from spec.schema import SPEC_DIR, SpecError, load_rows
from tests.spec.helpers import SOURCES, make_spec_dir, row, write_rows

ANCHORS = SOURCES + """\
  SomeTest#testIt:
    title: An upstream test method
    where: apache/pulsar@v4.0.7:pulsar-broker/src/test/SomeTest.java
  OtherTest#testIt:
    title: A test of another folder
    where: apache/pulsar@v4.0.7:pulsar-client/src/test/OtherTest.java
"""
INVENTORY = """\
schema: 1
tags: [v4.0.7, v3.0.7]
classes:
  - class: SomeTest
    file: apache/pulsar@v4.0.7:pulsar-broker/src/test/SomeTest.java
    assertions:
{entries}"""
ENTRY = """\
      - id: {id}
        test: {test}
        states: "What it checks"
{tail}"""


def entry(id="some-01", test="SomeTest#testIt", rows="[pip344-lint-001]", tail=None):
    return ENTRY.format(id=id, test=test, tail=tail if tail is not None else f"        rows: {rows}\n")


@pytest.fixture
def spec_dir(tmp_path):
    directory = make_spec_dir(tmp_path)
    (directory / "sources.yaml").write_text(ANCHORS)
    manifest = citations.load_manifest(directory)
    manifest["apache/pulsar@v4.0.7:pulsar-client/src/test/OtherTest.java"] = {"blob": "1" * 40, "quotes": []}
    (directory / citations.MANIFEST).write_text(citations.dump_manifest(manifest))
    write_rows(directory, row())
    return directory


def write(directory: Path, *entries, render: bool = True) -> None:
    (directory / upstream_tests.FILE).write_text(INVENTORY.format(entries="".join(entries)))
    if render:
        (directory.parent / upstream_tests.DOC).write_text(upstream_tests.render(upstream_tests.load(directory)))


def test_the_real_inventory_lists_every_assertion_and_maps_each_in_scope_one():
    inventory = upstream_tests.load(SPEC_DIR)
    assert upstream_tests.problems(SPEC_DIR) == []
    assert len(inventory.assertions) >= 90
    rows = {r.id for r in load_rows()}
    for assertion in inventory.assertions:
        assert assertion.out_of_scope or (assertion.rows and set(assertion.rows) <= rows), assertion.id
    # what the docs page says is what the file holds
    page = (SPEC_DIR.parent / upstream_tests.DOC).read_text(encoding="utf-8")
    assert f"{len(inventory.assertions)} assertions" in page


def test_a_mapped_inventory_is_clean_and_its_page_is_generated(spec_dir):
    write(spec_dir, entry(), entry(id="some-02", tail='        out_of_scope: {kind: outside-pips, why: "not a PIP"}\n'),
          entry(id="some-03", rows="[pip344-lint-001]", tail='        rows: [pip344-lint-001]\n        partly: "half"\n'))
    assert spec_lint.lint(spec_dir) == []
    page = (spec_dir.parent / upstream_tests.DOC).read_text()
    assert "3 assertions, 1 covered, 1 in part, 1 out of scope" in page
    assert "`pip344-lint-001`" in page and "outside-pips: not a PIP" in page


def test_a_row_that_does_not_exist_is_reported(spec_dir):
    write(spec_dir, entry(rows="[pip344-lint-001, pip344-no-such-row]"))
    problems = spec_lint.lint(spec_dir)
    assert any("some-01: row 'pip344-no-such-row' does not exist" in p for p in problems), problems


def test_an_assertion_in_scope_without_a_row_is_refused(spec_dir):
    write(spec_dir, entry(tail=""), render=False)
    problems = spec_lint.lint(spec_dir)
    assert any("names the rows that check it" in p for p in problems), problems
    with pytest.raises(SpecError, match="names the rows that check it"):
        upstream_tests.load(spec_dir)


def test_out_of_scope_says_why_and_names_no_rows(spec_dir):
    write(spec_dir, entry(tail='        rows: [pip344-lint-001]\n        out_of_scope: {kind: outside-pips, why: "x"}\n'),
          render=False)
    assert any("names no rows" in p for p in spec_lint.lint(spec_dir))
    write(spec_dir, entry(tail='        out_of_scope: {kind: boring, why: "x"}\n'), render=False)
    assert any("unobservable, outside-pips" in p for p in spec_lint.lint(spec_dir))


@pytest.mark.parametrize("test, message", [
    ("SomeTest#testMissing", "is not an anchor of sources.yaml"),
    ("OtherTest#testIt", "not to a test class"),
    ("SomeTest#testIt@v9.9.9", "is not an anchor of sources.yaml"),
    ("not an anchor", "names an anchor Class#method"),
])
def test_the_test_is_an_anchor_in_the_classs_file(spec_dir, test, message):
    write(spec_dir, entry(test=test), render=False)
    problems = spec_lint.lint(spec_dir)
    assert any(message in p for p in problems), problems


def test_a_page_that_drifted_from_the_file_is_reported(spec_dir):
    write(spec_dir, entry())
    page = spec_dir.parent / upstream_tests.DOC
    page.write_text(page.read_text().replace("What it checks", "Something else"))
    assert any("docs/upstream-tests.md: not what spec/upstream_tests.yaml makes" in p for p in spec_lint.lint(spec_dir))
    assert upstream_tests.main(["--dir", str(spec_dir), "--write"]) == 0
    assert spec_lint.lint(spec_dir) == []


def test_ids_are_unique(spec_dir):
    write(spec_dir, entry(), entry())
    assert any("assertion id used 2 times" in p for p in spec_lint.lint(spec_dir))
