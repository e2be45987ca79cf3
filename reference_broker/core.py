"""``BrokerCore``: the reference broker's own decisions, shared by the admin REST API and ServerCnx.

What this module owns: the object the server builds once (``BrokerCore(config, store)``), its
standalone boot, the dynamic configuration kept in the metadata store, the lookup permits, and
the URLs this broker advertises. The rules live in the mixins:
``core_namespaces.NamespaceOps`` (clusters, tenants, namespaces, policies, the override) and
``core_topics.TopicOps`` (existence, partitioned metadata, creation, listing, attach, lookup).

- independence: the core never imports the model's decision logic, only ``pulsar_naming.names`` (the
  broker may import the model's value helpers, never its decisions): the broker must be an
  independent implementation, or "broker agrees with model" proves nothing
  (tests/test_import_order.py checks it).
- boot (``BrokerCore.boot``) does what ``pulsar standalone`` does (Testcontainers'
  PulsarContainer): cluster ``clusterName`` (``standalone``), tenant ``public``, namespace
  ``public/default``; it only creates what is missing, so booting on an existing store changes
  nothing.
- atomic calls: every method is synchronous and runs inside the event loop, so one call is atomic
  with respect to other requests (no check-then-act race between REST and binary).
- dynamic configuration (``BrokerCore.update_dynamic_config``) updated at runtime is written to
  ``/admin/configuration`` and re-applied at boot, so it survives a restart on the same store
  (Pulsar keeps it in ZK and it overrides broker.conf).
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

from pulsar_naming.names import DEFAULT_NAMESPACE, DEFAULT_TENANT, NamespaceName, TopicName
from reference_broker.cluster import ClusterNode
from reference_broker.config import BROKER_VERSION, DYNAMIC_KEYS, BrokerConfig
from reference_broker.core_namespaces import NamespaceOps
from reference_broker.core_topics import LookupResult, TopicOps, parse_topic
from reference_broker.errors import ConfigError, TooManyRequests
from reference_broker.metadata import layout
from reference_broker.metadata.store import MetadataStore

__all__ = ["BrokerCore", "LookupPermits", "LookupResult", "parse_topic"]


class LookupPermits:
    """The ``maxConcurrentLookupRequest`` semaphore (Pulsar's ServerCnx.handlePartitionMetadataRequest and 6; dynamic).

    The limit is read on every acquire, so a dynamic update takes effect at once; a limit of 0
    refuses every lookup, as a Java ``Semaphore(0)`` would.
    """

    def __init__(self, config: BrokerConfig) -> None:
        self._config = config
        self.in_use = 0

    @property
    def available(self) -> int:
        return self._config.maxConcurrentLookupRequest - self.in_use

    def try_acquire(self) -> bool:
        if self.in_use >= self._config.maxConcurrentLookupRequest:
            return False
        self.in_use += 1
        return True

    def release(self) -> None:
        if self.in_use <= 0:
            raise RuntimeError("LookupPermits.release() without a matching try_acquire()")
        self.in_use -= 1

    @contextlib.contextmanager
    def permit(self) -> Iterator[None]:
        """Hold one permit for the block, or raise TooManyRequests; released on every path."""
        if not self.try_acquire():
            # Pulsar's ServerCnx.handlePartitionMetadataRequest / Pulsar's TopicLookupBase.lookupTopicAsync: "Failed due to too many pending lookup requests"; REST 503 (Pulsar's TopicLookupBase.internalLookupTopicAsync).
            raise TooManyRequests("Failed due to too many pending lookup requests")
        try:
            yield
        finally:
            self.release()


class BrokerCore(NamespaceOps, TopicOps):
    """The broker's metadata decisions over one ``MetadataStore``; boots on construction."""

    version = BROKER_VERSION

    def __init__(
        self,
        config: BrokerConfig,
        store: MetadataStore,
        *,
        broker_service_url: str | None = None,
        web_service_url: str | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.lookup_permits = LookupPermits(config)
        # Non-persistent topics loaded on this broker (Pulsar's ServerCnx.handlePartitionMetadataRequest: they exist only while loaded).
        self._active_non_persistent: set[TopicName] = set()
        # Called with each deleted topic so the topics layer can close its producers and consumers.
        self.topic_deleted_listeners: list[Callable[[TopicName], None]] = []
        # The producers and consumers attached to a loaded topic: the topics layer answers it.
        self.topic_users: Callable[[TopicName], tuple[int, int]] = lambda topic: (0, 0)
        # Whether a loaded non-persistent topic is in use (a producer or a subscription): the topics
        # layer answers it; the binary non-persistent listing shows only those (NamespaceService
        # #getListOfNonPersistentTopics keeps a topic while NonPersistentTopic#isActive).
        self.non_persistent_in_use: Callable[[TopicName], bool] = lambda topic: True
        host = config.advertised_host
        self.broker_service_url = broker_service_url or f"pulsar://{host}:{config.brokerServicePort}"
        self.web_service_url = web_service_url or f"http://{host}:{config.webServicePort}"
        # The TLS listeners' URLs (brokerServicePortTls, webServicePortTls), None without TLS.
        self.broker_service_url_tls: str | None = None
        self.web_service_url_tls: str | None = None
        self.cluster = ClusterNode(self)  # PIP-35: membership and bundle ownership (cluster.py)
        self.boot()

    def set_service_urls(self, broker_url: str, web_url: str, *, broker_url_tls: str | None = None,
                         web_url_tls: str | None = None) -> None:
        """Record the URLs actually bound (ports chosen at bind time); used by lookups and the cluster node."""
        self.broker_service_url = broker_url
        self.web_service_url = web_url
        self.broker_service_url_tls = broker_url_tls or self.broker_service_url_tls
        self.web_service_url_tls = web_url_tls or self.web_service_url_tls
        self._write_cluster_data()
        self.cluster.join()  # PIP-35: register in /loadbalance/brokers with the bound URLs

    def close(self) -> None:
        """Release this broker's bundles and registration, then the metadata store (the sqlite file handle)."""
        self.cluster.leave()
        self.store.close()

    # --- boot (what pulsar standalone creates) --------------------------------------------------------------------------

    def boot(self) -> None:
        self._apply_stored_dynamic_config()
        if not self.store.exists(layout.cluster_path(self.config.clusterName)):
            self._write_cluster_data()
        if not self.store.exists(layout.tenant_path(DEFAULT_TENANT)):
            self.create_tenant(DEFAULT_TENANT, {"adminRoles": [], "allowedClusters": [self.config.clusterName]})
        default = NamespaceName(DEFAULT_TENANT, DEFAULT_NAMESPACE)
        if not self.namespace_exists(default):
            self.create_namespace(default)

    def _write_cluster_data(self) -> None:
        # ClusterData field names as in Pulsar's /admin/v2/clusters/{cluster} answer.
        self._write_json(
            layout.cluster_path(self.config.clusterName),
            {"serviceUrl": self.web_service_url, "brokerServiceUrl": self.broker_service_url},
        )

    # --- dynamic configuration (kept in the store; Pulsar's BrokerService/AutoTopicCreationOverrideImpl) ---------------------------------------------

    def _stored_dynamic_config(self) -> dict[str, str]:
        data = self._read_json(layout.DYNAMIC_CONFIGURATION_PATH)
        return dict(data) if isinstance(data, dict) else {}

    def _apply_stored_dynamic_config(self) -> None:
        for key, value in self._stored_dynamic_config().items():
            try:
                self.config.update_dynamic(key, value)
            except ConfigError:
                continue  # a key this version no longer knows: ignore it rather than refuse to boot

    def dynamic_config_names(self) -> list[str]:
        """GET /admin/v2/brokers/configuration: the keys that can be updated at runtime."""
        return sorted(DYNAMIC_KEYS)

    def dynamic_config_values(self) -> dict[str, str]:
        """GET /admin/v2/brokers/configuration/values: every dynamic key with its effective value.

        Pulsar answers only the values overridden at runtime (the ZK map); we answer every dynamic
        key, so a harness can read the effective setting whether it came from broker.conf or an
        update. A client reading a key it set sees the same text either way.
        """
        return {key: self.config.formatted(key) for key in sorted(DYNAMIC_KEYS)}

    def dynamic_config_overrides(self) -> dict[str, str]:
        """Only the runtime updates kept in the metadata store (Pulsar's /configuration/values)."""
        return self._stored_dynamic_config()

    def runtime_config(self) -> dict[str, str]:
        """GET /admin/v2/brokers/configuration/runtime: every key with its effective value."""
        return self.config.as_strings()

    def get_config(self, key: str) -> object:
        return self.config.get(key)

    def update_dynamic_config(self, key: str, value: str) -> None:
        """POST /admin/v2/brokers/configuration/{key}/{value}; ConfigError (412) when refused."""
        self.config.update_dynamic(key, value)
        stored = self._stored_dynamic_config()
        stored[key] = value
        self._write_json(layout.DYNAMIC_CONFIGURATION_PATH, stored)

    def delete_dynamic_config(self, key: str) -> None:
        """DELETE /admin/v2/brokers/configuration/{key}: back to the broker.conf value."""
        self.config.reset_dynamic(key)
        stored = self._stored_dynamic_config()
        if stored.pop(key, None) is not None:
            self._write_json(layout.DYNAMIC_CONFIGURATION_PATH, stored)
