"""REST routes of the reference cluster (PIP-35 issue): batch lookup, a topic's bundle, brokers, bundles.

What this module owns: the HTTP shape of the cluster's REST answers; decisions are
lookup_service.py's and cluster.py's. The single-topic lookup stays in routes_topics.py and calls
``lookup_service.rest_lookup``; ``response_for_lookup`` below turns its answer into 200 or 307.

- ``POST /lookup/v2/topics`` takes a JSON list of topic names and answers a JSON map topic ->
  LookupData of the owner, or ``{"error": <ServerError name>, "reason": ...}``
  (``lookup_service.rest_batch``); every entry also carries ``requested``. TENTATIVE, ours:
  upstream has no such path (PIP-35 names ``TopicLookup(v2).lookupTopicBatchAsync`` but no URL).
- a body that is not a list of strings is 400 (``install_error_handlers``); a batch over
  ``maxBatchLookupTopics`` is 413 with the limit in the reason (a 503 would invite the client to
  retry the same request); no lookup permit is 503, as for the single lookup.
- ``GET /admin/v2/brokers/{cluster}`` lists the live brokers' ids (``host:webPort``), and
  ``GET /admin/v2/namespaces/{t}/{ns}/bundles`` answers BundlesData (``{"boundaries": [...],
  "numBundles": n}``), as Pulsar's admin API does;
  ``GET /lookup/v2/topic/{domain}/{t}/{ns}/{topic}/bundle`` answers the bundle range [I].
- handlers are ``async def``, so they run in the event loop (as in routes_namespaces.py: the
  synchronous core relies on the loop for atomicity).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.exceptions import HTTPException

from pulsar_naming.names import DOMAINS
from reference_broker import lookup_service
from reference_broker.core import BrokerCore, parse_topic
from reference_broker.core_namespaces import parse_namespace


def response_for_lookup(core: BrokerCore, name: str) -> Response:
    """The single REST lookup on a cluster: 200 LookupData from the owner, else 307 (Pulsar's TopicLookupBase.internalLookupTopicAsync)."""
    data, location = lookup_service.rest_lookup(core, name)
    if location is not None:
        return Response(status_code=307, headers={"Location": location})
    return JSONResponse(data)


def build_router(core: BrokerCore) -> APIRouter:
    router = APIRouter()

    @router.post("/lookup/v2/topics", summary="Batch lookup (PIP-35, ours): topic -> owner's LookupData or error")
    async def batch_lookup(
        topics: Annotated[list[str], Body(description="topic names; a partitioned name expands to its partitions")],
    ) -> dict[str, Any]:
        return lookup_service.rest_batch(core, topics)

    @router.get("/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}/bundle", response_class=PlainTextResponse,
                summary="The bundle range a topic hashes to")
    async def topic_bundle(domain: str, tenant: str, namespace: str, topic: str) -> str:
        if domain not in DOMAINS:
            raise HTTPException(status_code=404)
        name = parse_topic(f"{domain}://{tenant}/{namespace}/{topic}")  # 412 when invalid
        core.lookup(name, check_existence=False)  # 404 for an unknown namespace
        return core.cluster.bundle_of(name).range_name

    @router.get("/admin/v2/brokers/{cluster}", summary="The live brokers of the cluster (host:webPort)")
    async def active_brokers(cluster: str) -> list[str]:
        core.get_cluster(cluster)  # 404 for an unknown cluster
        return sorted(core.cluster.live_brokers())

    @router.get("/admin/v2/namespaces/{tenant}/{namespace}/bundles", summary="A namespace's BundlesData")
    async def namespace_bundles(tenant: str, namespace: str) -> dict[str, Any]:
        ns = parse_namespace(f"{tenant}/{namespace}")
        policies = core.get_policies(ns)  # 404 for an unknown namespace
        ring = core.cluster.bundles_of(ns, policies)
        boundaries = [f"0x{b.lower:08x}" for b in ring] + [f"0x{ring[-1].upper:08x}"]
        return {"boundaries": boundaries, "numBundles": len(ring)}

    return router
