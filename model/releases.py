"""Apache Pulsar releases and version ranges: which behaviour a broker of a given release has.

The spec states what the PIPs require; some answers differ by release (PIP-344 shipped in 3.0.6,
3.3.1 and 4.0.0, never in 3.1 or 3.2; some texts changed later). A rule of the model that
differs by release asks ``state.has(name)`` for a named range of ``BEHAVIOURS``, and a spec row
may carry a range (``releases:``) outside which it does not apply.

Rules 1 and 2, what a release and a range are, belong to the grammar in spec/versions.py;
``NEWEST`` (None) is any broker that is not an Apache Pulsar release, above every bound.
Rule 3: every entry of BEHAVIOURS says what changes and cites what settles its range: Pulsar's
        source at the release tags on both sides, the PR, or an observation of named releases.
Rule 4: ERAS are row vocabulary: ``pip344`` (the range of BEHAVIOURS["pip-344"]),
        ``pre-pip344`` (its complement) and ``any`` (every release). A broker's own era is one
        of the first two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from model.errors import ModelUsageError
from spec.versions import NEWEST, Range, RangeError, Release, parse_release, release_text
from spec.versions import parse_range as _parse_range

__all__ = ["NEWEST", "Range", "Release", "parse_release", "release_text", "parse_range", "BEHAVIOURS", "ERAS",
           "REPRESENTATIVE", "era_of", "era_range", "has"]


def parse_range(text: str) -> Range:
    """spec/versions.py's grammar, its errors as the model's usage errors."""
    try:
        return _parse_range(text)
    except RangeError as exc:
        raise ModelUsageError(str(exc)) from None

@dataclass(frozen=True)
class Behaviour:
    """A change of Pulsar's answers, the releases that have it, and what settles them (Rule 3)."""

    range: Range
    what: str
    evidence: str


def _behaviour(versions: str, what: str, evidence: str) -> Behaviour:
    return Behaviour(parse_range(versions), what, evidence)


BEHAVIOURS: dict[str, Behaviour] = {
    "pip-344": _behaviour(
        ">=3.0.6 <3.1 | >=3.3.1",
        "PIP-344: PARTITIONED_METADATA honours field 6, CONNECTED advertises FeatureFlags field 5, "
        "REST partitions takes checkAllowAutoCreation",
        "apache/pulsar PR #22206 with #22773 and #22838, released in 3.0.6, 3.3.1 and 4.0.0; observed: "
        "3.0.2 and 3.2.3 lack it, 3.0.7, 4.0.7 and 4.2.4 have it"),
}

ERAS = ("pip344", "pre-pip344", "any")
ERA_BEHAVIOUR = "pip-344"
# The release a case of each era is bound to when no target's release is known (the spec lint,
# the model-agreement tests): the newest behaviour, and the last 3.0.x before PIP-344.
REPRESENTATIVE: dict[str, Optional[Release]] = {"pip344": NEWEST, "pre-pip344": (3, 0, 5), "any": NEWEST}


def era_range(era: str) -> Range:
    if era not in ERAS:
        raise ModelUsageError(f"unknown era {era!r}: use one of {', '.join(ERAS)}")
    if era == "any":
        return parse_range("*")
    pip344 = BEHAVIOURS[ERA_BEHAVIOUR].range
    return pip344 if era == "pip344" else Range(f"!({pip344.text})", pip344.intervals, not pip344.negated)


def era_of(release: Optional[Release]) -> str:
    """Rule 4."""
    return "pip344" if release in BEHAVIOURS[ERA_BEHAVIOUR].range else "pre-pip344"


def has(release: Optional[Release], behaviour: str) -> bool:
    try:
        entry = BEHAVIOURS[behaviour]
    except KeyError:
        raise ModelUsageError(f"unknown behaviour {behaviour!r}; model/releases.py BEHAVIOURS lists "
                              f"{', '.join(sorted(BEHAVIOURS))}") from None
    return release in entry.range
