"""The proof that the model matches the sources: every row with `stated` is reproduced by the model
for every api of the row. Then the states no row names, answered by the model and held to the
rules the tables share."""

import itertools
from dataclasses import replace

import pytest

from conformance.cases import cases_of, error_kind, stated_disagreements
from model.machine import apply, run, initial_state
from model.ops import CreateNamespace, CreateNonPartitionedTopic, CreatePartitionedTopic, GetPartitionedMetadata
from model.outcomes import Partitions, PartitionList, PubSubResult, RestError, ServerError
from spec.schema import load_rows

ROWS = load_rows()
STATED_CASES = [case for row in ROWS if row.stated for case in cases_of(row)]


@pytest.mark.parametrize("case", STATED_CASES, ids=lambda c: c.id)
def test_model_reproduces_what_the_source_states(case):
    assert stated_disagreements(case.bind("public/agree")) == []


def test_most_rows_state_something():
    assert len(STATED_CASES) > 250
    # A row quoting a table of a PIP document (a seed-* source) states what the table says; the only
    # exceptions are rows that follow Pulsar against the PIP, and they must say why in a note.
    silent = [r.id for r in ROWS if not r.stated and any(a.startswith("seed-") for a in r.source) and not r.note]
    assert silent == []
    # PIP-2: only partitioned-stats, whose source states the summing of a rate, not a count
    assert [r.id for r in ROWS if not r.stated and r.pip == "2"] == ["pip2-stats-004-partitioned"]


@pytest.mark.parametrize("row_id, wrong", [
    ("pip344-seed-new-002-param-true", Partitions(3)),
    ("pip344-seed-new-005", Partitions(0)),
    ("pip344-seed-list-002", PartitionList(("persistent://public/agree/t",))),
    ("pip344-seed-bg-005", RestError(404, "Topic persistent://public/agree/t not found")),
])
def test_a_model_that_drifts_from_the_source_is_caught(row_id, wrong):
    row = next(r for r in ROWS if r.id == row_id)
    bound = cases_of(row)[0].bind("public/agree")
    tampered = tuple(replace(s, expected=wrong) if s.role == "action" else s for s in bound.steps)
    assert stated_disagreements(replace(bound, steps=tampered))


def test_a_created_statement_is_checked_against_the_observation():
    row = next(r for r in ROWS if r.id == "pip344-seed-new-004-created")
    bound = cases_of(row)[0].bind("public/agree")
    tampered = tuple(replace(s, expected=replace(s.expected, topics=frozenset())) if s.role == "observe" else s
                     for s in bound.steps)
    assert stated_disagreements(replace(bound, steps=tampered))


# -- states no row names ---------------------------------------------------------------------------

ERAS = ["pip344", "pre-pip344"]
TOPIC_STATES = ["absent", "non-partitioned", "partitioned", "partition-name"]
NS = "public/unnamed"


def row_signature(row):
    setup = row.setup
    op = row.operation_json()
    if op["op"] != "GetPartitionedMetadata" or setup.override or not setup.namespace_present:
        return None
    broker = dict(setup.broker)
    existing = {t.name: t.partitions for t in setup.topics}
    if op["topic"] in existing:
        state = "partitioned" if existing[op["topic"]] else "non-partitioned"
    else:
        state = "partition-name" if "-partition-" in op["topic"] else "absent"
    return (row.era, setup.domain, state, broker.get("allowAutoTopicCreation", "true"),
            broker.get("allowAutoTopicCreationType", "non-partitioned"), op.get("auto_create"))


def unnamed_states():
    named = {row_signature(r) for r in ROWS}
    space = itertools.product(("pip344", "pre-pip344"), ["persistent", "non-persistent"], TOPIC_STATES, ["true", "false"],
                              ["partitioned", "non-partitioned"], [True, False, None])
    return [combo for combo in space if combo not in named]


def model_answers(combo):
    era, domain, topic_state, allow, topic_type, param = combo
    config = {"allowAutoTopicCreation": allow, "allowAutoTopicCreationType": topic_type, "defaultNumPartitions": "3"}
    topic = f"{domain}://{NS}/" + ("t-partition-1" if topic_state == "partition-name" else "t")
    setup = [CreateNamespace(NS)]
    if topic_state == "partitioned":
        setup.append(CreatePartitionedTopic(topic, 2))
    elif topic_state == "non-partitioned":
        setup.append(CreateNonPartitionedTopic(topic))
    state, _ = run(initial_state(config, era), setup)
    return {api: apply(state, GetPartitionedMetadata(topic, api, param))[1] for api in ("rest", "binary")}


UNNAMED = unnamed_states()


def test_some_states_are_named_by_no_row():
    assert 0 < len(UNNAMED) < 2 * 2 * 4 * 2 * 2 * 3


@pytest.mark.parametrize("combo", UNNAMED, ids=lambda c: "-".join(map(str, c)))
def test_model_answers_unnamed_states_by_the_shared_rules(combo):
    era, _, topic_state, allow, topic_type, param = combo
    answers = model_answers(combo)
    for answer in answers.values():
        assert isinstance(answer, (Partitions, RestError, ServerError))
    if topic_state == "partitioned":
        # every table: an existing topic answers its partitions, whatever else is set
        assert set(answers.values()) == {Partitions(2)}
    elif topic_state in ("non-partitioned", "partition-name"):
        # a partition name is never given metadata of its own (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync)
        assert all(a == Partitions(0) or error_kind(a) == "not-found" for a in answers.values())
    if era == "pre-pip344":
        # old brokers ignore field 6 (binary always answers), and REST answers not found only without
        # checkAllowAutoCreation, for a topic that does not exist (observed on 3.0.2 and 3.2.3)
        assert isinstance(answers["binary"], Partitions)
        if param:
            assert isinstance(answers["rest"], Partitions)
        elif topic_state == "absent":
            assert error_kind(answers["rest"]) == "not-found"
    elif param is not None:
        # PIP-344 tables: "REST/Binary API" answer alike when the param is given
        kinds = {a if isinstance(a, Partitions) else error_kind(a) for a in answers.values()}
        assert len(kinds) == 1, answers


# -- PIP-2: the stated keys catch a drifting model too ----------------------------------------------

@pytest.mark.parametrize("row_id, wrong", [
    # a model that queued for later, or never dropped, or dropped on >= instead of >
    ("pip2-dispatch-001-no-permits", PubSubResult((("0:0", 3),), (("s", ("m0..m2",)),))),
    ("pip2-publish-001-limit-0", PubSubResult((("0:0", 10),), (("s", ("m0..m9",)),))),
    ("pip2-publish-001-limit-0", PubSubResult((("-1:-1", 10),), (("s", ()),))),
    ("pip2-bad-002-flow-negative-permits", ServerError("UnknownError", "")),
    ("pip2-isolation-001-np-disabled-producer", ServerError("ServiceNotReady", "")),
])
def test_a_pip2_model_that_drifts_from_the_source_is_caught(row_id, wrong):
    row = next(r for r in ROWS if r.id == row_id)
    bound = cases_of(row)[0].bind("public/agree")
    tampered = tuple(replace(s, expected=wrong) if s.role == "action" else s for s in bound.steps)
    assert stated_disagreements(replace(bound, steps=tampered))
