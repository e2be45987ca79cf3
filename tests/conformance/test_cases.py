import re
from collections import Counter

import pytest

import model.machine
from conformance.cases import BoundCase, Case, Step
from conformance.suite import load_cases
from model.machine import apply, initial_state
from model.ops import (
    CreateNamespace, CreateNonPartitionedTopic, CreatePartitionedTopic, CreateTenant, GetPartitionedMetadata,
    GetPartitionsForTopic, ListPartitionedTopics, SetAutoTopicCreation,
)
from model.outcomes import Done, Partitions

CASES = load_cases()
BY_ID = {c.id: c for c in CASES}


def test_one_case_per_row_and_api_with_unique_ids():
    assert len(BY_ID) == len(CASES)
    for case in CASES:
        assert case.id == f"{case.row_id}[{case.api}]"
        assert re.fullmatch(r"pip\d+(-[a-z0-9]+)+\[(rest|binary|client-binary|client-http|"
                            r"(java|go|rust)-client-(binary|http)|(java|go|rust)-admin)\]", case.id)
        # the token-auth rows (spec/pip344_auth.yaml) are ours, around PIP-344's lookups
        assert case.table.startswith((f"pip-{case.pip}/", "token-auth/")) and case.pip in ("344", "2", "35", "157")
        assert isinstance(case, Case)


def test_filters():
    assert load_cases({"999"}) == []
    pre = load_cases({"344"}, era="pre-pip344")
    assert pre and all(c.era == "pre-pip344" for c in pre)
    assert len(pre) + len(load_cases(era="pip344")) + len(load_cases(era="any")) == len(CASES)
    assert {c.pip for c in load_cases({"2"})} == {"2"}
    assert Counter(c.api for c in CASES).keys() == {"rest", "binary", "client-binary", "client-http",
                                                    "java-client-binary", "java-client-http", "java-admin",
                                                    "go-client-binary", "go-client-http", "go-admin",
                                                    "rust-client-binary", "rust-client-http", "rust-admin"}


def test_broker_config_is_defaults_overlaid_with_the_row():
    case = BY_ID["pip344-seed-new-004[rest]"]
    assert dict(case.broker_config) == {
        "allowAutoTopicCreation": "true", "allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": "2",
        "maxNumPartitionsPerPartitionedTopic": "0", "maxTopicsPerNamespace": "0",
        "enablePersistentTopics": "true", "enableNonPersistentTopics": "true",
        "maxConcurrentNonPersistentMessagePerConnection": "1000"}
    assert dict(BY_ID["pip344-matrix-004[rest]"].broker_config)["allowAutoTopicCreationType"] == "non-partitioned"


def test_bind_produces_setup_action_observe_with_full_names():
    bound = BY_ID["pip344-gpmt-003-non-persistent-allow-false-param-true-no-metadata[binary]"].bind("public/c-ab12cd")
    assert isinstance(bound, BoundCase) and all(isinstance(s, Step) for s in bound.steps)
    assert [s.role for s in bound.steps] == ["setup", "setup", "action", "observe"]
    assert [s.op for s in bound.steps] == [
        CreateNamespace("public/c-ab12cd"),
        CreateNonPartitionedTopic("non-persistent://public/c-ab12cd/t"),
        GetPartitionedMetadata("non-persistent://public/c-ab12cd/t", "binary", True),
        ListPartitionedTopics("public/c-ab12cd", "non-persistent"),
    ]
    assert bound.action is bound.steps[2] and bound.observations == (bound.steps[3],)


def test_bind_creates_the_override_and_partitioned_topics():
    bound = BY_ID["pip344-override-004[rest]"].bind("public/c-1")
    assert bound.steps[1].op == SetAutoTopicCreation("public/c-1", True, "partitioned", 2)
    topics = BY_ID["pip344-seed-list-002[client-http]"].bind("public/c-2")
    assert topics.steps[1].op == CreatePartitionedTopic("persistent://public/c-2/t", 2)
    assert topics.action.op == GetPartitionsForTopic("persistent://public/c-2/t", "http")


def test_missing_namespace_and_missing_tenant():
    ns = BY_ID["pip344-gpmt-009-persistent[binary]"].bind("public/c-9")
    assert [s.role for s in ns.steps] == ["action"]
    assert ns.action.op.topic == "persistent://public/c-9/t"
    tenant = BY_ID["pip344-gpmt-010-persistent[binary]"].bind("public/c-9")
    assert tenant.namespace == "c-9-no-tenant/c-9"
    assert tenant.action.op.topic == "persistent://c-9-no-tenant/c-9/t"
    named = BY_ID["pip344-gpmt-010-persistent[binary]"].bind("public/c-9", tenant_missing_name="ghost")
    assert named.action.op.topic == "persistent://ghost/c-9/t"


def test_a_tenant_other_than_public_is_created_first():
    bound = BY_ID["pip344-seed-new-001-param-true[rest]"].bind("acme/c-3")
    assert [s.op for s in bound.steps[:2]] == [CreateTenant("acme"), CreateNamespace("acme/c-3")]


def test_every_case_binds_and_every_setup_step_is_done():
    for case in CASES:
        bound = case.bind("public/c-all")
        assert sum(s.role == "action" for s in bound.steps) == 1
        assert all(s.expected == Done() for s in bound.steps if s.role == "setup"), case.id


def test_expectations_are_the_models_answers():
    for case in CASES[::7]:
        bound = case.bind("public/c-model")
        state = initial_state(case.broker_config, case.era)
        for step in bound.steps:
            state, outcome = apply(state, step.op)
            assert step.expected == outcome, case.id


def test_expectations_follow_the_model_not_the_row(monkeypatch):
    case = BY_ID["pip344-seed-new-002-param-true[rest]"]
    assert case.bind("public/c-4").action.expected == Partitions(2)
    monkeypatch.setitem(model.machine.HANDLERS, GetPartitionedMetadata, lambda state, op: (state, Partitions(99)))
    assert case.bind("public/c-4").action.expected == Partitions(99)


def test_bind_refuses_a_namespace_that_is_not_fresh():
    with pytest.raises(ValueError, match="fresh namespace"):
        BY_ID["pip344-seed-new-001-param-true[rest]"].bind("public/default")
    with pytest.raises(ValueError, match="Case.bind"):
        BY_ID["pip344-seed-new-001-param-true[rest]"].bind("no-slash")


def test_cases_keep_row_metadata():
    case = BY_ID["pip344-seed-list-006[client-binary]"]
    assert case.grade == "MUST" and case.era == "pip344"
    assert case.source == ("seed-344/partitions-table/case-5-second",)
    assert "Not found error" in case.info and "second time" in case.note
    assert case.row.id == case.row_id


def test_pub_sub_binds_per_api_with_api_and_transport():
    wire = BY_ID["pip2-deliver-001[binary]"].bind("public/c-9").action.op
    http = BY_ID["pip2-deliver-001[client-http]"].bind("public/c-9").action.op
    assert (wire.api, http.api, http.transport) == ("binary", "client", "http")
    assert wire.topic == "non-persistent://public/c-9/t" and wire.consumers == (("s", "Exclusive", 10),)
