"""Every unsupported reason the harness can give is registered and justified in docs/unsupported.md."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from conformance import verdicts as v
from conformance.errors import Unsupported
from conformance.reasons import GROUPS, REASONS, group_counts, kind_of, tagged

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "unsupported.md"


def _kind_argument(call: ast.Call):
    """The reason id a call names: Unsupported(kind, reason) or unsupported(..., kind=...)."""
    for keyword in call.keywords:
        if keyword.arg == "kind":
            return keyword.value
    name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
    return call.args[0] if name == "Unsupported" and call.args else None


def _call_sites():
    for path in sorted((ROOT / "conformance").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name in ("Unsupported", "unsupported") and not (name == "unsupported" and path.name == "capabilities.py"):
                yield f"{path.relative_to(ROOT)}:{node.lineno}", _kind_argument(node)


def _documented() -> set[str]:
    return set(re.findall(r"^\| `([a-z0-9-]+)` \|", DOC.read_text(encoding="utf-8"), re.MULTILINE))


def test_every_call_site_names_a_registered_reason_or_passes_one_on():
    sites = list(_call_sites())
    assert len(sites) > 30  # the scan found the harness's call sites
    problems = []
    for where, kind in sites:
        if isinstance(kind, ast.Constant) and kind.value in REASONS:
            continue
        if isinstance(kind, ast.IfExp) and all(isinstance(b, ast.Constant) and b.value in REASONS
                                               for b in (kind.body, kind.orelse)):
            continue
        if isinstance(kind, ast.Attribute) and kind.attr == "kind":  # an exception's reason passed on
            continue
        problems.append(f"{where}: {ast.unparse(kind) if kind is not None else 'no reason id'}")
    assert not problems, "unsupported without a registered reason id:\n" + "\n".join(problems)


def test_the_document_lists_exactly_the_registered_reasons():
    documented = _documented()
    assert documented == set(REASONS), (f"docs/unsupported.md lacks {sorted(set(REASONS) - documented)}, "
                                        f"lists unknown {sorted(documented - set(REASONS))}")
    assert all(reason.group in GROUPS for reason in REASONS.values())


def test_an_unregistered_reason_is_refused():
    with pytest.raises(ValueError, match="docs/unsupported.md"):
        Unsupported("because-i-said-so", "no")
    with pytest.raises(ValueError):
        v.unsupported("no", kind="because-i-said-so")


def test_records_carry_the_id_and_the_summary_counts_by_group():
    text = tagged("config-differs", "broker runs with allowAutoTopicCreation=true")
    assert text.startswith("[config-differs] ") and kind_of(text) == "config-differs"
    assert kind_of("no tag") is None
    assert group_counts(["config-differs", "config-differs", "no-admin-api", "no-http-service", None]) == {
        "config differs from the broker's": 2, "needs the admin API": 2, "other": 1}
