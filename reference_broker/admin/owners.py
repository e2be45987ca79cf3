"""On a cluster, an admin request about one topic is served by the broker that owns the topic's bundle,
and what sums or lists over several topics asks each owner, as Apache Pulsar's admin API does.

- ``redirect_to_owner``: another broker answers 307, its Location the owner's web address, the same
  path and query, and ``authoritative=true`` (PulsarWebResource#validateTopicOwnershipAsync,
  apache/pulsar@v4.0.7:pulsar-broker/src/main/java/org/apache/pulsar/broker/web/PulsarWebResource.java);
  Pulsar's admin client follows it. Finding the owner assigns one to a bundle that has none, as a
  lookup would.
- ``partition_stats``: a partitioned topic's stats are its partitions' stats, each asked of the
  partition's owner (PersistentTopicsBase#internalGetPartitionedStatsAsync asks every partition with
  the broker's own admin client, at v4.0.7).
- ``non_persistent_topics``: the non-persistent topics of a namespace are what each bundle's owner
  has loaded (NonPersistentTopics#getList asks every bundle with ``getListInBundle``, at v4.0.7);
  ``local_in_bundle`` is a broker's own part, served at ``/admin/v2/non-persistent/{t}/{ns}/{bundle}``.

A broker that is not part of a cluster owns everything: nothing is redirected and nothing is asked
of another broker. A peer that does not answer within ``PEER_TIMEOUT_S`` makes the request fail with
503, naming it.
"""

from __future__ import annotations

import urllib.parse
from typing import Any, Optional

import httpx
from fastapi import Request, Response
from starlette.exceptions import HTTPException

from pulsar_naming.names import NamespaceName, TopicName

PEER_TIMEOUT_S = 10.0


def _owner(core, name: TopicName):
    return core.cluster.owner_of(core.cluster.bundle_of(name))


def redirect_to_owner(core, name: TopicName, request: Request) -> Optional[Response]:
    """The 307 to the owner of ``name``'s bundle when that is another broker, else None."""
    owner = _owner(core, name)
    if core.cluster.is_self(owner):
        return None
    query = dict(urllib.parse.parse_qsl(request.url.query, keep_blank_values=True))
    query["authoritative"] = "true"
    raw = request.scope.get("raw_path")  # the path as the client wrote it, percent-encoded: a header is ASCII
    path = raw.decode("ascii") if raw else urllib.parse.quote(request.url.path, safe="/")
    location = f"{owner.web_url.rstrip('/')}{path}?{urllib.parse.urlencode(query)}"
    return Response(status_code=307, headers={"Location": location})


async def _peer_json(url: str) -> tuple[int, Any]:
    try:
        async with httpx.AsyncClient(timeout=PEER_TIMEOUT_S, follow_redirects=True) as client:
            response = await client.get(url)
    except httpx.HTTPError as exc:
        raise HTTPException(status_code=503, detail=f"{url} did not answer: {type(exc).__name__}") from exc
    return response.status_code, (response.json() if response.status_code == 200 else None)


def _path(name: TopicName) -> str:
    quoted = urllib.parse.quote
    return (f"/admin/v2/{name.domain}/{quoted(name.tenant, safe='')}/{quoted(name.namespace, safe='')}/"
            f"{name.encoded_local_name}")


async def partition_stats(core, topics, partition: TopicName) -> Optional[dict]:
    """The stats of one partition, from its owner; None when it is not loaded there."""
    owner = _owner(core, partition)
    if core.cluster.is_self(owner):
        live = topics.get(partition)
        return live.stats() if live is not None else None
    status, body = await _peer_json(f"{owner.web_url.rstrip('/')}{_path(partition)}/stats")
    return body if status == 200 else None


def local_in_bundle(core, namespace: NamespaceName, bundle_range: str) -> list[str]:
    """This broker's loaded non-persistent topics of one bundle of ``namespace``."""
    return [topic for topic in core.list_topics(namespace, "non-persistent")
            if core.cluster.bundle_of(TopicName.parse(topic)).range_name == bundle_range]


async def non_persistent_topics(core, namespace: NamespaceName) -> list[str]:
    """The namespace's loaded non-persistent topics over the cluster, sorted."""
    found = set(core.list_topics(namespace, "non-persistent"))  # the namespace's own 404 first
    if core.cluster.info is None:
        return sorted(found)
    quoted = urllib.parse.quote
    for bundle in core.cluster.bundles_of(namespace):
        owner = core.cluster.owner_of(bundle)
        if core.cluster.is_self(owner):
            continue  # already in ``found``
        url = (f"{owner.web_url.rstrip('/')}/admin/v2/non-persistent/{quoted(namespace.tenant, safe='')}/"
               f"{quoted(namespace.namespace, safe='')}/{bundle.range_name}")
        status, body = await _peer_json(url)
        if status == 200 and isinstance(body, list):
            found.update(str(topic) for topic in body)
    return sorted(found)
