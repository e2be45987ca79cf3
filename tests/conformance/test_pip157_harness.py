"""PIP-157 harness parts: the metadata driver against a REAL ZooKeeper, the numberOfTopicBuckets REST
endpoints, the detection that makes targets without the policy unsupported (fake targets), routing of
ReadTopicLayout, and the reference-zk target end to end."""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from conformance import capabilities, verdicts as v
from conformance.suite import load_cases
from conformance.drivers.metadata import NO_STORE, MetadataDriver, zk_hosts
from conformance.drivers.rest import RestDriver
from conformance.errors import Indefinite, Unsupported
from conformance.execute import TargetSession
from conformance.routing import Router
from conformance.targets.process import free_port
from conformance.targets.registry import make_target
from conformance.targets.zookeeper import missing_reason
from model import ops
from model.outcomes import Done, LedgerPaths, RestError, TopicBuckets
from tests.conformance.helpers import FakeDriver, FakeTarget, Step
from tests.reference_broker.zookeeper_server import zookeeper_server  # noqa: F401  (fixture)

ML = "/managed-ledgers/public/c1/persistent"


# --- the metadata driver on a real ZooKeeper ---------------------------------------------------------


@pytest.fixture
def store(zookeeper_server):  # noqa: F811
    from kazoo.client import KazooClient

    url = zookeeper_server.unique_url()
    root = KazooClient(hosts=zookeeper_server.address, timeout=10)
    root.start(timeout=10)
    root.ensure_path("/" + zk_hosts(url).partition("/")[2])  # the chroot, so the client below starts in it
    root.stop()
    root.close()
    client = KazooClient(hosts=zk_hosts(url), timeout=10)
    client.start(timeout=10)
    yield url, client
    client.stop()
    client.close()


def test_driver_finds_a_ledger_in_its_bucket_folder_and_decodes_names(store):
    url, zk = store
    for path in (f"{ML}/$2/nptopic1", f"{ML}/$0/caf%C3%A9", f"{ML}/$1/other", f"{ML}/%241"):
        zk.create(path, b"{}", makepath=True)
    driver = MetadataDriver(url, timeout=5)
    try:
        assert driver.perform(ops.ReadTopicLayout("persistent://public/c1/nptopic1")) == LedgerPaths((f"{ML}/$2/nptopic1",))
        assert driver.perform(ops.ReadTopicLayout("persistent://public/c1/café")) == LedgerPaths((f"{ML}/$0/caf%C3%A9",))
        # a topic literally named "$1" is stored encoded (%241), never mistaken for the folder $1
        assert driver.perform(ops.ReadTopicLayout("persistent://public/c1/$1")) == LedgerPaths((f"{ML}/%241",))
        assert driver.perform(ops.ReadTopicLayout("persistent://public/c1/absent")) == LedgerPaths(())
        assert driver.perform(ops.ReadTopicLayout("persistent://public/nosuch/x")) == LedgerPaths(())
        assert driver.perform(ops.ReadTopicLayout("non-persistent://public/c1/nptopic1")) == LedgerPaths(())
        assert "getChildren /managed-ledgers/public/c1/persistent/$2" in str(driver.transcript.entries)
    finally:
        driver.close()


def test_driver_reports_every_copy_and_the_flat_layout(store):
    url, zk = store
    zk.create(f"{ML}/t", b"", makepath=True)
    zk.create(f"{ML}/$0/t", b"", makepath=True)
    driver = MetadataDriver(url, timeout=5)
    try:
        assert driver.perform(ops.ReadTopicLayout("persistent://public/c1/t")) == LedgerPaths((f"{ML}/$0/t", f"{ML}/t"))
    finally:
        driver.close()


def test_driver_without_a_store_is_unsupported_and_an_unreachable_one_indefinite():
    with pytest.raises(Unsupported, match=NO_STORE):
        MetadataDriver(None).perform(ops.ReadTopicLayout("persistent://public/c1/t"))
    with pytest.raises(Unsupported, match="not a ZooKeeper URL"):
        MetadataDriver("sqlite:/tmp/x.db").perform(ops.ReadTopicLayout("persistent://public/c1/t"))
    driver = MetadataDriver(f"zk:127.0.0.1:{free_port()}/x", timeout=1)
    with pytest.raises(Indefinite, match="no connection"):
        driver.perform(ops.ReadTopicLayout("persistent://public/c1/t"))
    assert not driver.can_perform(ops.ListTopics("public/c1"))
    assert zk_hosts("zk://h1:1,h2:2/chroot") == "h1:1,h2:2/chroot"


def test_read_topic_layout_is_routed_to_the_metadata_driver():
    metadata = FakeDriver("metadata", lambda op: LedgerPaths(()))
    rest = FakeDriver("rest", lambda op: Done())
    router = Router({"rest": rest, "wire": None, "client": None, "metadata": metadata}, has_admin=True)
    step = Step(ops.ReadTopicLayout("persistent://public/c1/t"), "observe", LedgerPaths(()))
    assert router.driver_for(step, "rest") is metadata
    with pytest.raises(Unsupported, match="metadata driver"):
        Router({"rest": rest}, has_admin=True).driver_for(step, "rest")


# --- the REST endpoints ----------------------------------------------------------------------------


def test_rest_numberOfTopicBuckets_endpoints():
    seen = []

    def app(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path, request.content))
        if request.method == "GET":
            return httpx.Response(200, json=3) if "c1" in request.url.path else httpx.Response(200, json="3")
        return httpx.Response(412, json={"reason": "numberOfTopicBuckets can only be set when the namespace is created"})

    driver = RestDriver("http://broker:8080", transport=httpx.MockTransport(app), timeout=2)
    assert driver.perform(ops.GetNumberOfTopicBuckets("public/c1")) == TopicBuckets(3)
    refused = RestError(412, "numberOfTopicBuckets can only be set when the namespace is created")
    assert driver.perform(ops.SetNumberOfTopicBuckets("public/c1", (3,))) == refused
    assert driver.perform(ops.SetNumberOfTopicBuckets("public/c1", None)) == refused
    assert driver.perform(ops.RemoveNumberOfTopicBuckets("public/c1")) == refused
    assert driver.perform(ops.CreateNamespace("public/c2", (("numberOfTopicBuckets", 3),))).status == 412
    assert [(m, p) for m, p, _ in seen][:4] == [("GET", "/admin/v2/namespaces/public/c1/numberOfTopicBuckets"),
                                                ("POST", "/admin/v2/namespaces/public/c1/numberOfTopicBuckets"),
                                                ("POST", "/admin/v2/namespaces/public/c1/numberOfTopicBuckets"),
                                                ("DELETE", "/admin/v2/namespaces/public/c1/numberOfTopicBuckets")]
    assert json.loads(seen[1][2]) == [3] and seen[2][2] == b""
    assert json.loads(seen[4][2]) == {"numberOfTopicBuckets": 3}
    from conformance.errors import ProtocolViolation
    with pytest.raises(ProtocolViolation, match="JSON integer"):
        driver.perform(ops.GetNumberOfTopicBuckets("public/other"))


# --- detection: targets without the policy are unsupported, with what they answered ----------------


class PolicyServer:
    """A fake admin API: ``policies(body) -> (status, stored body or None)`` decides the PUT."""

    def __init__(self, answer_put):
        self.requests: list[tuple[str, str]] = []
        stored: dict = {}
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, status, body=None):
                payload = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_PUT(self):
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                owner.requests.append(("PUT", self.path))
                status, kept = answer_put(body)
                if kept is not None:
                    stored[self.path] = kept
                self._reply(status, None if status < 300 else {"reason": "refused by the fake"})

            def do_GET(self):
                owner.requests.append(("GET", self.path))
                self._reply(200, stored[self.path]) if self.path in stored else self._reply(404, {"reason": "nope"})

            def do_DELETE(self):
                owner.requests.append(("DELETE", self.path))
                stored.pop(self.path, None)
                self._reply(204)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class ProbedTarget(FakeTarget):
    def __init__(self, admin_url, **kwargs):
        super().__init__(**kwargs)
        self._admin_url = admin_url

    def _launch(self):
        super()._launch()
        self.admin_url = self._admin_url


PIP157_CASE = next(c for c in load_cases({"157"}) if c.row_id == "pip157-default-1")


@pytest.mark.parametrize("answer_put, detected", [
    (lambda body: (204, {"replication_clusters": ["standalone"]}),  # Apache Pulsar: unknown field dropped
     "its policies read back numberOfTopicBuckets 'absent'"),
    (lambda body: (400, None), "answered 400 refused by the fake"),
    (lambda body: (204, {**body, "numberOfTopicBuckets": 1}), "read back numberOfTopicBuckets 1"),
])
def test_a_target_without_the_policy_is_unsupported_with_what_it_answered(answer_put, detected):
    server = PolicyServer(answer_put)
    target = ProbedTarget(server.url)
    rest = FakeDriver("rest", lambda op: TopicBuckets(1))
    session = TargetSession(target, driver_factory=lambda t: {"rest": rest, "wire": None, "client": None})
    try:
        first, second = session.run_case(PIP157_CASE), session.run_case(PIP157_CASE)
    finally:
        server.close()
    for run in (first, second):
        assert run.verdict.verdict == v.UNSUPPORTED
        assert run.verdict.reason.startswith("target does not support namespace policy numberOfTopicBuckets (detected: ")
        assert detected in run.verdict.reason
    assert rest.performed == []  # nothing of the case was sent
    assert sum(1 for method, _ in server.requests if method == "PUT") == 1  # probed once per target
    created = [path for method, path in server.requests if method == "PUT"]
    assert created[0].startswith("/admin/v2/namespaces/public/probe-buckets-")


def test_a_target_with_the_policy_runs_the_case_and_the_probe_is_cleaned_up():
    server = PolicyServer(lambda body: (204, body))
    target = ProbedTarget(server.url)
    rest = FakeDriver("rest", lambda op: TopicBuckets(1) if isinstance(op, ops.GetNumberOfTopicBuckets) else Done())
    session = TargetSession(target, driver_factory=lambda t: {"rest": rest, "wire": None, "client": None})
    try:
        run = session.run_case(PIP157_CASE)
    finally:
        server.close()
    assert run.verdict.verdict == v.PASSED, run.verdict.reason
    assert [m for m, _ in server.requests] == ["PUT", "GET", "DELETE"]


def test_no_admin_api_is_detected_and_other_pips_are_not_probed():
    target = FakeTarget(has_admin=False)
    target.start()
    assert capabilities.unsupported_reason(PIP157_CASE, target) == (
        "target does not support namespace policy numberOfTopicBuckets (detected: no admin REST API answered "
        "at http://127.0.0.1:2)")
    other = next(c for c in load_cases({"344"}))
    assert capabilities.unsupported_reason(other, FakeTarget()) is None


def test_a_probe_without_an_answer_is_indefinite_and_not_remembered():
    target = ProbedTarget(f"http://127.0.0.1:{free_port()}")
    target.timeout = 1
    session = TargetSession(target, driver_factory=lambda t: {"rest": None, "wire": None, "client": None})
    run = session.run_case(PIP157_CASE)
    assert run.verdict.verdict == v.INDEFINITE and "detecting numberOfTopicBuckets support" in run.verdict.reason
    with pytest.raises(Indefinite):
        capabilities.unsupported_reason(PIP157_CASE, target)


# --- the reference-zk target, end to end ---------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))
def test_reference_zk_exposes_its_store_and_passes_a_layout_case(tmp_path):
    target = make_target("reference-zk", timeout=10, log_dir=tmp_path)
    session = TargetSession(target)
    try:
        cases = {c.row_id: c for c in load_cases({"157"})}
        run = session.run_case(cases["pip157-layout-example-partitioned"])
        assert run.verdict.verdict == v.PASSED, run.verdict.reason
        assert target.metadata_store_url.startswith("zk:127.0.0.1:")
        assert target.describe()["metadata_store"] == target.metadata_store_url
        assert any(t.channel == "metadata" for t in run.transcripts)
        zookeeper, old_url = target.zookeeper, target.metadata_store_url
        target.configure({"enableNonPersistentTopics": "false"})  # a static key: the broker restarts
        assert target.zookeeper is zookeeper and target.metadata_store_url != old_url  # fresh chroot, same ZK
        target.configure({})
        run = session.run_case(cases["pip157-layout-min-value-3"])
        assert run.verdict.verdict == v.PASSED, run.verdict.reason
    finally:
        session.stop()
    assert target.zookeeper is None and target.process is None


def test_plain_reference_reports_white_box_steps_unsupported():
    driver = MetadataDriver(None)
    router = Router({"rest": None, "metadata": driver}, has_admin=False)
    step = Step(ops.ReadTopicLayout("persistent://public/c1/t"), "observe", LedgerPaths(()))
    with pytest.raises(Unsupported, match="target does not expose its metadata store"):
        router.driver_for(step, "rest").perform(step.op)
    assert urllib.parse.unquote("%24") == "$"
