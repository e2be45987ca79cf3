"""spec/boundaries.py and spec/boundaries.yaml: every limited rule and collection is covered at its
boundary points by rows found from their setup and operation, and the lint fails when one is not."""

import functools
import shutil

import pytest

from conformance import spec_review
from spec import boundaries
from spec import lint as spec_lint
from spec.schema import SPEC_DIR, load_rows
from tests.spec.helpers import make_spec_dir, row, write_rows

RULES = """\
schema: 1
rules:
  - id: max-num-partitions
    title: T
    source: [quoted-doc]
    pip: "344"
    limit: {broker: maxNumPartitionsPerPartitionedTopic, default: 0, unlimited: non-positive, smallest: 1}
    smallest: 1
    paths:
      - path: auto-create-lookup
        ops: [GetPartitionedMetadata]
        apis: [rest, binary]
        when: [auto-creates-metadata]
        value: default-partitions
        points: [at, past]
"""
SETUP = "        setup: {{topics: [{{name: t, partitions: 2}}]}}\n"


def auto_row(id, default, maximum):
    setup = (f'        setup: {{broker: {{allowAutoTopicCreationType: partitioned, defaultNumPartitions: "{default}", '
             f'maxNumPartitionsPerPartitionedTopic: "{maximum}"}}}}\n')
    return row(id=id).replace(SETUP.format(), setup).replace("        stated: {partitions: 2}\n", "")


@functools.lru_cache(maxsize=None)
def real_rows():
    return load_rows()


@pytest.fixture
def spec_dir(tmp_path):
    directory = make_spec_dir(tmp_path)
    (directory / "boundaries.yaml").write_text(RULES)
    return directory


def test_the_real_spec_covers_every_boundary_point():
    cells = boundaries.coverage(boundaries.load_boundaries(), real_rows())
    assert cells and [cell.label for cell in cells if not cell.rows] == []
    assert boundaries.problems(SPEC_DIR) == []


def test_rows_are_placed_by_their_setup_and_operation(spec_dir):
    write_rows(spec_dir, auto_row("pip344-lint-001", 2, 2), auto_row("pip344-lint-002", 3, 2),
               auto_row("pip344-lint-003", 3, 0), row(id="pip344-lint-004"))
    cells = {cell.label: cell.rows for cell in boundaries.coverage(
        boundaries.load_boundaries(spec_dir / "boundaries.yaml"), load_rows(spec_dir))}
    assert cells == {
        "max-num-partitions auto-create-lookup[rest] at": ("pip344-lint-001",),
        "max-num-partitions auto-create-lookup[rest] past": ("pip344-lint-002",),
        "max-num-partitions auto-create-lookup[binary] at": ("pip344-lint-001",),
        "max-num-partitions auto-create-lookup[binary] past": ("pip344-lint-002",),
    }  # 003: the limit is off; 004: the topic exists, nothing is auto-created


def test_the_lint_fails_on_each_missing_point_with_the_rules_line(spec_dir, capsys):
    write_rows(spec_dir, auto_row("pip344-lint-001", 2, 2))
    problems = spec_lint.lint(spec_dir)
    assert problems == [
        f"{spec_dir / 'boundaries.yaml'}:10: max-num-partitions auto-create-lookup[{api}] past: "
        "no row covers this boundary point" for api in ("rest", "binary")]
    assert spec_lint.main(["--dir", str(spec_dir)]) == 1
    assert spec_review.main(["--dir", str(spec_dir), "--boundaries"]) == 1
    out = capsys.readouterr()
    assert "auto-create-lookup[binary]" in out.out and "MISSING" in out.out
    assert "2 missing" in out.err


def test_a_row_removed_from_the_real_spec_is_reported(tmp_path):
    copy = tmp_path / "spec"
    shutil.copytree(SPEC_DIR, copy, ignore=shutil.ignore_patterns("observed", "__pycache__"))
    path = copy / "pip2.yaml"
    text = path.read_text()
    start = text.index("      - id: pip2-bound-limit-0-burst-2\n")
    end = text.index("      - id: pip2-bound-no-subscription\n")
    path.write_text(text[:start] + text[end:])
    missing = boundaries.problems(copy)
    assert missing and all("max-concurrent-non-persistent-messages wire-burst[binary] limit-smallest-past" in p
                           for p in missing), missing


def test_a_rule_names_only_known_readers_and_points(spec_dir):
    (spec_dir / "boundaries.yaml").write_text(RULES.replace("value: default-partitions", "value: guesswork"))
    write_rows(spec_dir, row())
    assert any("value must be one of" in p for p in spec_lint.lint(spec_dir))
    (spec_dir / "boundaries.yaml").write_text(RULES.replace("source: [quoted-doc]", "source: [nowhere]"))
    assert any("source 'nowhere' is not in sources.yaml" in p for p in spec_lint.lint(spec_dir))
    limitless = RULES.replace(
        "    limit: {broker: maxNumPartitionsPerPartitionedTopic, default: 0, unlimited: non-positive, smallest: 1}\n", "")
    (spec_dir / "boundaries.yaml").write_text(limitless)
    assert any("need the rule's limit" in p for p in spec_lint.lint(spec_dir))


@pytest.mark.parametrize("bursts, limit, points", [
    ([3], "2", ("at",)),
    ([4], "2", ("past",)),
    ([1, 1], "0", ("at", "limit-smallest")),
    ([2], "0", ("past", "limit-smallest-past")),
    ([10], "1", ()),
])
def test_in_flight_points(bursts, limit, points):
    rule = next(r for r in boundaries.load_boundaries() if r.id == "max-concurrent-non-persistent-messages")
    path = next(p for p in rule.paths if p.name == "wire-burst")
    base = next(r for r in real_rows() if r.id == "pip2-bound-limit-2-burst-3")
    op = dict(base.operation)
    op["bursts"] = tuple(bursts)
    setup = base.setup.__class__(**{**base.setup.__dict__, "broker": (
        ("maxConcurrentNonPersistentMessagePerConnection", limit),)})
    probe = base.__class__(**{**base.__dict__, "operation": tuple(op.items()), "setup": setup})
    assert boundaries.points_of(rule, path, probe, "binary") == points
