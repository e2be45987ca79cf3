"""Why a case can be ``unsupported``: every reason the harness may give, as data with an id.

A case is unsupported on a target only when one of its steps cannot be performed there at all (no
API to create what it needs, a configuration the target cannot be put in, a feature it was
detected to lack), never because of what the target would answer: an answer is judged.

- ``Unsupported(kind, reason)`` and ``verdicts.unsupported(..., kind=...)`` name one of
  ``REASONS`` by its id; an unknown id is a harness bug (``check`` raises ValueError), so no
  reason can appear that docs/unsupported.md does not justify (tests/conformance/test_reasons.py
  reads every call site and the document).
- Each reason belongs to one ``GROUPS`` entry; the run summary counts a target's unsupported
  cases by group (``group_counts``: "unsupported 120 (config differs from the broker's: 90,
  ...)").
- A record's ``reason`` text starts with ``[<id>] `` (``tagged``), so the id survives in results
  files without a new record field; ``kind_of`` reads it back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

# group id -> how the run summary names it
GROUPS: dict[str, str] = {
    "config-differs": "config differs from the broker's",
    "config-unavailable": "config the target cannot take",
    "admin-api": "needs the admin API",
    "capability": "capability not detected",
    "release": "not for this release",
    "harness": "no driver for the step",
    "run": "not run",
}


@dataclass(frozen=True)
class Reason:
    id: str
    group: str
    means: str  # one line: what could not be performed


REASONS: dict[str, Reason] = {r.id: r for r in (
    Reason("config-differs", "config-differs",
           "the case needs a broker config the target does not run with, and the harness cannot change it "
           "(a broker it did not start: no admin API, or a key Pulsar cannot change at run time)"),
    Reason("config-no-equivalent", "config-unavailable",
           "the target's own configuration has no setting that makes it behave as the case's broker.conf value"),
    Reason("config-refused", "config-unavailable",
           "the target's admin API refused to set the case's broker config"),
    Reason("no-admin-api", "admin-api",
           "a step is an admin REST call (or a setup step only the admin API can perform) and the target "
           "has no admin REST API"),
    Reason("no-http-service", "admin-api",
           "an HTTP-transport client needs the broker's HTTP service URL and the target has none"),
    Reason("feature-not-advertised", "capability",
           "the case needs a protocol feature flag the target's CONNECTED does not set"),
    Reason("feature-not-detected", "capability",
           "a probe of the target shows it lacks a feature the case's row needs (PIP-157 bucketing)"),
    Reason("no-metadata-store", "capability",
           "a white-box step reads the target's metadata store and the target exposes none the harness reads"),
    Reason("client-lacks-option", "capability",
           "the client library the driver runs has no option the step needs"),
    Reason("driver-declined", "capability",
           "an external driver (another client library) says it cannot perform the step"),
    Reason("cannot-mint-token", "capability",
           "the step presents credentials the harness can only make for a target it started"),
    Reason("era-mismatch", "release", "the row judges brokers of another era (with or without PIP-344)"),
    Reason("release-range", "release", "the row judges only Apache Pulsar releases in a range the target is outside"),
    Reason("no-driver", "harness",
           "no driver of the harness performs this operation through the api the case names"),
    Reason("no-steps", "harness", "the case has no steps once bound"),
    Reason("not-run", "run", "the run stopped before the case, or the target could not be started"),
)}

_TAG = re.compile(r"^\[([a-z0-9-]+)\] ")


def check(kind: str) -> Reason:
    """The registered reason ``kind``; an unknown id is a harness bug (ValueError)."""
    try:
        return REASONS[kind]
    except KeyError:
        raise ValueError(f"unregistered unsupported reason {kind!r}: add it to conformance/reasons.py "
                         "and justify it in docs/unsupported.md") from None


def tagged(kind: str, reason: str) -> str:
    """The reason text as a record carries it: ``[<id>] `` first, so the id survives."""
    return f"[{kind}] {reason}" if kind else reason


def kind_of(reason: str) -> Optional[str]:
    """The id a recorded reason starts with, or None."""
    match = _TAG.match(reason or "")
    return match.group(1) if match and match.group(1) in REASONS else None


def group_counts(kinds) -> dict[str, int]:
    """How many of ``kinds`` (ids, None for untagged) fall in each group, biggest first."""
    counts: dict[str, int] = {}
    for kind in kinds:
        group = GROUPS[REASONS[kind].group] if kind in REASONS else "other"
        counts[group] = counts.get(group, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
