"""Token authentication and authorization: what a broker answers an operation made with other
credentials (``ops.WithCredentials``). Ours: the PIPs say nothing about security, so every answer
here is read from Apache Pulsar's source at v4.0.7 and its rows are graded SHOULD.

``with_credentials`` answers, in this order:

- authentication off: with ``authenticationEnabled=false`` credentials are not looked at: the
  inner operation answers as it would without them (ServerCnx#handleConnect completes the
  connect at once when ``!service.isAuthenticationEnabled()``; the HTTP filter is not installed).
- nobody authenticated: credentials that authenticate nobody (none, a forged or an expired token)
  are refused before the operation: the binary protocol answers the CONNECT with ServerError
  ``AuthenticationError`` "Failed to authenticate" (ServerCnx#authenticationFailed), the REST API
  answers 401 "Authentication required" (AuthenticationFilter#doFilter).
- authorization: with ``authorizationEnabled`` too, a role in ``superUserRoles`` may do anything,
  and so may a role in the adminRoles of the topic's or namespace's tenant
  (PulsarAuthorizationProvider#validateTenantAdminAccess); any other role is refused with the
  words of the check each operation runs (``REFUSALS``). A tenant that does not exist is answered
  as the provider's 404 "Tenant does not exist" reaches each operation.
- CONNECT itself is only authenticated, never authorized (``Handshake`` answers as usual once the
  token is valid), and only the operations of ``REFUSALS`` are modelled with credentials; any
  other is a ModelUsageError naming this table.
"""

from __future__ import annotations

from model.errors import ModelUsageError
from model.ops import GetPartitionedMetadata, Handshake, ListTopics, Lookup, WithCredentials
from model.outcomes import RestError, ServerError
from model.state import State, parse_namespace, parse_topic

CONNECT_REFUSED = ServerError("AuthenticationError", "Failed to authenticate")
HTTP_REFUSED = RestError(401, "Authentication required")
TOKEN_KINDS = ("valid", "forged", "expired")


def _topic_refusal(operation: str):
    """PulsarWebResource#validateTopicOperationAsync's 401."""
    return lambda name: RestError(401, f"Unauthorized to validateTopicOperation for operation [{operation}] "
                                       f"on topic [{name}]")


def _namespace_refusal(operation: str):
    """PulsarWebResource#validateNamespaceOperationAsync's 403."""
    return lambda name: RestError(403, f"Unauthorized to validateNamespaceOperation for operation [{operation}] "
                                       f"on namespace [{name}]")


# (operation type, api) -> (refusal of a role without the right, refusal when the tenant is
# missing); each a function of the topic's or namespace's name. ServerCnx and the admin
# resources @ v4.0.7.
REFUSALS = {
    (GetPartitionedMetadata, "binary"): (
        lambda name: ServerError("AuthorizationError", "Client is not authorized to Get Partition Metadata"),
        # handlePartitionMetadataRequest's exceptionally: a 404 from the check is TopicNotFound
        lambda name: ServerError("TopicNotFound", f"Tenant or namespace or topic does not exist: "
                                                  f"{parse_topic(name).namespace_name}")),
    (GetPartitionedMetadata, "rest"): (_topic_refusal("LOOKUP"), lambda name: RestError(404, "Tenant does not exist")),
    (Lookup, "binary"): (
        lambda name: ServerError("AuthorizationError", "Client is not authorized to Lookup"),
        lambda name: ServerError("AuthorizationError", "Exception occurred while trying to authorize lookup")),
    (Lookup, "rest"): (_topic_refusal("LOOKUP"), lambda name: RestError(404, "Tenant does not exist")),
    (ListTopics, "binary"): (
        lambda name: ServerError("AuthorizationError", "Client is not authorized to GetTopicsOfNamespace"),
        lambda name: ServerError("AuthorizationError",
                                 "Exception occurred while trying to authorize GetTopicsOfNamespace")),
    (ListTopics, "rest"): (_namespace_refusal("GET_TOPICS"), lambda name: RestError(404, "Tenant does not exist")),
}


def with_credentials(state: State, op: WithCredentials):
    """What ``op.operation`` answers when made with ``op``'s credentials (the module's four steps)."""
    from model.machine import apply

    inner = op.operation
    if op.token not in TOKEN_KINDS:
        raise ModelUsageError(f"WithCredentials token {op.token!r}: use one of {', '.join(TOKEN_KINDS)}")
    api = op.api
    if not isinstance(inner, Handshake) and (type(inner), api) not in REFUSALS:
        raise ModelUsageError(f"{type(inner).__name__} through {api} is not modelled with credentials: "
                              "extend model/auth.py REFUSALS")
    config = state.config
    if not config.authenticationEnabled:  # credentials are not looked at
        return apply(state, inner)
    if op.role is None or op.token != "valid":  # authenticates nobody: refused before the operation
        return state, (HTTP_REFUSED if api == "rest" else CONNECT_REFUSED)
    if isinstance(inner, Handshake) or not config.authorizationEnabled or op.role in config.super_users:
        return apply(state, inner)  # CONNECT is never authorized; a superuser may do anything
    name = inner.namespace if isinstance(inner, ListTopics) else inner.topic
    tenant = (parse_namespace(name) if isinstance(inner, ListTopics) else parse_topic(name).namespace_name).tenant
    denied, missing = REFUSALS[(type(inner), api)]
    if tenant not in state.tenants:
        return state, missing(name)
    if op.role in state.tenant_admins.get(tenant, frozenset()):
        return apply(state, inner)
    return state, denied(name)
