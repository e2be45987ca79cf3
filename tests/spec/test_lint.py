"""spec/lint.py: L1-L5, the checks of the rows as data (the model's checks: tests/conformance/test_spec_review.py)."""

import pytest

from spec import lint as spec_lint
from spec.schema import SPEC_DIR
from tests.spec.helpers import REMOTE_QUOTE, SOURCES, make_spec_dir, row, write_rows

@pytest.fixture
def spec_dir(tmp_path):
    return make_spec_dir(tmp_path)


def test_the_real_spec_is_clean():
    assert spec_lint.lint(SPEC_DIR) == []


def test_a_clean_file_passes(spec_dir):
    write_rows(spec_dir, row())
    assert spec_lint.lint(spec_dir) == []


@pytest.mark.parametrize("rows, message", [
    ([row(), row()], "id used 2 times"),
    ([row(source="nowhere")], "source 'nowhere' is not in sources.yaml"),
    ([row(info="answer is 3")], "info is not a verbatim quote"),
    ([row().replace('        info: "answer is `{partitions: 2}`"\n', "")], "MUST rows carry an info quote"),
])
def test_lint_reports_each_problem_with_file_and_line(spec_dir, rows, message):
    write_rows(spec_dir, *rows)
    problems = spec_lint.lint(spec_dir)
    assert any(message in p for p in problems), problems
    # the first row starts on line 8 of the file; a duplicate id is reported at both rows
    assert any(p.startswith(str(spec_dir / "pip344.yaml") + ":8: ") for p in problems if message in p), problems


def test_should_rows_may_omit_info_and_upstream_quotes_are_checked_against_the_manifest(spec_dir):
    write_rows(spec_dir, row(grade="SHOULD").replace('        info: "answer is `{partitions: 2}`"\n', ""),
               row(id="pip344-lint-002", source="remote-test", info=REMOTE_QUOTE))
    assert spec_lint.lint(spec_dir) == []
    write_rows(spec_dir, row(id="pip344-lint-002", source="remote-test", info="anything at all"))
    assert any("info is not a verbatim quote" in p for p in spec_lint.lint(spec_dir))


@pytest.mark.parametrize("where, message", [
    ("../shared/seeds/001.txt", "is none of the citable forms"),
    ("/work/shared/reference/pulsar-facts.md", "is none of the citable forms"),
    ("docs/missing.md", "docs/missing.md is not a file of this project"),
    ("docs/doc.md#no-such-heading", "has no heading #no-such-heading"),
    ("pulsar-broker/src/main/java/Foo.java", "is not a file of this project"),
    ("apache/pulsar@master:pulsar-broker/src/main/java/Foo.java", "is none of the citable forms"),
    ("apache/pulsar@v4.0.7:", "is none of the citable forms"),
    ("apache/pulsar@v4.0.7:pulsar-broker/src/main/java/Foo.java", "is not recorded in spec/upstream.yaml"),
    ("https://github.com/apache/pulsar/pull/1", "is none of the citable forms"),
    ("spec/observed/pulsar-9.9.9.jsonl", "does not exist"),
    ("", "has no where"),
])
def test_lint_refuses_a_source_that_does_not_resolve_from_a_clone(spec_dir, where, message):
    (spec_dir / "sources.yaml").write_text(SOURCES + f"  broken:\n    title: Broken\n    where: \"{where}\"\n")
    write_rows(spec_dir, row())
    problems = spec_lint.lint(spec_dir)
    assert any(p.startswith(f"{spec_dir / 'sources.yaml'}: broken: ") and message in p for p in problems), problems


@pytest.mark.parametrize("where", [
    "apache/pulsar#23002", "https://github.com/apache/pulsar/wiki/PIP-2:-Non-Persistent-topic", "docs/doc.md",
    "maven:org.apache.pulsar:pulsar-common:4.0.7:sources:org/apache/pulsar/common/api/proto/CommandSubscribe.java",
])
def test_lint_accepts_each_citable_form(spec_dir, where):
    manifest = (spec_dir / "upstream.yaml").read_text()
    if where.startswith("maven:"):
        manifest += f'  "{where}":\n    blob: {"0" * 40}\n    quotes: []\n'
        (spec_dir / "upstream.yaml").write_text(manifest)
    (spec_dir / "sources.yaml").write_text(SOURCES + f"  fine:\n    title: Fine\n    where: \"{where}\"\n")
    write_rows(spec_dir, row())
    assert spec_lint.lint(spec_dir) == []


def test_an_anchor_quote_is_checked_like_an_info(spec_dir):
    (spec_dir / "sources.yaml").write_text(SOURCES + "    quote: \"assertEquals(partitions, 3);\"\n")
    write_rows(spec_dir, row())
    assert any("remote-test: quote is not a verbatim quote" in p for p in spec_lint.lint(spec_dir))


def test_unknown_and_tentative_features(spec_dir):
    write_rows(spec_dir, row(), feature="pip-999")
    assert any("feature 'pip-999' is not in features.yaml" in p for p in spec_lint.lint(spec_dir))
    write_rows(spec_dir, row(), feature="pip-35")
    assert any("tentative upstream" in p for p in spec_lint.lint(spec_dir))


def test_a_malformed_file_is_one_problem(spec_dir):
    write_rows(spec_dir, row().replace("grade: MUST", "grade: MAYBE"))
    (problem,) = spec_lint.lint(spec_dir)
    assert "grade must be one of" in problem


def test_main_exit_codes(spec_dir, capsys):
    write_rows(spec_dir, row())
    assert spec_lint.main(["--dir", str(spec_dir)]) == 0
    assert "0 problem(s), 1 rows" in capsys.readouterr().err
    write_rows(spec_dir, row(), row())
    assert spec_lint.main(["--dir", str(spec_dir)]) == 1
    assert "2 problem(s)" in capsys.readouterr().err  # the duplicate id, at both rows
