"""Which protocol feature flags a case needs, and whether a target has them (test262 ``features``).

A row that lists a feature of kind ``protocol-feature-flag`` (spec/features.yaml, e.g.
``supports_batch_lookup``, field 10) needs a target whose CONNECTED sets that FeatureFlags field
to true (``required_flags``). Rows that check the flag itself (pip35-flag-001) do not list it, so
they run everywhere and fail where the flag is missing.

Detected, not assumed (``missing_flag``): the target's ``advertised_flags`` come from the
CONNECTED its detection read (targets/base.py). A case needing a flag the target lacks is
unsupported, before any step runs, with "target does not advertise <name> (FeatureFlags field
<n>)". A target never detected (``advertised_flags`` None) is not judged here; the drivers still
read CONNECTED before they send a command of the feature (wire_batch.py, ``advertises``).

(Features detected by probing the admin API, PIP-157's, are conformance/capabilities.py's.)
"""

from __future__ import annotations

import functools
from typing import Optional


@functools.lru_cache(maxsize=None)
def flag_features() -> dict[str, int]:
    """spec/features.yaml entries of kind protocol-feature-flag: name -> FeatureFlags field number."""
    from spec.schema import SPEC_DIR, load_registry

    entries = load_registry(SPEC_DIR / "features.yaml", "features")
    return {name: int(entry.get("field", 0)) for name, entry in entries.items()
            if entry.get("kind") == "protocol-feature-flag"}


def required_flags(case) -> tuple[tuple[str, int], ...]:
    """The (flag name, field number) pairs ``case``'s row needs: its features that are flags."""
    row = getattr(case, "row", None)
    known = flag_features()
    return tuple((name, known[name]) for name in (getattr(row, "features", None) or ()) if name in known)


def missing_flag(case, target) -> Optional[str]:
    """The reason ``case`` cannot run on ``target`` for want of a flag it was
    detected to lack, or None."""
    advertised = getattr(target, "advertised_flags", None)
    if advertised is None:
        return None
    for name, field in required_flags(case):
        if name not in advertised:
            return f"target does not advertise {name} (FeatureFlags field {field})"
    return None
