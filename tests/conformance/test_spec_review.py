"""conformance/spec_review.py: L6 (the model answers every row and agrees with what its source
states) and the reviewer's listing, over spec folders written by tests/spec/helpers.py."""

import pytest

from conformance import spec_review
from spec.schema import SPEC_DIR, load_rows
from tests.spec.helpers import make_spec_dir, row, write_rows


@pytest.fixture
def spec_dir(tmp_path):
    return make_spec_dir(tmp_path)


def test_the_real_spec_is_clean():
    assert spec_review.review(SPEC_DIR) == []


def test_a_statement_the_model_does_not_reproduce_is_reported_with_file_and_line(spec_dir):
    write_rows(spec_dir, row(partitions=3))
    problems = spec_review.review(spec_dir)
    assert len(problems) == 2 and all("source states partitions=3, model gives 2" in p for p in problems)
    assert all(p.startswith(str(spec_dir / "pip344.yaml") + ":8: ") for p in problems), problems


def test_lint_problems_come_first_and_alone(spec_dir):
    write_rows(spec_dir, row(partitions=3), row(partitions=3))
    problems = spec_review.review(spec_dir)
    assert problems and all("id used 2 times" in p for p in problems)


def test_listing_prints_info_next_to_model_outcomes(spec_dir):
    write_rows(spec_dir, row())
    text = spec_review.listing(load_rows(spec_dir))
    assert "info:   answer is `{partitions: 2}`" in text
    assert "rest          Partitions(partitions=2)" in text
    assert "binary        Partitions(partitions=2)" in text


def test_main_exit_codes(spec_dir, capsys):
    write_rows(spec_dir, row())
    assert spec_review.main(["--dir", str(spec_dir)]) == 0
    assert "pip344-lint-001" in capsys.readouterr().out
    write_rows(spec_dir, row(partitions=5))
    assert spec_review.main(["--dir", str(spec_dir), "--quiet"]) == 1
    assert "2 problem(s)" in capsys.readouterr().err  # one per api of the row
