"""Authentication and authorization of admin REST requests (Pulsar's ``Authorization: Bearer``).

What this module owns: the ASGI middleware that runs before any route when
``authenticationEnabled`` is true, the table from a request path to the resource it acts on,
and Pulsar's refusal texts for each kind of resource.

- authentication: every request, on every path (``/openapi.json`` included), is authenticated first: no or
  a bad ``Authorization`` header is 401 "Authentication required"
  (``AuthenticationFilter#doFilter`` @ v4.0.7 answers ``sendError(SC_UNAUTHORIZED,
  "Authentication required")`` before any resource is reached). The route never runs.
- the resource: with authorization on, the path names what is acted on (``resource_of``): a topic, a
  namespace's topic list, a namespace or tenant's namespaces, or the broker itself
  (brokers, clusters, tenants, PIP-35 batch lookups: super-users only, ours for the batch).
  The role must be a super-user, or an admin of the path's tenant (``Security.tenant_decision``).
- refusals (``Resource``) use the words of the check Pulsar runs for that kind of resource (
  ``PulsarWebResource`` @ v4.0.7): a topic, ``validateTopicOperationAsync``: 401
  "Unauthorized to validateTopicOperation for operation [OP] on topic [T]"; a topic listing
  or topic creation/deletion, ``validateNamespaceOperationAsync``: 403 "Unauthorized to
  validateNamespaceOperation for operation [OP] on namespace [N]"; a namespace,
  ``validateAdminAccessForTenantAsync``: 401 "Don't have permission to administrate
  resources on this tenant"; the broker, ``validateSuperUserAccessAsync``: 401 "This
  operation requires super-user access". A tenant that does not exist is 404 "Tenant does
  not exist" for a role that is not a super-user.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Optional

from starlette.types import ASGIApp, Receive, Scope, Send

from reference_broker.admin.errors import error_response
from reference_broker.security import HTTP_REFUSED, TENANT_MISSING, AuthenticationFailed, Security

log = logging.getLogger("reference_broker.admin.security")

_DOMAIN = r"(persistent|non-persistent)"
_LIST = re.compile(rf"^/admin/v2/{_DOMAIN}/([^/]+)/([^/]+)(?:/partitioned)?/?\Z")
_TOPIC = re.compile(rf"^/admin/v2/{_DOMAIN}/([^/]+)/([^/]+)/([^/]+)(/[^/]*)?/?\Z")
_LOOKUP = re.compile(rf"^/lookup/v2/topic/{_DOMAIN}/([^/]+)/([^/]+)/([^/]+)/?\Z")
_NAMESPACE = re.compile(r"^/admin/v2/namespaces/([^/]+)(?:/([^/]+))?(?:/.*)?\Z")
_STATS = ("/stats", "/partitioned-stats", "/internalStats")

SUPER_USER_ONLY = "This operation requires super-user access"
TENANT_ADMIN_ONLY = "Don't have permission to administrate resources on this tenant"


@dataclass(frozen=True)
class Resource:
    """What a request acts on and how Pulsar words its refusal (PulsarWebResource's checks)."""

    tenant: Optional[str]  # None: the broker itself (super-users only)
    status: int
    reason: str


def resource_of(method: str, path: str) -> Resource:
    """The resource a request's path names."""
    match = _LIST.match(path)
    if match and method == "GET":
        domain, tenant, namespace = match.groups()
        return Resource(tenant, 403, _namespace_refusal("GET_TOPICS", f"{tenant}/{namespace}"))
    match = _TOPIC.match(path) or _LOOKUP.match(path)
    if match:
        domain, tenant, namespace, local, *rest = match.groups()
        suffix = rest[0] if rest else None
        topic = f"{domain}://{tenant}/{namespace}/{local}"
        if path.startswith("/admin/") and method in ("PUT", "DELETE") and suffix in (None, "/partitions"):
            operation = "CREATE_TOPIC" if method == "PUT" else "DELETE_TOPIC"
            return Resource(tenant, 403, _namespace_refusal(operation, f"{tenant}/{namespace}"))
        operation = "GET_STATS" if suffix in _STATS else "LOOKUP"
        return Resource(tenant, 401, f"Unauthorized to validateTopicOperation for operation [{operation}] "
                                     f"on topic [{topic}]")
    match = _NAMESPACE.match(path)
    if match:
        return Resource(match.group(1), 401, TENANT_ADMIN_ONLY)
    return Resource(None, 401, SUPER_USER_ONLY)


def _namespace_refusal(operation: str, namespace: str) -> str:
    return f"Unauthorized to validateNamespaceOperation for operation [{operation}] on namespace [{namespace}]"


class SecurityMiddleware:
    """Authentication, then authorization by the path's resource, as a pure ASGI middleware: the route runs only for an allowed role, which
    it finds in ``scope["state"]["role"]``."""

    def __init__(self, app: ASGIApp, security: Security) -> None:
        self.app = app
        self.security = security

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = None
        for name, value in scope.get("headers") or ():
            if name == b"authorization":
                header = value.decode("latin-1")
                break
        try:
            role = self.security.authenticate_http(header)
        except AuthenticationFailed as exc:
            log.warning("[%s] Failed to authenticate HTTP request: %s", _client(scope), exc)
            await error_response(401, HTTP_REFUSED)(scope, receive, send)
            return
        refusal = self.refusal(role, scope["method"], scope["path"])
        if refusal is not None:
            status, reason = refusal
            log.warning("[%s] role %s refused %s %s: %s", _client(scope), role, scope["method"], scope["path"], reason)
            await error_response(status, reason)(scope, receive, send)
            return
        scope.setdefault("state", {})["role"] = role
        await self.app(scope, receive, send)

    def refusal(self, role: str, method: str, path: str) -> Optional[tuple[int, str]]:
        """None when ``role`` may make this request, else (status, reason) in the words of the resource's check."""
        if not self.security.authorization or self.security.is_super_user(role):
            return None
        resource = resource_of(method, path)
        if resource.tenant is None:
            return resource.status, resource.reason
        decision = self.security.tenant_decision(role, resource.tenant)
        if decision.tenant_missing:
            return 404, TENANT_MISSING
        return None if decision.allowed else (resource.status, resource.reason)


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "?"
