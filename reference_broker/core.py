"""``BrokerCore``: the reference broker's own decisions, shared by the admin REST API and the binary service.

What this module owns: the object the server builds once (``BrokerCore(config, store)``), its
standalone boot, the dynamic configuration kept in the metadata store, the lookup permits, and
the URLs this broker advertises. The rules live in the mixins:
``core_namespaces.NamespaceOps`` (clusters, tenants, namespaces, policies, the override) and
``core_topics.TopicOps`` (existence, partitioned metadata, creation, listing, attach, lookup).

Rule 1: the core never imports the model's decision logic, only ``model.names`` (STYLE R1): the
        broker must be an independent implementation, or "broker agrees with model" proves nothing.
Rule 2: boot does what ``pulsar standalone`` does (facts §6.2): cluster ``clusterName``
        (``standalone``), tenant ``public``, namespace ``public/default``; it only creates what is
        missing, so booting on an existing store changes nothing.
Rule 3: every method is synchronous and runs inside the event loop, so one call is atomic with
        respect to other requests (no check-then-act race between REST and binary).
Rule 4: dynamic configuration updated at runtime is written to ``/admin/configuration`` and
        re-applied at boot, so it survives a restart on the same store (Pulsar keeps it in ZK and
        it overrides broker.conf).
Rule 5: a PARTITIONED_METADATA answer may be remembered and replayed for the same request only
        while nothing it was decided on has changed: no store write, no configuration change, no
        non-persistent topic loaded or unloaded. Each of those tells the core as it happens
        (``write_listeners``, ``change_listeners``, ``WatchedSet``), and the core forgets every
        answer then, so what it keeps always holds and a reader asks nothing before using it. So
        this works only on a store that tells of every write to its data (memory: store.py
        Rule 6); elsewhere nothing is remembered.
Rule 6: one answer holds for a whole namespace. A name without a partitioned-metadata node is
        answered 0, with nothing created, when it exists as a non-partitioned topic or when
        auto-creation applies to it and makes no partitioned topic (core_topics.py Rule 2). For
        an *ordinary* name (``ordinary_local_name``: not a partition, system, dead-letter or
        retry topic) both depend on its namespace's policies, the broker configuration and field
        6 alone; for the others auto-creation applies at least as often (a system topic is
        created even where creation is refused) and makes a partitioned topic only where an
        ordinary name's would. So once an ordinary absent name was answered 0, every name of
        that namespace and domain whose local name is its own path segment (nothing to
        percent-encode) and which has no partitioned-metadata node is answered 0 too, with field
        6 as sent and under Rule 5's condition, without being parsed or decided. The namespace
        is the name as sent up to its last "/", so each spelling of it is kept apart. A Failed
        answer and a creation are never kept this way. Which names of the namespace have a
        partitioned-metadata node is read from the store once, when the answer is kept: under
        Rule 5 the store has not changed while it is kept, and a set costs a first lookup less
        than a store path built and looked up (bench/saturation.py --window 1). A namespace with
        more than ``NAMESPACE_ANSWER_NAMES_LIMIT`` partitioned topics keeps no answer: its names
        are decided one by one, and memory stays bounded.
"""

from __future__ import annotations

import contextlib
import re
from typing import Callable, Iterator

from model.names import (DEFAULT_NAMESPACE, DEFAULT_TENANT, PARTITION_SUFFIX, UNQUOTED_CHARACTERS, NamespaceName,
                         TopicName)
from reference_broker.autocreation import DLQ_SUFFIX, RETRY_SUFFIX
from reference_broker.cluster import ClusterNode
from reference_broker.config import BROKER_VERSION, DYNAMIC_KEYS, BrokerConfig
from reference_broker.core_namespaces import NamespaceOps
from reference_broker.core_topics import LookupResult, TopicOps, parse_topic
from reference_broker.errors import ConfigError, TooManyRequests
from reference_broker.metadata import layout
from reference_broker.metadata.store import MetadataStore

__all__ = ["BrokerCore", "LookupPermits", "LookupResult", "parse_topic"]

REMEMBERED_ANSWERS_LIMIT = 10_000  # Rule 5: past this many, start again
NAMESPACE_ANSWER_NAMES_LIMIT = 10_000  # Rule 6: partitioned topics past which a namespace keeps no answer

# Rule 6: the bytes a local name may hold and be its own path segment, nothing to percent-encode
# (model.names defines them, as a regex class).
_UNQUOTED_BYTES = bytes(code for code in range(128) if re.fullmatch(f"[{UNQUOTED_CHARACTERS}]", chr(code)))
_PARTITION_SUFFIX = PARTITION_SUFFIX.encode()
_SPECIAL_ENDINGS = (DLQ_SUFFIX.encode(), RETRY_SUFFIX.encode())


def is_path_segment(local: bytes) -> bool:
    """Rule 6: ``local`` is non-empty and has nothing to percent-encode (``translate`` deletes every
    byte allowed: the regex's answer without the regex engine, 136 against 169 ns warm)."""
    return bool(local) and not local.translate(None, _UNQUOTED_BYTES)


def ordinary_local_name(local: bytes) -> bool:
    """Rule 6: a path segment that names no partition, no system topic (they start with "__") and
    no dead-letter or retry topic, so an answer 0 for it comes from its namespace's rules alone."""
    return (is_path_segment(local) and _PARTITION_SUFFIX not in local
            and not local.startswith(b"__") and not local.endswith(_SPECIAL_ENDINGS))


class WatchedSet(set):
    """A set that calls ``on_change`` after each addition or removal (Rule 5). The core changes its
    set of loaded non-persistent topics only with ``add`` and ``discard``."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        super().__init__()
        self._on_change = on_change

    def add(self, item) -> None:
        if item not in self:
            super().add(item)
            self._on_change()

    def discard(self, item) -> None:
        if item in self:
            super().discard(item)
            self._on_change()


class LookupPermits:
    """The ``maxConcurrentLookupRequest`` semaphore (facts §1.3 steps 3 and 6; dynamic).

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
            # facts §1.3 step 3 / §3.4: "Failed due to too many pending lookup requests"; REST 503 (§3.5).
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
        self._decoded: dict[str, tuple[bytes, object]] = {}  # NamespaceOps._read_json_shared
        # Non-persistent topics loaded on this broker (facts §1.3: they exist only while loaded).
        self._active_non_persistent = WatchedSet(self._forget_answers)
        # Rule 5: PARTITIONED_METADATA answers by (topic as sent, field 6 as sent) that hold now; None
        # where the store cannot tell of its writes. Always this one dict, so a reader may keep it.
        self.remembered_answers: dict[tuple[bytes, bool | None], int] | None = None
        # Rule 6: (b"domain://tenant/namespace/", field 6 as sent) -> the local names (bytes) that have
        # a partitioned-metadata node in that namespace and domain.
        self._namespace_answers: dict[tuple[bytes, bool | None], frozenset[bytes]] = {}
        if store.write_listeners is not None:
            self.remembered_answers = {}
            store.write_listeners.append(self._forget_answers)
            config.change_listeners.append(self._forget_answers)
        # Called with each deleted topic so the topics layer can close its producers and consumers.
        self.topic_deleted_listeners: list[Callable[[TopicName], None]] = []
        host = config.advertised_host
        self.broker_service_url = broker_service_url or f"pulsar://{host}:{config.brokerServicePort}"
        self.web_service_url = web_service_url or f"http://{host}:{config.webServicePort}"
        self.cluster = ClusterNode(self)  # PIP-35: membership and bundle ownership (cluster.py)
        self.boot()

    def set_service_urls(self, broker_url: str, web_url: str) -> None:
        """Record the URLs actually bound (ports chosen at bind time); used by lookups and the cluster node."""
        self.broker_service_url = broker_url
        self.web_service_url = web_url
        self._write_cluster_data()
        self.cluster.join()  # PIP-35: register in /loadbalance/brokers with the bound URLs

    def close(self) -> None:
        """Release this broker's bundles and registration, then the metadata store (the sqlite file handle)."""
        self.cluster.leave()
        if self.store.write_listeners is not None:
            self.store.write_listeners.remove(self._forget_answers)
            self.config.change_listeners.remove(self._forget_answers)
        self.store.close()

    # --- boot (Rule 2) --------------------------------------------------------------------------

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

    # --- remembered partition answers (Rule 5) --------------------------------------------------

    def _forget_answers(self) -> None:
        """Something an answer was decided on changed: no kept answer holds any more."""
        if self.remembered_answers:
            self.remembered_answers.clear()
        self._namespace_answers.clear()

    def remember_partitions(self, topic: str, auto_creation: bool | None, partitions: int) -> None:
        """Keep the answer just given to a request, for the same request in the same state."""
        remembered = self.remembered_answers
        if remembered is None:
            return
        if len(remembered) >= REMEMBERED_ANSWERS_LIMIT:
            remembered.clear()
        remembered[(topic.encode(), auto_creation)] = partitions
        if partitions == 0:
            self._remember_namespace_answer(topic, auto_creation)

    def namespace_answer(self, topic: bytes, auto_creation: bool | None) -> int | None:
        """Rule 6: 0 when ``topic`` (as sent) has no partitioned-metadata node and is in a namespace
        whose ordinary absent names are answered 0 in this state; otherwise None (decide it).
        Meaningful only where ``remembered_answers`` is a dict (Rule 5)."""
        cut = topic.rfind(b"/") + 1
        partitioned = self._namespace_answers.get((topic[:cut], auto_creation))
        if partitioned is None:
            return None
        local = topic[cut:]
        if local in partitioned or not is_path_segment(local):
            return None
        return 0

    def _remember_namespace_answer(self, topic: str, auto_creation: bool | None) -> None:
        """Rule 6, after ``topic`` was answered 0: keep that for its namespace if it is an ordinary absent name."""
        try:
            parsed = TopicName.parse(topic)
        except ValueError:
            return
        local = parsed.local_name.encode()
        if not ordinary_local_name(local):
            return
        node = layout.partitioned_topic_path(parsed)
        if self.store.exists(node) or self._non_partitioned_exists(parsed):
            return  # 0 because it exists as a non-partitioned topic: that says nothing of other names
        partitioned = self.store.children(layout.partitioned_topics_dir(parsed.namespace_name, parsed.domain))
        if len(partitioned) > NAMESPACE_ANSWER_NAMES_LIMIT:
            return
        # Stored names are percent-encoded; one that is its own path segment is the name as sent.
        self._namespace_answers[(topic[:-len(local)].encode(), auto_creation)] = frozenset(
            name.encode() for name in partitioned)

    # --- dynamic configuration (Rule 4; facts §1.5) ---------------------------------------------

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
