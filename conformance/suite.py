"""The whole spec as runnable cases: every row's cases (cases.py) and the generated sequences that
fuzzing found and kept (generated.py, spec/generated/), in that order."""

from __future__ import annotations

from typing import Optional

from conformance.cases import Case, row_cases
from conformance.generated import load_generated


def load_cases(pips: Optional[set[str]] = None, era: Optional[str] = None) -> list[Case]:
    """Every case of the spec, optionally only some PIPs ({"344"}) and one era ("pip344")."""
    return [*row_cases(pips, era), *load_generated(pips, era)]
