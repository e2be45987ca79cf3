"""Admin operations (REST v2): tenants, namespaces, the override, topics, listings, dynamic config.

- check order: checks run in Pulsar's order — name, then namespace, then arguments, then
  existence — because the first failing check decides the answer.
- partitions created: creating a partitioned topic through the admin API creates its partitions
  too when the topic is persistent (AdminResource#tryCreatePartitionsAsync creates a managed
  ledger per partition; for non-persistent topics it returns at once). Auto-creation by a lookup
  never does (model/autocreation.py fetch_metadata_check_allow_auto_creation).
- already exists: "409 This topic already exists" when a partitioned or a non-partitioned topic
  of that name exists (AdminResource#internalCreatePartitionedTopic via
  checkTopicExistsWithTypeAsync; PersistentTopicsBase#internalCreateNonPartitionedTopicAsync).
- listings read what exists: ``ListTopics`` gives non-partitioned topics and partitions (managed
  ledgers / loaded non-persistent topics), ``ListPartitionedTopics`` the partitioned metadata;
  both as full names, compared as sets.
- missing namespace or tenant: it answers per resource: topic resources go through
  validateGlobalNamespaceOwnership (texts.namespace_missing, per era), namespace resources through
  getNamespacePoliciesAsync (404 "Namespace does not exist"). Three calls check something else
  first: DELETE .../partitions refuses a partition name (412) before it reads the namespace, and
  the binary listing in mode PERSISTENT and DELETE of one topic (``delete_topic``) never read it.
- topic limit: maxTopicsPerNamespace (or the namespace's max_topics_per_namespace policy, given in
  the namespace-create body, which replaces it) counts the stored topics of the namespace's
  domain (model/autocreation.py stored_topics): creating a partitioned topic checks them plus its
  partitions (AdminResource, 412), a non-partitioned one plus one after its existence check
  (BrokerService#createPersistentTopic0's NotAllowedException, which PulsarWebResource
  #resumeAsyncResponseExceptionally answers 409 CONFLICT with its message).
- existing partitions: before the release of
  BEHAVIOURS["create-partitioned-checks-existing-partitions"], creating a partitioned topic t is
  also "409 This topic already exists" when any partition name of t is listed
  (AdminResource#checkTopicExistsAsync at v3.0.7 and v4.0.7 compares getPartitionedTopicName());
  from it, only a stored persistent partition name of index N or more refuses it (409,
  getMaxPartitionIndex), and the topic is created beside lower ones.
"""

from __future__ import annotations

from model import buckets, override_body, texts
from model.autocreation import exceeds_max_topics
from model.config import DYNAMIC_KEYS, PARTITIONED, AutoTopicCreationOverride, validate_override
from model.errors import ModelUsageError
from pulsar_naming.names import (
    PARTITION_SUFFIX, InvalidName, NamespaceName, TopicName, check_named_entity, java_parse_integer)
from model.ops import (
    CreateNamespace, CreateNonPartitionedTopic, CreatePartitionedTopic, CreateTenant, DeleteNamespace,
    DeletePartitionedTopic, DeleteTopic, GetAutoTopicCreation, ListPartitionedTopics, ListTopics,
    RemoveAutoTopicCreation, SetAutoTopicCreation, SetBrokerConfig,
)
from model.outcomes import Done, OverrideShown, RestError, TopicList
from model.state import NamespacePolicies, State, parse_namespace, parse_topic

DONE = Done()
MAX_TOPICS_POLICY = "max_topics_per_namespace"  # Pulsar's Policies field, as the REST body spells it


def set_broker_config(state: State, op: SetBrokerConfig):
    """POST /admin/v2/brokers/configuration/{key}/{value}."""
    if op.key not in DYNAMIC_KEYS:
        # BrokersBase#persistDynamicConfigurationAsync: an unknown key passes the value validator and
        # then fails isDynamicConfiguration, so unknown and non-dynamic keys answer alike (no spec
        # row: spec/schema.py keeps SetBrokerConfig out of rows; tests/model/test_admin.py pins it).
        return state, texts.NON_DYNAMIC_CONFIGURATION
    return state.with_config(state.config.with_dynamic_update(op.key, op.value)), DONE


def create_tenant(state: State, op: CreateTenant):
    """PUT /admin/v2/tenants/{tenant} (the driver sends allowedClusters = the broker's cluster)."""
    try:
        check_named_entity("tenant", op.tenant)
    except InvalidName:
        return state, RestError(412, "Tenant name is not valid")  # TenantsBase [I]
    if op.tenant in state.tenants:
        return state, RestError(409, "Tenant already exists")
    return state.with_tenant(op.tenant, frozenset(op.admin_roles)), DONE


def create_namespace(state: State, op: CreateNamespace):
    """PUT /admin/v2/namespaces/{tenant}/{namespace} with an optional Policies body."""
    try:
        namespace = NamespaceName.parse(op.namespace)
    except InvalidName:
        # AdminResource#validateNamespaceName
        return state, RestError(412, "Namespace name is not valid")
    if namespace.tenant not in state.tenants:
        return state, RestError(404, "Tenant does not exist")
    # NamespacesBase#internalCreateNamespace validates the Policies body before it checks that the
    # namespace exists, so a bad body answers 412 even for an existing namespace [I].
    policies = _policies_from_body(dict(op.policies))
    if isinstance(policies, RestError):
        return state, policies
    if namespace in state.namespaces:
        return state, RestError(409, "Namespace already exists")
    return state.with_namespace(namespace, policies), DONE


def _policies_from_body(body: dict):
    unknown = set(body) - {"autoTopicCreationOverride", buckets.POLICY_KEY, MAX_TOPICS_POLICY}
    if unknown:
        raise ModelUsageError(
            f"CreateNamespace policies {sorted(unknown)} are not modelled; the model reads "
            f"autoTopicCreationOverride, {buckets.POLICY_KEY} and {MAX_TOPICS_POLICY} only")
    limit = body.get(MAX_TOPICS_POLICY)
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
        raise ModelUsageError(f"{MAX_TOPICS_POLICY}={limit!r}: Pulsar's Policies field is an Integer")
    override = None
    if body.get("autoTopicCreationOverride") is not None:
        override = AutoTopicCreationOverride.from_json(body["autoTopicCreationOverride"])
        # Creating a namespace with an invalid override is refused like setting one [I].
        error = _override_error(override, maximum=0)
        if error is not None:
            return error
    count = buckets.count_from_body(body)  # PIP-157, model/buckets.py count_from_body
    if isinstance(count, RestError):
        return count
    # NamespacesBase#internalCreateNamespace checks no topic limit (only its setter refuses < 0).
    return NamespacePolicies(autoTopicCreationOverride=override, numberOfTopicBuckets=count,
                             max_topics_per_namespace=limit)


def delete_namespace(state: State, op: DeleteNamespace):
    """DELETE /admin/v2/namespaces/{tenant}/{namespace}."""
    namespace = parse_namespace(op.namespace)
    if not state.namespace_exists(namespace):
        return state, texts.NAMESPACE_DOES_NOT_EXIST
    if not state.namespace_is_empty(namespace):
        return state, RestError(409, "Cannot delete non empty namespace")  # NamespacesBase [I]
    return state.without_namespace(namespace), DONE


def set_auto_topic_creation(state: State, op: SetAutoTopicCreation):
    """POST /admin/v2/namespaces/{tenant}/{namespace}/autoTopicCreation (Pulsar's BrokerService/AutoTopicCreationOverrideImpl).

    A raw ``body`` is bound first (model/override_body.py): a refusal answers before the namespace
    is read, and a JSON null removes the override, unvalidated, as NamespacesBase
    #internalSetAutoTopicCreationAsync stores whatever was bound.
    """
    namespace = parse_namespace(op.namespace)
    if op.body is not None:
        if (op.allow_auto_topic_creation, op.topic_type, op.default_num_partitions) != (None, None, None):
            raise ModelUsageError(f"{op}: give either body or the override's fields, not both")
        override = override_body.bind(op.body)
        if isinstance(override, RestError):
            return state, override
    elif op.allow_auto_topic_creation is None or op.topic_type is None:
        raise ModelUsageError(f"{op}: give allow_auto_topic_creation and topic_type, or a raw body")
    else:
        override = AutoTopicCreationOverride(op.allow_auto_topic_creation, op.topic_type, op.default_num_partitions)
    if not state.namespace_exists(namespace):
        return state, texts.NAMESPACE_DOES_NOT_EXIST
    if override is not None:
        error = _override_error(override, state.config.maxNumPartitionsPerPartitionedTopic)
        if error is not None:
            return state, error
    return state.with_override(namespace, override), DONE


def get_auto_topic_creation(state: State, op: GetAutoTopicCreation):
    """GET /admin/v2/namespaces/{tenant}/{namespace}/autoTopicCreation (NamespacesBase
    #internalGetAutoTopicCreationAsync): the stored override as Pulsar's ObjectMapper prints it,
    null fields left out ("mapper.setSerializationInclusion(Include.NON_NULL);")."""
    namespace = parse_namespace(op.namespace)
    if not state.namespace_exists(namespace):
        return state, texts.NAMESPACE_DOES_NOT_EXIST
    override = state.policies(namespace).autoTopicCreationOverride
    if override is None:
        return state, OverrideShown.of(None)
    printed = {"allowAutoTopicCreation": override.allowAutoTopicCreation, "topicType": override.topicType,
               "defaultNumPartitions": override.defaultNumPartitions}
    return state, OverrideShown.of({key: value for key, value in printed.items() if value is not None})


def _override_error(override: AutoTopicCreationOverride, maximum: int):
    detail = validate_override(override)
    if detail is not None:
        return texts.invalid_override(detail)  # rows pip344-admin-override-invalid-*
    if (override.topicType == PARTITIONED and maximum > 0
            and override.defaultNumPartitions is not None and override.defaultNumPartitions > maximum):
        return RestError(406, texts.partitions_above_max(maximum))
    return None


def remove_auto_topic_creation(state: State, op: RemoveAutoTopicCreation):
    """DELETE /admin/v2/namespaces/{tenant}/{namespace}/autoTopicCreation."""
    namespace = parse_namespace(op.namespace)
    if not state.namespace_exists(namespace):
        return state, texts.NAMESPACE_DOES_NOT_EXIST
    return state.with_override(namespace, None), DONE


def create_partitioned_topic(state: State, op: CreatePartitionedTopic):
    """PUT /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions with body N."""
    topic = parse_topic(op.topic)
    # PersistentTopics#createPartitionedTopic runs validateNamespaceName, then
    # validateGlobalNamespaceOwnership (which reads the namespace policies: 404 for a missing
    # namespace), then validatePartitionedTopicName: the namespace answers first (check order; row
    # pip344-admin-create-suffix-002).
    if not state.namespace_exists(topic.namespace_name):
        return state, texts.namespace_missing(state.era, topic.namespace_name)
    if PARTITION_SUFFIX in topic.local_name:
        # AdminResource#validatePartitionedTopicName
        return state, texts.PARTITION_NAME_REFUSED
    if op.partitions <= 0:
        return state, texts.PARTITIONS_NOT_POSITIVE
    maximum = state.config.maxNumPartitionsPerPartitionedTopic
    if maximum > 0 and op.partitions > maximum:
        return state, RestError(406, texts.partitions_above_max(maximum))
    # AdminResource counts getExistingPartitions(topicName), which "reads the children of
    # /managed-ledgers/{ns}/{domain}" and so counts every stored topic of the namespace and domain
    # (Pulsar's BrokerService#checkMaxTopicsPerNamespace counts TopicResources#getExistingPartitions), none in the
    # non-persistent domain; in a PIP-157 bucketed namespace, the children of every bucket (PIP-157,
    # Implementation: "These include checking if the limit on topic number per namespace has been reached").
    if exceeds_max_topics(state, topic, op.partitions):
        return state, RestError(412, texts.TOO_MANY_TOPICS)
    stored = _stored_partition_indexes(state, topic)
    checks_indexes = state.has("create-partitioned-checks-existing-partitions")
    if state.partition_count(topic) > 0 or state.topic_exists(topic) or (stored and not checks_indexes):  # already exists
        return state, RestError(409, "This topic already exists")
    highest = max(stored, default=-1) if topic.persistent else -1
    if highest >= op.partitions and checks_indexes:
        # AdminResource#internalCreatePartitionedTopic at v4.2.4 (getMaxPartitionIndex): "Case 1: Metadata
        # loss — user tries to recreate the partitioned topic."
        return state, RestError(409, f"The topic has a max partition index of {highest}, the number of partitions "
                                     f"must be at least {highest + 1}")
    state = state.with_partitioned_metadata(topic, op.partitions)
    if topic.persistent:  # the admin API creates a persistent topic's partitions too
        state = state.with_topics(*(topic.partition(i) for i in range(op.partitions)))
    return state, DONE


def _stored_partition_indexes(state: State, topic: TopicName) -> list[int]:
    """The indexes of the stored or loaded partition names of ``topic``, in its domain."""
    return [t.partition_index for t in state.topics_in(topic.namespace_name, topic.domain)
            if t.is_partition and t.partitioned_base == topic]


def create_non_partitioned_topic(state: State, op: CreateNonPartitionedTopic):
    """PUT /admin/v2/{domain}/{tenant}/{ns}/{topic}."""
    topic = parse_topic(op.topic)
    if not state.namespace_exists(topic.namespace_name):
        return state, texts.namespace_missing(state.era, topic.namespace_name)
    refused = _partition_suffix_refusal(state, topic)
    if refused is not None:
        return state, refused
    if topic.is_partition:
        raise ModelUsageError(
            f"CreateNonPartitionedTopic({topic}): creating partition K of a partitioned topic with more than K "
            "partitions goes on to the topic checks, which the model does not follow for a partition name; "
            "pick another name")
    if state.partition_count(topic) > 0 or state.topic_exists(topic):  # already exists
        return state, RestError(409, "This topic already exists")
    # Then BrokerService#getTopic(topic, createIfMissing=true): createPersistentTopic0 checks the
    # namespace limit with one more topic, a NotAllowedException the admin API answers 409 (topic limit).
    if exceeds_max_topics(state, topic, 1):
        return state, RestError(409, texts.TOO_MANY_TOPICS)
    return state.with_topics(topic), DONE


def _partition_suffix_refusal(state: State, topic: TopicName):
    """PersistentTopicsBase#validateNonPartitionTopicNameAsync: a local name with "-partition-" and a
    number after its first occurrence names a partition, which must be one of an existing partitioned
    topic's (rows pip344-name-012/013); None when the check lets the name through."""
    local = topic.local_name
    if PARTITION_SUFFIX not in local:
        return None
    index = local.index(PARTITION_SUFFIX)
    text = local[index + len(PARTITION_SUFFIX):]
    suffix = java_parse_integer(text, 64)
    if suffix is None:
        return None  # Long.parseLong fails: an ordinary name
    base = local[:index]
    partitions = state.partition_count(TopicName(topic.domain, topic.tenant, topic.namespace, base))
    if partitions > 0 and suffix >= partitions:
        than = "than" if state.has("partition-suffix-refusal-says-than") else "then"
        return RestError(412, f"Can't create topic {local} with \"-partition-\" followed by a number smaller {than} "
                              f"number of partition of partitioned topic {base}")
    if partitions == 0:
        return RestError(412, f"Can't create topic {local} with \"-partition-\" followed by numeric value if there "
                              f"isn't a partitioned topic {base} created.")
    return None


def delete_partitioned_topic(state: State, op: DeletePartitionedTopic):
    """DELETE /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions: metadata and partitions go."""
    topic = parse_topic(op.topic)
    if topic.is_partition:
        # PersistentTopics#deletePartitionedTopic: validateTopicName, then "if
        # (topicName.isPartitioned())" PRECONDITION_FAILED, before anything reads the namespace.
        return state, texts.PARTITION_NAME_REFUSED
    if not state.namespace_exists(topic.namespace_name):
        return state, texts.namespace_missing(state.era, topic.namespace_name)
    if state.partition_count(topic) == 0:
        # rows pip344-admin-delete-absent-001/002 (texts.delete_absent_partitioned_topic)
        return state, texts.delete_absent_partitioned_topic(state.era, topic, state.topic_exists(topic))
    partitions = (topic.partition(i) for i in range(state.partition_count(topic)))
    if any(getattr(state.live.get(partition), "attached", False) for partition in partitions):
        # Each partition is deleted through the broker's own admin client; which refusal of which
        # partition comes back, and in what words, depends on the release and is not modelled.
        raise ModelUsageError(f"DeletePartitionedTopic({topic}): producers or consumers of an earlier PubSub are "
                              "still attached to a partition; set close_after on it")
    return state.without_partitioned_topic(topic), DONE


def delete_topic(state: State, op: DeleteTopic):
    """DELETE /admin/v2/{domain}/{tenant}/{ns}/{topic}: one non-partitioned topic or one partition.

    Nothing reads the namespace first: PersistentTopicsBase#internalDeleteTopicAsync checks the
    topic's ownership, which a standalone broker takes even for a missing namespace."""
    topic = parse_topic(op.topic)
    if state.partition_count(topic) > 0:
        # PersistentTopics#deleteTopic reads partitionedTopicExistsAsync(topicName), the metadata of
        # exactly this name, before internalDeleteTopicAsync: a partition name has none of its own.
        return state, texts.delete_partitioned_as_topic(topic)
    live = state.live.get(topic)
    if live is not None and live.attached:
        return state, texts.topic_busy(topic, live.producers, live.consumers,
                                       state.has("topic-busy-names-client-kinds"))
    if state.topic_exists(topic):
        return state.without_topic(topic), DONE
    # BrokerService#deleteTopicInternal, topic not loaded: "Nothing to do if it's not persistent".
    if not topic.persistent:
        return state, DONE
    if not state.namespace_exists(topic.namespace_name) \
            and not state.has("topic-delete-skips-policies-without-change-events"):
        return state, texts.DELETE_TOPIC_POLICIES_NAMESPACE_MISSING
    # ManagedLedgerFactory#asyncDelete finds no ledger: PersistentTopics#deleteTopic answers 404
    # getTopicNotFoundErrorMessage.
    return state, texts.topic_not_found(topic)


def list_topics(state: State, op: ListTopics):
    """REST GET /admin/v2/{domain}/{tenant}/{ns}; binary GET_TOPICS_OF_NAMESPACE (mode by domain)."""
    namespace = parse_namespace(op.namespace)
    if op.api == "client":
        raise ModelUsageError("ListTopics(api='client'): the official client has no listing call; use rest or binary")
    if op.domain == "all" and op.api != "binary":
        raise ModelUsageError("ListTopics(domain='all'): mode ALL is GET_TOPICS_OF_NAMESPACE's; REST lists one domain")
    if not state.namespace_exists(namespace):
        if op.api == "rest":
            return state, texts.NAMESPACE_DOES_NOT_EXIST
        # Binary (NamespaceService#getListOfTopics): mode PERSISTENT reads the children of
        # /managed-ledgers/{ns}/persistent, and MetadataStore#getChildren answers "an empty list"
        # for an absent path, so nothing checks the namespace; mode NON_PERSISTENT first runs
        # checkLocalOrGetPeerReplicationCluster, which fails (rows pip344-list-binary-missing-*).
        if op.domain == "persistent":
            return state, TopicList(frozenset())
        return state, texts.binary_list_namespace_missing(state.era, namespace)
    # The binary listing keeps only the active non-persistent topics (NamespaceService
    # #getListOfNonPersistentTopics); REST lists every loaded one (NonPersistentTopics#getListFromBundle).
    listed = state.listed_in(namespace, op.domain) if op.api == "binary" else state.topics_in(namespace, op.domain)
    return state, TopicList(frozenset(str(t) for t in listed))


def list_partitioned_topics(state: State, op: ListPartitionedTopics):
    """REST GET /admin/v2/{domain}/{tenant}/{ns}/partitioned."""
    namespace = parse_namespace(op.namespace)
    if not state.namespace_exists(namespace):
        return state, texts.NAMESPACE_DOES_NOT_EXIST
    return state, TopicList(frozenset(str(t) for t in state.partitioned_in(namespace, op.domain)))
