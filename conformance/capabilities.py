"""Features a target may lack, DETECTED on the target (never assumed from its name or version).

A row of a feature listed here runs only on targets where a probe shows the feature; elsewhere its
cases are unsupported with what the target answered, so "pulsar-lite has no PIP-157" is a
measured fact in the report, not a configuration line.

- PIP-157 (spec/pip157.yaml), ``probe_topic_buckets``: a target supports the namespace policy
  ``numberOfTopicBuckets`` when ``PUT /admin/v2/namespaces/public/<probe>`` with Policies
  ``{"numberOfTopicBuckets": 2}`` succeeds AND ``GET`` of that namespace echoes
  ``"numberOfTopicBuckets": 2``. A refusal, a namespace that comes back without the key (Apache
  Pulsar's Policies ignores unknown fields) or no admin REST API at all makes every pip-157 case
  unsupported with the reason ``target does not support namespace policy numberOfTopicBuckets
  (detected: <answer>)``. The probe namespace is deleted again (best effort).
- ``unsupported_reason`` probes lazily, at the first case of the feature on a target, once per
  target; a probe that gets no answer raises ``Indefinite`` and is not remembered, so the next
  case probes again.
"""

from __future__ import annotations

import secrets
import weakref
from typing import Optional

from conformance.drivers.rest import RestDriver, error_reason
from conformance.errors import Indefinite

PIP157_FEATURE = "pip-157"
TOPIC_BUCKETS_KEY = "numberOfTopicBuckets"
PROBE_BUCKETS = 2
PROBE_TENANT = "public"
NO_TOPIC_BUCKETS = f"target does not support namespace policy {TOPIC_BUCKETS_KEY}"

_detected: "weakref.WeakKeyDictionary[object, Optional[str]]" = weakref.WeakKeyDictionary()


def unsupported_reason(case, target) -> Optional[str]:
    """Why ``case`` cannot run on ``target`` for lack of a feature, or None; probes once per target."""
    features = getattr(getattr(case, "row", None), "features", None) or ()
    if PIP157_FEATURE not in features:
        return None
    if target not in _detected:
        _detected[target] = probe_topic_buckets(target)  # Indefinite propagates, nothing remembered
    return _detected[target]


def forget(target) -> None:
    """Drop what was detected about ``target`` (tests; a target replaced by another broker)."""
    _detected.pop(target, None)


def probe_topic_buckets(target) -> Optional[str]:
    """None when the target keeps ``numberOfTopicBuckets``, else the unsupported reason."""
    def unsupported(detected: str) -> str:
        return f"{NO_TOPIC_BUCKETS} (detected: {detected})"

    if not target.has_admin or not target.admin_url:
        return unsupported(f"no admin REST API answered{f' at {target.admin_url}' if target.admin_url else ''}")
    rest = RestDriver(target.admin_url, timeout=target.timeout, credentials=target.credentials())
    path = f"/admin/v2/namespaces/{PROBE_TENANT}/probe-buckets-{secrets.token_hex(4)}"
    try:
        created = rest.request("PUT", path, body={TOPIC_BUCKETS_KEY: PROBE_BUCKETS})
        if not 200 <= created.status_code < 300:
            return unsupported(f"PUT {path} {{\"{TOPIC_BUCKETS_KEY}\": {PROBE_BUCKETS}}} answered "
                               f"{created.status_code} {error_reason(created)}")
        try:
            read = rest.request("GET", path)
            try:
                policies = read.json() if read.status_code == 200 else None
            except ValueError:
                policies = None
            if not isinstance(policies, dict):
                return unsupported(f"the probe namespace was created but GET {path} answered {read.status_code} "
                                   f"{read.text[:200]!r}")
            value = policies.get(TOPIC_BUCKETS_KEY, "absent")
            if value != PROBE_BUCKETS or isinstance(value, bool):
                return unsupported(f"the probe namespace was created with {TOPIC_BUCKETS_KEY} {PROBE_BUCKETS} "
                                   f"but its policies read back {TOPIC_BUCKETS_KEY} {value!r}")
            return None
        finally:
            try:
                rest.request("DELETE", path)
            except Indefinite:
                pass  # best effort: the probe namespace is empty and named as such
    finally:
        rest.close()
