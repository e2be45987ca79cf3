"""PIP-35 operations of the REST driver: POST /lookup/v2/topics and its metamorphic relations.

A part of ``RestDriver`` (rest.py), given the driver for its ``request`` and admin URLs. Path and
bodies are ours (spec/pip35.md, docs/pip35-decisions.md C11; upstream has no batch lookup URL):

  POST /lookup/v2/topics   body: JSON list of names
  200 {"<topic>": LookupData of the owner | {"error": <ServerError name>, "reason": ...}, ...}
      (each value may carry "requested"); too big 413; not a list of strings 400; no permit 503.

- ``BatchLookup``: 200 becomes a BatchLookupResult sorted by topic (a JSON object has no order);
  a value with ``brokerUrl`` is the owner's LookupData (Connect, authoritative by construction:
  REST has no per-entry redirect), one with ``error`` a Failed entry; anything else is a
  ProtocolViolation. Any other status is ``RestError(status, reason)``.
- ``BatchEqualsSingles``: the batch, then GET /lookup/v2/topic/... per entry whose name parses
  (an invalid name has no REST path); a 307 is followed ONCE to its Location
  (``_single_rest``). Owner = LookupData.brokerUrl on both sides; a failed single lookup is its
  HTTP status. ``model.batch_lookup.agreement`` decides.
- ``SameOwnerEverywhere``: the same on every broker's admin URL (``cluster_admin_urls``, set by
  the harness; this one only for a one-broker target); every answer for a topic must name the
  same owner or fail with the same status (conformance/drivers/batch_relations.py).
"""

from __future__ import annotations

import urllib.parse

from conformance.drivers.batch_relations import observe, same_everywhere
from conformance.drivers.rest_http import error_reason, json_body, topic_path
from conformance.errors import ProtocolViolation
from model import ops
from model.batch_lookup import Answer, agreement, rest_comparable
from model.outcomes import BatchLookupResult, RestError

BATCH_PATH = "/lookup/v2/topics"


class RestBatch:
    """``batch_lookup``, ``batch_equals_singles``, ``same_owner_everywhere`` for RestDriver (``http``; its
    ``cluster_admin_urls``: every broker's admin URL, for SameOwnerEverywhere; None = this one only)."""

    OPS = (ops.BatchLookup, ops.BatchEqualsSingles, ops.SameOwnerEverywhere)

    def __init__(self, http):
        self.http = http

    def _post_batch(self, base: str, topics):
        """POST the batch to ``base``; the JSON map (topic -> value), or RestError."""
        response = self.http.request("POST", base.rstrip("/") + BATCH_PATH, body=list(topics))
        if response.status_code != 200:
            return RestError(response.status_code, error_reason(response))
        body = json_body(response, "batch lookup")
        if not isinstance(body, dict):
            raise ProtocolViolation(f"POST {BATCH_PATH}: expected a JSON object topic -> answer, got {body!r}")
        for topic, value in body.items():
            # spec/pip35.md: an error entry is {"error": <ServerError name>, "reason": <text>} (the mutation
            # check's p35-rest-batch-no-reason showed the reason went unchecked).
            ok = isinstance(value, dict) and (isinstance(value.get("brokerUrl"), str) or (
                isinstance(value.get("error"), str) and isinstance(value.get("reason"), str)))
            if not ok:
                raise ProtocolViolation(f"POST {BATCH_PATH}: {topic!r} answers {value!r}, neither LookupData "
                                        "(brokerUrl) nor {\"error\": <ServerError name>, \"reason\": <text>}")
        return body

    def _single_rest(self, base: str, topic: str) -> Answer:
        """GET /lookup/v2/topic/... at ``base``, following one 307 to its Location."""
        url = f"{base.rstrip('/')}/lookup/v2/topic/{topic_path(topic)}"
        response = self.http.request("GET", url)
        if response.status_code == 307:
            location = response.headers.get("location", "")
            response = self.http.request("GET", urllib.parse.urljoin(url, location))
        if response.status_code == 200:
            body = json_body(response, "lookup")
            if not isinstance(body, dict) or not isinstance(body.get("brokerUrl"), str):
                raise ProtocolViolation(f"lookup of {topic}: 200 without LookupData.brokerUrl: {body!r}")
            return Answer(owner=body["brokerUrl"])
        return Answer(status=response.status_code, message=error_reason(response))

    def batch_lookup(self, op: ops.BatchLookup):
        body = self._post_batch(self.http.admin_url, op.topics)
        if isinstance(body, RestError):
            return body
        rows = []
        for topic, value in body.items():
            requested = value.get("requested")
            if "error" in value:
                rows.append((topic, requested, "Failed", None, value["error"]))
            else:
                rows.append((topic, requested, "Connect", True, None))
        return BatchLookupResult(tuple(sorted(rows, key=lambda r: r[0])))

    def batch_equals_singles(self, op: ops.BatchEqualsSingles):
        body = self._post_batch(self.http.admin_url, op.topics)
        if isinstance(body, RestError):
            return body
        return agreement([(topic, _answer(value), self._single_rest(self.http.admin_url, topic))
                          for topic, value in body.items() if rest_comparable(topic)])

    def same_owner_everywhere(self, op: ops.SameOwnerEverywhere):
        seen: dict[str, list] = {}
        for base in list(self.http.cluster_admin_urls or [self.http.admin_url]):
            body = self._post_batch(base, op.topics)
            if isinstance(body, RestError):
                return body
            for topic, value in body.items():
                observe(seen, topic, f"batch at {base}", _answer(value))
                if rest_comparable(topic):
                    observe(seen, topic, f"lookup at {base}", self._single_rest(base, topic))
        return same_everywhere(seen, rest=True)


def _answer(value: dict) -> Answer:
    if "error" in value:
        return Answer(error=value["error"], message=value.get("reason"))
    return Answer(owner=value["brokerUrl"])
