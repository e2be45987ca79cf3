"""Where Pulsar keeps each kind of metadata (Pulsar's TopicResources/NamespaceResources), and the JSON codec for node values.

What this module owns: the path of every node the broker writes, so no other module builds a
path by hand. The table, quoted from Pulsar's TopicResources/NamespaceResources:

| data                                  | path                                                                |
|---------------------------------------|---------------------------------------------------------------------|
| clusters                              | /admin/clusters/{cluster}                                           |
| tenant (TenantInfo JSON)              | /admin/policies/{tenant}                                            |
| namespace policies (JSON Policies)    | /admin/policies/{tenant}/{namespace}                                |
| partitioned-topic metadata            | /admin/partitioned-topics/{tenant}/{namespace}/{domain}/{encodedLocalName} |
| managed ledger per persistent topic   | /managed-ledgers/{tenant}/{namespace}/persistent/{encodedLocalName} |
|   ... in a PIP-157 bucketed namespace | /managed-ledgers/{tenant}/{namespace}/persistent/$k/{encodedLocalName} |
| non-persistent topics                 | not stored at all                                                   |

- local names (``decode_local_name``): topic local names are URL-encoded in paths and decoded
  when listed (Pulsar's TopicResources/NamespaceResources, ``Codec.decode``); tenants and
  namespaces are stored as they are (NamedEntity names need no encoding).
- namespaces are the children of their tenant's node, so listing a tenant's namespaces is
  ``children(/admin/policies/{tenant})``.
- managed ledgers: the managed-ledger path is built in one function,
  ``managed_ledger_path(topic, buckets)``. PIP-157 (PIP-157's pip/pip-157.md,
  docs/pip157-decisions.md): with ``numberOfTopicBuckets`` = 1 (the default) the path is exactly
  today's; with n > 1 a bucket folder ``$k`` is inserted after the domain,
  ``k = pulsar_naming.hashing.bucket_of(decoded local name, n)``, so each partition lands by its own local
  name. ``topic_dirs`` gives the folders whose children are the topics (one per bucket): every
  listing reads each of them, one ``children`` call per bucket. Partitioned-topic metadata paths
  are never bucketed.
- dynamic configuration updated at runtime is kept at ``/admin/configuration`` (a JSON map of key
  -> text), so a broker restarted on the same store keeps it, as Pulsar does.
- the PIP-35 cluster (docs/pip35-decisions.md): each live broker registers at
  ``/loadbalance/brokers/{host:webPort}`` (``broker_registration_path``; Pulsar's
  ``LoadManager.LOADBALANCE_BROKERS_ROOT``,
  apache/pulsar@v4.0.7:pulsar-broker/src/main/java/org/apache/pulsar/broker/loadbalance/LoadManager.java),
  and a bundle's owner is recorded at ``/namespace/{tenant}/{namespace}/{0xlower_0xupper}``
  (``bundle_ownership_path``; Pulsar's ``OWNER_INFO_ROOT + "/" + NamespaceBundle.toString()``,
  ``ServiceUnitUtils.path``,
  apache/pulsar@v4.0.7:pulsar-broker/src/main/java/org/apache/pulsar/broker/namespace/ServiceUnitUtils.java).
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any, Iterable

from pulsar_naming.hashing import bucket_of
from pulsar_naming.names import NamespaceName, TopicName, PERSISTENT

CLUSTERS_ROOT = "/admin/clusters"
POLICIES_ROOT = "/admin/policies"
PARTITIONED_TOPICS_ROOT = "/admin/partitioned-topics"
MANAGED_LEDGERS_ROOT = "/managed-ledgers"
DYNAMIC_CONFIGURATION_PATH = "/admin/configuration"
LOADBALANCE_BROKERS_ROOT = "/loadbalance/brokers"
OWNER_INFO_ROOT = "/namespace"


def cluster_path(cluster: str) -> str:
    return f"{CLUSTERS_ROOT}/{cluster}"


def tenant_path(tenant: str) -> str:
    return f"{POLICIES_ROOT}/{tenant}"


def namespace_path(namespace: NamespaceName) -> str:
    return f"{POLICIES_ROOT}/{namespace.tenant}/{namespace.namespace}"


def partitioned_topics_dir(namespace: NamespaceName, domain: str) -> str:
    return f"{PARTITIONED_TOPICS_ROOT}/{namespace.tenant}/{namespace.namespace}/{domain}"


def partitioned_topic_path(topic: TopicName) -> str:
    return f"{partitioned_topics_dir(topic.namespace_name, topic.domain)}/{topic.encoded_local_name}"


def managed_ledgers_dir(namespace: NamespaceName, domain: str = PERSISTENT) -> str:
    return f"{MANAGED_LEDGERS_ROOT}/{namespace.tenant}/{namespace.namespace}/{domain}"


NO_BUCKETS = 1  # PIP-157: "The default value, 1 means no bucketing, the current behaviour will be preserved"
BUCKET_PREFIX = "$"  # PIP-157's pip/pip-157.md: the PIP's example names the bucket folders $0, $1, $2


def _check_buckets(buckets: int) -> int:
    if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < NO_BUCKETS:
        raise ValueError(f"number of topic buckets must be an int >= 1, got {buckets!r}")
    return buckets


def bucket_dir(namespace: NamespaceName, domain: str, bucket: int) -> str:
    """``/managed-ledgers/{tenant}/{namespace}/{domain}/$k``."""
    return f"{managed_ledgers_dir(namespace, domain)}/{BUCKET_PREFIX}{bucket}"


def topic_dirs(namespace: NamespaceName, domain: str = PERSISTENT, buckets: int = NO_BUCKETS) -> list[str]:
    """The folders whose children are the namespace's managed ledgers: one, or one per bucket."""
    if _check_buckets(buckets) == NO_BUCKETS:
        return [managed_ledgers_dir(namespace, domain)]
    return [bucket_dir(namespace, domain, k) for k in range(buckets)]


def managed_ledger_path(topic: TopicName, buckets: int = NO_BUCKETS) -> str:
    """``/managed-ledgers/`` + Pulsar's persistence naming; persistent topics only (Pulsar's TopicResources/NamespaceResources).

    ``buckets`` is the namespace's ``numberOfTopicBuckets``; 1 keeps today's path.
    """
    if not topic.persistent:
        raise ValueError(f"{topic} is non-persistent: non-persistent topics have no managed ledger")
    base = managed_ledgers_dir(topic.namespace_name, topic.domain)
    if _check_buckets(buckets) == NO_BUCKETS:
        return f"{base}/{topic.encoded_local_name}"
    # docs/pip157-decisions.md (a): the DECODED local name is hashed; the path holds the encoded one.
    return f"{base}/{BUCKET_PREFIX}{bucket_of(topic.local_name, buckets)}/{topic.encoded_local_name}"


def decode_local_name(child: str) -> str:
    """A child name under a topics folder back to the topic's local name (``Codec.decode``)."""
    return urllib.parse.unquote(child)


def decode_local_names(children: Iterable[str]) -> list[str]:
    """``decode_local_name`` of each child; a child without an escape is its local name already."""
    return [urllib.parse.unquote(child) if "%" in child else child for child in children]


def topic_from_child(namespace: NamespaceName, domain: str, child: str) -> TopicName:
    return TopicName(domain, namespace.tenant, namespace.namespace, decode_local_name(child))


def encode_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8")


def decode_json(data: bytes) -> Any:
    """A node's JSON value; an empty node (a parent created implicitly) reads as ``{}``."""
    return json.loads(data.decode("utf-8")) if data else {}


# --- PIP-35 cluster -------------------------------------------------------------------------


def broker_registration_path(broker_id: str) -> str:
    return f"{LOADBALANCE_BROKERS_ROOT}/{broker_id}"


def namespace_ownership_dir(namespace: NamespaceName) -> str:
    return f"{OWNER_INFO_ROOT}/{namespace.tenant}/{namespace.namespace}"


def bundle_ownership_path(namespace: NamespaceName, range_name: str) -> str:
    return f"{namespace_ownership_dir(namespace)}/{range_name}"
