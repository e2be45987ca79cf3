"""REST driver: Pulsar's admin v2 and lookup v2 HTTP APIs, turned into outcome values.

Paths are Pulsar's, verbatim: a Pulsar thing goes by Pulsar's own name here (Pulsar's
PersistentTopicsBase.internalGetPartitionedMetadataAsync, Pulsar's
BrokerService/AutoTopicCreationOverrideImpl, Pulsar's NamespaceService.getListOfNonPersistentTopics,
Pulsar's TopicLookupBase.internalLookupTopicAsync):
  PUT    /admin/v2/tenants/{tenant}
  PUT    /admin/v2/namespaces/{tenant}/{ns}                      DELETE the same
  POST   /admin/v2/namespaces/{tenant}/{ns}/autoTopicCreation    GET, DELETE the same
  PUT    /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions     (body: N)
  DELETE /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions
  PUT    /admin/v2/{domain}/{tenant}/{ns}/{topic}
  GET    /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions[?checkAllowAutoCreation=b]
  GET    /admin/v2/{domain}/{tenant}/{ns}                        GET .../partitioned
  GET    /lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}
  POST   /admin/v2/brokers/configuration/{key}/{value}
  GET    /admin/v2/{domain}/{tenant}/{ns}/{topic}/stats          (PIP-2, Pulsar's NamespaceService.getListOfNonPersistentTopics)
  GET    /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitioned-stats?perPartition=true
  GET    /admin/v2/{domain}/{tenant}/{ns}/{topic}/internalStats

- A 2xx answer becomes the op's success value (Partitions, TopicList, LookupAnswer, Done);
  anything else becomes ``RestError(status, reason)`` where reason is the ``{"reason": ...}`` of
  Pulsar's ErrorData body, or the raw body text when it is not that JSON (Pulsar's
  PersistentTopicsBase.internalGetPartitionedMetadataAsync; rest_http.py's ``done``).
- Redirects are answers, not hops: a 307 lookup is ``LookupAnswer("Redirect", ...)`` and a 307
  on an admin call is a RestError; the client never follows them (``follow_redirects=False``),
  so what we compare is what this broker said.
- A transport failure (refused, reset, timed out) raises ``Indefinite`` (``RestDriver.request``):
  the target did not answer, which is never a spec failure.
- Security: the admin URL may be ``https://`` (checked against the credentials' CA); with a
  token every request carries ``Authorization: Bearer <token>``, as Pulsar's admin client sends
  it. An ``ops.WithCredentials`` operation performs its inner operation with that operation's
  credentials instead (``_as_other``: no header, or a token minted for its role). A servlet
  container's HTML error page (Jetty's, for a request refused before any resource, e.g. 401
  "Authentication required") is read as its message, as the ``reason``.
- PIP-2 stats: a stats answer is read into the outcome's view (``topic_stats_view``): counters as
  numbers, each msgDropRate / msgRateOut as its sign (ZERO or POSITIVE), and the names of
  TOPIC_STATS_FIELDS / PARTITIONED_STATS_FIELDS the JSON lacks (``missing_fields``). A field of
  the wrong JSON type counts as missing. Each FIXED_STATS_FIELDS path is read as ``stats_value``
  writes it, one value for all its instances (``mixed: ...`` when they differ), and left out when
  the JSON has no instance of it (``fixed_values``: no publisher, subscription or consumer).
  Rates are read across two of the broker's stats updates (``stats_window``,
  ``merge_rate_views``), because a broker that recomputes them periodically shows an event only
  from the next update on; a broker whose runtime configuration does not show
  ``statsUpdateFrequencyInSecs`` is read once.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from typing import Optional

import httpx

from conformance import capacity, timing
from conformance.drivers.base import DEFAULT_TIMEOUT
from conformance.drivers.rest_batch import RestBatch
from conformance.drivers.cluster_relations import RestCluster
from conformance.drivers.rest_buckets import RestBuckets
from conformance.drivers.rest_http import done, error_reason, json_body, namespace_path, path_segment, topic_path
from conformance.errors import Indefinite, NoContact, ProtocolViolation, Unsupported
from conformance.security import NO_CREDENTIALS, Credentials, https_verify
from conformance.transcript import Transcript
from model import ops
from model.outcomes import (
    DETAIL_STATS_FIELDS, FALSE, FIXED_STATS_FIELDS, MISSING, PARTITIONED_STATS_FIELDS, POSITIVE, TOPIC_STATS_FIELDS,
    TRUE, ZERO, InternalStatsView, LookupAnswer, OverrideShown, PartitionedStatsView, Partitions, RestError,
    StatsDetailView, TopicList, TopicLoaded, TopicStatsView,
)

# PUT /admin/v2/tenants/{t} needs a TenantInfo body; a standalone broker's cluster is "standalone"
# unless GET /admin/v2/clusters says otherwise (a real cluster may be named differently).
DEFAULT_CLUSTER = "standalone"

_OPS = (
    ops.SetBrokerConfig, ops.CreateTenant, ops.CreateNamespace, ops.DeleteNamespace,
    ops.SetAutoTopicCreation, ops.GetAutoTopicCreation, ops.RemoveAutoTopicCreation, ops.CreatePartitionedTopic,
    ops.CreateNonPartitionedTopic, ops.DeletePartitionedTopic, ops.DeleteTopic, ops.GetPartitionedMetadata,
    ops.ListTopics, ops.ListPartitionedTopics, ops.Lookup, ops.GetTopicStats, ops.GetPartitionedStats,
    ops.GetInternalStats, ops.DeleteSubscription, ops.AwaitTopicGC,
) + RestBatch.OPS + RestBuckets.OPS + RestCluster.OPS


def _bool(value: bool) -> str:
    return "true" if value else "false"


MAX_REDIRECTS = 3  # a cluster's 307 names the owner; more than a few hops is a loop


class RestDriver:
    """Performs admin/lookup operations over HTTP; ``transport`` lets tests plug in a fake app.

    PIP-35's and PIP-157's operations are parts of their own (rest_batch.py, rest_buckets.py), each
    given this driver for its ``request`` and ``admin_url``."""

    name = "rest"
    cluster_admin_urls: Optional[list] = None  # every broker's admin URL (rest_batch.py); None = this one only

    def __init__(self, admin_url: str, *, timeout: float = DEFAULT_TIMEOUT,
                 transport: Optional[httpx.BaseTransport] = None, credentials: Credentials = NO_CREDENTIALS):
        self.admin_url = admin_url.rstrip("/")
        self.timeout = timeout
        self.credentials = credentials
        self._transport = transport
        headers = {"Authorization": f"Bearer {credentials.token.reveal()}"} if credentials.token else None
        verify = https_verify(credentials.trust_certs)
        # A new connection for every request: a kept-alive one the server is closing as idle (Jetty,
        # uvicorn) resets the next request written to it, which would be no answer where the broker
        # never saw the request; a connection that cannot be made is NoContact instead.
        self._client = httpx.Client(base_url=self.admin_url, timeout=timeout, transport=transport,
                                    follow_redirects=False, headers=headers, verify=verify,
                                    limits=httpx.Limits(max_keepalive_connections=0))
        self._cluster: Optional[str] = None
        self._stats_interval_s = _UNREAD
        self.transcript = Transcript("rest")
        batch, buckets = RestBatch(self), RestBuckets(self)
        self._parts = {ops.BatchLookup: batch.batch_lookup, ops.BatchEqualsSingles: batch.batch_equals_singles,
                       ops.SameOwnerEverywhere: batch.same_owner_everywhere,
                       **{op: buckets.perform for op in RestBuckets.OPS},
                       ops.SameMetadataEverywhere: RestCluster(self).same_metadata_everywhere}

    # -- driver protocol ---------------------------------------------------------------------

    def can_perform(self, op) -> bool:
        if isinstance(op, ops.WithCredentials):  # performed with its own credentials
            return self.can_perform(op.operation)
        if not isinstance(op, _OPS):
            return False
        api = getattr(op, "api", "rest")
        return api == "rest"

    def reset(self) -> None:
        self.transcript = Transcript("rest")

    def close(self) -> None:
        self._client.close()

    def perform(self, op):
        if not self.can_perform(op):
            raise Unsupported("no-driver", f"the REST driver cannot perform {type(op).__name__} "
                              f"with api={getattr(op, 'api', None)!r}; use the wire or client driver")
        if isinstance(op, ops.WithCredentials):
            return self._as_other(op)
        handler = self._parts.get(type(op)) or getattr(self, f"_do_{type(op).__name__}")
        return handler(op)

    def _as_other(self, op: "ops.WithCredentials"):
        """The inner operation with the operation's own credentials."""
        other = RestDriver(self.admin_url, timeout=self.timeout, transport=self._transport,
                           credentials=self.credentials.of(op.role, op.token))
        other.transcript = self.transcript
        other._cluster = self._cluster
        other.cluster_admin_urls = self.cluster_admin_urls
        self.transcript.note(f"as {op.describe()}")
        try:
            return other.perform(op.operation)
        finally:
            other.close()

    # -- plain calls used by targets too -----------------------------------------------------

    def request(self, method: str, path: str, *, body=None, params: Optional[dict] = None,
                content: Optional[str] = None, base: Optional[str] = None, redirects: int = 0) -> httpx.Response:
        """One HTTP exchange, recorded in the transcript; transport failures raise Indefinite.
        ``body`` is sent as JSON; ``content`` is JSON text sent as it is written; ``base`` asks
        another broker of the target than the admin URL; a 307 to another broker of the target is
        followed, at most MAX_REDIRECTS times."""
        kwargs = {}
        if body is not None:
            kwargs["json"] = body
        if content is not None:
            kwargs["content"] = content.encode("utf-8")
            kwargs["headers"] = {"Content-Type": "application/json"}
        url = (base.rstrip("/") if base else "") + path + ("?" + urllib.parse.urlencode(params) if params else "")
        sent = json.dumps(body) if body is not None else content
        self.transcript.sent(f"{method} {url}" + (f" {sent}" if sent is not None else ""))
        try:
            response = self._client.request(method, url, **kwargs)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            self.transcript.note(f"no connection: {exc!r}")
            raise NoContact(f"{method} {url}: no connection to {self.admin_url} ({type(exc).__name__}: {exc}); "
                            "is it running?") from exc
        except httpx.TimeoutException as exc:
            self.transcript.note(f"timed out after {self.timeout:g} s")
            raise Indefinite(f"{method} {url}: no answer within {self.timeout:g} s ({type(exc).__name__})") from exc
        except httpx.TransportError as exc:
            self.transcript.note(f"transport error {exc!r}")
            raise Indefinite(f"{method} {url}: target not reachable at {self.admin_url} ({exc!r}); "
                             "is it running?") from exc
        self.transcript.received(f"{response.status_code} {response.text[:2000]}")
        owner = self._broker_of(response.headers.get("location", ""), base or self.admin_url) \
            if response.status_code == 307 else None
        if owner is not None and redirects < MAX_REDIRECTS:
            # Pulsar's admin client follows a 307 to the broker that owns the topic; so does this one,
            # to the target's other brokers only (a cluster): on one broker there is none to follow
            self.transcript.note(f"redirected to {owner}: asking there")
            location = urllib.parse.urlsplit(response.headers["location"])
            return self.request(method, location._replace(scheme="", netloc="").geturl(), body=body,
                                content=content, base=owner, redirects=redirects + 1)
        return response

    def broker_version(self) -> str:
        """GET /admin/v2/brokers/version; the body is the version text (maybe JSON-quoted)."""
        response = self.request("GET", "/admin/v2/brokers/version")
        if response.status_code != 200:
            raise Indefinite(f"GET /admin/v2/brokers/version answered {response.status_code}: {error_reason(response)}")
        text = response.text.strip()
        try:
            value = json.loads(text)
            return value if isinstance(value, str) else text
        except ValueError:
            return text

    def cluster(self) -> str:
        """The cluster name for new tenants: the first of GET /admin/v2/clusters, else standalone."""
        if self._cluster is None:
            self._cluster = DEFAULT_CLUSTER
            try:
                response = self.request("GET", "/admin/v2/clusters")
                clusters = response.json() if response.status_code == 200 else None
                if isinstance(clusters, list) and clusters and isinstance(clusters[0], str):
                    self._cluster = clusters[0]
            except (Indefinite, ValueError):
                pass  # the PUT itself will then say what is wrong
        return self._cluster

    # -- answers -----------------------------------------------------------------------------

    _done = staticmethod(done)
    _json = staticmethod(json_body)

    def _topic_list(self, response: httpx.Response, what: str):
        if not 200 <= response.status_code < 300:
            return RestError(response.status_code, error_reason(response))
        body = self._json(response, what)
        if not isinstance(body, list) or not all(isinstance(t, str) for t in body):
            raise ProtocolViolation(f"{what}: expected a JSON list of topic names, got {body!r}")
        return TopicList(frozenset(body))

    # -- one handler per operation -----------------------------------------------------------

    def _do_SetBrokerConfig(self, op: ops.SetBrokerConfig):
        key, value = path_segment(op.key), path_segment(op.value)
        return self._done(self.request("POST", f"/admin/v2/brokers/configuration/{key}/{value}"))

    def _do_CreateTenant(self, op: ops.CreateTenant):
        body = {"adminRoles": list(op.admin_roles), "allowedClusters": [self.cluster()]}
        return self._done(self.request("PUT", f"/admin/v2/tenants/{path_segment(op.tenant)}", body=body))

    def _do_CreateNamespace(self, op: ops.CreateNamespace):
        body = dict(op.policies) if op.policies else None
        return self._done(self.request("PUT", f"/admin/v2/namespaces/{namespace_path(op.namespace)}", body=body))

    def _do_DeleteNamespace(self, op: ops.DeleteNamespace):
        return self._done(self.request("DELETE", f"/admin/v2/namespaces/{namespace_path(op.namespace)}"))

    def _do_SetAutoTopicCreation(self, op: ops.SetAutoTopicCreation):
        path = f"/admin/v2/namespaces/{namespace_path(op.namespace)}/autoTopicCreation"
        if op.body is not None:
            return self._done(self.request("POST", path, content=op.body))
        body = {"allowAutoTopicCreation": op.allow_auto_topic_creation, "topicType": op.topic_type,
                "defaultNumPartitions": op.default_num_partitions}
        return self._done(self.request("POST", path, body=body))

    def _do_GetAutoTopicCreation(self, op: ops.GetAutoTopicCreation):
        # No override set: Pulsar resumes with null, an empty 200; an empty 204 means the same.
        response = self.request("GET", f"/admin/v2/namespaces/{namespace_path(op.namespace)}/autoTopicCreation")
        if not 200 <= response.status_code < 300:
            return RestError(response.status_code, error_reason(response))
        if not response.content.strip():
            return OverrideShown.of(None)
        body = self._json(response, "getAutoTopicCreation")
        if not isinstance(body, dict):
            raise ProtocolViolation(f"getAutoTopicCreation: expected a JSON object or no body, got {body!r}")
        return OverrideShown.of(body)

    def _do_RemoveAutoTopicCreation(self, op: ops.RemoveAutoTopicCreation):
        path = f"/admin/v2/namespaces/{namespace_path(op.namespace)}/autoTopicCreation"
        return self._done(self.request("DELETE", path))

    def _do_CreatePartitionedTopic(self, op: ops.CreatePartitionedTopic):
        path = f"/admin/v2/{topic_path(op.topic)}/partitions"
        return self._done(self.request("PUT", path, body=op.partitions))

    def _do_CreateNonPartitionedTopic(self, op: ops.CreateNonPartitionedTopic):
        return self._done(self.request("PUT", f"/admin/v2/{topic_path(op.topic)}"))

    def _do_DeletePartitionedTopic(self, op: ops.DeletePartitionedTopic):
        return self._done(self.request("DELETE", f"/admin/v2/{topic_path(op.topic)}/partitions"))

    def _do_DeleteTopic(self, op: ops.DeleteTopic):
        return self._done(self.request("DELETE", f"/admin/v2/{topic_path(op.topic)}"))

    def _do_GetPartitionedMetadata(self, op: ops.GetPartitionedMetadata):
        # Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync: checkAllowAutoCreation is a query boolean, default false; None = omit it.
        params = None if op.auto_create is None else {"checkAllowAutoCreation": _bool(op.auto_create)}
        response = self.request("GET", f"/admin/v2/{topic_path(op.topic)}/partitions", params=params)
        if not 200 <= response.status_code < 300:
            return RestError(response.status_code, error_reason(response))
        body = self._json(response, "getPartitionedMetadata")
        if not isinstance(body, dict) or not isinstance(body.get("partitions"), int):
            raise ProtocolViolation(f"getPartitionedMetadata: expected {{\"partitions\": N}}, got {body!r}")
        return Partitions(body["partitions"])

    def _do_ListTopics(self, op: ops.ListTopics):
        path = f"/admin/v2/{op.domain}/{namespace_path(op.namespace)}"
        return self._topic_list(self.request("GET", path), "getList")

    def _do_ListPartitionedTopics(self, op: ops.ListPartitionedTopics):
        path = f"/admin/v2/{op.domain}/{namespace_path(op.namespace)}/partitioned"
        return self._topic_list(self.request("GET", path), "getPartitionedTopicList")

    def _do_Lookup(self, op: ops.Lookup):
        """Where a client's lookup arrives: a 307 to another broker of the target (a cluster's owner)
        is followed (``request``), as Pulsar's admin and HTTP clients follow it."""
        response = self.request("GET", f"/lookup/v2/topic/{topic_path(op.topic)}")
        if response.status_code == 200:
            # The owner answers for itself (outcomes.py: URLs are normalised away); the REST lookup of
            # the owner is authoritative by construction.
            return LookupAnswer("Connect", True)
        if response.status_code == 307:
            location = response.headers.get("location", "")
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)
            return LookupAnswer("Redirect", query.get("authoritative", ["false"])[0] == "true")
        return RestError(response.status_code, error_reason(response))

    def _broker_of(self, location: str, asked: str) -> Optional[str]:
        """The admin URL of the target's broker ``location`` points at, when it is another one than the
        broker ``asked``: Apache Pulsar's cluster may send a request on to its leader, which sends it
        back, authoritative, to the broker that was first asked (PulsarWebResource
        #validateNamespaceBundleOwnership: "If authoritative is false and this broker is not leader,
        forward to leader")."""
        parts = urllib.parse.urlsplit(location)
        if not parts.netloc:
            return None
        base = f"{parts.scheme}://{parts.netloc}"
        brokers = [url.rstrip("/") for url in (self.cluster_admin_urls or [])]
        return base if base in brokers and base != asked.rstrip("/") else None

    # -- PIP-2 stats: read into the outcome's view ---------------------------------------------

    def _stats_json(self, path: str, what: str, params: Optional[dict] = None):
        response = self.request("GET", path, params=params)
        if not 200 <= response.status_code < 300:
            return RestError(response.status_code, error_reason(response))
        body = self._json(response, what)
        if not isinstance(body, dict):
            raise ProtocolViolation(f"{what}: expected a JSON object, got {body!r}")
        return body

    def _do_GetTopicStats(self, op: ops.GetTopicStats):
        """The topic's stats as the model views them, its rates read across the broker's stats
        updates (``stats_window``)."""
        path = f"/admin/v2/{topic_path(op.topic)}/stats"
        read, merge = ((stats_detail_view, merge_detail_views) if getattr(op, "detail", False)
                       else (topic_stats_view, merge_rate_views))
        body = self._stats_json(path, "getStats")
        if isinstance(body, RestError):
            return body
        views = [read(body)]
        window = stats_window(self._stats_interval())
        deadline = time.monotonic() + window
        while time.monotonic() < deadline:
            # The case keeps its units here: a read delayed past the window would miss the rates.
            time.sleep(min(STATS_POLL_S, max(0.0, deadline - time.monotonic())))
            body = self._stats_json(path, "getStats")
            if isinstance(body, RestError):
                return body
            views.append(read(body))
        return merge(views)

    def _do_DeleteSubscription(self, op: ops.DeleteSubscription):
        path = f"/admin/v2/{topic_path(op.topic)}/subscription/{path_segment(op.subscription)}"
        return self._done(self.request("DELETE", path))

    def _do_AwaitTopicGC(self, op: ops.AwaitTopicGC):
        """Reads the topic's stats until they answer 404 (the broker's check for inactive topics
        unloaded it) or ``op.seconds`` have passed; any other error is the answer."""
        path = f"/admin/v2/{topic_path(op.topic)}/stats"
        deadline = time.monotonic() + op.seconds
        while True:
            response = self.request("GET", path)
            if response.status_code == 404:
                return TopicLoaded(False)
            if not 200 <= response.status_code < 300:
                return RestError(response.status_code, error_reason(response))
            left = deadline - time.monotonic()
            if left <= 0:
                return TopicLoaded(True)
            with capacity.machine().waiting():
                time.sleep(min(GC_POLL_S, left))
            timing.spent(timing.QUIET, min(GC_POLL_S, left), "rest")

    def _stats_interval(self) -> Optional[float]:
        """``statsUpdateFrequencyInSecs`` from the runtime configuration, once per driver; None
        when the broker does not show it (its rates are then taken as current at any read)."""
        if self._stats_interval_s is _UNREAD:
            interval = None
            try:
                response = self.request("GET", "/admin/v2/brokers/configuration/runtime")
                runtime = response.json() if response.status_code == 200 else None
                value = runtime.get("statsUpdateFrequencyInSecs") if isinstance(runtime, dict) else None
                interval = float(value) if value is not None else None
            except (ValueError, TypeError):
                interval = None
            self._stats_interval_s = interval
        if self._stats_interval_s is not None and self._stats_interval_s > STATS_INTERVAL_MAX_S:
            raise Indefinite(f"the target recomputes topic rates every {self._stats_interval_s:g} s "
                             f"(statsUpdateFrequencyInSecs), longer than the {STATS_INTERVAL_MAX_S:g} s the harness "
                             f"waits for them; run it with statsUpdateFrequencyInSecs=1")
        return self._stats_interval_s

    def _do_GetPartitionedStats(self, op: ops.GetPartitionedStats):
        body = self._stats_json(f"/admin/v2/{topic_path(op.topic)}/partitioned-stats", "getPartitionedStats",
                                params={"perPartition": "true"})
        if isinstance(body, RestError):
            return body
        metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        return PartitionedStatsView(
            missing=missing_fields(body, PARTITIONED_STATS_FIELDS), partitions=_int(metadata.get("partitions")),
            msg_in_counter=_int(body.get("msgInCounter")), msg_out_counter=_int(body.get("msgOutCounter")))

    def _do_GetInternalStats(self, op: ops.GetInternalStats):
        body = self._stats_json(f"/admin/v2/{topic_path(op.topic)}/internalStats", "getInternalStats")
        if isinstance(body, RestError):
            return body
        cursors = body.get("cursors") if isinstance(body.get("cursors"), dict) else {}
        return InternalStatsView(_int(body.get("entriesAddedCounter")), tuple(sorted(cursors)))


# Apache Pulsar recomputes a topic's rates every statsUpdateFrequencyInSecs over the interval just
# ended (BrokerService#updateRates), so a rate shows an event only from the first update after it,
# and only until the next one. A rate row is read across two whole intervals: a rate counts as
# positive when any read in that window shows it positive; counters are taken from the last read.
STATS_POLL_S = 0.2
GC_POLL_S = 0.2  # AwaitTopicGC: how often the stats are read while the broker may unload the topic
STATS_INTERVAL_MAX_S = 5.0
_UNREAD = object()


def stats_window(interval: Optional[float]) -> float:
    """How long to keep reading a topic's stats after the first read."""
    return 0.0 if interval is None or interval <= 0 else 2 * interval + 0.5


def topic_stats_view(body: dict) -> TopicStatsView:
    publishers = body.get("publishers") if isinstance(body.get("publishers"), list) else []
    subscriptions = body.get("subscriptions") if isinstance(body.get("subscriptions"), dict) else {}
    return TopicStatsView(
        missing=missing_fields(body, TOPIC_STATS_FIELDS),
        msg_in_counter=_int(body.get("msgInCounter")),
        msg_out_counter=_int(body.get("msgOutCounter")),
        msg_rate_out=sign(body.get("msgRateOut")),
        publishers=tuple(sorted(sign(p.get("msgDropRate")) for p in publishers if isinstance(p, dict))),
        subscriptions=tuple(
            (name, sign(sub.get("msgDropRate")), _int(sub.get("msgOutCounter")), _text(sub.get("type")),
             _unacked(sub.get("consumers")))
            for name, sub in sorted(subscriptions.items()) if isinstance(sub, dict)),
        fixed=fixed_values(body))


def stats_detail_view(body: dict) -> StatsDetailView:
    """GET .../stats as the "detail" view: byte counters, and each subscription's and consumer's
    rates (signs), counted consumers and bytes out."""
    subscriptions = body.get("subscriptions") if isinstance(body.get("subscriptions"), dict) else {}
    read = []
    for name, sub in sorted(subscriptions.items()):
        if not isinstance(sub, dict):
            continue
        consumers = [c for c in (sub.get("consumers") if isinstance(sub.get("consumers"), list) else [])
                     if isinstance(c, dict)]
        read.append((name, len(consumers), sign(sub.get("msgRateOut")), sign(sub.get("msgThroughputOut")),
                     sign(sub.get("bytesOutCounter")),
                     tuple(sorted((sign(c.get("msgRateOut")), sign(c.get("msgThroughputOut"))) for c in consumers))))
    missing = tuple(path for path in DETAIL_STATS_FIELDS
                    if any(not isinstance(obj, dict) or not _typed(obj, path.rpartition(".")[2])
                           for obj in _instances(body, path)))
    return StatsDetailView(missing, sign(body.get("bytesInCounter")), sign(body.get("bytesOutCounter")), tuple(read))


def merge_detail_views(views: list[StatsDetailView]) -> StatsDetailView:
    """As merge_rate_views: a rate positive at any read of the window is positive; the counters, the
    names and the counts of consumers as the last read shows them. Reads whose subscriptions or
    consumers differ in number from the last are left out."""
    last = views[-1]

    def shape(view):
        return [(s[0], s[1], len(s[5])) for s in view.subscriptions]

    comparable = [view for view in views if shape(view) == shape(last)]

    def most(signs):
        return POSITIVE if POSITIVE in signs else signs[-1]

    subscriptions = []
    for i, (name, count, _rate, _throughput, out, consumers) in enumerate(last.subscriptions):
        rate = most([view.subscriptions[i][2] for view in comparable])
        throughput = most([view.subscriptions[i][3] for view in comparable])
        merged = tuple(sorted(
            (most([view.subscriptions[i][5][k][0] for view in comparable]),
             most([view.subscriptions[i][5][k][1] for view in comparable])) for k in range(len(consumers))))
        subscriptions.append((name, count, rate, throughput, out, merged))
    return StatsDetailView(last.missing, last.bytes_in_counter, last.bytes_out_counter, tuple(subscriptions))


def fixed_values(body: dict) -> tuple[tuple[str, str], ...]:
    """(path, value) for each FIXED_STATS_FIELDS path with an instance in ``body``."""
    read = []
    for path in FIXED_STATS_FIELDS:
        values = sorted({stats_value(obj, path.rpartition(".")[2]) for obj in _instances(body, path)})
        if values:
            read.append((path, values[0] if len(values) == 1 else "mixed: " + " | ".join(values)))
    return tuple(read)


def _instances(body: dict, path: str) -> list:
    """The JSON objects that hold ``path``'s last name: the body, or every item of its containers."""
    objects = [body]
    for step in path.split(".")[:-1]:
        found = []
        for obj in objects:
            if step == "*":
                found.extend(obj.values() if isinstance(obj, dict) else [])
                continue
            items = obj.get(step.removesuffix("[]")) if isinstance(obj, dict) else None
            if step.endswith("[]"):
                found.extend(items if isinstance(items, list) else [])
            else:
                found.append(items)
        objects = found
    return objects


def stats_value(obj, name: str) -> str:
    """A stats field as a view holds it: a number as its sign, a boolean as TRUE or FALSE."""
    if not isinstance(obj, dict):
        return f"not an object: {obj!r}"
    if name not in obj:
        return MISSING
    value = obj[name]
    if isinstance(value, bool):
        return TRUE if value else FALSE
    return sign(value)


def merge_rate_views(views: list[TopicStatsView]) -> TopicStatsView:
    """One view of reads across the window: each rate positive if any read showed it positive,
    everything else as the last read shows it. Reads whose publishers or subscriptions differ
    in number are not merged: the last one is the answer. A fixed value counts as a rate: a
    positive one at any read is what the view shows."""
    last = views[-1]

    def most(signs):
        return POSITIVE if POSITIVE in signs else signs[-1]

    comparable = [view for view in views if len(view.publishers) == len(last.publishers)
                  and [s[0] for s in view.subscriptions] == [s[0] for s in last.subscriptions]
                  and [f[0] for f in view.fixed] == [f[0] for f in last.fixed]]
    return TopicStatsView(
        missing=last.missing, msg_in_counter=last.msg_in_counter, msg_out_counter=last.msg_out_counter,
        msg_rate_out=most([view.msg_rate_out for view in comparable]),
        publishers=tuple(sorted(most([view.publishers[i] for view in comparable])
                                for i in range(len(last.publishers)))),
        subscriptions=tuple((name, most([view.subscriptions[i][1] for view in comparable]), *rest)
                            for i, (name, _sign, *rest) in enumerate(last.subscriptions)),
        fixed=tuple((path, most([view.fixed[i][1] for view in comparable])) for i, (path, _) in enumerate(last.fixed)))


def sign(value) -> str:
    """A rate as the spec reads it: POSITIVE, ZERO, or a description of what was there instead."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"not a number: {value!r}"
    return POSITIVE if value > 0 else ZERO if value == 0 else f"negative: {value!r}"


def _int(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _text(value) -> str:
    return value if isinstance(value, str) else f"not a string: {value!r}"


def _unacked(consumers) -> int:
    """The sum of the consumers' unackedMessages; -1 when one of them has no such number."""
    counts = [_int(c.get("unackedMessages")) if isinstance(c, dict) else -1
              for c in (consumers if isinstance(consumers, list) else [])]
    return -1 if -1 in counts else sum(counts)


_JSON_TYPES = {"publishers": list, "subscriptions": dict, "replication": dict, "consumers": list,
               "metadata": dict, "partitions": dict, "type": str, "producerName": str}


def missing_fields(body: dict, paths) -> tuple[str, ...]:
    """Which of ``paths`` ("x", "publishers[].x", "subscriptions.*.x") the JSON lacks; a field of
    the wrong JSON type counts as missing."""
    missing = []
    for path in paths:
        if "[]." in path or ".*." in path:
            container, _, name = path.replace("[].", ".*.").partition(".*.")
            items = body.get(container)
            items = items if isinstance(items, list) else list(items.values()) if isinstance(items, dict) else []
            if any(not isinstance(item, dict) or not _typed(item, name) for item in items):
                missing.append(path)
        elif not _typed(body, path):
            missing.append(path)
    return tuple(missing)


def _typed(obj: dict, name: str) -> bool:
    if name not in obj:
        return False
    kind = _JSON_TYPES.get(name)
    value = obj[name]
    if kind is not None:
        return isinstance(value, kind)
    return isinstance(value, (int, float)) and not isinstance(value, bool)
