"""Admin v2 topic stats routes (PIP-2): ``/stats``, ``/partitioned-stats`` and ``/internalStats``.

Paths verbatim from Pulsar's NamespaceService.getListOfNonPersistentTopics (``NonPersistentTopics`` inherits them from ``PersistentTopics``):
  GET /admin/v2/{domain}/{tenant}/{namespace}/{topic}/stats
  GET /admin/v2/{domain}/{tenant}/{namespace}/{topic}/partitioned-stats?perPartition=true
  GET /admin/v2/{domain}/{tenant}/{namespace}/{topic}/internalStats
  DELETE /admin/v2/{domain}/{tenant}/{namespace}/{topic}/subscription/{subscription} (a subscription of
  a loaded topic; PersistentTopicsBase#internalDeleteSubscriptionAsync, force false)

What this module owns: the HTTP shape of stats. The numbers come from the live topics
(``NonPersistentTopic.stats`` and its subscriptions'); existence comes from the core.

- the namespace must exist (the core's 404), then the topic must be loaded: a non-persistent
  topic exists only while loaded (Pulsar's NamespaceService.getListOfNonPersistentTopics), so an
  unknown one is 404 "Topic <full name> not found" [I: the text of getTopicNotFoundErrorMessage,
  Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync].
- on a cluster, stats of a topic another broker owns are a 307 to it, and a partitioned topic's
  partitions are each asked of their owner (admin/owners.py).
- partitioned-stats (``aggregate``) sums the loaded partitions' counters and rates (``add()``
  "sums msgDropRate", Pulsar's NonPersistentTopicStatsImpl), concatenates publishers, merges
  subscriptions by name, and carries ``metadata.partitions``; with ``perPartition`` (default
  true) also each partition's own stats under ``partitions``.
- a persistent topic's stats come from its live log (topics/persistent_stats.py), loaded when the
  core says the topic exists.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request, Response

from pulsar_naming.names import TopicName
from reference_broker.core import BrokerCore, parse_topic
from reference_broker.errors import TopicBusy, TopicNotFound, topic_not_found_reason
from reference_broker.topics import TopicRegistry

from . import owners
from .routes_topics import NO_CONTENT, _full_name

_SUMMED = ("msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut", "bytesInCounter", "msgInCounter",
           "bytesOutCounter", "msgOutCounter", "storageSize", "backlogSize", "msgDropRate")
_SUBSCRIPTION_SUMMED = ("msgRateOut", "msgThroughputOut", "msgOutCounter", "bytesOutCounter", "msgDropRate",
                        "msgRateRedeliver", "msgBacklog")


def build_router(core: BrokerCore, topics: TopicRegistry, close_subscription=None) -> APIRouter:
    router = APIRouter()

    def live_topic(name: TopicName):
        core.get_policies(name.namespace_name)  # the namespace's own 404 first
        if core.topic_existence(name) != "non-partitioned":
            raise TopicNotFound(topic_not_found_reason(name))
        return topics.get_or_load(name)  # loaded in the core (e.g. created by the admin API)

    @router.get("/admin/v2/{domain}/{tenant}/{namespace}/{topic}/stats", summary="Topic stats (PIP-2 fields)")
    async def get_stats(domain: str, tenant: str, namespace: str, topic: str, request: Request) -> Any:
        name = parse_topic(_full_name(domain, tenant, namespace, topic))
        return owners.redirect_to_owner(core, name, request) or live_topic(name).stats()

    @router.get("/admin/v2/{domain}/{tenant}/{namespace}/{topic}/internalStats", summary="Internal stats")
    async def get_internal_stats(domain: str, tenant: str, namespace: str, topic: str, request: Request) -> Any:
        name = parse_topic(_full_name(domain, tenant, namespace, topic))
        return owners.redirect_to_owner(core, name, request) or live_topic(name).internal_stats()

    @router.delete("/admin/v2/{domain}/{tenant}/{namespace}/{topic}/subscription/{subscription}",
                   status_code=NO_CONTENT, summary="Delete a subscription (force false)")
    async def delete_subscription(domain: str, tenant: str, namespace: str, topic: str, subscription: str,
                                  request: Request) -> Response:
        name = parse_topic(_full_name(domain, tenant, namespace, topic))
        redirect = owners.redirect_to_owner(core, name, request)
        if redirect is not None:
            return redirect
        live = live_topic(name)
        found = live.subscriptions.get(subscription)
        if found is None:  # Pulsar's AdminResource#getSubNotFoundErrorMessage
            raise TopicNotFound(f"Subscription {subscription} not found for topic {name}")
        if name.persistent:
            if found.consumers:  # PersistentSubscription#delete without force
                raise TopicBusy("Subscription has active connected consumers")
            live.remove_subscription(subscription)
        else:
            # NonPersistentSubscription#delete: fenced and removed whoever is connected; its dispatcher's
            # close disconnects the consumers (Dispatcher#close), and the topic keeps its counters.
            if close_subscription is not None:
                close_subscription(str(name), subscription)
            live.remove_subscription(subscription)
        return Response(status_code=NO_CONTENT)

    @router.get("/admin/v2/{domain}/{tenant}/{namespace}/{topic}/partitioned-stats",
                summary="Partitioned topic stats, summed over partitions")
    async def get_partitioned_stats(domain: str, tenant: str, namespace: str, topic: str,
                                    perPartition: bool = Query(True)) -> dict[str, Any]:
        name = parse_topic(_full_name(domain, tenant, namespace, topic))
        count = core.get_partitioned_metadata(name, auto_create=False)
        if count <= 0:
            raise TopicNotFound(f"Partitioned Topic not found: {name} is not a partitioned topic")  # [I]
        per_partition = {}
        for index in range(count):
            partition = name.partition(index)
            stats = await owners.partition_stats(core, topics, partition)  # from its owner, on a cluster
            if stats is not None:
                per_partition[str(partition)] = stats
        body = aggregate(list(per_partition.values()))
        body["metadata"] = {"partitions": count}
        if perPartition:
            body["partitions"] = per_partition
        return body

    return router


def aggregate(parts: list[dict]) -> dict[str, Any]:
    """The PartitionedTopicStatsImpl#add of every partition's stats."""
    body: dict[str, Any] = {key: 0 if key.endswith("Counter") or key in ("storageSize", "backlogSize") else 0.0
                            for key in _SUMMED}
    body.update(publishers=[], subscriptions={}, replication={})
    for part in parts:
        for key in _SUMMED:
            body[key] += part.get(key, 0)
        body["publishers"].extend(part.get("publishers", []))
        for sub_name, sub in part.get("subscriptions", {}).items():
            existing = body["subscriptions"].get(sub_name)
            if existing is None:
                body["subscriptions"][sub_name] = {**sub, "consumers": list(sub.get("consumers", []))}
                continue
            for key in _SUBSCRIPTION_SUMMED:
                existing[key] = existing.get(key, 0) + sub.get(key, 0)
            existing["consumers"] = existing["consumers"] + sub.get("consumers", [])
    rate_in = body["msgRateIn"]
    body["averageMsgSize"] = body["msgThroughputIn"] / rate_in if rate_in else 0.0
    return body
