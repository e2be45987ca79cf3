import pytest

from spec import lint as spec_lint
from spec.schema import SPEC_DIR

ROW = """\
      - id: {id}
        description: A lint test row
        source: [{source}]
        info: "{info}"
        grade: {grade}
        era: pip344
        apis: [rest, binary]
        setup: {{topics: [{{name: t, partitions: 2}}]}}
        operation: {{op: GetPartitionedMetadata, topic: t, auto_create: true}}
        stated: {{partitions: {partitions}}}
"""
SOURCES = """\
schema: 1
sources:
  quoted-doc:
    title: A local document
    where: ../shared/doc.md
  remote-test:
    title: An upstream test
    where: pulsar-broker/src/test/SomeTest.java
"""
FEATURES = "schema: 1\nfeatures:\n  pip-344:\n    title: PIP-344\n    status: shipped\n  pip-35:\n    title: PIP-35\n    status: tentative\n"


@pytest.fixture
def spec_dir(tmp_path):
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "doc.md").write_text("The answer is\n   `{partitions: 2}` for case 2.\n")
    directory = tmp_path / "proj" / "spec"
    directory.mkdir(parents=True)
    (directory / "sources.yaml").write_text(SOURCES)
    (directory / "features.yaml").write_text(FEATURES)
    return directory


def write_rows(directory, *rows, feature="pip-344"):
    text = f'schema: 1\nfeature: {feature}\npip: "344"\ntables:\n  - name: t\n    title: T\n    rows:\n' + "".join(rows)
    (directory / "pip344.yaml").write_text(text)


def row(id="pip344-lint-001", source="quoted-doc", info="answer is `{partitions: 2}`", grade="MUST", partitions=2):
    return ROW.format(id=id, source=source, info=info, grade=grade, partitions=partitions)


def test_the_real_spec_is_clean():
    assert spec_lint.lint(SPEC_DIR) == []


def test_a_clean_file_passes(spec_dir):
    write_rows(spec_dir, row())
    assert spec_lint.lint(spec_dir) == []


@pytest.mark.parametrize("rows, message", [
    ([row(), row()], "id used 2 times"),
    ([row(source="nowhere")], "source 'nowhere' is not in sources.yaml"),
    ([row(info="answer is 3")], "info is not a verbatim quote"),
    ([row(partitions=3)], "source states partitions=3, model gives 2"),
    ([row().replace('        info: "answer is `{partitions: 2}`"\n', "")], "MUST rows carry an info quote"),
])
def test_lint_reports_each_problem_with_file_and_line(spec_dir, rows, message):
    write_rows(spec_dir, *rows)
    problems = spec_lint.lint(spec_dir)
    assert any(message in p for p in problems), problems
    # the first row starts on line 8 of the file; a duplicate id is reported at both rows
    assert any(p.startswith(str(spec_dir / "pip344.yaml") + ":8: ") for p in problems if message in p), problems


def test_should_rows_may_omit_info_and_remote_sources_are_not_quote_checked(spec_dir):
    write_rows(spec_dir, row(grade="SHOULD").replace('        info: "answer is `{partitions: 2}`"\n', ""),
               row(id="pip344-lint-002", source="remote-test", info="anything at all"))
    assert spec_lint.lint(spec_dir) == []


def test_unknown_and_tentative_features(spec_dir):
    write_rows(spec_dir, row(), feature="pip-999")
    assert any("feature 'pip-999' is not in features.yaml" in p for p in spec_lint.lint(spec_dir))
    write_rows(spec_dir, row(), feature="pip-35")
    assert any("tentative upstream" in p for p in spec_lint.lint(spec_dir))


def test_a_malformed_file_is_one_problem(spec_dir):
    write_rows(spec_dir, row().replace("grade: MUST", "grade: MAYBE"))
    (problem,) = spec_lint.lint(spec_dir)
    assert "grade must be one of" in problem


def test_listing_prints_info_next_to_model_outcomes(spec_dir):
    write_rows(spec_dir, row())
    text = spec_lint.listing(spec_lint.load_rows(spec_dir))
    assert "info:   answer is `{partitions: 2}`" in text
    assert "rest          Partitions(partitions=2)" in text
    assert "binary        Partitions(partitions=2)" in text


def test_main_exit_codes(spec_dir, capsys):
    write_rows(spec_dir, row())
    assert spec_lint.main(["--dir", str(spec_dir)]) == 0
    assert "pip344-lint-001" in capsys.readouterr().out
    write_rows(spec_dir, row(partitions=5))
    assert spec_lint.main(["--dir", str(spec_dir), "--quiet"]) == 1
    assert "2 problem(s)" in capsys.readouterr().err  # one per api of the row
