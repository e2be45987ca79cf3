"""Admin v2 topic routes (``/admin/v2/{domain}/...``) and the REST lookup (``/lookup/v2/topic/...``).

What this module owns: the HTTP shape of topic resources. Paths verbatim from Pulsar's PersistentTopics, NonPersistentTopics
and TopicLookup; decisions are the core's.

- ``{domain}`` is ``persistent`` or ``non-persistent``; anything else is an unknown path, 404
  (Pulsar mounts exactly those two resource classes).
- ``{topic}`` is the URL-encoded local name (``@Encoded`` in Pulsar). The ASGI server has already
  percent-decoded the path once, which is the one decoding Pulsar does (``Codec.decode``), so the
  value is used as it arrives.
- a name the core cannot parse is 412 with the parser's reason (``InvalidTopicName``).
- on a cluster, creating, deleting or reading the stats of one topic is served by its owner: another
  broker answers 307 to it, and listing non-persistent topics asks every bundle's owner
  (admin/owners.py).
- handlers are ``async def``, so they run in the event loop (as in routes_namespaces.py: the
  synchronous core relies on the loop for atomicity).
"""

from __future__ import annotations

from typing import Annotated, Optional

from fastapi import APIRouter, Body, Query, Request, Response
from starlette.exceptions import HTTPException

from pulsar_naming.names import DOMAINS
from reference_broker.admin.routes_lookup import response_for_lookup
from reference_broker.admin import owners
from reference_broker.core import BrokerCore, parse_topic
from reference_broker.core_namespaces import parse_namespace

NO_CONTENT = 204
DOMAIN_DOC = "persistent or non-persistent (anything else: 404)"


def _domain(domain: str) -> str:
    if domain not in DOMAINS:
        raise HTTPException(status_code=404)  # only the two domains Pulsar mounts
    return domain


def _full_name(domain: str, tenant: str, namespace: str, topic: str) -> str:
    return f"{_domain(domain)}://{tenant}/{namespace}/{topic}"


def build_router(core: BrokerCore) -> APIRouter:
    router = APIRouter()

    # --- REST lookup (Pulsar's TopicLookupBase.internalLookupTopicAsync) -----------------------------------------------------------

    @router.get("/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}", summary="Look up a topic's broker")
    async def lookup(
        domain: str, tenant: str, namespace: str, topic: str,
        authoritative: bool = Query(False), listenerName: Optional[str] = Query(None),
    ) -> Response:
        # PIP-35 cluster: 200 LookupData from the bundle owner, else 307 to it (routes_lookup.py).
        return response_for_lookup(core, _full_name(domain, tenant, namespace, topic))

    # --- namespace-level listings (Pulsar's NamespaceService.getListOfNonPersistentTopics, Pulsar's TopicResources/NamespaceResources) ----------------------------------------

    @router.get("/admin/v2/{domain}/{tenant}/{namespace}/partitioned", summary="List partitioned topics")
    async def list_partitioned(domain: str, tenant: str, namespace: str) -> list[str]:
        return core.list_partitioned_topics(f"{tenant}/{namespace}", _domain(domain))

    @router.get("/admin/v2/{domain}/{tenant}/{namespace}",
                summary="List non-partitioned topics and partitions of a domain")
    async def list_topics(domain: str, tenant: str, namespace: str) -> list[str]:
        if _domain(domain) == "non-persistent":  # what each bundle's owner has loaded (admin/owners.py)
            return await owners.non_persistent_topics(core, parse_namespace(f"{tenant}/{namespace}"))
        return core.list_topics(f"{tenant}/{namespace}", domain)

    @router.get("/admin/v2/non-persistent/{tenant}/{namespace}/{bundle}",
                summary="The non-persistent topics of one bundle this broker has loaded")
    async def list_in_bundle(tenant: str, namespace: str, bundle: str) -> list[str]:
        return owners.local_in_bundle(core, parse_namespace(f"{tenant}/{namespace}"), bundle)

    # --- partitioned topics (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync) ----------------------------------------------------

    @router.get("/admin/v2/{domain}/{tenant}/{namespace}/{topic}/partitions",
                summary="getPartitionedMetadata (PIP-344 semantics)")
    async def get_partitions(
        domain: str, tenant: str, namespace: str, topic: str,
        checkAllowAutoCreation: bool = Query(False), authoritative: bool = Query(False),
    ) -> dict[str, int]:
        partitions = core.get_partitioned_metadata(_full_name(domain, tenant, namespace, topic), checkAllowAutoCreation)
        return {"partitions": partitions}

    @router.put("/admin/v2/{domain}/{tenant}/{namespace}/{topic}/partitions", status_code=NO_CONTENT,
                summary="Create a partitioned topic; body: the number of partitions")
    async def create_partitioned(
        domain: str, tenant: str, namespace: str, topic: str,
        partitions: Annotated[int, Body(strict=True, description="the number of partitions, a JSON integer")],
    ) -> Response:
        core.create_partitioned_topic(_full_name(domain, tenant, namespace, topic), partitions)
        return Response(status_code=NO_CONTENT)

    @router.delete("/admin/v2/{domain}/{tenant}/{namespace}/{topic}/partitions", status_code=NO_CONTENT,
                   summary="Delete a partitioned topic and its partitions")
    async def delete_partitioned(domain: str, tenant: str, namespace: str, topic: str) -> Response:
        core.delete_partitioned_topic(_full_name(domain, tenant, namespace, topic))
        return Response(status_code=NO_CONTENT)

    # --- non-partitioned topics -------------------------------------------------------------

    @router.put("/admin/v2/{domain}/{tenant}/{namespace}/{topic}", status_code=NO_CONTENT,
                summary="Create a non-partitioned topic")
    async def create_topic(domain: str, tenant: str, namespace: str, topic: str, request: Request) -> Response:
        name = parse_topic(_full_name(domain, tenant, namespace, topic))
        redirect = owners.redirect_to_owner(core, name, request)  # on a cluster, the owner loads it
        if redirect is not None:
            return redirect
        core.create_non_partitioned_topic(name)
        return Response(status_code=NO_CONTENT)

    @router.delete("/admin/v2/{domain}/{tenant}/{namespace}/{topic}", status_code=NO_CONTENT,
                   summary="Delete a non-partitioned topic or one partition")
    async def delete_topic(domain: str, tenant: str, namespace: str, topic: str, request: Request) -> Response:
        name = parse_topic(_full_name(domain, tenant, namespace, topic))
        redirect = owners.redirect_to_owner(core, name, request)  # on a cluster, the owner deletes it
        if redirect is not None:
            return redirect
        core.delete_topic(name)
        return Response(status_code=NO_CONTENT)

    return router
