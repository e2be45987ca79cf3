"""The deliberately broken variants of the reference broker ("mutants"), one wrong rule each.

Each variant names the PIP whose cases must catch it, the API it breaks, what it breaks in one
line, and where: one source snippet (``old``) of one function (``where``, as
``reference_broker.module:Qualname``) and the wrong one that replaces it (``new``). How a variant
is put into a running broker is mutation/patch.py's job; this module is only the table.

- ``old`` occurs exactly once in the function's source, so a variant that no longer matches the
  code refuses to start instead of silently testing nothing (patch.check).
- every PIP and both APIs have variants; a variant breaks the rule as the broker states it now, so
  when the code is rewritten its variants are rewritten with it, never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    pip: str            # the PIP whose cases must catch it: "344", "2", "157", "35"
    api: str            # "rest", "binary", "both"
    description: str
    where: str          # "reference_broker.module:Qualname"
    old: str
    new: str


def _m(name, pip, api, description, where, old, new) -> Mutant:
    return Mutant(name, pip, api, description, where, old, new)


CT = "reference_broker.core_topics:TopicOps"
SVC = "reference_broker.commands:ServerCnx"
AC = "reference_broker.autocreation"
NP = "reference_broker.topics.non_persistent"
LS = "reference_broker.lookup_service"
# ServerCnx.handle_PartitionedMetadata: an absent field 6 reads as true.
F6 = 'auto_create = event.metadata_auto_creation_enabled if event.has("metadata_auto_creation_enabled") else True'

MUTANTS: tuple[Mutant, ...] = (
    # -- PIP-344, binary ------------------------------------------------------------------------
    _m("p344-bin-ignores-field6", "344", "binary", "PARTITIONED_METADATA ignores field 6 (always auto-creates)",
       f"{SVC}.handle_PartitionedMetadata", F6, "auto_create = True"),
    _m("p344-bin-field6-absent-false", "344", "binary", "an absent field 6 reads as false instead of the proto default true",
       f"{SVC}.handle_PartitionedMetadata", F6, F6.replace("else True", "else False")),
    _m("p344-bin-no-flag5", "344", "binary", "CONNECTED does not advertise FeatureFlags field 5",
       f"{SVC}.handle_Connect", '"supports_get_partitioned_metadata_without_auto_creation": True',
       '"supports_get_partitioned_metadata_without_auto_creation": False'),
    _m("p344-bin-wrong-error", "344", "binary", "a missing topic answers ServiceNotReady instead of TopicNotFound",
       f"{SVC}.handle_PartitionedMetadata",
       "return self._partitioned_metadata_failed(event.request_id, exc.server_error, exc.binary_message)",
       "return self._partitioned_metadata_failed(event.request_id, 'ServiceNotReady' if exc.server_error == "
       "'TopicNotFound' else exc.server_error, exc.binary_message)"),
    _m("p344-bin-error-message", "344", "binary", "binary TopicNotFound carries the REST text instead of an empty message",
       f"{CT}.get_partitioned_metadata", 'raise TopicNotFound(topic_not_found_reason(topic), binary_message="")',
       "raise TopicNotFound(topic_not_found_reason(topic), binary_message=topic_not_found_reason(topic))"),
    _m("p344-bin-lookup-checks-existence", "344", "binary", "binary LOOKUP refuses topics that do not exist",
       f"{LS}:handle_lookup", "core.lookup(topic, check_existence=False)", "core.lookup(topic, check_existence=True)"),
    # -- PIP-344, REST ----------------------------------------------------------------------------
    _m("p344-rest-ignores-check", "344", "rest", "GET .../partitions ignores checkAllowAutoCreation",
       "reference_broker.admin.routes_topics:build_router",
       "core.get_partitioned_metadata(_full_name(domain, tenant, namespace, topic), checkAllowAutoCreation)",
       "core.get_partitioned_metadata(_full_name(domain, tenant, namespace, topic), False)"),
    _m("p344-rest-check-default-true", "344", "rest", "an absent checkAllowAutoCreation defaults to true",
       "reference_broker.admin.routes_topics:build_router", "checkAllowAutoCreation: bool = Query(False)",
       "checkAllowAutoCreation: bool = Query(True)"),
    _m("p344-rest-reason-text", "344", "rest", "404 reason says 'Topic not found' without the topic name",
       f"{CT}.get_partitioned_metadata", 'raise TopicNotFound(topic_not_found_reason(topic), binary_message="")',
       'raise TopicNotFound("Topic not found", binary_message="")'),
    _m("p344-rest-lookup-no-existence-check", "344", "rest", "REST lookup skips the existence check (no 404)",
       f"{CT}.lookup", "if check_existence and topic.persistent and not self._exists_for_lookup(topic):",
       "if False:"),
    _m("p344-rest-lookup-checks-non-persistent", "344", "rest", "REST lookup checks non-persistent topics' existence too",
       f"{CT}.lookup", "if check_existence and topic.persistent and not self._exists_for_lookup(topic):",
       "if check_existence and not self._exists_for_lookup(topic):"),
    # -- PIP-344, both APIs -------------------------------------------------------------------------
    _m("p344-autocreates-partition-names", "344", "both", "auto-creates partitioned metadata for a '-partition-K' name",
       f"{CT}.get_partitioned_metadata",
       "if topic.is_partition or not autocreation.is_default_topic_type_partitioned(topic, policies, self.config):",
       "if not autocreation.is_default_topic_type_partitioned(topic, policies, self.config):"),
    _m("p344-lookup-creates-partitions", "344", "both", "metadata auto-creation also creates the partitions",
       f"{CT}.get_partitioned_metadata", "return self._create_default_partitioned_metadata(topic, policies)",
       "count = self._create_default_partitioned_metadata(topic, policies)\n"
       "            for index in range(count):\n"
       "                self._load(topic.partition(index))\n"
       "            return count"),
    _m("p344-nonpartitioned-not-found", "344", "both", "an existing non-partitioned topic answers TopicNotFound without auto-creation",
       f"{CT}.get_partitioned_metadata",
       'if self._non_partitioned_exists(topic):\n            return 0  # "if the non-partitioned',
       'if False:\n            return 0  # "if the non-partitioned'),
    _m("p344-partitions-off-by-one", "344", "both", "partitioned metadata answers K+1",
       f"{CT}.get_partitioned_metadata", "return partitions  # PersistentTopicsBase", "return partitions + 1  # PersistentTopicsBase"),
    _m("p344-autocreate-when-disallowed", "344", "both", "the flag alone decides auto-creation; broker and namespace are ignored",
       f"{CT}.get_partitioned_metadata",
       "if auto_create and self._may_auto_create(topic, policies):",
       "if auto_create:"),
    # -- auto-creation rules (Pulsar's BrokerService/AutoTopicCreationOverrideImpl), judged by the PIP-344 tables ---------------------------------
    _m("auto-override-ignored", "344", "both", "the namespace override is ignored; the broker config decides",
       f"{AC}:is_allow_auto_topic_creation", "if override is not None:", "if False:"),
    _m("auto-broker-flag-ignored", "344", "both", "allowAutoTopicCreation=false on the broker is ignored",
       f"{AC}:is_allow_auto_topic_creation", "return bool(config.allowAutoTopicCreation)", "return True"),
    _m("auto-dlq-partitioned", "344", "both", "DLQ/RETRY topics are auto-created partitioned (PR #22705 rule dropped)",
       f"{AC}:is_default_topic_type_partitioned", "if base.endswith(DLQ_SUFFIX) or base.endswith(RETRY_SUFFIX):",
       "if False:"),
    _m("auto-override-type-ignored", "344", "both", "the override's topicType is ignored; the broker's type decides",
       f"{AC}:is_default_topic_type_partitioned",
       'topic_type = override.get("topicType") if override is not None else config.allowAutoTopicCreationType',
       "topic_type = config.allowAutoTopicCreationType"),
    _m("auto-default-partitions-off-by-one", "344", "both", "defaultNumPartitions + 1 partitions are auto-created",
       f"{AC}:default_num_partitions", "return int(config.defaultNumPartitions)",
       "return int(config.defaultNumPartitions) + 1"),
    _m("auto-override-count-ignored", "344", "both", "the override's defaultNumPartitions is ignored",
       f"{AC}:default_num_partitions", 'return int(override["defaultNumPartitions"])',
       "return int(config.defaultNumPartitions)"),
    _m("auto-override-not-validated", "344", "rest", "an invalid autoTopicCreation override is accepted",
       f"{AC}:validate_override", "    if allow:\n        if topic_type not in TOPIC_TYPES:",
       "    if False:\n        if topic_type not in TOPIC_TYPES:"),
    _m("auto-override-unknown-type-accepted", "344", "rest", "an override with an unknown topicType is accepted",
       f"{AC}:validate_override", "if topic_type not in TOPIC_TYPES:", "if False:"),
    _m("auto-override-max-unchecked", "344", "rest", "an override above maxNumPartitionsPerPartitionedTopic is accepted",
       f"{AC}:validate_override", "if limit > 0 and count > limit:", "if False:"),
    _m("p344-bin-namespace-missing-message", "344", "binary",
       "binary TopicNotFound for a missing namespace says nothing where the auto-creating fetch speaks",
       f"{CT}.get_partitioned_metadata", 'binary_message="Namespace not found" if may_create else ""',
       'binary_message=""'),
    _m("p344-rest-lookup-reason-text", "344", "rest", "REST lookup 404 says 'Topic <t> not found' instead of 'Topic not found <t>'",
       "reference_broker.errors:lookup_topic_not_found_reason", 'return f"Topic not found {topic}"',
       'return f"Topic {topic} not found"'),
    # -- admin REST around the PIP-344 tables -----------------------------------------------------------
    _m("admin-partition-suffix-allowed", "344", "rest", "a partitioned topic may be named '...-partition-K'",
       f"{CT}._refuse_partition_suffix", "if PARTITION_SUFFIX in topic.local_name:", "if False:"),
    _m("admin-zero-partitions-allowed", "344", "rest", "creating a partitioned topic with 0 partitions is accepted",
       f"{CT}.create_partitioned_topic", "if partitions <= 0:", "if partitions < 0:"),
    _m("admin-partition-limit-off-by-one", "344", "rest", "maxNumPartitionsPerPartitionedTopic refuses the limit itself",
       f"{CT}.create_partitioned_topic", "if limit > 0 and partitions > limit:", "if limit > 0 and partitions >= limit:"),
    _m("admin-create-over-partitioned", "344", "rest", "a non-partitioned topic may be created over a partitioned one",
       f"{CT}.create_non_partitioned_topic", "if self.topic_exists(topic):", "if self._non_partitioned_exists(topic):"),
    _m("admin-delete-keeps-partitions", "344", "rest", "deleting a partitioned topic leaves its partitions",
       f"{CT}.delete_partitioned_topic", "for index in range(partitions):", "for index in range(0):"),
    _m("admin-list-drops-partitions", "344", "both", "topic listings leave partitions out",
       f"{CT}.list_topics", "return [prefix + name for name in local_names]",
       "return [prefix + name for name in local_names if not TopicName.parse(prefix + name).is_partition]"),
    _m("admin-list-partitioned-one-domain", "344", "rest", "partitioned listing always reads the persistent domain",
       f"{CT}.list_partitioned_topics", "layout.partitioned_topics_dir(ns, domain)",
       'layout.partitioned_topics_dir(ns, "persistent")'),
    _m("admin-max-topics-off-by-one", "344", "rest", "maxTopicsPerNamespace refuses reaching the limit",
       f"{CT}._check_max_topics", "if len(existing) + adding > limit:", "if len(existing) + adding >= limit:"),
    # -- PIP-2 ----------------------------------------------------------------------------------------
    _m("p2-drop-receipt-zero", "2", "binary", "a dropped publish is answered (0, 0) like an accepted one",
       f"{SVC}._complete_non_persistent", "entry_id = 0 if accepted else U64_MINUS_ONE", "entry_id = 0"),
    _m("p2-inflight-off-by-one", "2", "binary", "the in-flight limit drops at >= instead of >",
       f"{SVC}._send_non_persistent", "if self.non_persistent_pending > self._non_persistent_limit:",
       "if self.non_persistent_pending >= self._non_persistent_limit:"),
    _m("p2-exclusive-ignores-permits", "2", "both", "Exclusive/Failover dispatch ignores the consumer's permits",
       f"{NP}:NonPersistentSubscription._target",
       "return active if active is not None and active.permits > 0 and active.writable() else None",
       "return active if active is not None and active.writable() else None"),
    _m("p2-shared-needs-every-consumer", "2", "both", "Shared dispatch drops unless every consumer has permits",
       f"{NP}:NonPersistentSubscription._target", "if sum(max(c.permits, 0) for c in self.consumers) <= 0:",
       "if any(c.permits <= 0 for c in self.consumers):"),
    _m("p2-persistent-no-backlog", "2", "both", "a persistent subscription never reads its backlog (FLOW brings nothing)",
       "reference_broker.topics.persistent:Subscription.dispatch", "elif self.read_position < topic.next_entry_id:",
       "elif False:"),
    _m("p2-dispatch-drop-not-counted", "2", "both", "a dispatch drop is not counted in the subscription's msgDropRate",
       f"{NP}:NonPersistentSubscription.send", "self.drops.record(entry.num_messages", "(lambda *a: None)(entry.num_messages"),
    _m("p2-receipts-stored-ids", "2", "both", "accepted non-persistent receipts carry a ledger id like a stored log",
       f"{SVC}._send_non_persistent", "send.highest_sequence_id, ledger_id, True)",
       "send.highest_sequence_id, ledger_id + 1, True)"),
    _m("p2-publish-drop-not-counted", "2", "both", "a publish drop is not counted in the publisher's msgDropRate",
       f"{NP}:NonPersistentTopic.record_publish_drop", "publisher.drops.record(num_messages)", "pass"),
    _m("p2-counters-lost", "2", "rest", "msgOutCounter forgets subscriptions that were removed",
       f"{NP}:NonPersistentTopic.remove_subscription", "self._out_removed[0] += removed.out.total", "pass"),
    _m("p2-subscription-kept", "2", "rest", "a subscription stays after its last consumer leaves",
       f"{NP}:NonPersistentSubscription.remove_consumer", "if not self.consumers:  # every consumer gone: unsubscribe", "if False:"),
    _m("p2-flow-zero-accepted", "2", "binary", "FLOW with 0 permits is accepted instead of closing the connection",
       f"{SVC}.handle_Flow", "if event.messagePermits == 0 or event.messagePermits >= INT32_LIMIT:",
       "if event.messagePermits >= INT32_LIMIT:"),
    _m("p2-send-unknown-producer-open", "2", "binary", "a SEND for an unknown producer keeps the connection open",
       f"{SVC}.handle_Send", "return self.close_connection()", "return"),
    _m("p2-bad-subscribe-open", "2", "binary", "an unparseable SUBSCRIBE keeps the connection open",
       f"{SVC}.handle_invalid", "return self.close_connection()", "return"),
    _m("p2-stats-no-publisher-drop-rate", "2", "rest", "publisher stats lack msgDropRate",
       f"{NP}:Publisher.stats", '"accessMode": "Shared", "msgDropRate": self.drops.rate(),', '"accessMode": "Shared",'),
    _m("p2-internal-stats-no-cursors", "2", "rest", "internalStats has no cursor per subscription",
       f"{NP}:NonPersistentTopic.internal_stats", '"cursors": {name: {} for name in sorted(self.subscriptions)}',
       '"cursors": {}'),
    _m("p2-disabled-domain-attaches", "2", "both", "producers and consumers attach to a disabled domain",
       f"{CT}.ensure_topic_for_attach", "if not enabled:\n            raise NotAllowed(",
       "if False:\n            raise NotAllowed("),
    _m("p2-disabled-domain-lookup", "2", "both", "a standalone's lookup in a disabled domain finds no owner",
       f"{CT}.lookup", "topic = parse_topic(topic)\n",
       "topic = parse_topic(topic)\n        if not (self.config.enablePersistentTopics if topic.persistent\n"
       "                else self.config.enableNonPersistentTopics):\n"
       "            raise NotAllowed(f\"No broker was available to own {topic}\")\n"),
    _m("p2-partitioned-stats-no-metadata", "2", "rest", "partitioned-stats lacks metadata.partitions",
       "reference_broker.admin.routes_stats:build_router", 'body["metadata"] = {"partitions": count}',
       'body["metadata"] = {}'),
    # -- PIP-157 --------------------------------------------------------------------------------------
    _m("p157-buckets-mutable", "157", "rest", "POST .../numberOfTopicBuckets is accepted after creation",
       "reference_broker.core_namespaces:NamespaceOps.set_number_of_topic_buckets",
       "raise NotAllowed(TOPIC_BUCKETS_IMMUTABLE)", "return None"),
    _m("p157-bucket-off-by-one", "157", "both", "a topic goes to bucket k+1 (one past the hashed bucket)",
       "reference_broker.metadata.layout:managed_ledger_path", "{bucket_of(topic.local_name, buckets)}",
       "{bucket_of(topic.local_name, buckets) + 1}"),
    _m("p157-list-first-bucket-only", "157", "both", "listings read bucket $0 only",
       "reference_broker.metadata.layout:topic_dirs", "for k in range(buckets)]", "for k in range(1)]"),
    _m("p157-zero-buckets-accepted", "157", "rest", "numberOfTopicBuckets 0 is accepted at creation",
       "reference_broker.core_namespaces:_validate_topic_buckets", "MIN_TOPIC_BUCKETS <= value",
       "MIN_TOPIC_BUCKETS - 1 <= value"),
    _m("p157-get-ignores-policy", "157", "rest", "GET .../numberOfTopicBuckets always answers 1",
       "reference_broker.core_namespaces:NamespaceOps.get_number_of_topic_buckets",
       "return layout.NO_BUCKETS if value is None else int(value)", "return layout.NO_BUCKETS"),
    _m("p157-hash-encoded-name", "157", "both", "the bucket hashes the URL-encoded local name",
       "reference_broker.metadata.layout:managed_ledger_path", "{bucket_of(topic.local_name, buckets)}",
       "{bucket_of(topic.encoded_local_name, buckets)}"),
    _m("p157-partition-hash-base-name", "157", "both", "a partition's bucket hashes its partitioned base name",
       "reference_broker.metadata.layout:managed_ledger_path", "{bucket_of(topic.local_name, buckets)}",
       "{bucket_of(topic.partitioned_base.local_name, buckets)}"),
    _m("p157-max-topics-unbucketed", "157", "rest", "maxTopicsPerNamespace counts the namespace folder, not the buckets",
       f"{CT}._check_max_topics", "for child in self._ledger_children(ns, topic.domain)",
       "for child in self.store.children(layout.managed_ledgers_dir(ns, topic.domain))"),
    # -- PIP-35 ---------------------------------------------------------------------------------------
    _m("p35-no-flag10", "35", "binary", "CONNECTED does not advertise supports_batch_lookup",
       f"{SVC}.handle_Connect", '"supports_batch_lookup": True', '"supports_batch_lookup": False'),
    _m("p35-batch-drops-unknown", "35", "both", "batch lookup drops topics of unknown namespaces instead of failing them",
       f"{LS}:resolve_batch", "return BatchAnswer(entries=entries)",
       "return BatchAnswer(entries=[e for e in entries if not (e.group is not None and e.error is not None)])"),
    _m("p35-batch-requested-always", "35", "both", "every entry echoes the requested spelling",
       f"{LS}:expand", "spelling = None if raw == name else raw", "spelling = raw"),
    _m("p35-batch-no-expansion", "35", "both", "a partitioned name is not expanded to its partitions",
       f"{LS}:expand", "partitions = 0 if is_partition else core._partitions_of(topic)", "partitions = 0"),
    _m("p35-batch-limit-off-by-one", "35", "both", "a batch of exactly maxBatchLookupTopics names is refused",
       f"{LS}:resolve_batch", "if len(names) > limit:", "if len(names) >= limit:"),
    _m("p35-batch-invalid-dropped", "35", "both", "an invalid name is dropped instead of a Failed entry",
       f"{LS}:expand", "entries[raw] = Entry(raw, None, error=InvalidTopicName(str(exc)))\n            continue",
       "continue"),
    _m("p35-batch-empty-refused", "35", "both", "an empty batch is refused instead of answering zero entries",
       f"{LS}:resolve_batch", "if len(names) > limit:", "if not names or len(names) > limit:"),
    _m("p35-redirect-not-authoritative", "35", "binary", "LOOKUP redirects are not authoritative",
       f"{LS}:handle_lookup", "brokerServiceUrl=owner.broker_url, authoritative=True)",
       "brokerServiceUrl=owner.broker_url, authoritative=core.cluster.is_self(owner))"),
    _m("p35-batch-first-bundle", "35", "both", "batch lookup places every topic in the first bundle",
       f"{LS}:resolve_batch", "index = bisect_right(lowers, crc32(entry.topic.encode(\"utf-8\"))) - 1", "index = 0"),
    _m("p35-bundle-hash-local-name", "35", "both", "single lookups hash the local name, not the full name",
       "reference_broker.bundles:topic_hash", 'zlib.crc32(str(topic).encode("utf-8"))',
       'zlib.crc32(getattr(topic, "local_name", str(topic)).encode("utf-8"))'),
    _m("p35-rest-batch-no-existence-check", "35", "rest",
       "the REST batch skips the single REST lookup's existence check (Connect where the lookup is 404)",
       f"{LS}:rest_batch", "core.lookup(entry.topic)", "core.lookup(entry.topic, check_existence=False)"),
    _m("p35-rest-batch-no-reason", "35", "rest", "REST batch error entries lack the reason",
       f"{LS}:rest_batch", 'value = {"error": entry.error.server_error, "reason": entry.error.reason}',
       'value = {"error": entry.error.server_error}'),
    # -- token authentication and authorization (spec/pip344_auth.yaml: PIP-344's lookups) --------------
    _m("auth-bin-any-token", "344", "binary", "CONNECT with a token accepts it without checking its signature",
       "reference_broker.security:Security.authenticate_connect",
       'return self.verifier.role_of(data.decode("utf-8", errors="replace").strip())', 'return "superuser"'),
    _m("auth-http-no-credentials", "344", "rest", "an HTTP request without a token gets the anonymous super-user",
       "reference_broker.security:Security.authenticate_http",
       'raise AuthenticationFailed("Authentication token has to be passed with Bearer prefix")', 'return "superuser"'),
    _m("authz-any-role-tenant-admin", "344", "both", "every authenticated role counts as an admin of every tenant",
       "reference_broker.security:Security.tenant_decision", "return Decision(role in admins)", "return Decision(True)"),
)

BY_NAME = {m.name: m for m in MUTANTS}


class MutantError(Exception):
    """A variant whose ``old`` is not in its function exactly once, or an unknown name."""


def get(name: str) -> Mutant:
    try:
        return BY_NAME[name]
    except KeyError:
        raise MutantError(f"unknown mutant {name!r}; known: {', '.join(sorted(BY_NAME))}") from None
