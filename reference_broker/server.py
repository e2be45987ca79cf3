"""BrokerServer: one reference broker's listeners, its admin HTTP server and its lifecycle.

``BrokerServer`` binds the binary-protocol listener (each accepted connection is a
``BrokerProtocol``, binary_connection.py) and the admin REST API, shares one ``BrokerCore`` and one
``TopicRegistry`` between them, runs the broker-wide timers and stops everything.

Rule 1: both listeners bind ``bindAddress`` (127.0.0.1 by default); port 0 picks an ephemeral
        port. The URLs reported back (``broker_url``, ``web_url``) and put in lookup answers name
        the advertised host (``BrokerConfig.advertised_host``) with the bound ports, never a
        wildcard bind address.
Rule 2: the admin REST API runs on uvicorn in the same event loop; shutdown stops accepting,
        closes connections and waits for the HTTP server, each wait bounded.
Rule 3: a topic this broker no longer serves is unloaded, its producers and consumers closed:
        a topic deleted through the admin API, a non-persistent topic idle for a whole
        ``brokerDeleteInactiveTopicsFrequencySeconds`` period, and on a cluster, a topic whose
        bundle another broker owns after this one's session was renewed.
Rule 4: persistent topics free what retention no longer keeps every
        ``retentionCheckIntervalInSeconds``, and have their backlog quota enforced every
        ``backlogQuotaCheckIntervalInSeconds`` while ``backlogQuotaCheckEnabled``
        (topics/storage.py Rule 3: producers disconnected, or the slowest backlog evicted).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from model.names import TopicName

from . import __version__
from .binary_connection import BrokerProtocol
from .errors import BrokerError
from .limits import ConnectionLimits
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
        # Rule 3: a topic deleted through the admin API is unloaded here too.
        core.topic_deleted_listeners.append(lambda topic: self.topics.unload(str(topic)))
        core.cluster.after_new_session.append(self.unload_topics_owned_elsewhere)
        self.connections: set[BrokerProtocol] = set()
        self.cluster_name = core.config.get("clusterName")
        self.server_version = f"Pulsar Server{__version__}"
        self._server: Optional[asyncio.AbstractServer] = None
        self._web_server = None
        self._web_task: Optional[asyncio.Task] = None
        self._inactive_check: Optional[asyncio.TimerHandle] = None
        self._timers: dict[str, asyncio.TimerHandle] = {}  # Rule 4
        self.broker_url = self.web_url = ""

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: BrokerProtocol(self), self.host, self.broker_port)
        port = self._server.sockets[0].getsockname()[1]
        host = f"[{self.advertised_host}]" if ":" in self.advertised_host else self.advertised_host
        self.broker_url = f"pulsar://{host}:{port}"
        info = socket.getaddrinfo(self.host, self.web_port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        web_socket = socket.socket(info[0], socket.SOCK_STREAM)
        web_socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        web_socket.bind(info[4])
        web_socket.listen(128)
        web_socket.setblocking(False)
        self.web_url = f"http://{host}:{web_socket.getsockname()[1]}"
        self.core.set_service_urls(broker_url=self.broker_url, web_url=self.web_url)
        await self._start_web(web_socket)
        self._schedule_inactive_check()
        self._every("retentionCheckIntervalInSeconds", self._trim_persistent_topics)
        if self.core.config.get("backlogQuotaCheckEnabled"):
            self._every("backlogQuotaCheckIntervalInSeconds", self._enforce_backlog_quotas)

    def _every(self, key: str, check) -> None:
        """Rule 4: run ``check`` every ``key`` seconds until stop; a failed run does not stop later ones."""
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

    def unload_topics_owned_elsewhere(self) -> list[str]:
        """Rule 3, after ClusterNode renewed this broker's session: topics loaded here whose bundle
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

    def _schedule_inactive_check(self) -> None:
        every = self.core.config.get("brokerDeleteInactiveTopicsFrequencySeconds")
        self._inactive_check = asyncio.get_running_loop().call_later(every, self._check_inactive_topics, every)

    def _check_inactive_topics(self, every: float) -> None:
        """Rule 3: a non-persistent topic unused for a whole period is unloaded (TopicRegistry.collect_inactive)."""
        try:
            if self.core.config.get("brokerDeleteInactiveTopicsEnabled"):
                for name in self.topics.collect_inactive(max_idle=every):
                    self.core.mark_non_persistent_inactive(name)
                    log.info("unloaded inactive non-persistent topic %s", name)
        except Exception:  # noqa: BLE001 - a failed check must not stop later ones
            log.exception("inactive topic check failed")
        self._schedule_inactive_check()

    async def _start_web(self, web_socket: socket.socket) -> None:
        import uvicorn

        from .admin.app import build_app

        app = build_app(self.core, broker_service_url=self.broker_url, web_service_url=self.web_url,
                        topics=self.topics)
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        self._web_server = uvicorn.Server(config)
        self._web_server.install_signal_handlers = lambda: None  # the CLI owns signals
        self._web_task = asyncio.create_task(self._web_server.serve(sockets=[web_socket]))
        deadline = time.monotonic() + 10
        while not self._web_server.started:
            if self._web_task.done():
                self._web_task.result()  # raises the start-up error
            if time.monotonic() > deadline:
                raise RuntimeError("admin HTTP server did not start within 10 s")
            await asyncio.sleep(0.01)

    async def stop(self, timeout: float = 5.0) -> None:
        if self._inactive_check is not None:
            self._inactive_check.cancel()
        for timer in self._timers.values():
            timer.cancel()
        if self._server is not None:
            self._server.close()
        for protocol in list(self.connections):
            if protocol.transport:
                protocol.transport.close()
        if self._web_server is not None:
            self._web_server.should_exit = True
            try:
                await asyncio.wait_for(asyncio.shield(self._web_task), timeout)
            except (asyncio.TimeoutError, Exception):
                self._web_task.cancel()
        if self._server is not None:
            try:
                await asyncio.wait_for(self._server.wait_closed(), timeout)
            except asyncio.TimeoutError:
                log.warning("listener did not close within %.1f s", timeout)
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.core.close()
