"""Topics: existence, partitioned metadata, creation, listing, attach and lookup.

What this module owns: ``TopicOps``, a mixin of ``BrokerCore`` (core.py) with every rule that
decides whether a topic exists, may be created, and what a partitioned-metadata request answers.
It reads the namespace through ``NamespaceOps._namespace_for_topic`` and asks ``autocreation``
for the creation decision.

- existence (``topic_existence``; ``NamespaceService.checkTopicExists``): a topic is PARTITIONED
  when partitioned metadata exists at its exact name; else NON_PARTITIONED when its managed
  ledger exists (persistent) or it is loaded in memory (non-persistent, Pulsar's
  ServerCnx.handlePartitionMetadataRequest "exists only if it is loaded in memory on its owning
  broker"); else absent. A partition name is looked up as itself: ``t-partition-0`` has no
  partitioned metadata of its own.
- partitioned metadata (``get_partitioned_metadata``; Pulsar's
  PersistentTopicsBase.internalGetPartitionedMetadataAsync and Pulsar's
  ServerCnx.handlePartitionMetadataRequest): metadata wins; else, when the caller asks for
  auto-creation and the broker allows it, answer 0 or create the partitioned METADATA ONLY (never
  the partitions); else answer 0 if the non-partitioned topic exists, and TopicNotFound
  otherwise.
- attach (``ensure_topic_for_attach``): a producer/consumer may always load a partition ``n < K``
  of an existing partitioned topic, never create a partition ``n >= K``, nor a partition name
  whose base has no partitioned metadata (NotAllowed where it would be created); any other absent
  topic needs auto-creation to be allowed.
- creation (``_load``): persistent topics are created as managed-ledger nodes; non-persistent
  ones only join the in-memory active set (Pulsar's TopicResources/NamespaceResources
  "non-persistent topics: not stored at all").
- buckets (PIP-157): a managed-ledger path is always ``_ledger_path(topic)``, which reads the
  namespace's ``numberOfTopicBuckets``; listing, counting for maxTopicsPerNamespace and the
  partition scan go through ``_ledger_children`` (one ``children`` call per bucket).
Texts marked [I] are inferred: no release was observed or read saying them, so wording may differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from pulsar_naming.names import (
    DOMAINS, PARTITION_SUFFIX, InvalidName, NamespaceName, TopicName, java_parse_integer, pulsar_refusal)
from reference_broker import autocreation
from reference_broker.core_namespaces import parse_namespace
from reference_broker.errors import (
    AlreadyExists,
    InvalidTopicName,
    NamespaceNotFound,
    NotAllowed,
    PartitionedTopicNotFound,
    TopicBusy,
    TopicNotFound,
    lookup_topic_not_found_reason,
    topic_not_found_reason,
)
from reference_broker.metadata import layout
from reference_broker.metadata.store import NodeExists

PARTITIONED = "partitioned"
NON_PARTITIONED = "non-partitioned"

# The binary reply when a producer or a consumer attaches to an absent topic that may not be
# created: ServerCnx#handleProducer turns getOrCreateTopic's empty answer into "Topic not found %s",
# ServerCnx#handleSubscribe fails with "Topic " + topicName + " does not exist".
_ATTACH_NOT_FOUND = {"PRODUCER": "Topic not found {}", "SUBSCRIBE": "Topic {} does not exist"}


def parse_topic(value: TopicName | str) -> TopicName:
    """A TopicName from any accepted spelling; invalid names -> 412 / InvalidTopicName."""
    if isinstance(value, TopicName):
        return value
    why = pulsar_refusal(value)  # Pulsar's TopicName first, with its words (AdminResource, ServerCnx)
    if why is not None:
        raise InvalidTopicName("Topic name is not valid", binary_message=f"Invalid topic name: {why}")
    try:
        return TopicName.parse(value)
    except InvalidName as exc:
        raise InvalidTopicName(str(exc)) from None


@dataclass(frozen=True)
class LookupResult:
    """Where a topic is served. A single broker always answers itself, authoritatively."""

    broker_url: str
    http_url: str
    broker_url_tls: str | None = None
    http_url_tls: str | None = None
    authoritative: bool = True
    proxy_through_service_url: bool = False


class TopicOps:
    """Mixin: needs ``self.store``, ``self.config``, ``self._active_non_persistent`` and NamespaceOps."""

    # --- reading --------------------------------------------------------------------------------

    def _partitions_of(self, topic: TopicName) -> int:
        data = self._read_json(layout.partitioned_topic_path(topic))
        return int(data.get("partitions", 0)) if data else 0

    def _ledger_path(self, topic: TopicName) -> str:
        """The managed-ledger path in the layout of the topic's namespace."""
        return layout.managed_ledger_path(topic, self._buckets_of(topic.namespace_name))

    def _non_partitioned_exists(self, topic: TopicName) -> bool:
        if topic.persistent:
            return self.store.exists(self._ledger_path(topic))
        on_owner = self.cluster.owner_has_loaded(topic)  # on a cluster, only the owner knows
        return topic in self._active_non_persistent if on_owner is None else on_owner

    def topic_existence(self, topic: TopicName | str) -> str | None:
        """``"partitioned"``, ``"non-partitioned"`` or None (NamespaceService.checkTopicExists)."""
        topic = parse_topic(topic)
        if self._partitions_of(topic) > 0:
            return PARTITIONED
        return NON_PARTITIONED if self._non_partitioned_exists(topic) else None

    def topic_exists(self, topic: TopicName | str) -> bool:
        return self.topic_existence(topic) is not None

    def is_allow_auto_topic_creation(self, topic: TopicName | str) -> bool:
        """The effective decision (namespace override first, then broker config; Pulsar's BrokerService/AutoTopicCreationOverrideImpl)."""
        topic = parse_topic(topic)
        return self._may_auto_create(topic, self._policies_or_none(topic.namespace_name))

    def _may_auto_create(self, topic: TopicName, policies: Mapping[str, Any] | None) -> bool:
        base_partitions = self._partitions_of(topic.partitioned_base) if topic.is_partition else 0
        return autocreation.is_allow_auto_topic_creation(topic, policies, self.config, base_partitions=base_partitions)

    # --- partitioned metadata ----------------------------------------------------------------

    def get_partitioned_metadata(self, topic: TopicName | str, auto_create: bool) -> int:
        """Answer of REST ``GET .../partitions?checkAllowAutoCreation=`` and binary PARTITIONED_METADATA.

        ``auto_create`` is ``checkAllowAutoCreation`` (REST) or ``metadata_auto_creation_enabled``
        (binary field 6). Both APIs decide the same way (Pulsar's PersistentTopicsBase/ServerCnx); only the error texts differ,
        and the raised error carries both.
        """
        topic = parse_topic(topic)
        # A missing namespace: the auto-creating fetch fails on the namespace check and the binary
        # answer carries that check's reason; the existence check finds nothing and says nothing
        # (ServerCnx#handlePartitionMetadataRequest, observed on 3.0.7, 4.0.7 and 4.2.4).
        may_create = auto_create and self._may_auto_create(topic, None)
        policies = self._namespace_for_topic(topic, binary_message="Namespace not found" if may_create else "")
        partitions = self._partitions_of(topic)
        if partitions > 0:
            return partitions  # PersistentTopicsBase.internalGetPartitionedMetadataAsync: metadata as stored
        if auto_create and self._may_auto_create(topic, policies):
            # Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync (fetchPartitionedTopicMetadataCheckAllowAutoCreationAsync)
            if self._non_partitioned_exists(topic):
                return 0  # "Topic exists ... non-partitioned -> 0"
            if topic.is_partition or not autocreation.is_default_topic_type_partitioned(topic, policies, self.config):
                return 0  # "the default type is non-partitioned or the name is a partition name -> 0 (nothing created)"
            return self._create_default_partitioned_metadata(topic, policies)
        if self._non_partitioned_exists(topic):
            return 0  # "if the non-partitioned topic exists, return {"partitions":0}"
        # REST: 404 "Topic <full> not found" (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync); binary: TopicNotFound, message "" (Pulsar's ServerCnx.handlePartitionMetadataRequest)
        raise TopicNotFound(topic_not_found_reason(topic), binary_message="")

    def _create_default_partitioned_metadata(self, topic: TopicName, policies: Mapping[str, Any]) -> int:
        """Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync: "Before creating, it checks defaultNumPartitions > 0, <= maxNumPartitionsPerPartitionedTopic
        (when that is > 0), and maxTopicsPerNamespace. If the znode already exists (a race), it re-reads."

        BrokerService#createDefaultPartitionedTopicAsync: the two counts are Guava checkArgument
        calls, an IllegalArgumentException the admin API answers 500; the namespace limit is a
        NotAllowedException it answers 409 (PulsarWebResource#resumeAsyncResponseExceptionally).
        Neither is a RestException, so the binary handler answers ServiceNotReady for all three.
        """
        count = autocreation.default_num_partitions(topic, policies, self.config)
        if count <= 0:
            raise NotAllowed("Default number of partitions should be more than 0", http_status=500,
                             server_error="ServiceNotReady")
        limit = self.config.maxNumPartitionsPerPartitionedTopic
        if limit > 0 and count > limit:
            raise NotAllowed(f"Number of partitions should be less than or equal to {limit}", http_status=500,
                             server_error="ServiceNotReady")
        self._check_max_topics(topic, count, server_error="ServiceNotReady", http_status=409)
        try:
            self.store.create(layout.partitioned_topic_path(topic), layout.encode_json({"partitions": count}))
        except NodeExists:
            return self._partitions_of(topic)
        return count

    def _check_max_topics(self, topic: TopicName, adding: int, *, server_error: str | None = None,
                          http_status: int | None = None) -> None:
        """maxTopicsPerNamespace counts the children of /managed-ledgers/{ns}/{domain} (Pulsar's TopicResources#getExistingPartitions),
        leaving system topics out, and refuses with "Exceed maximum number of topics in namespace.":
        412 from the admin create of a partitioned topic (AdminResource), 409 where BrokerService's
        NotAllowedException reaches the admin API."""
        ns = topic.namespace_name
        # AdminResource and BrokerService: the namespace's max_topics_per_namespace policy when set
        # (even 0, which lifts the broker's limit), else the broker's maxTopicsPerNamespace.
        policy = (self._policies_or_none(ns) or {}).get("max_topics_per_namespace")
        limit = self.config.maxTopicsPerNamespace if policy is None else policy
        if limit <= 0 or autocreation.is_system_topic(topic):
            return
        existing = [
            child
            for child in self._ledger_children(ns, topic.domain)
            if not autocreation.is_system_topic(layout.topic_from_child(ns, topic.domain, child))
        ]
        if len(existing) + adding > limit:
            raise NotAllowed("Exceed maximum number of topics in namespace.", server_error=server_error,
                             http_status=http_status)

    # --- admin creation and deletion ------------------------------------------------------------

    @staticmethod
    def _refuse_partition_suffix(topic: TopicName) -> None:
        # PersistentTopicsBase.validatePartitionedTopicName: any local name *containing* the suffix.
        if PARTITION_SUFFIX in topic.local_name:
            raise InvalidTopicName("Partitioned Topic Name should not contain '-partition-'")

    def create_partitioned_topic(self, topic: TopicName | str, partitions: int) -> None:
        """PUT .../{topic}/partitions: metadata, plus one managed ledger per partition (persistent)."""
        topic = parse_topic(topic)
        # PersistentTopics#createPartitionedTopic: validateGlobalNamespaceOwnership (404 for a
        # missing namespace) runs before validatePartitionedTopicName (row pip344-admin-create-suffix-002).
        self._namespace_for_topic(topic)
        self._refuse_partition_suffix(topic)
        # internalCreatePartitionedTopic: both refusals are 406 NOT_ACCEPTABLE.
        if partitions <= 0:
            raise NotAllowed("Number of partitions should be more than 0", http_status=406)
        limit = self.config.maxNumPartitionsPerPartitionedTopic
        if limit > 0 and partitions > limit:
            raise NotAllowed(f"Number of partitions should be less than or equal to {limit}", http_status=406)
        self._check_max_topics(topic, partitions)
        if self.topic_exists(topic):
            raise AlreadyExists("This topic already exists")
        highest = self._max_existing_partition_index(topic)
        if highest >= partitions:
            raise AlreadyExists(
                f"The topic has a max partition index of {highest}, the number of partitions must be at least {highest + 1}"
            )
        try:
            self.store.create(layout.partitioned_topic_path(topic), layout.encode_json({"partitions": partitions}))
        except NodeExists:
            raise AlreadyExists("Partitioned topic already exists") from None
        if topic.persistent:  # tryCreatePartitionsAsync: the partitions' managed ledgers [I]
            for index in range(partitions):
                self._create_ledger_if_missing(topic.partition(index))

    def _max_existing_partition_index(self, topic: TopicName) -> int:
        if not topic.persistent:
            return -1
        ns = topic.namespace_name
        indexes = [
            t.partition_index
            for t in (layout.topic_from_child(ns, topic.domain, c) for c in self._ledger_children(ns, topic.domain))
            if t.is_partition and t.partitioned_base == topic
        ]
        return max(indexes, default=-1)

    def delete_partitioned_topic(self, topic: TopicName | str) -> None:
        """DELETE .../{topic}/partitions: the partitions and then the metadata."""
        topic = parse_topic(topic)
        if topic.is_partition:
            # PersistentTopics#deletePartitionedTopic: "if (topicName.isPartitioned())" 412, before
            # the namespace is read; a name that merely contains the suffix may be deleted.
            raise InvalidTopicName("Partitioned Topic Name should not contain '-partition-'")
        self._namespace_for_topic(topic)
        partitions = self._partitions_of(topic)
        if partitions <= 0:
            # PersistentTopicsBase#internalDeletePartitionedTopic (apache/pulsar PR #23002, 3.0.6+):
            # with no metadata it checks the non-partitioned topic (rows pip344-admin-delete-absent-*).
            if self._non_partitioned_exists(topic):
                raise AlreadyExists(f"{topic} is a non-partitioned topic. Instead of calling "
                                    "delete-partitioned-topic please call delete.")
            raise PartitionedTopicNotFound(f"Topic {topic} not found.")
        for index in range(partitions):
            self._drop_non_partitioned(topic.partition(index))
        self.store.delete_recursive(layout.partitioned_topic_path(topic))

    def create_non_partitioned_topic(self, topic: TopicName | str) -> None:
        """PUT /admin/v2/{domain}/{t}/{ns}/{topic}: 409 "This topic already exists" when either kind exists."""
        topic = parse_topic(topic)
        self._namespace_for_topic(topic)
        self._check_partition_suffix(topic)
        if self.topic_exists(topic):
            raise AlreadyExists("This topic already exists")
        base_partitions = self._partitions_of(topic.partitioned_base) if topic.is_partition else 0
        if base_partitions == 0 and topic.persistent:
            # BrokerService#createPersistentTopic0; non-persistent topics are never counted
            self._check_max_topics(topic, 1, http_status=409)
        self._load(topic)

    def _check_partition_suffix(self, topic: TopicName) -> None:
        """PersistentTopicsBase#validateNonPartitionTopicNameAsync (v4.0.7): a number after the first
        "-partition-" of the local name must name a partition of an existing partitioned topic."""
        local = topic.local_name
        if PARTITION_SUFFIX not in local:
            return
        head, _, tail = local.partition(PARTITION_SUFFIX)
        suffix = java_parse_integer(tail, 64)  # Long.parseLong, which reads non-ASCII digits too
        if suffix is None:
            return  # Long.parseLong refuses it: an ordinary name
        partitions = self._partitions_of(TopicName(topic.domain, topic.tenant, topic.namespace, head))
        if partitions > 0 and suffix >= partitions:
            raise InvalidTopicName(f"Can't create topic {local} with \"-partition-\" followed by a number smaller than "
                                   f"number of partition of partitioned topic {head}")
        if partitions == 0:
            raise InvalidTopicName(f"Can't create topic {local} with \"-partition-\" followed by numeric value if "
                                   f"there isn't a partitioned topic {head} created.")

    def delete_topic(self, topic: TopicName | str) -> None:
        """DELETE /admin/v2/{domain}/{t}/{ns}/{topic}: a non-partitioned topic or one partition.

        Pulsar's PersistentTopics#deleteTopic refuses a name with partitioned metadata of its own;
        then BrokerService#deleteTopicInternal deletes what exists, and nothing reads the namespace."""
        topic = parse_topic(topic)
        if self._partitions_of(topic) > 0:
            raise AlreadyExists(f"{topic} is a partitioned topic, instead of calling delete topic, please call "
                                "delete-partitioned-topic.")
        if self._non_partitioned_exists(topic):
            producers, consumers = self.topic_users(topic)
            if producers or consumers:
                raise TopicBusy(_busy_reason(topic, producers, consumers))
            self._drop_non_partitioned(topic)
        elif topic.persistent:
            # the managed ledger to delete is missing (PersistentTopics#deleteTopic: 404)
            raise TopicNotFound(topic_not_found_reason(topic), binary_message="")
        # else "Nothing to do if it's not persistent" (BrokerService#deleteTopicInternal)

    def _create_ledger_if_missing(self, topic: TopicName) -> None:
        try:
            self.store.create(self._ledger_path(topic), layout.encode_json({}))
        except NodeExists:
            pass

    def _load(self, topic: TopicName) -> None:
        """Make the topic exist in the form its domain has: a managed ledger, or the in-memory set."""
        if topic.persistent:
            self._create_ledger_if_missing(topic)
        else:
            self._active_non_persistent.add(topic)

    def _drop_non_partitioned(self, topic: TopicName) -> None:
        if topic.persistent:
            self.store.delete_recursive(self._ledger_path(topic))
        else:
            self._active_non_persistent.discard(topic)
        for listener in list(self.topic_deleted_listeners):
            listener(topic)

    # --- listing (Pulsar's TopicResources/NamespaceResources, Pulsar's NamespaceService.getListOfNonPersistentTopics) -------------------------------------------------------------

    def _domain(self, domain: str) -> str:
        if domain not in DOMAINS:
            raise InvalidTopicName(f"Invalid topic domain {domain!r}: expected persistent or non-persistent")
        return domain

    def list_topics(self, namespace: NamespaceName | str, domain: str, *, check_namespace: bool = True,
                    active_only: bool = False) -> list[str]:
        """Non-partitioned topics and partitions of one domain, as full names, sorted.

        ``check_namespace=False`` reads the folder without asking whether the namespace exists
        (the binary listing in mode PERSISTENT, ``topics_of_namespace``). ``active_only``: the
        non-persistent topics in use only, as the binary listing gives them (NamespaceService
        #getListOfNonPersistentTopics); REST lists every loaded one (NonPersistentTopics#getListFromBundle)."""
        ns, domain = parse_namespace(namespace), self._domain(domain)
        if check_namespace:
            self.get_policies(ns)
        if domain == "persistent":
            local_names = layout.decode_local_names(self._ledger_children(ns, domain))  # all buckets
            local_names.sort()  # one prefix for all, so the local names give the order of the full names
            prefix = f"{domain}://{ns}/"
            return [prefix + name for name in local_names]
        return sorted(str(t) for t in self._active_non_persistent
                      if t.namespace_name == ns and (not active_only or self.non_persistent_in_use(t)))

    def topics_of_namespace(self, namespace: NamespaceName | str, domains: tuple[str, ...]) -> list[str]:
        """Binary GET_TOPICS_OF_NAMESPACE (rows pip344-list-binary-missing-*).

        NamespaceService#getListOfTopics: mode PERSISTENT is TopicResources#listPersistentTopicsAsync,
        the children of /managed-ledgers/{ns}/persistent, and MetadataStore#getChildren: "If the
        path itself does not exist, it will return an empty list" -- no namespace check. Mode
        NON_PERSISTENT (and ALL, which adds it) first runs checkLocalOrGetPeerReplicationCluster:
        RestException(404, "Namespace not found"), which ServerCnx answers as MetadataError with the
        wrapping CompletionException's message [I].
        """
        ns = parse_namespace(namespace)
        if "non-persistent" in domains and self._policies_or_none(ns) is None:
            raise NamespaceNotFound("Namespace not found", server_error="MetadataError",
                                    binary_message="org.apache.pulsar.broker.web.RestException: Namespace not found")
        return [t for domain in domains for t in self.list_topics(ns, domain, check_namespace=False, active_only=True)]

    def list_partitioned_topics(self, namespace: NamespaceName | str, domain: str) -> list[str]:
        ns, domain = parse_namespace(namespace), self._domain(domain)
        self.get_policies(ns)
        children = self.store.children(layout.partitioned_topics_dir(ns, domain))
        return sorted(str(layout.topic_from_child(ns, domain, child)) for child in children)

    # --- producers and consumers (attach) -------------------------------------------------------

    def ensure_topic_for_attach(self, topic: TopicName | str, *, create: bool = True,
                                command: str = "SUBSCRIBE") -> None:
        """Make ``topic`` exist for ``command`` (PRODUCER or SUBSCRIBE), or raise the refusal to send back.

        ``create`` is CommandSubscribe.force_topic_creation (default true): when false an absent
        topic is not auto-created even if allowed ("createTopicIfDoesNotExist =
        forceTopicCreation && isAllowAutoTopicCreation" [I]); partitions of an existing
        partitioned topic are loaded either way.
        """
        topic = parse_topic(topic)
        # BrokerService.getTopic: "Broker is unable to load persistent topic" (Pulsar's BrokerService.getTopic); the
        # newest source uses the same text for a disabled non-persistent domain, so do we.
        enabled = self.config.enablePersistentTopics if topic.persistent else self.config.enableNonPersistentTopics
        if not enabled:
            raise NotAllowed("Broker is unable to load persistent topic")
        policies = self._namespace_for_topic(topic)
        self.cluster.check_owned(topic)  # PIP-35: ServiceNotReady when another broker owns the bundle
        if topic.is_partition:
            base_partitions = self._partitions_of(topic.partitioned_base)
            if base_partitions > 0:
                if topic.partition_index >= base_partitions:
                    # BrokerService#isAllowAutoTopicCreationAsync at v4.2.4: "return
                    # partitionedTopicMetadata.get().partitions > topicName.getPartitionIndex();", so an
                    # absent persistent partition past the count is not created (TopicNotFound); getTopic
                    # creates every non-persistent partition name, and validateTopicConsistency refuses
                    # it, as it refuses a persistent one it loads (rows pip344-produce-003-*, -007-*).
                    if topic.persistent and not self._non_partitioned_exists(topic):
                        raise TopicNotFound(topic_not_found_reason(topic),
                                            binary_message=_ATTACH_NOT_FOUND[command].format(topic))
                    raise NotAllowed(
                        f"Illegal topic partition name {topic} with max allowed {base_partitions} partitions"
                    )
                self._load(topic)  # "the topic is created regardless of createIfMissing"
                return
            if not self._non_partitioned_exists(topic) and (
                not topic.persistent or (create and self._may_auto_create(topic, policies))
            ):
                # BrokerService#validateTopicConsistency at v4.2.4, on every topic getTopic creates (a
                # non-persistent partition name always goes there): "Partition metadata not found for the
                # partitioned topic: " (rows pip344-produce-002-*). createPersistentTopic0 checks the topic count first.
                if topic.persistent:
                    self._check_max_topics(topic, 1)
                raise NotAllowed(f"Partition metadata not found for the partitioned topic: {topic}")
        if self._non_partitioned_exists(topic):
            return
        if not (create and self._may_auto_create(topic, policies)):
            raise TopicNotFound(topic_not_found_reason(topic), binary_message=_ATTACH_NOT_FOUND[command].format(topic))
        if topic.persistent:
            self._check_max_topics(topic, 1)  # BrokerService#createPersistentTopic0
        if self._partitions_of(topic) > 0:
            # BrokerService#validateTopicConsistency at v4.2.4 checks what getTopic creates, so the base
            # name of a partitioned topic is refused only where it would be created (rows
            # pip344-produce-006-*); producers attach to the partitions.
            raise NotAllowed(f"Found partitioned metadata for non-partitioned topic: {topic}")
        self._load(topic)

    def mark_non_persistent_active(self, topic: TopicName | str) -> None:
        self._active_non_persistent.add(parse_topic(topic))

    def mark_non_persistent_inactive(self, topic: TopicName | str) -> None:
        """The server calls this when its topic registry unloads a non-persistent topic (server.py)."""
        self._active_non_persistent.discard(parse_topic(topic))

    def delete_metadata_of_unloaded_partition(self, topic: TopicName | str) -> None:
        """With brokerDeleteInactivePartitionedTopicMetadataEnabled, the check for inactive topics that
        unloads a partition deletes its base name's partitioned metadata, and that alone (Pulsar's
        NonPersistentTopic#tryToDeletePartitionedMetadata at v4.0.7: the other partitions go when
        they are unused themselves)."""
        topic = parse_topic(topic)
        if topic.is_partition and self._partitions_of(topic.partitioned_base) > 0:
            self.store.delete_recursive(layout.partitioned_topic_path(topic.partitioned_base))

    # --- lookup (Pulsar's TopicLookupBase.lookupTopicAsync, Pulsar's TopicLookupBase.internalLookupTopicAsync) --------------------------------------------------------------

    def lookup(self, topic: TopicName | str, *, check_existence: bool = True) -> LookupResult:
        """This broker's URLs for ``topic``, or the refusal.

        REST (Pulsar's TopicLookupBase.internalLookupTopicAsync): "persistent topic that does not exist and may not be auto-created -> 404
        "Topic not found <topic>". Non-persistent topics skip the existence check". The binary
        lookup (Pulsar's TopicLookupBase.lookupTopicAsync) has no existence check: pass ``check_existence=False`` there.
        """
        topic = parse_topic(topic)
        # A disabled domain does not change the answer: a standalone's NoopLoadManager names the
        # local broker for every bundle; attaching is what is refused (BrokerService#getTopic).
        # Pulsar's TopicLookupBase.lookupTopicAsync: a 404 during the cluster check -> TopicNotFound(message), message "Namespace not found".
        policies = self._namespace_for_topic(topic, binary_message="Namespace not found")
        if check_existence and topic.persistent and not self._exists_for_lookup(topic):
            if not self._may_auto_create(topic, policies):
                raise TopicNotFound(lookup_topic_not_found_reason(topic))
        return LookupResult(broker_url=self.broker_service_url, http_url=self.web_service_url)

    def _exists_for_lookup(self, topic: TopicName) -> bool:
        if self.topic_exists(topic):
            return True
        # [I] a partition n < K of an existing partitioned topic is served (attach creates it).
        if topic.is_partition:
            return topic.partition_index < self._partitions_of(topic.partitioned_base)
        return False


def _busy_reason(topic: TopicName, producers: int, consumers: int) -> str:
    """PersistentTopic#delete and NonPersistentTopic#delete at v4.2.4: only the persistent words
    count each kind (apache/pulsar PR #24975); this broker has no replicators."""
    users = producers + consumers
    if topic.persistent:
        return (f"Topic has {users} {'client' if users == 1 else 'clients'} connected Including {consumers} consumers, "
                f"{producers} producers, and 0 replicators.")
    return f"Topic has {users} connected producers/consumers"
