"""Clusters, tenants, namespaces and namespace policies: the configuration half of the broker core.

What this module owns: ``NamespaceOps``, a mixin of ``BrokerCore`` (core.py) holding every rule
about clusters, tenants, namespaces and their ``Policies`` JSON, including the
``autoTopicCreationOverride`` set/get/remove. Everything is stored at the paths of
``metadata/layout.py`` (Pulsar's TopicResources/NamespaceResources).

- tenants: a namespace lives under its tenant; creating one needs the tenant (404 otherwise), and
  deleting a tenant needs it to have no namespaces (409).
- missing namespace: REST texts for namespace-level operations: 404 "Namespace does not exist"
  (Pulsar's BrokerService/AutoTopicCreationOverrideImpl, the autoTopicCreation endpoints);
  topic-level operations use the ownership check's "Namespace not found" instead (Pulsar's
  PersistentTopicsBase.internalGetPartitionedMetadataAsync) -- see ``_namespace_for_topic``.
- cluster: a namespace's ``replication_clusters`` must contain this broker's cluster, else topic
  operations answer 412 (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync).
  Creation fills in the local cluster when the body names none (``_normalize_policies``).
- the override is bound as Pulsar's Jackson binds it (``autocreation.bind_override``), then
  validated by ``autocreation.validate_override`` (Pulsar's
  BrokerService/AutoTopicCreationOverrideImpl) wherever it enters: the autoTopicCreation endpoint
  and a namespace-create Policies body.
- topic buckets (PIP-157, docs/pip157-decisions.md (e), (f)): ``numberOfTopicBuckets`` is a
  Policies field that can be given ONLY in the namespace-create body: an int from 1 to 1024, else
  412 "Invalid numberOfTopicBuckets <json>: ...". Absent (or null) means 1, today's layout, and the
  Policies JSON is stored without the key, byte for byte as before. Any later attempt to change
  it (POST/DELETE .../numberOfTopicBuckets, ``set_number_of_topic_buckets``) is refused with 412
  "numberOfTopicBuckets can only be set when the namespace is created" and changes nothing; PUT
  on an existing namespace is the usual 409 "Namespace already exists". PIP-157: "Users will not
  be able to change the number of buckets after the namespace is created."
Texts marked [I] are inferred (no release was observed saying them): our best reading of Pulsar, wording may differ.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from pulsar_naming.names import InvalidName, NamespaceName, TopicName, check_named_entity
from reference_broker import autocreation
from reference_broker.errors import (
    AlreadyExists,
    ClusterNotFound,
    InvalidPolicies,
    InvalidTopicName,
    NamespaceNotFound,
    NotAllowed,
    NotEmpty,
    TenantNotFound,
    tenant_or_namespace_missing_binary,
)
from reference_broker.metadata import layout

# Topic buckets (PIP-157). The bounds are our decision (docs/pip157-decisions.md (f)); PIP-157 gives none.
TOPIC_BUCKETS_KEY = "numberOfTopicBuckets"
MIN_TOPIC_BUCKETS = 1
MAX_TOPIC_BUCKETS = 1024
TOPIC_BUCKETS_IMMUTABLE = "numberOfTopicBuckets can only be set when the namespace is created"


def _validate_topic_buckets(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_TOPIC_BUCKETS <= value <= MAX_TOPIC_BUCKETS:
        raise NotAllowed(  # 412, our text (docs/pip157-decisions.md (f))
            f"Invalid {TOPIC_BUCKETS_KEY} {json.dumps(value)}: must be an integer from "
            f"{MIN_TOPIC_BUCKETS} to {MAX_TOPIC_BUCKETS}"
        )
    return value


def parse_namespace(value: NamespaceName | str) -> NamespaceName:
    """A NamespaceName from ``"tenant/ns"``; invalid names -> 412 InvalidTopicName."""
    if isinstance(value, NamespaceName):
        return value
    try:
        return NamespaceName.parse(value)
    except InvalidName as exc:
        raise InvalidTopicName(str(exc)) from None


def _java_list(items: list[str]) -> str:
    return "[" + ", ".join(items) + "]"  # Java's List.toString(), used in Pulsar's 412 texts


class NamespaceOps:
    """Mixin: needs ``self.store`` (MetadataStore) and ``self.config`` (BrokerConfig)."""

    # --- JSON node helpers ----------------------------------------------------------------------

    def _read_json(self, path: str) -> Any | None:
        """A node's value, decoded; None when the node does not exist."""
        found = self.store.get(path)
        return None if found is None else layout.decode_json(found[0])

    def _write_json(self, path: str, value: Any) -> None:
        self.store.put(path, layout.encode_json(value))

    # --- clusters -------------------------------------------------------------------------------

    def list_clusters(self) -> list[str]:
        return self.store.children(layout.CLUSTERS_ROOT)

    def get_cluster(self, cluster: str) -> dict[str, Any]:
        data = self._read_json(layout.cluster_path(cluster))
        if data is None:
            raise ClusterNotFound("Cluster does not exist")  # [I]
        return data

    # --- tenants --------------------------------------------------------------------------------

    def list_tenants(self) -> list[str]:
        return self.store.children(layout.POLICIES_ROOT)

    def _check_tenant_name(self, tenant: str) -> str:
        try:
            return check_named_entity("tenant", tenant)
        except InvalidName as exc:
            raise InvalidTopicName(str(exc)) from None

    def get_tenant(self, tenant: str) -> dict[str, Any]:
        self._check_tenant_name(tenant)
        data = self._read_json(layout.tenant_path(tenant))
        if data is None:
            raise TenantNotFound("Tenant does not exist")  # [I]
        return data

    def create_tenant(self, tenant: str, info: Mapping[str, Any] | None = None) -> None:
        """PUT /admin/v2/tenants/{tenant} with an optional TenantInfo body."""
        self._check_tenant_name(tenant)
        info = {} if info is None else info
        if not isinstance(info, Mapping):
            raise InvalidPolicies("Invalid TenantInfo: expected a JSON object")
        roles = info.get("adminRoles") or []
        clusters = info.get("allowedClusters") or [self.config.clusterName]
        for name, value in (("adminRoles", roles), ("allowedClusters", clusters)):
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise InvalidPolicies(f"Invalid TenantInfo: {name} must be a list of strings")
        missing = [c for c in clusters if not self.store.exists(layout.cluster_path(c))]
        if missing:
            raise NotAllowed("Clusters do not exist")  # [I] 412
        if self.store.exists(layout.tenant_path(tenant)):
            raise AlreadyExists("Tenant already exists")  # [I] 409
        stored = dict(info)
        stored.update(adminRoles=list(roles), allowedClusters=list(clusters))
        self._write_json(layout.tenant_path(tenant), stored)

    def delete_tenant(self, tenant: str) -> None:
        self.get_tenant(tenant)
        if self.store.children(layout.tenant_path(tenant)):
            raise NotEmpty("The tenant still has active namespaces")  # [I] 409
        self.store.delete_recursive(layout.tenant_path(tenant))

    # --- namespaces -----------------------------------------------------------------------------

    def list_namespaces(self, tenant: str) -> list[str]:
        self.get_tenant(tenant)
        return [f"{tenant}/{ns}" for ns in self.store.children(layout.tenant_path(tenant))]

    def namespace_exists(self, namespace: NamespaceName | str) -> bool:
        return self.store.exists(layout.namespace_path(parse_namespace(namespace)))

    def get_policies(self, namespace: NamespaceName | str) -> dict[str, Any]:
        """GET /admin/v2/namespaces/{t}/{ns}: the stored Policies JSON."""
        ns = parse_namespace(namespace)
        policies = self._read_json(layout.namespace_path(ns))
        if policies is None:
            raise NamespaceNotFound(  # a namespace-level text, Pulsar's BrokerService/AutoTopicCreationOverrideImpl
                "Namespace does not exist", binary_message=tenant_or_namespace_missing_binary(ns)
            )
        return policies

    def _policies_or_none(self, ns: NamespaceName) -> dict[str, Any] | None:
        """The stored policies; None when the namespace is missing."""
        return self._read_json(layout.namespace_path(ns))

    def create_namespace(self, namespace: NamespaceName | str, policies: Mapping[str, Any] | None = None) -> None:
        """PUT /admin/v2/namespaces/{t}/{ns} with an optional Policies body."""
        ns = parse_namespace(namespace)
        if not self.store.exists(layout.tenant_path(ns.tenant)):
            raise TenantNotFound("Tenant does not exist")  # [I] 404
        stored = self._normalize_policies(policies)
        if self.store.exists(layout.namespace_path(ns)):
            raise AlreadyExists("Namespace already exists")  # [I] 409
        self._write_json(layout.namespace_path(ns), stored)

    def _normalize_policies(self, body: Mapping[str, Any] | None) -> dict[str, Any]:
        if body is None:
            body = {}
        if not isinstance(body, Mapping):
            raise InvalidPolicies("Invalid policies: expected a JSON object")
        stored: dict[str, Any] = dict(body)  # unknown Policies fields are kept as given
        clusters = stored.get("replication_clusters") or [self.config.clusterName]  # the local cluster when none is named
        if not isinstance(clusters, list) or not all(isinstance(c, str) for c in clusters):
            raise InvalidPolicies("Invalid policies: replication_clusters must be a list of cluster names")
        for cluster in clusters:
            if not self.store.exists(layout.cluster_path(cluster)):
                raise NotAllowed(f"Cluster {cluster} does not exist")  # [I] 412
        stored["replication_clusters"] = sorted(set(clusters))
        deleted = stored.get("deleted", False)
        if not isinstance(deleted, bool):
            raise InvalidPolicies("Invalid policies: deleted must be true or false")
        stored["deleted"] = deleted
        override = stored.get(autocreation.OVERRIDE_KEY)
        if override is None:
            stored.pop(autocreation.OVERRIDE_KEY, None)
        else:
            bound = autocreation.bind_override(override)  # bound as Jackson binds it, then validated
            stored[autocreation.OVERRIDE_KEY] = autocreation.validate_override(bound, self.config)
        if stored.get(TOPIC_BUCKETS_KEY) is None:
            stored.pop(TOPIC_BUCKETS_KEY, None)  # absent means 1, JSON unchanged
        else:
            stored[TOPIC_BUCKETS_KEY] = _validate_topic_buckets(stored[TOPIC_BUCKETS_KEY])
        return stored

    def delete_namespace(self, namespace: NamespaceName | str) -> None:
        """DELETE /admin/v2/namespaces/{t}/{ns}; refuses while topics exist."""
        ns = parse_namespace(namespace)
        self.get_policies(ns)
        has_topics = any(
            self._ledger_children(ns, domain)
            or self.store.children(layout.partitioned_topics_dir(ns, domain))
            for domain in ("persistent", "non-persistent")
        ) or any(t.namespace_name == ns for t in self._active_non_persistent)
        if has_topics:
            raise NotEmpty("Cannot delete non empty namespace")  # PersistentTopics / Namespaces 409
        self.store.delete_recursive(layout.namespace_path(ns))
        self.store.delete_recursive(f"{layout.PARTITIONED_TOPICS_ROOT}/{ns.tenant}/{ns.namespace}")
        self.store.delete_recursive(f"{layout.MANAGED_LEDGERS_ROOT}/{ns.tenant}/{ns.namespace}")

    # --- numberOfTopicBuckets (PIP-157: given only at creation) ----------------------------------

    def _buckets_of(self, ns: NamespaceName) -> int:
        """The namespace's bucket count; 1 when the key is absent or the namespace does not exist."""
        policies = self._policies_or_none(ns)
        value = None if policies is None else policies.get(TOPIC_BUCKETS_KEY)
        return layout.NO_BUCKETS if value is None else int(value)

    def _ledger_children(self, ns: NamespaceName, domain: str) -> list[str]:
        """Every managed-ledger child name of the namespace: one ``children`` call per bucket (PIP-157
        "one requests to the metadata store per bucket instead of a single request")."""
        names: list[str] = []
        for folder in layout.topic_dirs(ns, domain, self._buckets_of(ns)):
            names.extend(self.store.children(folder))
        return names

    def get_number_of_topic_buckets(self, namespace: NamespaceName | str) -> int:
        """GET /admin/v2/namespaces/{t}/{ns}/numberOfTopicBuckets."""
        policies = self.get_policies(namespace)
        value = policies.get(TOPIC_BUCKETS_KEY)
        return layout.NO_BUCKETS if value is None else int(value)

    def set_number_of_topic_buckets(self, namespace: NamespaceName | str, value: Any = None) -> None:
        """POST/DELETE .../numberOfTopicBuckets: always refused once the namespace exists (PIP-157)."""
        self.get_policies(namespace)  # 404 "Namespace does not exist" first
        raise NotAllowed(TOPIC_BUCKETS_IMMUTABLE)

    # --- autoTopicCreationOverride (Pulsar's BrokerService/AutoTopicCreationOverrideImpl) -------------------------------------------------

    def set_auto_topic_creation_override(self, namespace: NamespaceName | str, override: Any) -> None:
        """POST /admin/v2/namespaces/{t}/{ns}/autoTopicCreation with the parsed JSON body.

        The body is bound before the namespace is read, so a refused body answers 400
        even for a missing namespace; a null one removes the override without validation.
        """
        bound = autocreation.bind_override(override)
        ns = parse_namespace(namespace)
        policies = self.get_policies(ns)
        if bound is None:
            policies.pop(autocreation.OVERRIDE_KEY, None)
        else:
            policies[autocreation.OVERRIDE_KEY] = autocreation.validate_override(bound, self.config)
        self._write_json(layout.namespace_path(ns), policies)

    def get_auto_topic_creation_override(self, namespace: NamespaceName | str) -> dict[str, Any] | None:
        return self.get_policies(namespace).get(autocreation.OVERRIDE_KEY)

    def remove_auto_topic_creation_override(self, namespace: NamespaceName | str) -> None:
        ns = parse_namespace(namespace)
        policies = self.get_policies(ns)
        if policies.pop(autocreation.OVERRIDE_KEY, None) is not None:
            self._write_json(layout.namespace_path(ns), policies)

    # --- the namespace check every topic operation starts with ----------------------------------

    def _namespace_for_topic(self, topic: TopicName, *, binary_message: str | None = None) -> dict[str, Any]:
        """The topic's namespace Policies, or the refusal a topic operation gives (a missing namespace, a foreign cluster).

        Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync: "Newest PulsarWebResource: 404 {"reason":"Namespace not found"}" (a
        missing tenant reads the same, since only the namespace policies are looked up). The
        binary text depends on the command, so the caller passes it; the default is the
        PARTITIONED_METADATA one (Pulsar's ServerCnx.handlePartitionMetadataRequest, Pulsar's PersistentTopicsBase/ServerCnx).
        """
        ns = topic.namespace_name
        policies = self._policies_or_none(ns)
        if policies is None:
            raise NamespaceNotFound(
                "Namespace not found",
                binary_message=tenant_or_namespace_missing_binary(ns) if binary_message is None else binary_message,
            )
        clusters = list(policies.get("replication_clusters") or [])
        local = self.config.clusterName
        # Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync, both 412 texts verbatim; binary: a RestException < 500 maps to
        # MetadataError (Pulsar's ServerCnx.handlePartitionMetadataRequest).
        if not clusters:
            raise NotAllowed(
                f"Namespace does not have any clusters configured : local_cluster={local} ns={ns}",
                server_error="MetadataError",
            )
        if local not in clusters:
            raise NotAllowed(
                f"Namespace missing local cluster name in clusters list: local_cluster={local} ns={ns} "
                f"clusters={_java_list(clusters)}",
                server_error="MetadataError",
            )
        return policies
