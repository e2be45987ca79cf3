"""Cluster membership and bundle ownership: which broker of a reference cluster serves a topic.

What this module owns: ``ClusterNode`` (one per ``BrokerCore``: registers the broker in the shared
metadata store, answers "who owns this bundle?", releases its bundles on stop), ``ClusterView``
(the live brokers as seen by this process, shared by every in-process broker on one store) and
``SharedStore`` (one store used by N in-process brokers, closed once by its owner).
Everything here is TENTATIVE design for the PIP-35 issue (docs/pip35-decisions.md, part B).

- registration (``ClusterNode.join``, at ``layout.broker_registration_path``): a started broker
  writes ``/loadbalance/brokers/{host:webPort}`` with its URLs (LocalBrokerData's names
  ``pulsarServiceUrl``, ``webServiceUrl``) and a random ``session``. On ZooKeeper the node is
  EPHEMERAL (gone when the process's session ends); a memory store dies with its process; on
  sqlite, shared by separate processes, the broker re-writes ``heartbeat`` every fifth of
  ``metadataStoreSessionTimeoutMillis`` (Pulsar's key, default 30 s) and a registration older
  than that timeout counts as dead (``ClusterView.live``), like an expired ZooKeeper session. A
  broker that stops deletes its registration (explicit unregister).
- ownership (``ClusterNode.owner_of``): a bundle's owner is the broker named in its ownership
  node ``/namespace/{t}/{ns}/{range}`` (NamespaceEphemeralData's names ``nativeUrl``,
  ``httpUrl``) as long as that broker is live with the same session. Otherwise the broker that
  needs the answer assigns it (``ClusterNode._choose``): the live broker owning the fewest
  bundles of that namespace, ties broken by rendezvous hashing of (bundle, broker id); written
  with compare-and-set so concurrent brokers (or processes) agree, re-read on a lost race.
- sticky: an assignment changes only when its owner is no longer live. A broker joining later
  takes no bundle from a live owner: topics' data lives in the owner's memory, and moving a live
  bundle would split it (Pulsar moves bundles only by unloading them).
- release on stop (``ClusterNode.leave``): a broker stopping releases (deletes) the ownership
  nodes of its session, so its bundles move to the live brokers at the next lookup, without
  waiting for liveness to expire.
- a cluster of one: a broker that has not joined (a ``BrokerCore`` used without a server, as in
  unit tests) owns every bundle and answers with its own URLs.
- store failures: every store failure becomes ``MetadataStoreError`` for the topic(s) being
  resolved; the caller turns it into a per-topic answer and the broker keeps serving.
- a new ZooKeeper session (``ClusterNode._register_again``): on ZooKeeper, an expired session
  deletes the registration while the process lives on; the other brokers then see this one dead
  and take its bundles. When the store reports a new session
  (``ZooKeeperMetadataStore.on_new_session``) the broker registers again, with the same session
  id (so ownership nodes still naming it are valid again), and forgets the owners it had cached,
  so each bundle is read again from the store: a bundle another broker took meanwhile is
  answered as that broker's (Redirect), never served by both, and the server closes its producers
  and consumers on that bundle's topics (CLOSE_PRODUCER / CLOSE_CONSUMER, as Pulsar does when it
  unloads a bundle) so their clients look up again.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import time
import urllib.parse
import uuid
import weakref
from dataclasses import dataclass
from typing import Any, Mapping

from pulsar_naming.names import NamespaceName, TopicName
from reference_broker.bundles import Bundle, find_bundle, namespace_bundles
from reference_broker.errors import MetadataStoreError, ServiceNotReady
from reference_broker.metadata import layout
from reference_broker.metadata.memory import MemoryMetadataStore
from reference_broker.metadata.store import BadVersion, MetadataStore, NodeExists, NoNode

log = logging.getLogger("reference_broker.cluster")

VIEW_CACHE_SECONDS = 1.0  # how long one process trusts its read of /loadbalance/brokers
_ASSIGN_ATTEMPTS = 8


@dataclass(frozen=True)
class BrokerInfo:
    """A registered broker: its id (``host:webPort``, as Pulsar names /loadbalance/brokers children)."""

    broker_id: str
    session: str
    broker_url: str
    web_url: str
    broker_url_tls: str | None = None
    web_url_tls: str | None = None

    def registration(self, heartbeat: float, ephemeral: bool) -> dict[str, Any]:
        return {"pulsarServiceUrl": self.broker_url, "pulsarServiceUrlTls": self.broker_url_tls,
                "webServiceUrl": self.web_url, "webServiceUrlTls": self.web_url_tls,
                "session": self.session, "heartbeat": heartbeat, "ephemeral": ephemeral}

    def ownership(self) -> dict[str, Any]:
        return {"nativeUrl": self.broker_url, "nativeUrlTls": self.broker_url_tls,
                "httpUrl": self.web_url, "httpUrlTls": self.web_url_tls, "disabled": False,
                "brokerId": self.broker_id, "session": self.session}

    @classmethod
    def from_registration(cls, broker_id: str, data: Mapping[str, Any]) -> "BrokerInfo":
        return cls(broker_id, str(data.get("session", "")), str(data.get("pulsarServiceUrl", "")),
                   str(data.get("webServiceUrl", "")), data.get("pulsarServiceUrlTls"), data.get("webServiceUrlTls"))

    @classmethod
    def from_ownership(cls, data: Mapping[str, Any]) -> "BrokerInfo":
        return cls(str(data.get("brokerId", "")), str(data.get("session", "")), str(data.get("nativeUrl", "")),
                   str(data.get("httpUrl", "")), data.get("nativeUrlTls"), data.get("httpUrlTls"))


def broker_id_for(web_url: str) -> str:
    """``http://127.0.0.1:8080`` -> ``127.0.0.1:8080`` (Pulsar's lookupServiceAddress form)."""
    parts = urllib.parse.urlsplit(web_url)
    return parts.netloc or web_url


def rendezvous_score(bundle: Bundle, broker_id: str) -> int:
    """Highest-random-weight hashing: stable per (bundle, broker), independent of the other brokers."""
    return int.from_bytes(hashlib.sha1(f"{bundle}|{broker_id}".encode("utf-8")).digest()[:8], "big")


# --- one store, several in-process brokers -------------------------------------------------------


class SharedStore(MetadataStore):
    """A store shared by the brokers of ``reference-broker --brokers N``: ``close`` does nothing,
    the CLI closes the real store once, after every broker has stopped."""

    def __init__(self, inner: MetadataStore) -> None:
        self.inner = inner

    def get(self, path):
        return self.inner.get(path)

    def create(self, path, value=b""):
        return self.inner.create(path, value)

    def put(self, path, value, *, expected_version=None):
        return self.inner.put(path, value, expected_version=expected_version)

    def delete(self, path, *, expected_version=None):
        return self.inner.delete(path, expected_version=expected_version)

    def children(self, path):
        return self.inner.children(path)

    def delete_recursive(self, path):
        return self.inner.delete_recursive(path)

    def close(self) -> None:
        pass

    def __getattr__(self, name):  # create_ephemeral, create_many, ...
        return getattr(self.__dict__["inner"], name)


def base_store(store: MetadataStore) -> MetadataStore:
    while isinstance(store, SharedStore):
        store = store.inner
    return store


class ClusterView:
    """The live brokers over one store, as this process sees them (a registration within its
    session or heartbeat timeout), cached briefly."""

    def __init__(self, store: MetadataStore) -> None:
        self.store = store
        self._live: dict[str, BrokerInfo] | None = None
        self._read_at = 0.0

    def invalidate(self) -> None:
        self._live = None

    def live(self, session_timeout: float) -> dict[str, BrokerInfo]:
        now = time.monotonic()
        if self._live is not None and now - self._read_at < VIEW_CACHE_SECONDS:
            return self._live
        live: dict[str, BrokerInfo] = {}
        wall = time.time()
        for broker_id in self.store.children(layout.LOADBALANCE_BROKERS_ROOT):
            found = self.store.get(layout.broker_registration_path(broker_id))
            if found is None:
                continue
            try:
                data = layout.decode_json(found[0])
            except ValueError:
                continue
            if not isinstance(data, dict) or not data.get("session"):
                continue
            if data.get("ephemeral") or wall - float(data.get("heartbeat") or 0) <= session_timeout:
                live[broker_id] = BrokerInfo.from_registration(broker_id, data)
        self._live, self._read_at = live, now
        return live


_VIEWS: "weakref.WeakKeyDictionary[MetadataStore, ClusterView]" = weakref.WeakKeyDictionary()


def view_for(store: MetadataStore) -> ClusterView:
    store = base_store(store)
    view = _VIEWS.get(store)
    if view is None:
        view = _VIEWS[store] = ClusterView(store)
    return view


# --- one broker's part -------------------------------------------------------------------------


# The brokers of this process by (id, session): a cluster of several brokers in one process asks its
# siblings directly what it would ask another process over HTTP (``ClusterNode.owner_has_loaded``).
_IN_PROCESS: "weakref.WeakValueDictionary[tuple[str, str], ClusterNode]" = weakref.WeakValueDictionary()
PEER_TIMEOUT_S = 5.0


class ClusterNode:
    """One broker's membership; ``core.cluster``. See the module docstring."""

    def __init__(self, core) -> None:
        self.core = core
        self.info: BrokerInfo | None = None
        self.view = view_for(core.store)
        self._owners: dict[str, BrokerInfo] = {}  # bundle name -> owner, trusted while that owner is live
        self._ephemeral = False
        self._heartbeat: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # Called after registering again (``_register_again``), on the broker's thread: the server closes the
        # producers and consumers of topics whose bundle another broker took meanwhile.
        self.after_new_session: list = []
        base = base_store(core.store)
        if hasattr(base, "on_new_session"):
            base.on_new_session(self._session_renewed)  # register again after an expired session

    # -- membership: registration and release on stop ---------------------------------------------

    @property
    def joined(self) -> bool:
        return self.info is not None

    def self_info(self) -> BrokerInfo:
        if self.info is not None:
            return self.info
        return BrokerInfo(broker_id_for(self.core.web_service_url), "", self.core.broker_service_url,
                          self.core.web_service_url, self.core.broker_service_url_tls, self.core.web_service_url_tls)

    def join(self) -> None:
        """Register this broker with the URLs the core advertises; idempotent for the same URLs."""
        broker_url, web_url = self.core.broker_service_url, self.core.web_service_url
        if self.info is not None:
            if (self.info.broker_url, self.info.web_url) == (broker_url, web_url):
                return
            self.leave()
        info = BrokerInfo(broker_id_for(web_url), uuid.uuid4().hex, broker_url, web_url,
                          self.core.broker_service_url_tls, self.core.web_service_url_tls)
        base = base_store(self.core.store)
        self._ephemeral = hasattr(base, "create_ephemeral") or isinstance(base, MemoryMetadataStore)
        path = self._write_registration(info)
        self.info = info
        _IN_PROCESS[(info.broker_id, info.session)] = self
        self._owners.clear()
        self.view.invalidate()
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None  # a core used synchronously: no heartbeat, liveness by the last write
        self._heartbeat = (self._loop.create_task(self._beat(path))
                           if self._loop is not None and not self._ephemeral else None)
        log.info("broker %s joined the cluster (session %s)", info.broker_id, info.session)

    def _write_registration(self, info: BrokerInfo) -> str:
        store = self.core.store
        path = layout.broker_registration_path(info.broker_id)
        value = layout.encode_json(info.registration(time.time(), self._ephemeral))
        if hasattr(base_store(store), "create_ephemeral"):
            try:  # a node of an earlier session would vanish with that session: replace it now
                store.delete(path)
            except NoNode:
                pass
            store.create_ephemeral(path, value)
        else:
            store.put(path, value)
        return path

    def _session_renewed(self) -> None:
        """A new ZooKeeper session, called on the store's thread: register again on the broker's own thread."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._register_again)
        else:
            threading.Thread(target=self._register_again, name="cluster-reregister", daemon=True).start()

    def _register_again(self) -> None:
        info = self.info
        if info is None:
            return  # left the cluster meanwhile
        try:
            self._write_registration(info)
        except (MetadataStoreError, NodeExists) as exc:
            log.warning("broker %s could not register again after a new session: %s", info.broker_id, exc)
            return
        finally:
            self._owners.clear()
            self.view.invalidate()
        log.warning("broker %s registered again after its metadata session expired", info.broker_id)
        for listener in list(self.after_new_session):
            try:
                listener()
            except Exception:  # noqa: BLE001 - the registration stands whatever a listener does
                log.exception("after-new-session listener failed")

    @property
    def session_timeout(self) -> float:
        return self.core.config.get("metadataStoreSessionTimeoutMillis") / 1000.0

    async def _beat(self, path: str) -> None:
        while True:
            await asyncio.sleep(self.session_timeout / 5)
            info = self.info
            if info is None:
                return
            try:
                self.core.store.put(path, layout.encode_json(info.registration(time.time(), False)))
            except MetadataStoreError as exc:
                log.warning("heartbeat of %s failed: %s", info.broker_id, exc)

    def leave(self) -> None:
        """Release this broker's bundles and unregister it; safe to call twice."""
        info = self.info
        if info is None:
            return
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            self._heartbeat = None
        store = self.core.store
        try:
            for path in self._ownership_paths():
                found = store.get(path)
                if found is None:
                    continue
                owner = _decode_owner(found[0])
                if owner is not None and owner.session == info.session:
                    try:
                        store.delete(path, expected_version=found[1])
                    except (NoNode, BadVersion):
                        pass
            path = layout.broker_registration_path(info.broker_id)
            found = store.get(path)
            if found is not None and _session_of(found[0]) == info.session:
                store.delete(path)
        except MetadataStoreError as exc:  # a store that is already gone: its nodes went with it
            log.warning("broker %s could not unregister cleanly: %s", info.broker_id, exc)
        self.info = None
        _IN_PROCESS.pop((info.broker_id, info.session), None)
        self._owners.clear()
        self.view.invalidate()
        log.info("broker %s left the cluster", info.broker_id)

    def _ownership_paths(self) -> list[str]:
        store, root = self.core.store, layout.OWNER_INFO_ROOT
        return [f"{root}/{tenant}/{ns}/{name}"
                for tenant in store.children(root)
                for ns in store.children(f"{root}/{tenant}")
                for name in store.children(f"{root}/{tenant}/{ns}")]

    def live_brokers(self) -> dict[str, BrokerInfo]:
        """Live brokers by id; this broker is always live to itself."""
        live = dict(self.view.live(self.session_timeout))
        if self.info is not None:
            live[self.info.broker_id] = self.info
        return live

    # -- bundles and owners: ownership, sticky, a cluster of one ------------------------------------

    def bundles_of(self, namespace: NamespaceName, policies: Mapping[str, Any] | None = None) -> list[Bundle]:
        if policies is None:
            policies = self.core._policies_or_none(namespace)
        return namespace_bundles(namespace, self.core.config.get("defaultNumberOfNamespaceBundles"), policies)

    def bundle_of(self, topic: TopicName) -> Bundle:
        return find_bundle(self.bundles_of(topic.namespace_name), topic)

    def is_self(self, owner: BrokerInfo) -> bool:
        mine = self.self_info()
        return owner.broker_id == mine.broker_id and owner.session == mine.session

    def owner_of(self, bundle: Bundle, live: Mapping[str, BrokerInfo] | None = None) -> BrokerInfo:
        """The live owner of ``bundle``, assigning one when it has none; MetadataStoreError on store trouble."""
        if self.info is None:
            return self.self_info()  # not joined: a cluster of one
        live = self.live_brokers() if live is None else live
        key = str(bundle)
        cached = self._owners.get(key)
        if cached is not None and _alive(cached, live):
            return cached
        owner = self._resolve(bundle, live)
        self._owners[key] = owner
        return owner

    def _resolve(self, bundle: Bundle, live: Mapping[str, BrokerInfo]) -> BrokerInfo:
        store = self.core.store
        path = layout.bundle_ownership_path(bundle.namespace, bundle.range_name)
        for _ in range(_ASSIGN_ATTEMPTS):
            found = store.get(path)
            if found is not None:
                owner = _decode_owner(found[0])
                if owner is not None and _alive(owner, live):
                    return live[owner.broker_id]
            candidate = self._choose(bundle, live)
            value = layout.encode_json(candidate.ownership())
            try:
                if found is None:
                    store.create(path, value)
                else:
                    store.put(path, value, expected_version=found[1])
            except (NodeExists, BadVersion):
                continue  # another broker assigned it first: read its answer
            log.info("bundle %s assigned to %s", bundle, candidate.broker_id)
            return candidate
        raise MetadataStoreError(f"Ownership of bundle {bundle} kept changing; retry the lookup")

    def _choose(self, bundle: Bundle, live: Mapping[str, BrokerInfo]) -> BrokerInfo:
        """Fewest bundles of this namespace, then the highest rendezvous score."""
        counts: dict[str, int] = {}
        directory = layout.namespace_ownership_dir(bundle.namespace)
        for name in self.core.store.children(directory):
            if name == bundle.range_name:
                continue
            found = self.core.store.get(f"{directory}/{name}")
            owner = _decode_owner(found[0]) if found else None
            if owner is not None and _alive(owner, live):
                counts[owner.broker_id] = counts.get(owner.broker_id, 0) + 1
        return min(live.values(), key=lambda b: (counts.get(b.broker_id, 0), -rendezvous_score(bundle, b.broker_id)))

    def owner_has_loaded(self, topic: TopicName) -> bool | None:
        """Whether the broker that owns ``topic``'s bundle has it loaded, when that is another broker;
        None when this broker owns it (it knows). A non-persistent topic exists only on its owner,
        so another broker asks the owner, as Pulsar's NamespaceService#checkNonPersistentNonPartitionedTopicExists
        does (apache/pulsar@v4.0.7:pulsar-broker/src/main/java/org/apache/pulsar/broker/namespace/NamespaceService.java):
        a sibling in this process directly, another process through its admin API's partitioned
        metadata without auto-creation; an owner that does not answer is ServiceNotReady."""
        if self.info is None:
            return None
        owner = self.owner_of(self.bundle_of(topic))
        if self.is_self(owner):
            return None
        sibling = _IN_PROCESS.get((owner.broker_id, owner.session))
        if sibling is not None:
            return sibling.core.topic_existence(topic) is not None
        import httpx  # only a cluster of several processes asks over HTTP

        url = (f"{owner.web_url.rstrip('/')}/admin/v2/{topic.domain}/{urllib.parse.quote(topic.tenant, safe='')}/"
               f"{urllib.parse.quote(topic.namespace, safe='')}/{topic.encoded_local_name}/partitions")
        try:
            response = httpx.get(url, params={"checkAllowAutoCreation": "false"}, timeout=PEER_TIMEOUT_S)
        except httpx.HTTPError as exc:
            raise ServiceNotReady(f"The owner of {topic} ({owner.broker_id}) did not answer: {type(exc).__name__}") from exc
        return response.status_code == 200

    def check_owned(self, topic: TopicName) -> None:
        """PRODUCER/SUBSCRIBE on a bundle owned elsewhere: ServiceNotReady, so the client looks up again.

        Pulsar's text (BrokerServiceException.ServiceUnitNotReadyException from
        BrokerService#checkTopicNsOwnership,
        apache/pulsar@v4.0.7:pulsar-broker/src/main/java/org/apache/pulsar/broker/service/BrokerService.java,
        as quoted with a real host in apache/pulsar#20157): "Namespace bundle for topic (<topic>) not served by this
        instance:<host:port>. Please redo the lookup. Request is denied: namespace=<t/ns>".
        """
        if self.info is None:
            return
        owner = self.owner_of(self.bundle_of(topic))
        if not self.is_self(owner):
            raise ServiceNotReady(
                f"Namespace bundle for topic ({topic}) not served by this instance:{self.info.broker_id}. "
                f"Please redo the lookup. Request is denied: namespace={topic.namespace_name}")


def _alive(owner: BrokerInfo, live: Mapping[str, BrokerInfo]) -> bool:
    current = live.get(owner.broker_id)
    return current is not None and current.session == owner.session


def _decode_owner(value: bytes) -> BrokerInfo | None:
    try:
        data = layout.decode_json(value)
    except ValueError:
        return None
    if not isinstance(data, dict) or not data.get("brokerId"):
        return None
    return BrokerInfo.from_ownership(data)


def _session_of(value: bytes) -> str | None:
    try:
        data = layout.decode_json(value)
    except ValueError:
        return None
    return data.get("session") if isinstance(data, dict) else None
