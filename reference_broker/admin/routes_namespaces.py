"""Admin v2 routes for clusters, tenants, namespaces, the autoTopicCreation override and numberOfTopicBuckets.

What this module owns: the HTTP shape of these resources (paths verbatim from Pulsar's admin v2,
status codes, bodies). Every decision is the core's; a route only binds the request, calls one
core method and shapes the answer.

- handlers are ``async def`` so they run in the event loop, never in a thread pool: the core is
  synchronous and relies on the loop for atomicity (``BrokerCore``).
- writes answer 204 No Content, as Pulsar's admin resources do.
- PIP-157's ``numberOfTopicBuckets`` is set only in the namespace-create Policies body; its own
  route answers GET, and refuses POST/DELETE with 412 whatever the body
  (``NamespaceOps.set_number_of_topic_buckets``). The route is ours: PIP-157 was never
  implemented in Pulsar (PIP-157's pip/pip-157.md).
"""

from __future__ import annotations

from typing import Any, Optional

from fastapi import APIRouter, Body, Response

from reference_broker.core import BrokerCore

NO_CONTENT = 204


def build_router(core: BrokerCore) -> APIRouter:
    router = APIRouter(prefix="/admin/v2")

    # --- clusters ---------------------------------------------------------------------------

    @router.get("/clusters", summary="List clusters (readiness probe: answers [\"standalone\"])")
    async def list_clusters() -> list[str]:
        return core.list_clusters()

    @router.get("/clusters/{cluster}", summary="Get a cluster's ClusterData")
    async def get_cluster(cluster: str) -> dict[str, Any]:
        return core.get_cluster(cluster)

    # --- tenants ----------------------------------------------------------------------------

    @router.get("/tenants", summary="List tenants")
    async def list_tenants() -> list[str]:
        return core.list_tenants()

    @router.get("/tenants/{tenant}", summary="Get a tenant's TenantInfo")
    async def get_tenant(tenant: str) -> dict[str, Any]:
        return core.get_tenant(tenant)

    @router.put("/tenants/{tenant}", status_code=NO_CONTENT, summary="Create a tenant")
    async def create_tenant(tenant: str, info: Optional[dict[str, Any]] = Body(default=None)) -> Response:
        core.create_tenant(tenant, info)
        return Response(status_code=NO_CONTENT)

    @router.delete("/tenants/{tenant}", status_code=NO_CONTENT, summary="Delete an empty tenant")
    async def delete_tenant(tenant: str) -> Response:
        core.delete_tenant(tenant)
        return Response(status_code=NO_CONTENT)

    # --- namespaces -------------------------------------------------------------------------

    @router.get("/namespaces/{tenant}", summary="List a tenant's namespaces")
    async def list_namespaces(tenant: str) -> list[str]:
        return core.list_namespaces(tenant)

    @router.put("/namespaces/{tenant}/{namespace}", status_code=NO_CONTENT,
                summary="Create a namespace, optionally with a Policies body")
    async def create_namespace(
        tenant: str, namespace: str, policies: Optional[dict[str, Any]] = Body(default=None)
    ) -> Response:
        core.create_namespace(f"{tenant}/{namespace}", policies)
        return Response(status_code=NO_CONTENT)

    @router.get("/namespaces/{tenant}/{namespace}", summary="Get a namespace's Policies")
    async def get_policies(tenant: str, namespace: str) -> dict[str, Any]:
        return core.get_policies(f"{tenant}/{namespace}")

    @router.delete("/namespaces/{tenant}/{namespace}", status_code=NO_CONTENT,
                   summary="Delete a namespace without topics")
    async def delete_namespace(tenant: str, namespace: str) -> Response:
        core.delete_namespace(f"{tenant}/{namespace}")
        return Response(status_code=NO_CONTENT)

    # --- autoTopicCreation override (Pulsar's BrokerService/AutoTopicCreationOverrideImpl) --------------------------------------------

    # The schema documents what Pulsar binds (an object, or null to remove the override); any other
    # JSON value is still read, and refused with 400 as Jackson refuses it.
    @router.post("/namespaces/{tenant}/{namespace}/autoTopicCreation", status_code=NO_CONTENT,
                 summary="Set the namespace's autoTopicCreationOverride (a null or absent body removes it)",
                 openapi_extra={"requestBody": {"content": {"application/json": {
                     "schema": {"anyOf": [{"type": "object"}, {"type": "null"}]}}}}})
    async def set_auto_topic_creation(tenant: str, namespace: str, override: Any = Body(default=None)) -> Response:
        # Any JSON value: the core binds it as Pulsar's Jackson binds AutoTopicCreationOverrideImpl.
        core.set_auto_topic_creation_override(f"{tenant}/{namespace}", override)
        return Response(status_code=NO_CONTENT)

    @router.get("/namespaces/{tenant}/{namespace}/autoTopicCreation",
                summary="Get the override (204 when none is set)")
    async def get_auto_topic_creation(tenant: str, namespace: str) -> Any:
        override = core.get_auto_topic_creation_override(f"{tenant}/{namespace}")
        # Pulsar resumes with null when unset and answers 200 with an empty body; an empty answer
        # is 204 here, so a JSON client never meets an empty application/json body.
        return Response(status_code=NO_CONTENT) if override is None else override

    @router.delete("/namespaces/{tenant}/{namespace}/autoTopicCreation", status_code=NO_CONTENT,
                   summary="Remove the override")
    async def remove_auto_topic_creation(tenant: str, namespace: str) -> Response:
        core.remove_auto_topic_creation_override(f"{tenant}/{namespace}")
        return Response(status_code=NO_CONTENT)

    # --- numberOfTopicBuckets (PIP-157: GET only; POST/DELETE refused) -------------------------

    @router.get("/namespaces/{tenant}/{namespace}/numberOfTopicBuckets",
                summary="Get the namespace's numberOfTopicBuckets (1 = no bucketing)")
    async def get_number_of_topic_buckets(tenant: str, namespace: str) -> int:
        return core.get_number_of_topic_buckets(f"{tenant}/{namespace}")

    @router.post("/namespaces/{tenant}/{namespace}/numberOfTopicBuckets", status_code=NO_CONTENT,
                 summary="Always refused (412): numberOfTopicBuckets can only be set at namespace creation")
    async def set_number_of_topic_buckets(tenant: str, namespace: str, value: Any = Body(default=None)) -> Response:
        core.set_number_of_topic_buckets(f"{tenant}/{namespace}", value)
        return Response(status_code=NO_CONTENT)  # never reached: the core always refuses

    @router.delete("/namespaces/{tenant}/{namespace}/numberOfTopicBuckets", status_code=NO_CONTENT,
                   summary="Always refused (412): numberOfTopicBuckets can only be set at namespace creation")
    async def remove_number_of_topic_buckets(tenant: str, namespace: str) -> Response:
        core.set_number_of_topic_buckets(f"{tenant}/{namespace}")
        return Response(status_code=NO_CONTENT)  # never reached: the core always refuses

    return router
