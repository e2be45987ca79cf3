"""Spec rows -> runnable cases: one Case per row x api, bound to a per-case namespace on demand.

- The model computes the expectation of every step (``initial_state(broker_config, era)``, then
  ``apply`` of every step in order, in ``Case.bind``); nothing here types an expected outcome.
- A row is isolated in its own namespace. ``bind(namespace)`` turns the row's local names into
  full names there and prepends the setup steps (namespace, override, topics). Broker settings
  are not steps: ``Case.broker_config`` is what the target must be running with.
- A setup step that the model does not answer with Done means the namespace is not fresh;
  ``bind`` refuses it rather than produce a case that tests its own setup.

Harness contract::

    from conformance.suite import load_cases       # rows' cases and generated ones
    for case in load_cases({"344"}, era="pip344"):
        bound = case.bind("public/c-ab12cd")
        for step in bound.steps:             # roles: "setup", then "action", then "observe"
            assert driver.perform(step.op) == step.expected
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields as dataclass_fields
from typing import Any, Mapping, Optional

from model.errors import ModelUsageError
from model.java_client import JAVA_ERROR_KINDS
from model.client_libraries import LIBRARY_ERROR_KINDS
from model.machine import apply, initial_state, run
from pulsar_naming.names import InvalidName, NamespaceName, TopicName
from model.ops import (
    OPERATION_TYPES, CreateNamespace, CreateNonPartitionedTopic, CreatePartitionedTopic, CreateTenant,
    ListPartitionedTopics, ListTopics, SetAutoTopicCreation, WithCredentials, op_from_json,
)
from model.outcomes import (
    DROPPED, POSITIVE, ZERO, ClientError, ConnectionClosed, Delivered, Done, FeatureFlag, InternalStatsView,
    LookupAnswer, PartitionList, Partitions, PubSubBounds, PubSubResult, RestError, ServerError, TopicLoaded,
    TopicStatsView,
)
from model.refused_names import REST_REFUSAL
from model.state import FrozenMap
from spec.schema import OPERATIONS, Row, load_rows
from spec.versions import parse_range, release_text

UNSET = object()  # bind() without a release: the era's representative one
from conformance.cases_pip157 import PIP157_STATED, pip157_stated_value
from conformance.cases_pip35 import (
    NS, PIP35_STATED, bind_topics, pip35_error_kind, pip35_stated_value)

ROLES = ("setup", "action", "observe")

# spec api -> (operation field the expansion fills, its value)
API_SELECTORS: dict[str, tuple[str, str]] = {
    "rest": ("api", "rest"),
    "binary": ("api", "binary"),
    "client-binary": ("transport", "binary"),
    "client-http": ("transport", "http"),
    # the admin call of a client library (model/client_libraries.py)
    "java-admin": ("library", "java"), "go-admin": ("library", "go"), "rust-admin": ("library", "rust"),
}
# Operations whose selector fills several fields ("api+transport", e.g. PubSub, which two drivers
# perform; "library+transport", PIP-344's client API through each client library): spec api -> fields.
API_TRANSPORT_SELECTORS: dict[str, dict[str, str]] = {
    "binary": {"api": "binary"},
    "client-binary": {"api": "client", "transport": "binary"},
    "client-http": {"api": "client", "transport": "http"},
    **{f"{library}-client-{transport}": {"library": library, "transport": transport}
       for library in ("java", "go", "rust") for transport in ("binary", "http")},
}


@dataclass(frozen=True)
class Step:
    op: Any            # a model.ops operation with full names
    role: str          # "setup" | "action" | "observe"
    expected: Any      # a model.outcomes value, computed by the model


@dataclass(frozen=True)
class BoundCase:
    case: "Case"
    namespace: str     # the namespace the case runs in (its tenant may be the missing one)
    steps: tuple[Step, ...]

    @property
    def action(self) -> Step:
        return next(s for s in self.steps if s.role == "action")

    @property
    def observations(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.role == "observe")


@dataclass(frozen=True)
class Case:
    id: str                       # "<row id>[<api>]"
    row_id: str
    pip: str
    table: str                    # "<feature>/<table name>"
    grade: str
    era: str
    api: str                      # rest | binary | client-binary | client-http
    description: str
    source: tuple[str, ...]
    info: Optional[str]
    broker_config: Mapping[str, str]   # every modelled broker.conf key, defaults overlaid with the row's
    note: Optional[str] = None
    row: Row = field(default=None, compare=False, repr=False)
    releases: Optional[str] = None     # the row's version range (spec/versions.py), if it has one

    def applies_to(self, release) -> Optional[str]:
        """Why this case does not judge a broker of ``release`` (None: it does)."""
        if self.releases and release not in parse_range(self.releases):
            return (f"row judges releases {self.releases}; the target is "
                    f"{'not an Apache Pulsar release' if release is None else release_text(release)}")
        return None

    def bind(self, namespace: str, tenant_missing_name: Optional[str] = None, release=UNSET) -> BoundCase:
        """Concrete steps in ``namespace`` ("tenant/ns", which must not exist on the target yet),
        their expectations computed for a broker of ``release`` (model/releases.py; default: the
        era's representative release).

        Rows whose tenant is missing run in ``<tenant_missing_name>/<ns>``; the default tenant name is
        derived from the namespace (``<ns>-no-tenant``) so it is as fresh as the namespace.
        """
        try:
            given = NamespaceName.parse(namespace)
        except InvalidName as exc:
            raise ValueError(f"Case.bind({namespace!r}): {exc}") from None
        setup = self.row.setup
        if setup.tenant == "missing":
            given = NamespaceName(tenant_missing_name or f"{given.namespace}-no-tenant", given.namespace)
        elif setup.admin_roles:  # a tenant of its own, as fresh as the namespace (model/auth.py)
            given = NamespaceName(f"{given.namespace}-tenant", given.namespace)
        bound_ns = str(given)

        def full(local: str) -> str:
            return f"{setup.domain}://{bound_ns}/{local}"

        ops: list[tuple[str, Any]] = []
        state = initial_state(self.broker_config, self.era) if release is UNSET else \
            initial_state(self.broker_config, self.era, release)
        if setup.namespace_present:
            if given.tenant not in state.tenants:
                ops.append(("setup", CreateTenant(given.tenant, setup.admin_roles)))
            ops.append(("setup", CreateNamespace(bound_ns, setup.policies)))
        if setup.override is not None:
            body = dict(setup.override)
            ops.append(("setup", SetAutoTopicCreation(
                bound_ns, body["allowAutoTopicCreation"], body["topicType"], body.get("defaultNumPartitions"))))
        for topic in setup.topics:
            op = CreatePartitionedTopic(full(topic.name), topic.partitions) if topic.partitions else \
                CreateNonPartitionedTopic(full(topic.name))
            ops.append(("setup", op))
        ops.append(("action", _operation(self.row.operation_json(), self.api, bound_ns, setup.domain, full)))
        for observed in self.row.observe_json():
            ops.append(("observe", _operation(observed, None, bound_ns, setup.domain, full)))

        steps = []
        for role, op in ops:
            state, outcome = apply(state, op)
            if role == "setup" and outcome != Done():
                raise ValueError(
                    f"{self.id}: setup step {op} answers {outcome} in the model; bind the case to a fresh namespace")
            steps.append(Step(op, role, outcome))
        return BoundCase(self, bound_ns, tuple(steps))


def _topic(text: str, namespace: str, full) -> str:
    """A row's ``topic``: a local name in the case's namespace, or, for names Pulsar refuses, the name
    as sent, verbatim when it has a domain and with ``{ns}`` standing for the case's namespace."""
    if NS in text:
        return text.replace(NS, namespace)
    return text if "://" in text else full(text)


def _operation(template: dict, api: Optional[str], namespace: str, domain: str, full) -> Any:
    """A model operation from a row's JSON: full names, the per-case namespace, the api filled."""
    data = dict(template)
    credentials = data.pop("credentials", None)
    if credentials is not None:  # model/auth.py: the action made with other credentials
        inner = _operation(data, api, namespace, domain, full)
        who = {} if credentials == "none" else dict(credentials)
        return WithCredentials(inner, who.get("role"), who.get("token", "valid"))
    shape = OPERATIONS[data["op"]]
    # the per-case names go where the operation's dataclass has a field for them
    fields_of = {f.name for f in dataclass_fields(OPERATION_TYPES[data["op"]])}
    if "topic" in data:
        data["topic"] = _topic(data["topic"], namespace, full)
    if "topics" in fields_of:
        data["topics"] = bind_topics(data.get("topics", ()), namespace, full)
    if "namespace" in fields_of:
        data["namespace"] = namespace
    if "domain" in fields_of:
        data.setdefault("domain", domain)
    if api is not None and shape.selector is not None and "+" in shape.selector:
        fields = API_TRANSPORT_SELECTORS.get(api, {})
        if not fields or not set(fields) <= set(shape.selector.split("+")):
            raise ModelUsageError(f"{data['op']} cannot be performed through {api}")
        data.update(fields)
    elif api is not None and shape.selector is not None:
        key, value = API_SELECTORS[api]
        if key != shape.selector:
            raise ModelUsageError(f"{data['op']} cannot be performed through {api}")
        data[key] = value
    return op_from_json(data)


def cases_of(row: Row) -> list[Case]:
    """One Case per api of ``row``."""
    config = initial_state(dict(row.setup.broker), row.era).config
    broker_config = FrozenMap(config.to_strings(keep=frozenset(dict(row.setup.broker))))
    return [
        Case(id=f"{row.id}[{api}]", row_id=row.id, pip=row.pip, table=row.table, grade=row.grade, era=row.era,
             api=api, description=row.description, source=row.source, info=row.info, broker_config=broker_config,
             note=row.note, row=row, releases=row.releases)
        for api in row.apis
    ]


def row_cases(pips: Optional[set[str]] = None, era: Optional[str] = None) -> list[Case]:
    """The cases of the spec's rows, optionally only some PIPs ({"344"}) and one era ("pip344");
    conformance/suite.py adds the generated sequences to make the whole spec."""
    cases = []
    for row in load_rows():
        if pips is not None and row.pip not in pips:
            continue
        if era is not None and row.era != era:
            continue
        cases.extend(cases_of(row))
    return cases


# -- what a row's `stated` means (spec/README.md, "stated") ------------------------------------------


def error_kind(outcome) -> Optional[str]:
    """The abstract error a source can state, as each API shows it."""
    if isinstance(outcome, RestError) and outcome.status == 404:
        return "not-found"
    if isinstance(outcome, RestError) and outcome.status in (401, 403):  # model/auth.py
        return "not-authenticated" if outcome.reason == "Authentication required" else "not-authorized"
    if isinstance(outcome, ServerError) and outcome.error in ("AuthenticationError", "AuthorizationError"):
        return {"AuthenticationError": "not-authenticated", "AuthorizationError": "not-authorized"}[outcome.error]
    if outcome == RestError(412, REST_REFUSAL) or (isinstance(outcome, ServerError)
                                                   and outcome.error == "InvalidTopicName"):
        return "invalid-name"  # model/refused_names.py
    if isinstance(outcome, RestError) and outcome.status in (409, 412):  # PIP-157 rows
        return {409: "conflict", 412: "precondition-failed"}[outcome.status]
    if isinstance(outcome, RestError) and outcome.status == 503:
        return "service-not-ready"
    if isinstance(outcome, ConnectionClosed):
        return "connection-closed"
    if pip35_error_kind(outcome):
        return pip35_error_kind(outcome)
    if isinstance(outcome, ServerError):
        return {"TopicNotFound": "not-found", "MetadataError": "metadata-error", "NotAllowedError": "not-allowed",
                "ServiceNotReady": "service-not-ready"}.get(outcome.error)
    if isinstance(outcome, ClientError) and outcome.exception in JAVA_ERROR_KINDS:
        return JAVA_ERROR_KINDS[outcome.exception]
    if isinstance(outcome, ClientError) and outcome.exception in LIBRARY_ERROR_KINDS:  # the Go and Rust clients
        return LIBRARY_ERROR_KINDS[outcome.exception]
    if isinstance(outcome, ClientError):
        # The C++-based client shows a binary TopicNotFound as TopicNotFound and every HTTP error
        # status, 404 included, as ConnectError (model/client.py CLIENT_EXCEPTIONS).
        return {"TopicNotFound": "not-found", "ConnectError": "not-found"}.get(outcome.exception)
    return None


def stated_disagreements(bound: BoundCase) -> list[str]:
    """Where the model's expectations contradict what the row's source states (empty = agreement).

    Written from the README's definitions, independently of the model's rules, so that it can
    catch a model that drifts from the source tables.
    """
    row, action = bound.case.row, bound.action
    try:
        topic = TopicName.parse(action.op.topic) if hasattr(action.op, "topic") else None
    except InvalidName:  # a name Pulsar refuses (model/refused_names.py)
        topic = None
    problems = []
    for key, value in row.stated_json().items():
        got = _stated_value(key, value, bound, topic)
        if got != value:
            problems.append(f"{bound.case.id}: source states {key}={value!r}, model gives {got!r} ({action.expected})")
    return problems


def _stated_value(key: str, value, bound: BoundCase, topic: Optional[TopicName]):
    outcome = bound.action.expected
    if key == "partitions":
        if isinstance(outcome, Partitions):
            return outcome.partitions
        if isinstance(outcome, PartitionList):
            names = (str(topic),) if value == 0 else tuple(f"{topic}-partition-{i}" for i in range(value))
            return value if outcome.topics == names else outcome.topics
        return outcome
    if key == "error":
        kind = error_kind(outcome)
        return value if isinstance(value, tuple) and kind in value else kind
    if key == "lookup":
        return "Connect" if outcome == LookupAnswer("Connect", True) else outcome
    if key == "advertised":
        return outcome.advertised if isinstance(outcome, FeatureFlag) else outcome
    if key == "delivered":
        if isinstance(outcome, PubSubResult):
            counts = {_range_count(ranges) for _, ranges in outcome.delivered}
            return counts.pop() if len(counts) == 1 else tuple(_range_count(r) for _, r in outcome.delivered)
        return len(outcome.payloads) if isinstance(outcome, Delivered) else outcome
    if key in ("receipts", "some_dropped", "in_order", "send_errors"):
        return _pubsub_value(key, outcome)
    if key in ("publisher_drops", "subscription_drops", "rate_out_positive", "counters_survive", "nothing_stored",
               "subscription_types"):
        stats = [s.expected for s in bound.observations if isinstance(s.expected, TopicStatsView)]
        if not stats:
            return None
        view = stats[-1]
        if key == "rate_out_positive":
            return view.msg_rate_out == POSITIVE
        if key == "nothing_stored":
            fixed = dict(view.fixed)
            sizes = [fixed.get(path) for path in ("storageSize", "backlogSize", "offloadedStorageSize")]
            return sizes + [fixed.get("subscriptions.*.msgBacklog", ZERO)] == [ZERO] * 4  # no subscription: no backlog
        if key == "subscription_types":
            return tuple(sorted((sub[0], sub[3]) for sub in view.subscriptions))
        if key == "counters_survive":
            # The counters still hold what the action accepted and delivered, with nobody attached.
            if not isinstance(outcome, PubSubResult):
                return outcome
            accepted = sum(n for kind, n in outcome.receipts if kind != DROPPED)
            delivered = sum(_range_count(r) for _, r in outcome.delivered)
            return (view.msg_in_counter, view.msg_out_counter, view.publishers, view.subscriptions) == (
                accepted, delivered, (), ())
        signs = view.publishers if key == "publisher_drops" else tuple(s[1] for s in view.subscriptions)
        return bool(signs) and all(sign == POSITIVE for sign in signs)
    if key == "cursors":
        views = [s.expected for s in bound.observations if isinstance(s.expected, InternalStatsView)]
        return len(views[-1].cursors) if views else None
    if key == "collected":
        # the last AwaitTopicGC found the topic unloaded by the broker's check for inactive topics
        waits = [s.expected for s in bound.observations if isinstance(s.expected, TopicLoaded)]
        return (not waits[-1].loaded) if waits else None
    if key in PIP157_STATED:
        return pip157_stated_value(key, value, bound)
    if key in PIP35_STATED:
        return pip35_stated_value(key, value, bound)
    before, after = _listings(bound)
    if key == "metadata_created":
        names = {str(topic), str(topic.partitioned_base)}
        return bool(names & (after[ListPartitionedTopics] - before[ListPartitionedTopics]))
    if key == "topics_created":
        return bool(after[ListTopics] - before[ListTopics])
    raise KeyError(key)


def _range_count(ranges) -> int:
    """How many messages payload ranges ("m0..m9", "m12") name."""
    total = 0
    for text in ranges:
        first, _, last = text.partition("..")
        total += int(last[1:]) - int(first[1:]) + 1 if last else 1
    return total


def _pubsub_value(key: str, outcome):
    """What a PubSub outcome says about one PIP-2 ``stated`` key (spec/README.md)."""
    if isinstance(outcome, PubSubBounds):
        return {"send_errors": outcome.send_errors, "in_order": outcome.delivered_accepted}.get(key, outcome)
    if not isinstance(outcome, PubSubResult):
        return outcome
    counts: dict[str, int] = {}
    for kind, n in outcome.receipts:
        counts[kind] = counts.get(kind, 0) + n
    if key == "receipts":
        return tuple(sorted(counts.items()))
    if key == "some_dropped":
        return counts.get(DROPPED, 0) > 0
    if key == "send_errors":
        return sum(n for kind, n in counts.items() if kind.startswith(("send-error", "client-error")))
    return outcome.in_order


def _listings(bound: BoundCase):
    """The row's listings right after setup (from the model) and after the action (the observe steps)."""
    setup_ops = [s.op for s in bound.steps if s.role == "setup"]
    state, _ = run(initial_state(bound.case.broker_config, bound.case.era), setup_ops)
    before, after = {}, {}
    for step in bound.observations:
        kind = type(step.op)
        if kind in (ListTopics, ListPartitionedTopics):
            # A listing that fails (missing namespace) lists nothing.
            before[kind] = getattr(apply(state, step.op)[1], "topics", frozenset())
            after[kind] = getattr(step.expected, "topics", frozenset())
    return before, after
