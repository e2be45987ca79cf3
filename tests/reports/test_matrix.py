"""reports/matrix.py: targets with target-error cases come first on both summary pages (``troubled_targets``)."""

from __future__ import annotations

from types import SimpleNamespace

from reports import matrix
from reports.schema import VERDICTS


def _run(target: str, recency: int, **counts) -> dict:
    row = {"target": target, "run_id": f"r-{target}-{recency}", "target_version": "4.0.7", "started": "s",
           "records": sum(counts.values()), "recency": recency}
    row.update({name: counts.get(name.replace("-", "_"), 0) for name in VERDICTS})
    return row


def _result(runs: list[dict]) -> SimpleNamespace:
    cell = {"target": "reference", "pip": "344", "grade": "MUST", "total": 2, "pass_rate": 1.0,
            "wilson_low": 0.3, "wilson_high": 1.0, "expected_failure": 0, **{name: 0 for name in VERDICTS}}
    cell["passed"] = 2
    return SimpleNamespace(tables={"runs": runs, "matrix": [cell]}, files=["f"], records=4, bad_count=0,
                           bad_lines=[])


def test_a_target_that_was_down_is_listed_before_the_matrix():
    runs = [_run("reference", 1, passed=2), _run("pulsar-4.0.7", 1, target_error=7),
            _run("pulsar-3.0.2", 2, target_error=3)]  # an older run: not the latest, not listed
    result = _result(runs)
    assert [r["target"] for r in matrix.troubled_targets(result.tables)] == ["pulsar-4.0.7"]
    markdown = matrix.summary_markdown(result)
    first = markdown.index("### Targets down or misbehaving")
    assert first < markdown.index("### Compliance matrix")
    assert "**pulsar-4.0.7** (4.0.7, run r-pulsar-4.0.7-1): 7 of 7 case(s) target-error, not judged" in markdown
    assert "pulsar-3.0.2" not in markdown
    page = matrix.summary_html(result)
    assert page.index("Targets down or misbehaving") < page.index("Compliance matrix")


def test_no_section_when_every_target_answered():
    result = _result([_run("reference", 1, passed=2)])
    assert "down or misbehaving" not in matrix.summary_markdown(result)
    assert "down or misbehaving" not in matrix.summary_html(result)
