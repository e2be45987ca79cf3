"""Apache Pulsar release numbers and version ranges: the grammar rows and the model share.

- a release (``parse_release``) is ``(major, minor, patch)``. ``NEWEST`` (None) is a broker that
  is not an Apache Pulsar release (the reference broker, pulsar-lite, any other implementation):
  it is held to the newest behaviour, so it lies above every finite bound.
- a range (``parse_range``) is a union of intervals written ``>=3.0.6 <3.1 | >=3.3.1``: within an
  interval the bounds are ANDed (``>=``, ``>``, ``<=``, ``<``, ``=``), ``|`` joins intervals,
  ``*`` is every release, and a leading ``!`` takes the complement. A missing patch or minor
  number is 0 (``<3.1`` is ``<3.1.0``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional


class RangeError(ValueError):
    """A version range that does not follow the range syntax (``parse_range``)."""


Release = tuple[int, int, int]
NEWEST: Optional[Release] = None
_RELEASE = re.compile(r"^(?:Pulsar Server)?(\d+)\.(\d+)\.(\d+)(?:-[A-Za-z0-9.]+)?\Z")
_BOUND = re.compile(r"^(>=|<=|>|<|=)(\d+)(?:\.(\d+))?(?:\.(\d+))?\Z")


def parse_release(text: Optional[str]) -> Optional[Release]:
    """``"4.0.7"`` or ``"Pulsar Server3.0.2"`` -> (4, 0, 7); anything else (another
    implementation's version, ``0.x``) -> NEWEST (above every finite bound)."""
    match = _RELEASE.match((text or "").strip())
    if not match:
        return NEWEST
    release = tuple(int(part) for part in match.groups())
    return NEWEST if release[0] == 0 else release  # type: ignore[return-value]


def release_text(release: Optional[Release]) -> str:
    return "newest" if release is None else ".".join(map(str, release))


@dataclass(frozen=True)
class Range:
    """A union of intervals, maybe complemented; ``text`` is how it was written."""

    text: str
    intervals: tuple[tuple[tuple[str, Release], ...], ...]
    negated: bool = False

    def __contains__(self, release: Optional[Release]) -> bool:
        inside = any(all(_holds(op, release, bound) for op, bound in interval) for interval in self.intervals)
        return inside != self.negated

    def __str__(self) -> str:
        return self.text


def _holds(op: str, release: Optional[Release], bound: Release) -> bool:
    if release is None:  # NEWEST is above every bound
        return op in (">=", ">")
    return {">=": release >= bound, ">": release > bound, "<=": release <= bound, "<": release < bound,
            "=": release == bound}[op]


def parse_range(text: str) -> Range:
    """The range syntax (``>=3.0.6 <3.1 | >=3.3.1``, ``*``, ``!``) -> Range, or ModelUsageError naming what is wrong."""
    body = (text or "").strip()
    negated = body.startswith("!")
    body = body[1:].strip() if negated else body
    if body == "*":
        return Range(text.strip(), ((),), negated)
    intervals = []
    for part in body.split("|"):
        bounds = []
        for word in part.split():
            match = _BOUND.match(word)
            if not match:
                raise RangeError(f"bad version range {text!r}: {word!r} is not a bound like >=3.0.6 or <3.1")
            op, *numbers = match.groups()
            bounds.append((op, tuple(int(n or 0) for n in numbers)))
        if not bounds:
            raise RangeError(f"bad version range {text!r}: an empty interval between '|'")
        intervals.append(tuple(bounds))
    return Range(text.strip(), tuple(intervals), negated)
