"""Generated operation sequences against a live target, compared step by step with the model.

A Hypothesis ``RuleBasedStateMachine`` whose rules are the model's operations: each rule builds
one operation, applies it to the model (``model.machine.apply``) and performs it on the target
through the harness's routing (stepper.py), and the two outcomes must be equal.

Rule 1 (independence): every example (sequence) gets fresh names: namespace ``{ns}`` =
        ``public/c<8 hex>``, a fresh tenant ``{tenant}`` = ``c<8 hex>-t`` and a second namespace
        ``{tenant}/n2``; the target is configured back to Pulsar's defaults and the drivers reset
        before it (stepper.Stepper.begin). So an example depends on nothing another one did, and
        Hypothesis can re-run any candidate program while it shrinks.
Rule 2 (vocabulary): ``RULES`` lists every operation family with the capabilities it needs
        (``admin``: an admin REST API; ``explicit``: tenants and namespaces are created, not
        implicit; ``client``/``client-http``: the official client with that service URL) and the
        values each argument is drawn from. A target gets the rules its capabilities allow, with
        api choices narrowed the same way. Operations the model refuses to settle
        (ModelUsageError) are skipped, not performed; a stand-in for the admin API (a PRODUCER
        creating a topic) is used only where the model expects Done (stepper.py Rule 3).
Rule 3 (shrinking on the target): a disagreement raises ``Divergence`` subclassed per signature
        (operation variant, expected kind, actual kind), so Hypothesis keeps distinct
        divergences apart (``report_multiple_bugs``) and shrinks each by re-running candidate
        programs on the live target. Every failing program seen is recorded; the smallest per
        signature is replayed once more as an ordinary case (generated.py) to confirm it, then
        saved under spec/generated/ with the seed, steps, expected and actual outcomes.
Rule 4 (bounded): no Hypothesis deadline (one step is bounded by the drivers' timeout, Rule 3
        of drivers/base.py); instead a wall-clock budget: after ``budget_s`` no new example
        starts (they are rejected at once), shrinking stops after ``shrink_budget_s`` (also
        Hypothesis's own shrink limit), and a step that gets no answer is ``indefinite``: it ends
        its example and is reported; an operation variant unanswered ``HANG_LIMIT`` times is not
        sent again in that run (a hanging target costs at most that many timeouts per variant).
Rule 5 (reports): per target, sequences run, steps, divergences (signature, minimal program,
        saved case), indefinite steps, and model coverage (coverage.py).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import random
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from hypothesis import HealthCheck, Phase, Verbosity, reject, settings, strategies as st
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from conformance import generated
from conformance import verdicts as v
from conformance.coverage import Coverage, op_variant, outcome_kind
from conformance.errors import Indefinite, TargetError, Unsupported
from conformance.execute import TargetSession, new_namespace
from conformance.generated import natural_route
from conformance.stepper import ANSWERED, BROKEN, INDEFINITE, UNSUPPORTED, Stepper
from model import ops as model_ops
from model.errors import ModelUsageError
from model.machine import apply, initial_state
from model.ops import op_from_json
from model.outcomes import Done, outcome_to_json

ERA = "pip344"
DEFAULT_STEPS = 10
DEFAULT_BUDGET_S = 600.0
DEFAULT_SHRINK_BUDGET_S = 120.0
HANG_LIMIT = 2   # an op variant left unanswered this often is not sent again in the run (Rule 4)

# -- the vocabulary (Rule 2) -----------------------------------------------------------------------

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
        """concrete name -> placeholder (generated.py Rule 1)."""
        return {self.ns: generated.NS, self.tenant: generated.TENANT}

    @classmethod
    def fresh(cls) -> "Names":
        ns = new_namespace()
        return cls(ns, f"{ns.split('/', 1)[1]}-t")


@dataclass(frozen=True)
class OpRule:
    """One operation family (Rule 2): ``build(names, **args) -> op or None``."""
    name: str
    needs: frozenset
    args: Callable[[frozenset], dict]     # capabilities -> {arg: values}
    build: Callable[..., Any]
    weight: int = 4                       # relative frequency; slow rules are rarer


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


# -- divergences (Rule 3) ------------------------------------------------------------------------------


class Divergence(AssertionError):
    signature = ""


_DIVERGENCE_CLASSES: dict[str, type] = {}


def divergence_class(signature: str) -> type:
    cls = _DIVERGENCE_CLASSES.get(signature)
    if cls is None:
        cls = _DIVERGENCE_CLASSES[signature] = type("Divergence", (Divergence,), {"signature": signature})
    return cls


def signature_of(op, expected, actual) -> str:
    """Operation variant (the domain left out: one case per behaviour is enough), expected and actual kinds."""
    variant = op_variant(op).replace(",non-persistent]", "]").replace(",persistent]", "]")
    variant = variant.replace("[non-persistent]", "").replace("[persistent]", "")
    return f"{variant}: expected {outcome_kind(expected)}, got {outcome_kind(actual)}"


def outcome_json(outcome) -> Any:
    if outcome is None:
        return None
    if isinstance(outcome, dict):
        return outcome
    try:
        return outcome_to_json(outcome)
    except Exception:  # noqa: BLE001 - an outcome type the serialiser does not know yet
        return {"kind": type(outcome).__name__, "repr": repr(outcome)}


@dataclass
class Finding:
    signature: str
    steps: list                 # JSON ops with placeholders
    expected: list
    actual: list
    seen: int = 1
    round: int = 0                    # the fuzz round that found it
    confirmed: Optional[str] = None   # verdict of the replay as a case
    replay_reason: str = ""
    case_id: str = ""
    path: str = ""

    def size(self) -> tuple:
        return len(self.steps), len(json.dumps(self.steps, sort_keys=True))


@dataclass
class FuzzContext:
    """Shared by every example of one run on one target."""
    session: TargetSession
    stepper: Stepper
    caps: frozenset
    coverage: Coverage
    seed: int
    budget_s: float
    shrink_budget_s: float
    started: float = field(default_factory=time.monotonic)
    sequences: int = 0          # examples that ran (completed or diverged)
    completed: int = 0
    steps: int = 0
    rejected: dict = field(default_factory=dict)
    findings: dict = field(default_factory=dict)   # signature -> Finding (smallest program)
    indefinite: list = field(default_factory=list)
    broken: list = field(default_factory=list)
    first_failure_at: Optional[float] = None
    budget_hit: bool = False
    known: tuple = ()           # substrings of signatures acknowledged as known divergences
    known_seen: dict = field(default_factory=dict)
    hangs: dict = field(default_factory=dict)   # op variant -> steps that got no answer
    round: int = 0              # fuzz round: seed + round seeds Hypothesis

    def is_known(self, signature: str) -> bool:
        return any(k in signature for k in self.known)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def may_start_example(self) -> bool:
        if self.first_failure_at is None:
            ok = self.elapsed() < self.budget_s
        else:
            ok = self.elapsed() < max(self.budget_s, self.first_failure_at + self.shrink_budget_s)
        if not ok:
            self.budget_hit = True
        return ok

    def note_reject(self, why: str) -> None:
        self.rejected[why] = self.rejected.get(why, 0) + 1

    def record_failure(self, signature: str, program: list, names: Names) -> None:
        if self.first_failure_at is None:
            self.first_failure_at = self.elapsed()
        steps = generated.steps_json([p[0] for p in program], names.placeholders())
        finding = Finding(signature, steps,
                          [generated.fill(outcome_json(p[1]), names.placeholders()) for p in program],
                          [generated.fill(outcome_json(p[2]), names.placeholders()) for p in program])
        finding.round = self.round
        known = self.findings.get(signature)
        if known is None:
            self.findings[signature] = finding
        else:
            known.seen += 1
            if finding.size() < known.size():
                finding.seen = known.seen
                self.findings[signature] = finding


class TargetMachine(RuleBasedStateMachine):
    """Rules are attached by ``machine_class`` for one target's capabilities (Rule 2)."""

    ctx: FuzzContext = None  # set on the per-run subclass

    def __init__(self):
        super().__init__()
        self.names: Optional[Names] = None
        self.state = None
        self.program: list = []
        self.counted = False
        self._ok = True

    def _begin(self, policies) -> None:
        ctx = self.ctx
        if not ctx.may_start_example():
            ctx.note_reject("time budget")
            reject()
        self.names = Names.fresh()
        baseline = initial_state({}, ERA).config.to_strings()
        try:
            ctx.stepper.begin(baseline)
        except (Unsupported, Indefinite, TargetError) as exc:
            ctx.note_reject(f"target could not be set up: {getattr(exc, 'reason', exc)}")
            reject()
        self.state = initial_state(baseline, ERA)
        ctx.sequences += 1
        self.counted = True
        for op in initial_ops(self.names, ctx.caps, policies):
            self.do(op)

    def teardown(self):
        if self.counted and self._ok:
            self.ctx.completed += 1

    def _abort(self, why: str):
        self._ok = False
        if self.counted:
            self.ctx.sequences -= 1  # not a sequence that ran: it is reported under rejected
        self.counted = False
        self.ctx.note_reject(why)
        reject()

    def _end_known(self):
        self.known_hit = True
        reject()

    def do(self, op) -> None:
        ctx = self.ctx
        if ctx.elapsed() > ctx.budget_s + ctx.shrink_budget_s + 60:
            self._abort("time budget")  # Rule 4 backstop: never outlive the budget by more than a step
        try:
            new_state, expected = apply(self.state, op)
        except ModelUsageError:
            ctx.coverage.status("skipped-by-model", op)
            return
        role, api = natural_route(op)
        if ctx.hangs.get(op_variant(op), 0) >= HANG_LIMIT:
            ctx.coverage.status("skipped-hangs", op)  # Rule 4: it went unanswered HANG_LIMIT times already
            return
        try:
            _, substitute = ctx.stepper.route(op, role, api, expected)
        except Unsupported:
            ctx.coverage.status("unsupported", op)
            return
        if substitute and expected != Done():
            ctx.coverage.status("stand-in-cannot", op)  # stepper.py Rule 3
            return
        result = ctx.stepper.perform(op, expected=expected, role=role, case_api=api)
        ctx.steps += 1
        if result.status == UNSUPPORTED:
            ctx.coverage.status("unsupported", op)
            return
        if result.status == INDEFINITE:
            ctx.coverage.status("indefinite", op)
            ctx.indefinite.append({"op": op_variant(op), "reason": result.reason})
            ctx.hangs[op_variant(op)] = ctx.hangs.get(op_variant(op), 0) + 1
            self._abort("indefinite step")
        if result.status == BROKEN:
            ctx.coverage.status("broken", op)
            ctx.broken.append({"op": repr(op), "reason": result.reason})
            self._abort("harness error")
        actual = result.actual
        self.program.append((op, expected, actual))
        ctx.coverage.performed(op, expected, actual)
        if actual == expected:
            self.state = new_state
            return
        if result.substitute:
            ctx.coverage.status("stand-in-mismatch", op)
            self._abort("stand-in mismatch")
        signature = signature_of(op, expected, actual)
        earlier = ctx.findings.get(signature)
        if earlier is not None and earlier.round < ctx.round:
            earlier.seen += 1  # found and shrunk in an earlier round (see fuzz)
            self._ok = False
            return self._end_known()
        if ctx.is_known(signature):
            # A divergence the run was told about (--known): counted and reported, never saved.
            ctx.known_seen[signature] = ctx.known_seen.get(signature, 0) + 1
            self._ok = False
            return self._end_known()
        ctx.record_failure(signature, self.program, self.names)
        self._ok = False
        raise divergence_class(signature)(f"{signature}\n  op: {op}\n  expected: {expected!r}\n  actual: {actual!r}")


def machine_class(ctx: FuzzContext) -> type:
    """A TargetMachine subclass bound to ``ctx`` with the rules its target can perform (Rule 2).

    One Hypothesis rule, ``step``, draws which operation family to perform (each as often as its
    weight) and then its arguments: Hypothesis' swarm testing, which enables a random subset of
    rules per example, would otherwise leave most examples without most operations."""
    explicit = "explicit" in ctx.caps
    policies = POLICIES if explicit else ((),)
    # Heaviest first: Hypothesis draws index 0 more often than the others, and shrinks toward it.
    ranked = sorted(rules_for(ctx.caps), key=lambda r: -r.weight)
    weighted = [r for r in ranked for _ in range(r.weight)]
    pools = {r.name: sorted(r.args(ctx.caps).items()) for r in rules_for(ctx.caps)}

    @initialize(policies=st.sampled_from(policies))
    def begin(self, policies):
        self._begin(policies)

    @rule(data=st.data())
    def step(self, data):
        op_rule = data.draw(st.sampled_from(weighted), label="operation")
        kwargs = {name: data.draw(st.sampled_from(values), label=name) for name, values in pools[op_rule.name]}
        op = op_rule.build(self.names, **kwargs)
        if op is not None:
            self.do(op)

    attrs: dict[str, Any] = {"ctx": ctx, "begin": begin, "step": step}
    return type(f"TargetMachine_{ctx.session.target.name.replace('-', '_').replace(':', '_')}", (TargetMachine,), attrs)


# -- one run on one target -----------------------------------------------------------------------------


@contextlib.contextmanager
def _shrink_limit(seconds: float):
    """Hypothesis stops shrinking after MAX_SHRINKING_SECONDS; ours is the run's shrink budget (Rule 4)."""
    from hypothesis.internal.conjecture import engine

    previous = engine.MAX_SHRINKING_SECONDS
    engine.MAX_SHRINKING_SECONDS = max(1, int(seconds))
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = previous


@dataclass
class FuzzReport:
    target: str
    target_version: str
    seed: int
    examples: int
    sequences: int
    completed: int
    steps: int
    duration_s: float
    budget_s: float
    budget_hit: bool
    rejected: dict
    findings: list
    indefinite: list
    broken: list
    coverage: dict
    error: str = ""
    known_seen: dict = field(default_factory=dict)
    rounds: int = 1

    @property
    def exit_code(self) -> int:
        if self.error or self.broken or self.sequences == 0:
            return v.EXIT_HARNESS
        if self.findings:
            return v.EXIT_FAILED
        if self.indefinite:
            return v.EXIT_INDEFINITE
        return v.EXIT_OK

    def to_json(self) -> dict:
        data = dict(self.__dict__)
        data["findings"] = [dict(f.__dict__) for f in self.findings]
        data["exit_code"] = self.exit_code
        return data

    def lines(self) -> list[str]:
        seeds = f"seed {self.seed}" if self.rounds == 1 else f"seeds {self.seed}..{self.seed + self.rounds - 1}"
        out = [f"fuzz {self.target} ({self.target_version}): {seeds}, {self.sequences} sequences "
               f"({self.completed} without divergence), {self.steps} steps in {self.duration_s:.1f} s "
               f"(budget {self.budget_s:g} s{', reached' if self.budget_hit else ''})"]
        if self.error:
            out.append(f"  error: {self.error}")
        if self.rejected:
            out.append("  rejected examples: " + ", ".join(f"{k} {n}" for k, n in sorted(self.rejected.items())))
        out.append(f"  divergences: {len(self.findings)}")
        if self.known_seen:
            out.append("  known divergences (--known, not saved): " +
                       "; ".join(f"{k} x{n}" for k, n in sorted(self.known_seen.items())))
        for f in self.findings:
            where = f" -> {f.path}" if f.path else ""
            out.append(f"  - {f.signature}: {len(f.steps)} step(s), seen {f.seen}x, replay {f.confirmed or '-'}{where}")
            for step, exp, act in zip(f.steps, f.expected, f.actual):
                out.append(f"      {json.dumps(step, sort_keys=True)}")
            out.append(f"      expected {json.dumps(f.expected[-1], sort_keys=True)}")
            out.append(f"      actual   {json.dumps(f.actual[-1], sort_keys=True)}")
        if self.indefinite:
            out.append(f"  indefinite steps: {len(self.indefinite)} (first: {self.indefinite[0]['op']}: "
                       f"{self.indefinite[0]['reason']})")
        if self.broken:
            out.append(f"  harness errors: {len(self.broken)} (first: {self.broken[0]['reason']})")
        return out


def _names_map(names: Names) -> dict[str, str]:
    return {generated.NS: names.ns, generated.TENANT: names.tenant}


def try_program(ctx: "FuzzContext", steps: list, signature: str):
    """Run ``steps`` (JSON with placeholders) on fresh names; (expected, actual) JSON lists when every
    step but the last agrees with the model and the last disagrees with ``signature``; else None."""
    names = Names.fresh()
    try:
        ops = [op_from_json(generated.fill(step, _names_map(names))) for step in steps]
        baseline = initial_state({}, ERA).config.to_strings()
        ctx.stepper.begin(baseline)
    except Exception:  # noqa: BLE001 - a candidate that cannot even start is not smaller
        return None
    state = initial_state(baseline, ERA)
    expected_json, actual_json = [], []
    for index, op in enumerate(ops):
        last = index == len(ops) - 1
        try:
            new_state, expected = apply(state, op)
        except ModelUsageError:
            return None
        role, api = natural_route(op)
        try:
            _, substitute = ctx.stepper.route(op, role, api, expected)
        except Unsupported:
            return None
        if substitute and expected != Done():
            return None
        result = ctx.stepper.perform(op, expected=expected, role=role, case_api=api)
        ctx.steps += 1
        if result.status != ANSWERED and not (result.status == "violation" and last):
            return None
        actual = result.actual
        expected_json.append(generated.fill(outcome_json(expected), names.placeholders()))
        actual_json.append(generated.fill(outcome_json(actual), names.placeholders()))
        if not last:
            if actual != expected:
                return None
            state = new_state
        elif actual == expected or result.substitute or signature_of(op, expected, actual) != signature:
            return None
    return expected_json, actual_json


def reduce_finding(ctx: "FuzzContext", finding: Finding, deadline: float) -> Finding:
    """Delta-debug what Hypothesis left: drop one earlier step at a time while the same divergence
    still shows at the last step, each candidate re-run on the live target (Rule 3)."""
    steps = list(finding.steps)
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for index in range(len(steps) - 1):
            if time.monotonic() >= deadline:
                break
            candidate = steps[:index] + steps[index + 1:]
            answer = try_program(ctx, candidate, finding.signature)
            if answer is not None:
                steps = candidate
                finding.steps, (finding.expected, finding.actual) = steps, answer
                improved = True
                break
    return finding


def replay_finding(session: TargetSession, finding: Finding, *, seed: int, era: str = ERA):
    """Rule 3: the finding as a GeneratedCase, run once more like any case; (case, document, verdict)."""
    target = session.target
    doc = generated.to_document(target=target.name, target_version=target.version or "unknown", seed=seed, era=era,
                                steps=finding.steps, expected=finding.expected, actual=finding.actual,
                                signature=finding.signature,
                                found_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    case = generated.from_document(doc, Path(f"<{doc['id']}>"))
    run = session.run_case(case)
    return case, doc, run.verdict


def fuzz(session: TargetSession, *, examples: int = 100, seed: Optional[int] = None, steps: int = DEFAULT_STEPS,
         budget_s: float = DEFAULT_BUDGET_S, shrink_budget_s: float = DEFAULT_SHRINK_BUDGET_S,
         save_dir: Optional[Path] = None, known: tuple = ()) -> FuzzReport:
    """Run up to ``examples`` generated sequences on the session's target (Rules 1-5)."""
    seed = secrets.randbelow(2**31) if seed is None else seed
    started = time.monotonic()
    session.start()
    target = session.target
    coverage = Coverage(target.name)
    if target.start_error:
        return FuzzReport(target.name, target.version or "unknown", seed, examples, 0, 0, 0, 0.0, budget_s, False,
                          {}, [], [], [], coverage.to_json(), error=f"target could not start: {target.start_error}")
    ctx = FuzzContext(session, Stepper(session), capabilities(target), coverage, seed, budget_s, shrink_budget_s,
                      known=tuple(known))
    machine = machine_class(ctx)
    error = ""
    from hypothesis.reporting import with_reporter

    # Rounds (Rule 3): once Hypothesis has found divergences it stops generating soon after (at twice
    # the call count of the last new one), so a run goes on in rounds of seed, seed+1, ... until
    # ``examples`` sequences ran or the budget is spent; a divergence found in an earlier round ends
    # its example as known (counted on its finding) and is not shrunk again.
    while ctx.sequences < examples and ctx.elapsed() < budget_s:
        before = ctx.sequences
        cls = hypothesis_seed(seed + ctx.round)(machine)
        config = settings(max_examples=examples - ctx.sequences, stateful_step_count=steps, deadline=None,
                          database=None, suppress_health_check=list(HealthCheck), report_multiple_bugs=True,
                          derandomize=False, phases=(Phase.explicit, Phase.generate, Phase.shrink),
                          print_blob=False, verbosity=Verbosity.quiet)
        with _shrink_limit(shrink_budget_s), with_reporter(lambda *_: None):
            try:
                run_state_machine_as_test(cls, settings=config)
            except Divergence:
                pass
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 - a group of divergences, Flaky, Unsatisfiable...
                if not _only_divergences(exc):
                    kind = type(exc).__name__
                    if not (ctx.findings or kind in ("Unsatisfiable",) or "Flaky" in kind):
                        error = f"{kind}: {str(exc).splitlines()[0] if str(exc) else ''}"
                        break
        ctx.round += 1
        if ctx.sequences == before:
            break  # nothing ran in this round (budget, or every example rejected): more would not either
    findings = sorted(ctx.findings.values(), key=lambda f: (f.signature,))
    reduce_until = time.monotonic() + shrink_budget_s
    for finding in findings:
        reduce_finding(ctx, finding, reduce_until)
    for finding in findings:
        try:
            case, doc, verdict = replay_finding(session, finding, seed=seed + finding.round)
        except Exception as exc:  # noqa: BLE001 - a finding the case loader cannot take is reported
            finding.confirmed, finding.replay_reason = "broken", f"{type(exc).__name__}: {exc}"
            continue
        finding.confirmed, finding.replay_reason = verdict.verdict, verdict.reason
        finding.case_id = doc["id"]
        if verdict.verdict == v.FAILED and save_dir is not None:
            finding.path = str(generated.save(doc, save_dir))
    return FuzzReport(target.name, target.version or "unknown", seed, examples, ctx.sequences, ctx.completed,
                      ctx.steps, time.monotonic() - started, budget_s, ctx.budget_hit, dict(ctx.rejected), findings,
                      ctx.indefinite, ctx.broken, coverage.to_json(), error, dict(ctx.known_seen), max(ctx.round, 1))


def _only_divergences(exc: BaseException) -> bool:
    if isinstance(exc, Divergence):
        return True
    children = getattr(exc, "exceptions", None)
    return bool(children) and all(_only_divergences(c) for c in children)
