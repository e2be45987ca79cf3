"""The fuzzer's vocabulary: every operation family a generated sequence may contain.

``RULES`` lists each family with the capabilities it needs (``admin``: an admin REST API;
``explicit``: tenants and namespaces are created, not implicit; ``client``/``client-http``: the
official client with that service URL) and the values each argument is drawn from; a target gets
the families its capabilities allow, with api choices narrowed the same way (``rules_for``).

Sequences are independent: every sequence gets fresh names (``Names.fresh``): namespace ``{ns}``
= ``public/c<8 hex>``, a fresh tenant ``{tenant}`` = ``c<8 hex>-t`` and a second namespace
``{tenant}/n2``, so a sequence depends on nothing another one did and any candidate program can be
re-run while it shrinks.

A family (``OpRule``) builds its operation from the names and drawn arguments only; the same
vocabulary serves Hypothesis (machine.py, one rule per family) and plain seeded draws
(``random_program``, diff.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

from conformance import generated
from conformance.execute import new_namespace
from model import ops as model_ops

ERA = "pip344"

BASES = ("t", "u", "v-DLQ")
PARTITION_NAMES = ("t-partition-0", "t-partition-1", "u-partition-2")
ANY_LOCALS = BASES + PARTITION_NAMES
DOMAINS = ("persistent", "non-persistent")
SLOTS = ("ns", "ns2")
CONFIGS = (
    ("allowAutoTopicCreation", "false"), ("allowAutoTopicCreation", "true"),
    ("allowAutoTopicCreationType", "partitioned"), ("allowAutoTopicCreationType", "non-partitioned"),
    ("defaultNumPartitions", "1"), ("defaultNumPartitions", "3"),
    ("maxNumPartitionsPerPartitionedTopic", "0"), ("maxNumPartitionsPerPartitionedTopic", "2"),
    ("enableNonPersistentTopics", "false"),
)
OVERRIDE_OFF = {"allowAutoTopicCreation": False, "topicType": "non-partitioned"}
OVERRIDE_PARTITIONED = {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 2}
OVERRIDE_NON_PARTITIONED = {"allowAutoTopicCreation": True, "topicType": "non-partitioned"}
POLICIES = (
    (),
    (("autoTopicCreationOverride", OVERRIDE_OFF),),
    (("autoTopicCreationOverride", OVERRIDE_PARTITIONED),),
    (("autoTopicCreationOverride", OVERRIDE_NON_PARTITIONED),),
    (("numberOfTopicBuckets", 4),),
    (("numberOfTopicBuckets", 0),),
)
TOPIC_TYPES = ("partitioned", "non-partitioned", "bogus")
COUNTS = (None, 0, 1, 2, 3)
PARTITION_COUNTS = (1, 2, 3, 0, -1, 5)
AUTO_CREATE = (None, True, False)
CONSUMER_SHAPES = (
    (("s", "Exclusive", 5),),
    (),
    (("s", "Exclusive", 1),),
    (("s", "Shared", 2), ("s", "Shared", 1)),
    (("s", "Failover", 3),),
    (("a", "Exclusive", 5), ("b", "Shared", 0)),
)
BURSTS = ((1,), (3,), (1, 1), (2, 3))


@dataclass(frozen=True)
class Names:
    ns: str
    tenant: str

    @property
    def ns2(self) -> str:
        return f"{self.tenant}/n2"

    def slot(self, which: str) -> str:
        return self.ns if which == "ns" else self.ns2

    def topic(self, domain: str, which: str, local: str) -> str:
        return f"{domain}://{self.slot(which)}/{local}"

    def placeholders(self) -> dict[str, str]:
        """concrete name -> placeholder, as generated.fill reads them."""
        return {self.ns: generated.NS, self.tenant: generated.TENANT}

    @classmethod
    def fresh(cls) -> "Names":
        ns = new_namespace()
        return cls(ns, f"{ns.split('/', 1)[1]}-t")


@dataclass(frozen=True)
class OpRule:
    """One operation family: ``build(names, **args) -> op or None``."""
    name: str
    needs: frozenset
    args: Callable[[frozenset], dict]     # capabilities -> {arg: values}
    build: Callable[..., Any]
    weight: int = 4                       # relative frequency in random_program; slow rules are rarer


def _apis(caps: frozenset) -> tuple:
    return ("binary", "rest") if "admin" in caps else ("binary",)


def _transports(caps: frozenset) -> tuple:
    return ("binary", "http") if "client-http" in caps else ("binary",)


def _slots(caps: frozenset) -> tuple:
    return SLOTS


def _pubsub(n: Names, domain, which, local, consumers, bursts, sends_before, flow_after, position, close_after,
            api="binary"):
    return model_ops.PubSub(n.topic(domain, which, local), consumers=consumers, bursts=bursts,
                            sends_before=sends_before, flow_after=flow_after if api == "binary" else 0,
                            initial_position=position, close_after=close_after, api=api)


def _pip157_rules() -> list[OpRule]:
    """PIP-157 operations, as far as model/ops.py defines them."""
    rules = []
    for cls_name, extra in (("GetNumberOfTopicBuckets", {}), ("SetNumberOfTopicBuckets", {"buckets": (4, 1, None)}),
                            ("RemoveNumberOfTopicBuckets", {})):
        cls = getattr(model_ops, cls_name, None)
        if cls is None:
            continue
        fields = set(cls.__dataclass_fields__)
        values = {k: vals for k, vals in extra.items() if k in fields}

        def build(n, which, _cls=cls, **kw):
            return _cls(n.slot(which), **kw)
        rules.append(OpRule(cls_name, frozenset({"admin"}), lambda caps, _v=values: {"which": SLOTS, **_v}, build, 2))
    layout = getattr(model_ops, "ReadTopicLayout", None)
    if layout is not None:
        fields = list(layout.__dataclass_fields__)
        if fields and fields[0] == "topic":
            rules.append(OpRule("ReadTopicLayout", frozenset({"admin"}),
                                lambda caps: {"which": SLOTS, "local": ANY_LOCALS},
                                lambda n, which, local: layout(n.topic("persistent", which, local)), 2))
        elif fields and fields[0] == "namespace":
            rules.append(OpRule("ReadTopicLayout", frozenset({"admin"}), lambda caps: {"which": SLOTS},
                                lambda n, which: layout(n.slot(which)), 2))
    return rules


def _pip35_rules() -> list[OpRule]:
    """PIP-35 batch lookups, as far as model/ops.py defines them: a few names each, some partitioned,
    repeated, invalid or in a missing namespace."""
    cls = getattr(model_ops, "BatchLookup", None)
    if cls is None:
        return []
    shapes = (("t",), ("t", "u"), ("t", "t"), ("t-partition-1", "u"), ("bad name",), ())

    def build(n, api, domain, which, shape):
        topics = tuple(local if " " in local else n.topic(domain, which, local) for local in shape)
        return cls(topics, api)
    return [OpRule("batch_lookup", frozenset(), lambda caps: {"api": _apis(caps), "domain": DOMAINS,
                                                             "which": SLOTS, "shape": shapes}, build, 3)]


RULES: list[OpRule] = [
    OpRule("set_config", frozenset({"admin"}), lambda caps: {"kv": CONFIGS},
           lambda n, kv: model_ops.SetBrokerConfig(*kv), 2),
    OpRule("create_tenant", frozenset({"admin", "explicit"}), lambda caps: {},
           lambda n: model_ops.CreateTenant(n.tenant), 2),
    OpRule("create_namespace", frozenset({"admin", "explicit"}), lambda caps: {"which": SLOTS, "policies": POLICIES},
           lambda n, which, policies: model_ops.CreateNamespace(n.slot(which), policies), 3),
    OpRule("delete_namespace", frozenset({"admin", "explicit"}), lambda caps: {"which": SLOTS},
           lambda n, which: model_ops.DeleteNamespace(n.slot(which)), 2),
    OpRule("set_override", frozenset({"admin"}),
           lambda caps: {"which": SLOTS, "allow": (True, False), "kind": TOPIC_TYPES, "count": COUNTS},
           lambda n, which, allow, kind, count: model_ops.SetAutoTopicCreation(n.slot(which), allow, kind, count), 3),
    OpRule("remove_override", frozenset({"admin"}), lambda caps: {"which": SLOTS},
           lambda n, which: model_ops.RemoveAutoTopicCreation(n.slot(which)), 2),
    OpRule("create_partitioned", frozenset({"admin"}),
           lambda caps: {"domain": DOMAINS, "which": SLOTS, "local": BASES + ("t-partition-0",),
                         "count": PARTITION_COUNTS},
           lambda n, domain, which, local, count: model_ops.CreatePartitionedTopic(n.topic(domain, which, local), count)),
    OpRule("create_non_partitioned", frozenset(), lambda caps: {"domain": DOMAINS, "which": SLOTS, "local": BASES},
           lambda n, domain, which, local: model_ops.CreateNonPartitionedTopic(n.topic(domain, which, local))),
    OpRule("delete_partitioned", frozenset({"admin"}), lambda caps: {"domain": DOMAINS, "which": SLOTS, "local": BASES},
           lambda n, domain, which, local: model_ops.DeletePartitionedTopic(n.topic(domain, which, local)), 2),
    OpRule("delete_topic", frozenset({"admin"}), lambda caps: {"domain": DOMAINS, "which": SLOTS, "local": ANY_LOCALS},
           lambda n, domain, which, local: model_ops.DeleteTopic(n.topic(domain, which, local)), 2),
    OpRule("partitioned_metadata", frozenset(),
           lambda caps: {"api": _apis(caps), "auto": AUTO_CREATE, "domain": DOMAINS, "which": SLOTS,
                         "local": ANY_LOCALS},
           lambda n, api, auto, domain, which, local: model_ops.GetPartitionedMetadata(
               n.topic(domain, which, local), api, auto), 8),
    OpRule("partitions_for_topic", frozenset({"client"}),
           lambda caps: {"transport": _transports(caps), "domain": DOMAINS, "which": SLOTS, "local": ANY_LOCALS},
           lambda n, transport, domain, which, local: model_ops.GetPartitionsForTopic(
               n.topic(domain, which, local), transport), 2),
    OpRule("list_topics", frozenset(), lambda caps: {"api": _apis(caps), "domain": DOMAINS, "which": SLOTS},
           lambda n, api, domain, which: model_ops.ListTopics(n.slot(which), api, domain), 4),
    OpRule("list_partitioned", frozenset({"admin"}), lambda caps: {"domain": DOMAINS, "which": SLOTS},
           lambda n, domain, which: model_ops.ListPartitionedTopics(n.slot(which), domain), 3),
    OpRule("lookup", frozenset(), lambda caps: {"api": _apis(caps), "domain": DOMAINS, "which": SLOTS,
                                                "local": ANY_LOCALS},
           lambda n, api, domain, which, local: model_ops.Lookup(n.topic(domain, which, local), api), 3),
    OpRule("handshake", frozenset(), lambda caps: {}, lambda n: model_ops.Handshake(), 2),
    OpRule("produce_consume", frozenset({"client"}),
           lambda caps: {"transport": ("binary",), "domain": DOMAINS, "local": BASES, "count": (1, 3)},
           lambda n, transport, domain, local, count: model_ops.ProduceConsume(
               n.topic(domain, "ns", local), count, transport), 1),
    OpRule("pub_sub", frozenset(),
           lambda caps: {"domain": ("non-persistent", "persistent"), "which": ("ns",), "local": BASES + ("t-partition-0",),
                         "consumers": CONSUMER_SHAPES, "bursts": BURSTS, "sends_before": (0, 1),
                         "flow_after": (0, 2), "position": ("Latest", "Earliest"), "close_after": (False, True)},
           _pubsub, 4),
    OpRule("pub_sub_client", frozenset({"client"}),
           lambda caps: {"domain": ("non-persistent",), "which": ("ns",), "local": BASES,
                         "consumers": ((("s", "Exclusive", 5),), (("s", "Shared", 3),)), "bursts": ((1,), (1, 1)),
                         "sends_before": (0,), "flow_after": (0,), "position": ("Latest",), "close_after": (True,)},
           lambda n, **kw: _pubsub(n, api="client", **kw), 1),
    OpRule("bad_command", frozenset(),
           lambda caps: {"command": model_ops.BAD_COMMANDS, "domain": ("non-persistent", "persistent"), "local": BASES},
           lambda n, command, domain, local: model_ops.BadCommand(n.topic(domain, "ns", local), command), 1),
    OpRule("stats", frozenset({"admin"}),
           lambda caps: {"kind": ("GetTopicStats", "GetInternalStats", "GetPartitionedStats"), "local": BASES},
           lambda n, kind, local: getattr(model_ops, kind)(n.topic("non-persistent", "ns", local)), 2),
    *_pip157_rules(),
    *_pip35_rules(),
]


def capabilities(target) -> frozenset:
    caps = {"client"}
    if target.has_admin:
        caps |= {"admin", "client-http"}
    if not target.implicit_namespaces:
        caps.add("explicit")
    return frozenset(caps)


def rules_for(caps: frozenset) -> list[OpRule]:
    return [r for r in RULES if r.needs <= caps]


def initial_ops(names: Names, caps: frozenset, policies=()) -> list:
    """What every example starts with: its namespace (and, without admin, the second one too)."""
    if "explicit" in caps:
        return [model_ops.CreateNamespace(names.ns, policies)]
    return [model_ops.CreateTenant(names.tenant), model_ops.CreateNamespace(names.ns),
            model_ops.CreateNamespace(names.ns2)]


def random_program(rng: random.Random, caps: frozenset, names: Names, length: int) -> list:
    """A sequence drawn from the same vocabulary without Hypothesis (diff.py)."""
    rules = rules_for(caps)
    program = initial_ops(names, caps, rng.choice(POLICIES[:4]) if "explicit" in caps else ())
    for _ in range(length):
        chosen = rng.choices(rules, weights=[r.weight for r in rules])[0]
        args = {k: rng.choice(vals) for k, vals in chosen.args(caps).items()}
        op = chosen.build(names, **args)
        if op is not None:
            program.append(op)
    return program
