"""conformance/routing.py: which driver performs a step; implicit namespaces."""

import pytest

from conformance.errors import Unsupported
from conformance.routing import NamespaceLedger, Router, action_driver_name
from model import ops
from model.outcomes import Done, Partitions, RestError, ServerError
from tests.conformance.helpers import FakeDriver, Step

T = "persistent://public/c1/t"


def _drivers(rest=True):
    wire = FakeDriver("wire", None, can=lambda op: getattr(op, "api", None) == "binary"
                      or isinstance(op, ops.CreateNonPartitionedTopic))
    client = FakeDriver("client", None, can=lambda op: isinstance(op, (ops.GetPartitionsForTopic, ops.ProduceConsume)))
    restd = FakeDriver("rest", None, can=lambda op: getattr(op, "api", "rest") == "rest"
                       and not isinstance(op, (ops.GetPartitionsForTopic, ops.ProduceConsume)))
    return {"rest": restd if rest else None, "wire": wire, "client": client}


def test_action_driver_follows_the_case_api():
    assert action_driver_name("rest") == "rest"
    assert action_driver_name("binary") == "wire"
    assert action_driver_name("client-binary") == action_driver_name("client-http") == "client"
    with pytest.raises(Unsupported):
        action_driver_name("carrier-pigeon")


def test_actions_go_by_api_and_setup_prefers_rest_then_wire():
    drivers = _drivers()
    router = Router(drivers, has_admin=True)
    pick = lambda op, role="action", api="binary": router.driver_for(Step(op, role, Done()), api).name  # noqa: E731
    assert pick(ops.GetPartitionedMetadata(T, "binary", False)) == "wire"
    assert pick(ops.GetPartitionsForTopic(T, "http"), api="client-http") == "client"
    assert pick(ops.CreateNonPartitionedTopic(T), role="setup") == "rest"
    assert pick(ops.ListTopics("public/c1", "binary"), role="observe") == "wire"  # the op's own api
    assert pick(ops.ListTopics("public/c1"), role="observe") == "rest"
    no_admin = Router(_drivers(rest=False), has_admin=False)
    assert no_admin.driver_for(Step(ops.CreateNonPartitionedTopic(T), "setup", Done()), "binary").name == "wire"
    with pytest.raises(Unsupported, match="no admin REST API"):
        no_admin.driver_for(Step(ops.CreatePartitionedTopic(T, 3), "setup", Done()), "binary")
    with pytest.raises(Unsupported, match="admin REST API"):
        no_admin.driver_for(Step(ops.ListTopics("public/c1"), "observe", Done()), "binary")


def test_implicit_namespaces_need_no_setup_and_a_missing_one_is_simply_never_created():
    ledger = NamespaceLedger()
    assert ledger.check(Step(ops.CreateNamespace("public/c1"), "setup", Done())) == Done()
    assert ledger.check(Step(ops.CreateTenant("t9"), "setup", Done())) == Done()
    # policies or admin roles are more than a served name: only an admin API can give them
    assert ledger.check(Step(ops.CreateNamespace("public/c1", (("max_topics_per_namespace", 1),)), "setup",
                             Done())) is None
    assert ledger.check(Step(ops.CreateTenant("t9", ("admin",)), "setup", Done())) is None
    # a case whose namespace or tenant is missing runs: the target's answer is judged
    assert ledger.check(Step(ops.GetPartitionedMetadata("persistent://public/c2/t", "binary", False), "action",
                             ServerError("TopicNotFound", ""))) is None
    assert ledger.check(Step(ops.ListTopics("nosuch/ns", "binary"), "action", Done())) is None
    # creating or deleting one as anything but a setup the model answers Done goes to the router,
    # which needs the admin API for it
    assert ledger.check(Step(ops.CreateNamespace("public/c1"), "setup", RestError(409, "Namespace already exists"))) \
        is None
    assert ledger.check(Step(ops.CreateNamespace("public/c1"), "action", Done())) is None
    assert ledger.check(Step(ops.DeleteNamespace("public/c1"), "setup", Done())) is None
    no_admin = Router(_drivers(rest=False), has_admin=False)
    with pytest.raises(Unsupported, match="no admin REST API") as raised:
        no_admin.driver_for(Step(ops.DeleteNamespace("public/c1"), "setup", Done()), "binary")
    assert raised.value.kind == "no-admin-api"


def test_the_producer_stands_in_for_topic_creation_only_where_pulsar_would_create_one():
    for config in ({"allowAutoTopicCreation": "false"},
                   {"allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": "3"}):
        router = Router(_drivers(rest=False), has_admin=False, broker_config=config)
        with pytest.raises(Unsupported, match="a PRODUCER does not create") as raised:
            router.driver_for(Step(ops.CreateNonPartitionedTopic(T), "setup", Done()), "binary")
        assert raised.value.kind == "no-admin-api"
    router = Router(_drivers(rest=False), has_admin=False, broker_config={"allowAutoTopicCreation": "true"})
    assert router.driver_for(Step(ops.CreateNonPartitionedTopic(T), "setup", Done()), "binary").name == "wire"