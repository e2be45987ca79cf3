"""PIP-157 operations of the REST driver: the ``numberOfTopicBuckets`` namespace endpoints.

Mixed into ``RestDriver`` (rest.py). Paths are ours (docs/pip157-decisions.md (e)), in the shape of
Pulsar's other namespace policy endpoints (``.../autoTopicCreation``); upstream never had them:

  GET    /admin/v2/namespaces/{tenant}/{ns}/numberOfTopicBuckets   -> 200 n
  POST   /admin/v2/namespaces/{tenant}/{ns}/numberOfTopicBuckets   body: any JSON value
  DELETE /admin/v2/namespaces/{tenant}/{ns}/numberOfTopicBuckets

The count itself is given at creation, in the Policies body of ``CreateNamespace`` (rest.py).

Rule 1: a 2xx GET whose body is a JSON integer becomes ``TopicBuckets(n)``; another 2xx body is a
        ProtocolViolation; any other status is ``RestError(status, reason)`` (rest.py Rule 1).
Rule 2: POST sends ``op.buckets`` as the JSON body as it is (a row may send 5, "3" or [3]: the
        endpoint refuses them all; None sends no body); POST and DELETE answer ``Done`` on 2xx,
        else ``RestError``.
"""

from __future__ import annotations

from conformance.errors import ProtocolViolation
from model import ops
from model.names import NamespaceName
from model.outcomes import RestError, TopicBuckets

SUFFIX = "numberOfTopicBuckets"


def _path(namespace: str) -> str:
    from conformance.drivers.rest import namespace_path

    NamespaceName.parse(namespace)
    return f"/admin/v2/namespaces/{namespace_path(namespace)}/{SUFFIX}"


class RestBuckets:
    """``_do_GetNumberOfTopicBuckets``, ``_do_SetNumberOfTopicBuckets``, ``_do_RemoveNumberOfTopicBuckets``."""

    OPS = (ops.GetNumberOfTopicBuckets, ops.SetNumberOfTopicBuckets, ops.RemoveNumberOfTopicBuckets)

    def _do_GetNumberOfTopicBuckets(self, op: ops.GetNumberOfTopicBuckets):
        from conformance.drivers.rest import error_reason

        response = self.request("GET", _path(op.namespace))
        if not 200 <= response.status_code < 300:
            return RestError(response.status_code, error_reason(response))
        body = self._json(response, "getNumberOfTopicBuckets")
        if isinstance(body, bool) or not isinstance(body, int):
            raise ProtocolViolation(f"getNumberOfTopicBuckets: expected a JSON integer, got {body!r}")
        return TopicBuckets(body)

    def _do_SetNumberOfTopicBuckets(self, op: ops.SetNumberOfTopicBuckets):
        body = list(op.buckets) if isinstance(op.buckets, tuple) else op.buckets  # None: no body at all
        return self._done(self.request("POST", _path(op.namespace), body=body))

    def _do_RemoveNumberOfTopicBuckets(self, op: ops.RemoveNumberOfTopicBuckets):
        return self._done(self.request("DELETE", _path(op.namespace)))
