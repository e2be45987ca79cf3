"""What is mutated, with which operators, and which conformance runs judge each module.

- only decision code is mutated (``MODULES``): the modules below, and in the three large modules
  that also hold plumbing (the binary connection's command handlers, topic and namespace
  operations), only the functions that decide a PIP's answers. Left out on purpose:
  ``bundles.py`` (the ranges and the topic hash behind PIP-35's owners are our decisions B1-B3 in
  docs/pip35-decisions.md, which no row states: PIP-35's rows check relations that hold for any
  assignment every broker agrees on, and the model has no bundles),
  ``topics/persistent_stats.py`` (the stats of persistent topics: PIP-2's stats rows read
  non-persistent topics only), ``limits.py`` (connection limits: no PIP states them, so every
  mutant would be out of scope), the metadata stores (storage, not a PIP's decision),
  ``server.py``/``binary_connection.py`` (framing and sockets: the codec's own tests cover them),
  ``security.py`` (token auth, the project's own rows, not one of the four PIPs).
- a module's ``runs`` (``Module.runs``) are conformance runs, tried in order, each one
  ``python -m conformance run --target T --pip N... -x``; the first run that fails kills the
  mutant. The first run names the PIP whose cases most likely catch the module's mistakes, so a
  killed mutant costs one short run and only a survivor pays for all of them.
- the operators (``OPERATORS``) are a fixed list of cosmic-ray's: comparisons negated and moved
  across their boundary, ``and``/``or`` swapped, ``not`` added to and removed from conditions,
  booleans flipped, numbers moved by one, exception handlers disabled, loops run zero times,
  ``break`` and ``continue`` swapped, ``+``/``-`` swapped, set and dict union swapped with
  intersection. cosmic-ray's other operators make every binary operator into every other one,
  which multiplies the mutants without adding kinds of mistake a person makes in a broker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

REFERENCE = "reference"
CLUSTER = "reference-cluster"  # PIP-35: owners and redirects need several brokers


@dataclass(frozen=True)
class Run:
    target: str
    pips: tuple[str, ...]


@dataclass(frozen=True)
class Module:
    path: str                                  # relative to the repository root
    runs: tuple[Run, ...]
    functions: Optional[tuple[str, ...]] = None  # qualified names; None: the whole module


def _runs(*runs: tuple[str, tuple[str, ...]]) -> tuple[Run, ...]:
    return tuple(Run(target, pips) for target, pips in runs)


MODULES: tuple[Module, ...] = (
    # Auto-creation and partitioned metadata (PIP-344, whose rows cover both domains).
    Module("reference_broker/autocreation.py", _runs((REFERENCE, ("344",)))),
    # Lookups, redirects and batch lookup.
    Module("reference_broker/lookup_service.py", _runs((CLUSTER, ("35",)), (REFERENCE, ("344",)))),
    # Non-persistent dispatch, drops and their receipts, and the stats that count them (PIP-2).
    Module("reference_broker/topics/non_persistent.py", _runs((REFERENCE, ("2",)))),
    # The binary protocol's decisions: feature flags, field 6, lookups, listing, non-persistent sends.
    Module("reference_broker/commands.py", _runs((REFERENCE, ("344", "2")), (CLUSTER, ("35",))),
           functions=("ServerCnx.handle_Connect", "ServerCnx.handle_PartitionedMetadata",
                      "ServerCnx._partitioned_metadata_failed", "ServerCnx.handle_Lookup",
                      "ServerCnx.handle_BatchLookup", "ServerCnx.handle_GetTopicsOfNamespace",
                      "ServerCnx._topics_of_namespace_answer", "ServerCnx._send_non_persistent",
                      "ServerCnx._complete_non_persistent")),
    # Namespaces and their policies: the override, bucket counts (PIP-157).
    Module("reference_broker/core_namespaces.py", _runs((REFERENCE, ("344", "157"))),
           functions=("_validate_topic_buckets", "parse_namespace", "NamespaceOps.namespace_exists",
                      "NamespaceOps.get_policies", "NamespaceOps._policies_or_none", "NamespaceOps.create_namespace",
                      "NamespaceOps._normalize_policies", "NamespaceOps.delete_namespace", "NamespaceOps._buckets_of",
                      "NamespaceOps.get_number_of_topic_buckets", "NamespaceOps.set_number_of_topic_buckets",
                      "NamespaceOps.set_auto_topic_creation_override", "NamespaceOps.get_auto_topic_creation_override",
                      "NamespaceOps.remove_auto_topic_creation_override", "NamespaceOps._namespace_for_topic")),
    # Topics: existence, partitioned metadata and its auto-creation, listing, lookups' existence checks;
    # PIP-2's rows attach producers and consumers and list non-persistent topics through the same code.
    Module("reference_broker/core_topics.py", _runs((REFERENCE, ("344", "157")), (REFERENCE, ("2",))),
           functions=("parse_topic", "TopicOps._partitions_of", "TopicOps._non_partitioned_exists",
                      "TopicOps.topic_existence", "TopicOps.topic_exists", "TopicOps.is_allow_auto_topic_creation",
                      "TopicOps.get_partitioned_metadata", "TopicOps._create_default_partitioned_metadata",
                      "TopicOps._check_max_topics", "TopicOps._refuse_partition_suffix",
                      "TopicOps.create_partitioned_topic", "TopicOps._max_existing_partition_index",
                      "TopicOps.delete_partitioned_topic", "TopicOps.create_non_partitioned_topic",
                      "TopicOps.delete_topic", "TopicOps.list_topics", "TopicOps.topics_of_namespace",
                      "TopicOps.list_partitioned_topics", "TopicOps.ensure_topic_for_attach", "TopicOps.lookup",
                      "TopicOps._exists_for_lookup")),
)

_COMPARISONS = ("Eq_NotEq", "NotEq_Eq", "Lt_LtE", "Lt_GtE", "LtE_Lt", "LtE_Gt", "Gt_GtE", "Gt_LtE", "GtE_Gt",
                "GtE_Lt", "Is_IsNot", "IsNot_Is")
OPERATORS: tuple[str, ...] = (
    *(f"core/ReplaceComparisonOperator_{pair}" for pair in _COMPARISONS),
    "core/ReplaceAndWithOr", "core/ReplaceOrWithAnd", "core/AddNot", "core/ReplaceUnaryOperator_Delete_Not",
    "core/ReplaceTrueWithFalse", "core/ReplaceFalseWithTrue", "core/NumberReplacer", "core/ExceptionReplacer",
    "core/ZeroIterationForLoop", "core/ReplaceBreakWithContinue", "core/ReplaceContinueWithBreak",
    "core/ReplaceBinaryOperator_Add_Sub", "core/ReplaceBinaryOperator_Sub_Add",
    "core/ReplaceBinaryOperator_BitOr_BitAnd", "core/ReplaceBinaryOperator_BitAnd_BitOr",
)
# NumberReplacer offers n+1 and n-1 for every number; n+1 alone moves a limit across its boundary,
# and the comparison operators already move the comparisons the other way.
ONLY_INDEX = {"core/NumberReplacer": 0}


def module(path: str) -> Module:
    for entry in MODULES:
        if entry.path == path:
            return entry
    raise KeyError(f"no module {path!r} in the mutation scope; known: {', '.join(m.path for m in MODULES)}")
