"""PIP-35 in the harness: flag detection, the batch drivers against the real reference broker and a
real three-broker cluster, and the relations catching a cluster that lies (spec/pip35.md)."""

from __future__ import annotations

import pytest

from conformance import verdicts as v
from conformance.suite import load_cases
from conformance.drivers.batch_relations import observe, same_everywhere
from conformance.drivers.rest import RestDriver
from conformance.drivers.wire import WireDriver
from conformance.drivers.wire_batch import REASON
from conformance.errors import ProtocolViolation, Unsupported
from conformance.execute import TargetSession
from conformance.feature_flags import missing_flag, required_flags
from conformance.targets.reference import ReferenceTarget
from conformance.targets.reference_cluster import ReferenceClusterTarget, attach_cluster, cluster_ready_urls
from conformance.targets.registry import make_target
from model import ops
from model.batch_lookup import Answer
from model.outcomes import Agreement, BatchLookupResult, Done, FeatureFlag, RestError
from pulsar_codec import events
from tests.conformance.helpers import SILENCE, FakeAdminServer, FakeDriver, FakePulsarServer, FakeTarget
from tests.reference_broker.cluster_helpers import InProcessCluster

CASES = load_cases({"35"})
BY_ID = {c.id: c for c in CASES}
FLAG_REASON = "target does not advertise supports_batch_lookup (FeatureFlags field 10)"


# -- detection (feature_flags.py) ----------------------------------------------------------------


class FlagTarget(FakeTarget):
    def __init__(self, flags, **kwargs):
        super().__init__(**kwargs)
        self.flags = flags

    def detect(self) -> None:
        super().detect()
        self.advertised_flags = self.flags


def _session(flags):
    driver = FakeDriver("wire", lambda op: FeatureFlag(op.feature, False) if isinstance(op, ops.Handshake) else None)
    rest = FakeDriver("rest", lambda op: Done())  # setup steps succeed
    session = TargetSession(FlagTarget(flags), driver_factory=lambda t: {"wire": driver, "rest": rest, "client": None})
    return session, driver, rest


def test_without_flag_10_every_case_but_the_flag_row_is_unsupported_before_any_step():
    session, wire, rest = _session(frozenset({"supports_get_partitioned_metadata_without_auto_creation"}))
    runs = [session.run_case(case) for case in CASES]
    flag = [r for r in runs if r.case.row_id == "pip35-flag-001"]
    others = [r for r in runs if r.case.row_id != "pip35-flag-001"]
    assert len(others) == len(CASES) - len(flag) > 30 and all(r.verdict.verdict == v.UNSUPPORTED and r.verdict.reason == FLAG_REASON
                                     for r in others)
    assert [r.verdict.verdict for r in flag] == [v.FAILED]  # it runs, and the flag is missing
    # only the flag row reached the target: its namespace, then its handshake
    assert [type(op) for op in wire.performed] == [ops.Handshake]
    assert [type(op) for op in rest.performed] == [ops.CreateNamespace]


def test_with_flag_10_the_cases_run():
    session, wire, _ = _session(frozenset({"supports_batch_lookup"}))
    run = session.run_case(BY_ID["pip35-batch-008-empty[binary]"])
    assert run.verdict.verdict == v.FAILED  # the fake driver answers None: it ran
    assert any(isinstance(op, ops.BatchLookup) for op in wire.performed)


def test_required_flags_come_from_the_row_features():
    assert required_flags(BY_ID["pip35-batch-001-existing-topics[rest]"]) == (("supports_batch_lookup", 10),)
    assert required_flags(BY_ID["pip35-flag-001[binary]"]) == ()
    undetected = FlagTarget(None)
    assert missing_flag(BY_ID["pip35-batch-001-existing-topics[rest]"], undetected) is None


def test_the_wire_driver_never_sends_type_45_without_the_flag():
    server = FakePulsarServer(lambda event: SILENCE)
    driver = WireDriver(server.url, timeout=1.0)
    try:
        with pytest.raises(Unsupported, match="FeatureFlags field 10"):
            driver.perform(ops.BatchLookup(("persistent://public/c1/t",), "binary"))
        assert not any(isinstance(e, events.BatchLookup) for e in server.received)
        assert REASON == FLAG_REASON
    finally:
        driver.close()
        server.close()


def test_the_rest_driver_refuses_a_body_that_is_not_a_topic_map():
    admin = FakeAdminServer({("POST", "/lookup/v2/topics"): (200, {"t": {"nothing": 1}}),
                             ("GET", "/x"): (200, None)})
    driver = RestDriver(admin.url, timeout=2.0)
    try:
        with pytest.raises(ProtocolViolation, match="neither LookupData"):
            driver.perform(ops.BatchLookup(("t",), "rest"))
        admin.routes[("POST", "/lookup/v2/topics")] = (413, {"reason": "too big"})
        assert driver.perform(ops.BatchLookup(("t",), "rest")) == RestError(413, "too big")
    finally:
        driver.close()
        admin.close()


# -- the cluster target ------------------------------------------------------------------------------


def test_cluster_ready_line_and_registry():
    assert cluster_ready_urls(["READY pulsar://h:1,pulsar://h:2 http://h:3,http://h:4"]) == (
        ["pulsar://h:1", "pulsar://h:2"], ["http://h:3", "http://h:4"])
    assert cluster_ready_urls(["READY soon"]) is None
    target = make_target("reference-cluster")
    assert isinstance(target, ReferenceClusterTarget) and target.argv()[-2:] == ["--brokers", "3"]
    wire = attach_cluster(WireDriver("pulsar://h:1"), target)
    assert wire.cluster_urls is None  # not started: a cluster of one
    target.service_urls = ["pulsar://h:1", "pulsar://h:2"]
    assert attach_cluster(WireDriver("pulsar://h:1"), target).cluster_urls == ["pulsar://h:1", "pulsar://h:2"]


@pytest.mark.parametrize("target_class", [ReferenceTarget, ReferenceClusterTarget], ids=["reference", "cluster"])
def test_every_pip35_case_passes_on_the_reference_targets(target_class):
    session = TargetSession(target_class(timeout=10.0))
    try:
        runs = [session.run_case(case) for case in CASES]
    finally:
        session.stop()
    bad = [(r.case.id, r.verdict.verdict, r.verdict.reason, r.verdict.actual) for r in runs
           if r.verdict.verdict != v.PASSED]
    assert bad == []
    assert "supports_batch_lookup" in session.target.advertised_flags
    if target_class is ReferenceClusterTarget:
        assert len(session.target.service_urls) == 3


# -- the relations catch a lying cluster (in-process, so one broker can be made to lie) ----------


@pytest.fixture
def cluster():
    with InProcessCluster(3) as running:
        yield running


def _drivers(cluster):
    wire = WireDriver(cluster.broker_urls[0], timeout=5.0)
    wire.cluster_urls = cluster.broker_urls
    rest = RestDriver(cluster.web_urls[0], timeout=5.0)
    rest.cluster_admin_urls = cluster.web_urls
    rest.perform(ops.CreateNamespace("public/lie"))
    return wire, rest


TOPICS = tuple(f"persistent://public/lie/t{i}" for i in range(12))


def test_an_honest_cluster_agrees(cluster):
    wire, rest = _drivers(cluster)
    try:
        assert wire.perform(ops.SameOwnerEverywhere(TOPICS, "binary")) == Agreement(True)
        assert rest.perform(ops.SameOwnerEverywhere(TOPICS, "rest")) == Agreement(True)
        assert wire.perform(ops.BatchEqualsSingles(TOPICS, "binary")) == Agreement(True)
        result = wire.perform(ops.BatchLookup(TOPICS, "binary"))
        assert result == BatchLookupResult(tuple((t, None, "Connect", True, None) for t in TOPICS))
    finally:
        wire.close()
        rest.close()


def test_a_broker_that_claims_every_bundle_breaks_same_owner_everywhere(cluster):
    wire, rest = _drivers(cluster)
    liar = cluster.servers[1].core.cluster
    liar.owner_of = lambda bundle, live=None: liar.self_info()
    try:
        got = wire.perform(ops.SameOwnerEverywhere(TOPICS, "binary"))
        assert not got.agree and any(cluster.broker_urls[1] in line for line in got.detail)
        assert not rest.perform(ops.SameOwnerEverywhere(TOPICS, "rest")).agree
    finally:
        wire.close()
        rest.close()


def test_an_owner_that_redirects_again_is_visible_in_the_batch_outcome(cluster):
    wire, rest = _drivers(cluster)
    for server in cluster.servers[1:]:
        server.core.cluster.is_self = lambda owner: False  # owners elsewhere redirect to themselves
    try:
        result = wire.perform(ops.BatchLookup(TOPICS, "binary"))
        assert {e[2] for e in result.entries} == {"Connect", "Redirect"}
        assert not wire.perform(ops.SameOwnerEverywhere(TOPICS, "binary")).agree  # the owner does not Connect
    finally:
        wire.close()
        rest.close()


def test_same_everywhere_compares_failures_by_name_or_status():
    seen = {}
    observe(seen, "t", "batch at a", Answer(error="TopicNotFound", message="x"))
    observe(seen, "t", "lookup at a", Answer(status=404, message="y"))
    assert same_everywhere(seen, rest=True) == Agreement(True)
    assert not same_everywhere(seen, rest=False).agree
    observe(seen, "u", "batch at a", Answer(owner="pulsar://a"))
    observe(seen, "u", "batch at b", Answer(owner="pulsar://b"))
    got = same_everywhere(seen, rest=True)
    assert got.detail == ("u: batch at a: owner pulsar://a; batch at b: owner pulsar://b",)
