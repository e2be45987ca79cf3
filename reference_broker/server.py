"""BrokerServer: one reference broker's listeners, its admin HTTP server and its lifecycle.

``BrokerServer`` binds the binary-protocol listener (each accepted connection is a
``BrokerProtocol``, binary_connection.py) and the admin REST API, shares one ``BrokerCore`` and one
``TopicRegistry`` between them, runs the broker-wide timers and stops everything.

- addresses: both listeners bind ``bindAddress`` (127.0.0.1 by default); port 0 picks an
  ephemeral port. The URLs reported back (``broker_url``, ``web_url``) and put in lookup answers
  name the advertised host (``BrokerConfig.advertised_host``) with the bound ports, never a
  wildcard bind address.
- the admin REST API runs on uvicorn in the same event loop; shutdown stops accepting, closes
  connections and waits for the HTTP server, each wait bounded.
- unloading: a topic this broker no longer serves is unloaded, its producers and consumers
  closed: a topic deleted through the admin API, a non-persistent topic idle for a whole
  ``brokerDeleteInactiveTopicsFrequencySeconds`` period (``_check_inactive_topics``), and on a
  cluster, a topic whose bundle another broker owns after this one's session was renewed
  (``unload_topics_owned_elsewhere``).
- storage timers (``_every``): persistent topics free what retention no longer keeps every
  ``retentionCheckIntervalInSeconds``, and have their backlog quota enforced every
  ``backlogQuotaCheckIntervalInSeconds`` while ``backlogQuotaCheckEnabled``
  (``StoragePolicy.enforce``: producers disconnected, or the slowest backlog evicted).
- TLS: with ``brokerServicePortTls`` / ``webServicePortTls`` set, a TLS listener of each kind is
  bound beside the plain one (security.py ``tls_server_context``), on the same address; its URL
  (``pulsar+ssl://``, ``https://``) is reported too and advertised in lookups.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from pulsar_naming.names import TopicName

from . import __version__
from .binary_connection import BrokerProtocol
from .errors import BrokerError
from .limits import ConnectionLimits
from .security import Security, tls_server_context
from .topics import TopicRegistry
from .topics.storage import StoragePolicy

log = logging.getLogger("reference_broker.server")


class BrokerServer:
    """One reference broker: binary protocol listener + admin REST, sharing a BrokerCore."""

    def __init__(self, core, *, host: Optional[str] = None, broker_port: int = 0, web_port: int = 0):
        self.core = core
        self.host = host if host is not None else core.config.get("bindAddress")
        self.broker_port, self.web_port = broker_port, web_port
        self.advertised_host = core.config.advertised_for(self.host)
        self.topics = TopicRegistry(StoragePolicy(core.config))
        self.connection_limits = ConnectionLimits(core.config)
        # Work kept off the event loop (BrokerProtocol.run_off_loop); two threads, for two cores.
        self.executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="broker-off-loop")
        # Unloading: a topic deleted through the admin API is unloaded here too.
        core.topic_deleted_listeners.append(lambda topic: self.topics.unload(str(topic)))
        core.topic_users = self._users_of
        core.non_persistent_in_use = self._non_persistent_in_use
        core.cluster.after_new_session.append(self.unload_topics_owned_elsewhere)
        self.connections: set[BrokerProtocol] = set()
        self.cluster_name = core.config.get("clusterName")
        self.server_version = f"Pulsar Server{__version__}"
        self.security = Security(core.config, tenant_admins=_tenant_admins(core))
        self._server: Optional[asyncio.AbstractServer] = None
        self._tls_server: Optional[asyncio.AbstractServer] = None
        self._web_servers: list = []
        self._web_tasks: list[asyncio.Task] = []
        self._inactive_check: Optional[asyncio.TimerHandle] = None
        self._timers: dict[str, asyncio.TimerHandle] = {}  # the storage timers, by config key
        self.broker_url = self.web_url = ""
        self.broker_url_tls: Optional[str] = None  # set when a TLS listener is bound
        self.web_url_tls: Optional[str] = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        config = self.core.config
        binary_tls = tls_server_context(config, port_key="brokerServicePortTls")  # None: no TLS listener
        web_tls = tls_server_context(config, port_key="webServicePortTls")
        self._server = await loop.create_server(lambda: BrokerProtocol(self), self.host, self.broker_port)
        port = self._server.sockets[0].getsockname()[1]
        host = f"[{self.advertised_host}]" if ":" in self.advertised_host else self.advertised_host
        self.broker_url = f"pulsar://{host}:{port}"
        if binary_tls is not None:
            self._tls_server = await loop.create_server(lambda: BrokerProtocol(self), self.host,
                                                        config.get("brokerServicePortTls"), ssl=binary_tls)
            self.broker_url_tls = f"pulsar+ssl://{host}:{self._tls_server.sockets[0].getsockname()[1]}"
        web_socket = self._web_socket(self.web_port)
        self.web_url = f"http://{host}:{web_socket.getsockname()[1]}"
        tls_socket = self._web_socket(config.get("webServicePortTls")) if web_tls is not None else None
        if tls_socket is not None:
            self.web_url_tls = f"https://{host}:{tls_socket.getsockname()[1]}"
        self.core.set_service_urls(broker_url=self.broker_url, web_url=self.web_url,
                                   broker_url_tls=self.broker_url_tls, web_url_tls=self.web_url_tls)
        await self._start_web(web_socket, None)
        if tls_socket is not None:
            await self._start_web(tls_socket, config)
        self._schedule_inactive_check()
        self._every("retentionCheckIntervalInSeconds", self._trim_persistent_topics)
        if self.core.config.get("backlogQuotaCheckEnabled"):
            self._every("backlogQuotaCheckIntervalInSeconds", self._enforce_backlog_quotas)

    def _web_socket(self, port: int) -> socket.socket:
        info = socket.getaddrinfo(self.host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        web_socket = socket.socket(info[0], socket.SOCK_STREAM)
        web_socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        web_socket.bind(info[4])
        web_socket.listen(128)
        web_socket.setblocking(False)
        return web_socket

    @property
    def urls(self) -> list[str]:
        """Every URL this broker serves: binary and HTTP, then their TLS forms when bound."""
        return [self.broker_url, self.web_url, *(u for u in (self.broker_url_tls, self.web_url_tls) if u)]

    def _every(self, key: str, check) -> None:
        """Run ``check`` every ``key`` seconds until stop; a failed run does not stop later ones."""
        def tick() -> None:
            try:
                check()
            except Exception as exc:  # noqa: BLE001
                log.warning("%s failed: %s: %s", check.__name__, type(exc).__name__, exc)
            self._timers[key] = loop.call_later(self.core.config.get(key), tick)
        loop = asyncio.get_running_loop()
        self._timers[key] = loop.call_later(self.core.config.get(key), tick)

    def _trim_persistent_topics(self) -> None:
        for topic in self.topics.persistent_topics():
            topic.trim()

    def _enforce_backlog_quotas(self) -> None:
        for topic in self.topics.persistent_topics():
            if self.topics.policy.enforce(topic, self._disconnect_producers):
                log.info("backlog quota exceeded on %s: applied %s", topic.name,
                         self.core.config.get("backlogQuotaDefaultRetentionPolicy"))

    def _disconnect_producers(self, topic) -> None:
        for protocol in list(self.connections):
            if protocol.cnx is not None:
                protocol.cnx.close_topic_users(topic.name, consumers=False)

    def _users_of(self, topic: TopicName) -> tuple[int, int]:
        """The producers and consumers attached to ``topic`` here, as currentUsageCount counts them."""
        loaded = self.topics.get(topic)
        if loaded is None:
            return 0, 0
        return len(loaded.producers), sum(len(sub.consumers) for sub in loaded.subscriptions.values())

    def unload_topics_owned_elsewhere(self) -> list[str]:
        """Unloading, after ClusterNode renewed this broker's session: topics loaded here whose bundle
        another broker owns now are unloaded, their producers and consumers closed so the clients
        look them up again."""
        unloaded = []
        for name in self.topics.names():
            topic = TopicName.parse(name)
            try:
                owner = self.core.cluster.owner_of(self.core.cluster.bundle_of(topic))
            except BrokerError as exc:
                log.warning("cannot tell who owns %s now: %s", name, exc)
                continue
            if self.core.cluster.is_self(owner):
                continue
            for protocol in list(self.connections):
                if protocol.cnx is not None:
                    protocol.cnx.close_topic_users(name)
            self.topics.unload(name)
            if not topic.persistent:
                self.core.mark_non_persistent_inactive(topic)
            unloaded.append(name)
            log.warning("unloaded %s: its bundle is owned by %s now", name, owner.broker_id)
        return unloaded

    def _close_subscription(self, topic: str, subscription: str) -> int:
        """Disconnect every consumer of one subscription, on every connection (routes_stats.py)."""
        return sum(protocol.cnx.close_subscription_consumers(topic, subscription)
                   for protocol in list(self.connections) if protocol.cnx is not None)

    def _non_persistent_in_use(self, topic: TopicName) -> bool:
        loaded = self.topics.get(topic)
        return loaded is not None and not loaded.is_idle()

    def _schedule_inactive_check(self) -> None:
        every = self.core.config.get("brokerDeleteInactiveTopicsFrequencySeconds")
        self._inactive_check = asyncio.get_running_loop().call_later(every, self._check_inactive_topics, every)

    def _check_inactive_topics(self, every: float) -> None:
        """A non-persistent topic unused for a whole period is unloaded (TopicRegistry.collect_inactive)."""
        try:
            if self.core.config.get("brokerDeleteInactiveTopicsEnabled"):
                for name in self.topics.collect_inactive(max_idle=every):
                    self.core.mark_non_persistent_inactive(name)
                    log.info("unloaded inactive non-persistent topic %s", name)
                    if self.core.config.get("brokerDeleteInactivePartitionedTopicMetadataEnabled"):
                        self.core.delete_metadata_of_unloaded_partition(name)
        except Exception:  # noqa: BLE001 - a failed check must not stop later ones
            log.exception("inactive topic check failed")
        self._schedule_inactive_check()

    async def _start_web(self, web_socket: socket.socket, tls_config) -> None:
        """One uvicorn server on ``web_socket``; over TLS when ``tls_config`` is the broker's config."""
        import uvicorn

        from .admin.app import build_app

        app = build_app(self.core, broker_service_url=self.broker_url, web_service_url=self.web_url,
                        close_subscription=self._close_subscription,
                        topics=self.topics, security=self.security)
        tls = {} if tls_config is None else dict(
            ssl_certfile=tls_config.get("tlsCertificateFilePath"), ssl_keyfile=tls_config.get("tlsKeyFilePath"))
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False, **tls)
        server = uvicorn.Server(config)
        server.install_signal_handlers = lambda: None  # the CLI owns signals
        task = asyncio.create_task(server.serve(sockets=[web_socket]))
        self._web_servers.append(server)
        self._web_tasks.append(task)
        deadline = time.monotonic() + 10
        while not server.started:
            if task.done():
                task.result()  # raises the start-up error
            if time.monotonic() > deadline:
                raise RuntimeError("admin HTTP server did not start within 10 s")
            await asyncio.sleep(0.01)

    async def stop(self, timeout: float = 5.0) -> None:
        if self._inactive_check is not None:
            self._inactive_check.cancel()
        for timer in self._timers.values():
            timer.cancel()
        listeners = [server for server in (self._server, self._tls_server) if server is not None]
        for listener in listeners:
            listener.close()
        for protocol in list(self.connections):
            if protocol.transport:
                protocol.transport.close()
        for server, task in zip(self._web_servers, self._web_tasks):
            server.should_exit = True
            try:
                await asyncio.wait_for(asyncio.shield(task), timeout)
            except (asyncio.TimeoutError, Exception):
                task.cancel()
        for listener in listeners:
            try:
                await asyncio.wait_for(listener.wait_closed(), timeout)
            except asyncio.TimeoutError:
                log.warning("listener did not close within %.1f s", timeout)
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.core.close()


def _tenant_admins(core):
    """A tenant's adminRoles as security.Security reads them; None for a tenant that does not exist."""
    def admins(tenant: str):
        try:
            return frozenset(core.get_tenant(tenant).get("adminRoles") or ())
        except BrokerError:
            return None
    return admins
