"""Apache Pulsar release numbers and version ranges: the grammar rows and the model share.

- a release (``parse_release``) is ``(major, minor, patch)``. ``NEWEST`` (None) is a broker that
  is not an Apache Pulsar release (the reference broker, pulsar-lite, any other implementation):
  it is held to the newest behaviour, so it lies above every finite bound.
- a range (``parse_range``) is a union of intervals written ``>=3.0.6 <3.1 | >=3.3.1``: within an
  interval the bounds are ANDed (``>=``, ``>``, ``<=``, ``<``, ``=``), ``|`` joins intervals,
  ``*`` is every release, and a leading ``!`` takes the complement. A missing patch or minor
  number is 0 (``<3.1`` is ``<3.1.0``).
- a broker seen through Apache Pulsar's proxy (``Proxied``, the target ``pulsar-proxy:P/B``) is the
  broker's release with the proxy's beside it, written ``4.0.7 via proxy 4.0.8``. Every range
  applies to the broker's release, proxied or not; a range that ends ``via proxy <range>``
  (``<3.0.6 via proxy >=4.0``, ``* via proxy *``) holds only for a broker seen through a proxy of
  a release inside that second range.
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
_VIA_PROXY = " via proxy "
_PROXIED = re.compile(r"^(\d+\.\d+\.\d+) via proxy (\d+\.\d+\.\d+)\Z")
_BOUND = re.compile(r"^(>=|<=|>|<|=)(\d+)(?:\.(\d+))?(?:\.(\d+))?\Z")


class Proxied(tuple):
    """A broker release seen through a proxy of release ``proxy``: the tuple is the broker's
    ``(major, minor, patch)``, so every range and every behaviour of the broker applies to it as to
    the bare release; only what names the proxy (``via proxy``, model/releases.py's proxy
    behaviours) reads ``proxy``. Equal only to the same pair."""

    def __new__(cls, broker: Release, proxy: Release) -> "Proxied":
        self = super().__new__(cls, tuple(broker))
        self.proxy = tuple(proxy)
        return self

    def __eq__(self, other) -> bool:
        return tuple.__eq__(self, other) is True and getattr(other, "proxy", None) == self.proxy

    def __ne__(self, other) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((tuple(self), self.proxy))

    def __reduce__(self):
        return Proxied, (tuple(self), self.proxy)

    def __repr__(self) -> str:
        return f"Proxied({tuple(self)!r}, proxy={self.proxy!r})"

    @property
    def broker(self) -> Release:
        return tuple(self)  # type: ignore[return-value]


def proxy_of(release) -> Optional[Release]:
    """The proxy's release of a proxied broker release, None for a bare one."""
    return getattr(release, "proxy", None)


def parse_release(text: Optional[str]) -> Optional[Release]:
    """``"4.0.7"`` or ``"Pulsar Server3.0.2"`` -> (4, 0, 7); ``"4.0.7 via proxy 4.0.8"`` ->
    Proxied((4, 0, 7), proxy=(4, 0, 8)); anything else (another implementation's version, ``0.x``)
    -> NEWEST (above every finite bound)."""
    pair = _PROXIED.match((text or "").strip())
    if pair:
        broker, proxy = (parse_release(part) for part in pair.groups())
        return NEWEST if broker is None or proxy is None else Proxied(broker, proxy)
    match = _RELEASE.match((text or "").strip())
    if not match:
        return NEWEST
    release = tuple(int(part) for part in match.groups())
    return NEWEST if release[0] == 0 else release  # type: ignore[return-value]


def release_text(release: Optional[Release]) -> str:
    if release is None:
        return "newest"
    text = ".".join(map(str, release))
    proxy = proxy_of(release)
    return text if proxy is None else f"{text}{_VIA_PROXY}{'.'.join(map(str, proxy))}"


@dataclass(frozen=True)
class Range:
    """A union of intervals, maybe complemented; ``text`` is how it was written."""

    text: str
    intervals: tuple[tuple[tuple[str, Release], ...], ...]
    negated: bool = False
    proxy: Optional["Range"] = None  # ``via proxy <range>``: only brokers seen through such a proxy

    def __contains__(self, release: Optional[Release]) -> bool:
        if self.proxy is not None:
            proxy = proxy_of(release)
            if proxy is None or proxy not in self.proxy:
                return False
        inside = any(all(_holds(op, release, bound) for op, bound in interval) for interval in self.intervals)
        return inside != self.negated

    def __str__(self) -> str:
        return self.text


def _holds(op: str, release: Optional[Release], bound: Release) -> bool:
    if release is None:  # NEWEST is above every bound
        return op in (">=", ">")
    release = tuple(release)  # a proxied broker's own numbers
    return {">=": release >= bound, ">": release > bound, "<=": release <= bound, "<": release < bound,
            "=": release == bound}[op]


def parse_range(text: str) -> Range:
    """The range syntax (``>=3.0.6 <3.1 | >=3.3.1``, ``*``, ``!``, ``... via proxy <range>``) -> Range,
    or RangeError naming what is wrong."""
    if _VIA_PROXY in (text or ""):
        broker, _, proxy = text.partition(_VIA_PROXY)
        if _VIA_PROXY in proxy or not broker.strip() or not proxy.strip():
            raise RangeError(f"bad version range {text!r}: write <broker range> via proxy <proxy range>, "
                             f"e.g. '<3.0.6 via proxy >=4.0' or '* via proxy *'")
        inner = parse_range(broker)
        return Range(text.strip(), inner.intervals, inner.negated, parse_range(proxy))
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
