"""Helpers for the PIP-35 cluster tests: brokers in-process (one can be stopped), and cores without sockets.

``InProcessCluster`` runs N ``BrokerServer``s on one event loop in a background thread, sharing one
memory store, exactly as ``reference-broker --brokers N`` does, but lets a test stop one broker
(``stop(i)``) while the others keep serving. ``core_cluster`` builds N ``BrokerCore``s on one store
with fake URLs and no sockets, for the ownership and batch rules.
"""

from __future__ import annotations

import asyncio
import threading

from reference_broker.cluster import SharedStore
from reference_broker.config import build_config
from reference_broker.core import BrokerCore
from reference_broker.metadata.memory import MemoryMetadataStore
from reference_broker.server import BrokerServer


class InProcessCluster:
    def __init__(self, brokers: int = 3, overrides: tuple[str, ...] = (), timeout: float = 20.0):
        self.timeout = timeout
        self.store = MemoryMetadataStore()
        self.config = build_config(overrides=overrides)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="in-process-cluster", daemon=True)
        self.thread.start()
        self.servers: list[BrokerServer] = []
        self.running: list[bool] = []
        try:
            for _ in range(brokers):
                self.add_broker()
        except BaseException:
            self.close()
            raise

    def call(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(self.timeout)

    def run(self, function, *args):
        """Run a plain function on the cluster's loop (the brokers' code is not thread-safe)."""
        async def wrapper():
            return function(*args)
        return self.call(wrapper())

    def add_broker(self) -> BrokerServer:
        core = BrokerCore(self.config, SharedStore(self.store))
        server = BrokerServer(core, broker_port=0, web_port=0)
        self.call(server.start())
        self.servers.append(server)
        self.running.append(True)
        return server

    def stop(self, index: int) -> None:
        if self.running[index]:
            self.running[index] = False
            self.call(self.servers[index].stop(timeout=5))

    def crash(self, index: int) -> None:
        """The broker stops answering (listeners and connections closed) but does NOT leave the
        cluster: its registration and bundles stay, as after a kill before the session expires."""
        server = self.servers[index]

        async def crash():
            server._server.close()
            for protocol in list(server.connections):
                if protocol.transport is not None:
                    protocol.transport.abort()
            for web_server, task in zip(server._web_servers, server._web_tasks):
                web_server.should_exit = True
                await asyncio.wait_for(asyncio.shield(task), 5)

        self.running[index] = False
        self.call(crash())

    def expire(self, index: int) -> None:
        """The crashed broker's session ends: it leaves the cluster, its bundles become free."""
        self.run(self.servers[index].core.cluster.leave)

    @property
    def broker_urls(self) -> list[str]:
        return [s.broker_url for s in self.servers]

    @property
    def web_urls(self) -> list[str]:
        return [s.web_url for s in self.servers]

    def close(self) -> None:
        for index in range(len(self.servers)):
            try:
                self.stop(index)
            except Exception:  # noqa: BLE001 - best effort at teardown
                pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(self.timeout)
        self.loop.close()

    def __enter__(self) -> "InProcessCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def core_cluster(brokers: int = 3, store=None, overrides: tuple[str, ...] = (), first: int = 0) -> list[BrokerCore]:
    """N joined cores on one store, URLs pulsar://b{i}:6650 and http://b{i}:8080 (i from ``first``), no sockets."""
    store = store if store is not None else MemoryMetadataStore()
    config = build_config(overrides=overrides)
    cores = []
    for index in range(first, first + brokers):
        core = BrokerCore(config, SharedStore(store))
        core.set_service_urls(f"pulsar://b{index}:6650", f"http://b{index}:8080")
        cores.append(core)
    return cores


class FakeCnx:
    """What lookup_service needs from a ServerCnx: ``core`` and ``send``; records what is sent."""

    def __init__(self, core):
        self.core = core
        self.sent = []

    def send(self, event) -> None:
        self.sent.append(event)
