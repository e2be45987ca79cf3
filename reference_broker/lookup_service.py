"""Lookups on a reference cluster: LOOKUP, REST lookup, and the PIP-35 batch lookup (binary and REST).

What this module owns: the answer to "where is this topic served?" on a cluster of brokers, for
one topic and for a batch. ``ServerCnx.handle_Lookup`` and ``handle_BatchLookup`` (commands.py) and
the REST routes (admin/routes_topics.py, admin/routes_lookup.py) call the functions below; the
checks that do not depend on ownership stay in ``BrokerCore.lookup`` (core_topics.py).

- LOOKUP (``handle_lookup``; the issue: "LOOKUP answers Connect for an owned bundle and an
  authoritative Redirect to the owner otherwise"): after ``core.lookup`` (Pulsar's
  TopicLookupBase.lookupTopicAsync: no existence check) the topic's bundle owner decides: this
  broker -> Connect(own URL, authoritative=true); another -> Redirect(owner's brokerServiceUrl,
  authoritative=true). Failures are Failed with the ServerError and the binary message, as on a
  single broker.
- REST (``rest_lookup``; Pulsar's TopicLookupBase.internalLookupTopicAsync): 200 LookupData from
  the owner; elsewhere 307 with ``Location: <owner httpUrl>/lookup/v2/topic/<domain>/<t>/<ns>/<encoded
  local>?authoritative=true``. The existence check (404) and the lookup permit (503) come first,
  as on a single broker.
- batch entries (``expand``, ``resolve_batch``; docs/pip35-decisions.md part C, TENTATIVE): one
  entry per DISTINCT topic in order of first appearance; a partitioned name (metadata with K > 0)
  becomes its K partitions; ``requested`` echoes the client's spelling only when it is not the
  canonical full name of the entry's topic or of its partitioned base; an invalid name is a
  Failed InvalidTopicName entry under the name as written; any other topic answers exactly what a
  single lookup of the same API would: LOOKUP's answer in BATCH_LOOKUP, and in the REST batch the
  single REST lookup's, existence check included (``rest_batch``). Resolution is grouped as PIP-35
  proposes ("for each topic, we'll first find out the bundle it belong ... create a Map<Bundle,
  List<TopicName>>"): one namespace check per (namespace, domain), one owner per bundle, against
  one read of the live brokers.
- batch refusals: the whole request is refused, with no entries, only when it is too big -- more
  than ``maxBatchLookupTopics`` names, more than that many entries after partition expansion, or
  an answer larger than ``maxMessageSize`` -- or when no lookup permit is free; all are
  TooManyRequests with a message naming the limit. Every other failure, including a store error
  while resolving one bundle, is per entry.
- an empty batch is a success with zero entries.
"""

from __future__ import annotations

import bisect
import functools
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterable

from pulsar_naming.names import InvalidName, TopicName, pulsar_refusal
from reference_broker.cluster import BrokerInfo
from reference_broker.core_topics import parse_topic
from reference_broker.errors import BrokerError, InvalidTopicName, TooManyRequests
from pulsar_codec import events as ev
from pulsar_codec import pulsar_api_pb2 as pb

LOOKUP = pb.CommandLookupTopicResponse
LOOKUP_PERMITS_MESSAGE = "Failed due to too many pending lookup requests"  # Pulsar's TopicLookupBase.lookupTopicAsync (ServerCnx)


def _server_error(name: str) -> int:
    return pb.ServerError.Value(name)


# --- one topic: LOOKUP and REST lookup --------------------------------------------------------


def resolve_owner(core, topic: TopicName) -> tuple[BrokerInfo, str]:
    """The owner of ``topic``'s bundle and the bundle's name; MetadataStoreError on store trouble."""
    bundle = core.cluster.bundle_of(topic)
    return core.cluster.owner_of(bundle), str(bundle)


def handle_lookup(cnx, event) -> None:
    """LOOKUP on a cluster: Connect from the owner, else an authoritative Redirect to it. ``cnx`` is the ServerCnx; answers through ``cnx.send``."""
    core = cnx.core
    try:
        topic = parse_topic(event.topic)  # Pulsar's own name check first (ServerCnx#validateTopicName)
        core.lookup(topic, check_existence=False)  # Pulsar's TopicLookupBase.lookupTopicAsync: ownership, not existence
        owner, _ = resolve_owner(core, topic)
    except InvalidName as exc:
        return cnx.send(ev.LookupResponse(request_id=event.request_id, response=LOOKUP.Failed,
                                          error=_server_error("InvalidTopicName"), message=str(exc)))
    except BrokerError as exc:
        return cnx.send(ev.LookupResponse(request_id=event.request_id, response=LOOKUP.Failed,
                                          error=_server_error(exc.server_error), message=exc.binary_message))
    response = LOOKUP.Connect if core.cluster.is_self(owner) else LOOKUP.Redirect
    fields: dict[str, Any] = dict(request_id=event.request_id, response=response,
                                  brokerServiceUrl=owner.broker_url, authoritative=True)
    if owner.broker_url_tls:
        fields["brokerServiceUrlTls"] = owner.broker_url_tls
    cnx.send(ev.LookupResponse(**fields))


def lookup_data(owner: BrokerInfo) -> dict[str, Any]:
    """Pulsar's LookupData JSON (Pulsar's TopicLookupBase.internalLookupTopicAsync): brokerUrl, brokerUrlTls, httpUrl, httpUrlTls, nativeUrl."""
    return {"brokerUrl": owner.broker_url, "brokerUrlTls": owner.broker_url_tls, "httpUrl": owner.web_url,
            "httpUrlTls": owner.web_url_tls, "nativeUrl": owner.broker_url}


def rest_lookup(core, name: str) -> tuple[dict[str, Any] | None, str | None]:
    """GET /lookup/v2/topic/{domain}/{t}/{ns}/{topic} on a cluster: ``(LookupData, None)``
    from the owner, or ``(None, Location)`` for the 307; BrokerErrors propagate to the REST layer."""
    with core.lookup_permits.permit():  # none free -> 503 (Pulsar's TopicLookupBase.internalLookupTopicAsync)
        core.lookup(name)
        topic = TopicName.parse(name)  # core.lookup parsed it already, so this cannot fail
        owner, _ = resolve_owner(core, topic)
    if core.cluster.is_self(owner):
        return lookup_data(owner), None
    return None, (f"{owner.web_url}/lookup/v2/topic/{topic.domain}/{topic.tenant}/{topic.namespace}/"
                  f"{topic.encoded_local_name}?authoritative=true")


# --- batch: entries and refusals --------------------------------------------------------------

# Parsed names are cached, as Pulsar caches ``TopicName.get`` (a LoadingCache of TopicName): a
# follow-up batch names every partition again, and PIP-35's goal is a batch far faster than the singles.
@functools.lru_cache(maxsize=1 << 17)
def _canonical(raw: str) -> tuple[TopicName, str, bool, tuple]:
    """(TopicName, canonical full name, is a partition, group (domain, tenant, namespace)); InvalidName."""
    topic = TopicName.parse(raw)
    return topic, str(topic), topic.is_partition, (topic.domain, topic.tenant, topic.namespace)


class Entry:
    """One topic's answer in a batch: an owner (Connect when it is this broker) or an error."""

    __slots__ = ("topic", "requested", "group", "owner", "connect", "error")

    def __init__(self, topic: str, requested: str | None, group=None, error: BrokerError | None = None):
        self.topic, self.requested, self.group, self.error = topic, requested, group, error
        self.owner: BrokerInfo | None = None
        self.connect = False


@dataclass
class BatchAnswer:
    entries: list[Entry] = field(default_factory=list)
    refusal: TooManyRequests | None = None


def _too_big(count: int, limit: int, what: str) -> TooManyRequests:
    return TooManyRequests(f"Batch lookup of {count} {what} exceeds maxBatchLookupTopics={limit}; "
                           f"split it into batches of at most {limit} topics", http_status=413)


def expand(core, names: Iterable[str]) -> tuple[list[Entry], dict[tuple, TopicName]]:
    """Distinct entries in order, partitioned names expanded, invalid names as Failed entries.

    ``requested`` is kept only when the client's spelling is not the canonical name of the topic or
    of its partitioned base (docs/pip35-decisions.md C4). Returns the entries and, per group
    (domain, tenant, namespace), one TopicName of that group."""
    entries: dict[str, Entry] = {}
    groups: dict[tuple, TopicName] = {}
    for raw in names:
        if raw in entries:
            continue
        why = pulsar_refusal(raw)  # as a single LOOKUP answers it (ServerCnx#validateTopicName)
        if why is not None:
            entries[raw] = Entry(raw, None, error=InvalidTopicName(f"Invalid topic name: {why}"))
            continue
        try:
            topic, name, is_partition, group = _canonical(raw)
        except InvalidName as exc:
            entries[raw] = Entry(raw, None, error=InvalidTopicName(str(exc)))
            continue
        spelling = None if raw == name else raw
        try:
            partitions = 0 if is_partition else core._partitions_of(topic)
        except BrokerError as exc:  # per entry: a store failure answers this name only
            entries.setdefault(name, Entry(name, spelling, error=exc))
            continue
        if group not in groups:
            groups[group] = topic
        if partitions > 0:
            for index in range(partitions):
                member = f"{name}-partition-{index}"
                if member not in entries:
                    entries[member] = Entry(member, spelling, group)
        elif name not in entries:
            entries[name] = Entry(name, spelling, group)
    return list(entries.values()), groups


def resolve_batch(core, names: list[str]) -> BatchAnswer:
    """Resolve a batch on this broker (entries, refusals, the empty batch). Never raises for a topic; only a
    too-big request is refused whole."""
    limit = core.config.get("maxBatchLookupTopics")
    if len(names) > limit:
        return BatchAnswer(refusal=_too_big(len(names), limit, "names"))
    entries, groups = expand(core, names)
    if len(entries) > limit:
        return BatchAnswer(refusal=_too_big(len(entries), limit, "topics after partition expansion"))
    cluster = core.cluster
    live = cluster.live_brokers() if cluster.joined else None
    plans: dict[tuple, tuple] = {}  # group -> (refusal, lower bounds, bundles, owners by bundle index)
    rings: dict[tuple, tuple] = {}  # (tenant, namespace) -> (lower bounds, bundles, owners by bundle index)
    crc32, bisect_right = zlib.crc32, bisect.bisect_right
    last_group, plan = None, None
    for entry in entries:
        group = entry.group
        if group is None:
            continue  # already answered (invalid name or store failure)
        if group is not last_group:
            plan = plans.get(group)
            if plan is None:
                plan = plans[group] = _plan(core, cluster, group, groups[group], rings)
            last_group = group
        refusal, lowers, bundles, owners = plan
        if refusal is not None:
            entry.error = refusal
            continue
        # As ``bundles.find_bundle``: the last bundle whose lower bound <= crc32(full name); the last range is closed.
        index = bisect_right(lowers, crc32(entry.topic.encode("utf-8"))) - 1
        owner = owners[index]
        if owner is None:
            try:
                found = cluster.owner_of(bundles[index], live)
                owner = owners[index] = (found, cluster.is_self(found))
            except BrokerError as exc:  # per entry: a store failure is this bundle's topics' answer
                owner = owners[index] = exc
        if isinstance(owner, BrokerError):
            entry.error = owner
        else:
            entry.owner, entry.connect = owner
    return BatchAnswer(entries=entries)


def _plan(core, cluster, group: tuple, topic: TopicName, rings: dict) -> tuple:
    """Once per (domain, tenant, namespace): core.lookup's refusal, else the namespace's ring."""
    try:
        core.lookup(topic, check_existence=False)  # namespace and domain checks only (Pulsar's TopicLookupBase.lookupTopicAsync)
        ring = rings.get(group[1:])
        if ring is None:
            bundles = cluster.bundles_of(topic.namespace_name)
            ring = rings[group[1:]] = ([b.lower for b in bundles], bundles, [None] * len(bundles))
    except BrokerError as exc:
        return exc, None, None, None
    return (None, *ring)


def batch_response(core, request_id: int, names: list[str]):
    """The BATCH_LOOKUP_RESPONSE event for a request (the lookup permit is the caller's).

    ``requested`` is set only for a non-canonical spelling (docs/pip35-decisions.md C4)."""
    answer = resolve_batch(core, names)
    refusal = answer.refusal
    if refusal is None:
        message = pb.CommandBatchLookupTopicResponse(request_id=request_id)
        add = message.entries.add
        connect, redirect, failed = LOOKUP.Connect, LOOKUP.Redirect, LOOKUP.Failed
        for entry in answer.entries:
            topic, error = entry.topic, entry.error
            if error is None:
                owner = entry.owner
                wire = add(topic=topic, response=connect if entry.connect else redirect,
                           brokerServiceUrl=owner.broker_url, authoritative=True)
                if owner.broker_url_tls:
                    wire.brokerServiceUrlTls = owner.broker_url_tls
            else:
                wire = add(topic=topic, response=failed, error=_server_error(error.server_error),
                           message=error.binary_message)
            if entry.requested is not None:
                wire.requested = entry.requested
        limit = core.config.get("maxMessageSize")
        if message.ByteSize() <= limit:
            return ev.BatchLookupResponse(message)
        refusal = TooManyRequests(f"Batch lookup answer of {len(answer.entries)} topics is larger than "
                                  f"maxMessageSize={limit} bytes; split it into smaller batches")
    return ev.BatchLookupResponse(request_id=request_id, error=_server_error(refusal.server_error),
                                  message=refusal.binary_message)


def handle_batch_lookup(cnx, event) -> None:
    """BATCH_LOOKUP (ours, PIP-35): one permit for the request, then ``batch_response``."""
    core = cnx.core
    if not core.lookup_permits.try_acquire():
        return cnx.send(ev.BatchLookupResponse(request_id=event.request_id, error=_server_error("TooManyRequests"),
                                               message=LOOKUP_PERMITS_MESSAGE))
    try:
        response = batch_response(core, event.request_id, list(event.topics))
    finally:
        core.lookup_permits.release()
    cnx.send(response)


def rest_batch(core, names: list[str]) -> dict[str, Any]:
    """POST /lookup/v2/topics: JSON map topic -> the OWNER's LookupData, or {"error", "reason"}.

    REST has no per-entry redirect, so an entry owned elsewhere carries the owner's LookupData
    directly (what following the single lookup's 307 would end at). Refusals raise (a too-big request, no lookup permit).
    """
    with core.lookup_permits.permit():
        answer = resolve_batch(core, names)
        if answer.refusal is not None:
            raise answer.refusal
        for entry in answer.entries:
            if entry.error is None:
                # What the single REST lookup answers, so its existence check too (Pulsar's TopicLookupBase.internalLookupTopicAsync).
                try:
                    core.lookup(entry.topic)
                except BrokerError as exc:
                    entry.error = exc
    result: dict[str, Any] = {}
    for entry in answer.entries:
        if entry.error is not None:
            value = {"error": entry.error.server_error, "reason": entry.error.reason}
        else:
            value = lookup_data(entry.owner)
        if entry.requested is not None:
            value["requested"] = entry.requested
        result[entry.topic] = value
    return result
