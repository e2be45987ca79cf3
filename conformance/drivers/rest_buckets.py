"""PIP-157 operations of the REST driver: the ``numberOfTopicBuckets`` namespace endpoints.

A part of ``RestDriver`` (rest.py), given the driver for its ``request``. Paths are ours
(docs/pip157-decisions.md (e)), in the shape of Pulsar's other namespace policy endpoints
(``.../autoTopicCreation``); upstream never had them:

  GET    /admin/v2/namespaces/{tenant}/{ns}/numberOfTopicBuckets   -> 200 n
  POST   /admin/v2/namespaces/{tenant}/{ns}/numberOfTopicBuckets   body: any JSON value
  DELETE /admin/v2/namespaces/{tenant}/{ns}/numberOfTopicBuckets

The count itself is given at creation, in the Policies body of ``CreateNamespace`` (rest.py).

``RestBuckets.perform``: a 2xx GET whose body is a JSON integer becomes ``TopicBuckets(n)``;
another 2xx body is a ProtocolViolation; any other status is ``RestError(status, reason)``
(rest_http.done). POST sends ``op.buckets`` as the JSON body as it is (a row may send 5, "3" or
[3]: the endpoint refuses them all; None sends no body); POST and DELETE answer ``Done`` on 2xx,
else ``RestError``.
"""

from __future__ import annotations

from conformance.drivers.rest_http import done, error_reason, json_body, namespace_path
from conformance.errors import ProtocolViolation
from model import ops
from pulsar_naming.names import NamespaceName
from model.outcomes import RestError, TopicBuckets

SUFFIX = "numberOfTopicBuckets"


def _path(namespace: str) -> str:
    NamespaceName.parse(namespace)
    return f"/admin/v2/namespaces/{namespace_path(namespace)}/{SUFFIX}"


class RestBuckets:
    """getNumberOfTopicBuckets, setNumberOfTopicBuckets, removeNumberOfTopicBuckets for RestDriver (``http``)."""

    OPS = (ops.GetNumberOfTopicBuckets, ops.SetNumberOfTopicBuckets, ops.RemoveNumberOfTopicBuckets)

    def __init__(self, http):
        self.http = http

    def perform(self, op):
        if isinstance(op, ops.GetNumberOfTopicBuckets):
            response = self.http.request("GET", _path(op.namespace))
            if not 200 <= response.status_code < 300:
                return RestError(response.status_code, error_reason(response))
            body = json_body(response, "getNumberOfTopicBuckets")
            if isinstance(body, bool) or not isinstance(body, int):
                raise ProtocolViolation(f"getNumberOfTopicBuckets: expected a JSON integer, got {body!r}")
            return TopicBuckets(body)
        if isinstance(op, ops.SetNumberOfTopicBuckets):
            body = list(op.buckets) if isinstance(op.buckets, tuple) else op.buckets  # None: no body at all
            return done(self.http.request("POST", _path(op.namespace), body=body))
        return done(self.http.request("DELETE", _path(op.namespace)))
