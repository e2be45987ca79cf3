"""conformance/targets/url.py and registry.py: naming targets."""

import os

import pytest

from conformance.errors import UsageError
from conformance.targets.pulsar_lite import PulsarLiteTarget
from conformance.targets.reference import ReferenceTarget
from conformance.targets.registry import make_target
from conformance.targets.url import UrlTarget, parse_url_spec


def test_url_specs():
    assert parse_url_spec("pulsar://h:6650,http://h:8080/") == ("pulsar://h:6650", "http://h:8080")
    assert parse_url_spec("pulsar://h:6650") == ("pulsar://h:6650", None)
    assert parse_url_spec("pulsar+ssl://h:6651,https://h:8443") == ("pulsar+ssl://h:6651", "https://h:8443")
    for bad in ("http://h:8080", "pulsar://h", "pulsar://h:1,ftp://x"):
        with pytest.raises(UsageError, match="url:pulsar://HOST:PORT"):
            parse_url_spec(bad)


def test_registry_builds_by_name_and_lists_names_on_error():
    assert isinstance(make_target("reference"), ReferenceTarget)
    assert isinstance(make_target("pulsar-lite"), PulsarLiteTarget)
    target = make_target("url:pulsar://127.0.0.1:6650,http://127.0.0.1:8080")
    assert isinstance(target, UrlTarget) and target.name == "url-127.0.0.1-6650"
    with pytest.raises(UsageError, match=r"unknown target 'pulsar'; known targets: reference, pulsar-lite, "
                                         r"(.+, )?reference-zk, pulsar-standalone\[:VERSION\], pulsar-container\[:TAG\], url:"):
        make_target("pulsar")


def test_url_target_that_is_not_there_cannot_start():
    from conformance.errors import TargetError
    target = make_target("url:pulsar://127.0.0.1:1", timeout=1)
    with pytest.raises(TargetError, match="no CONNECTED"):
        target.start()


def test_url_target_detects_and_puts_the_brokers_own_config_back():
    from conformance.errors import Unsupported
    from conformance.targets.base import ERA_PRE_PIP344
    from tests.conformance.helpers import SILENCE, FakeAdminServer, FakePulsarServer

    wire = FakePulsarServer(lambda e: SILENCE, flag5=False, server_version="Pulsar Server3.0.5")
    admin = FakeAdminServer({("GET", "/admin/v2/brokers/version"): (200, '"3.0.5"')})
    admin.routes = _RuntimeRoutes(admin, {"allowAutoTopicCreation": False, "maxMessageSize": 5242880})
    try:
        target = make_target(f"url:{wire.url},{admin.url}", timeout=2)
        target.start()
        assert target.version == "3.0.5" and target.versions["binary"] == "Pulsar Server3.0.5"
        assert target.era == ERA_PRE_PIP344 and target.has_admin
        target.configure({"allowAutoTopicCreation": "true"})
        with pytest.raises(Unsupported, match="maxMessageSize is not dynamic"):
            target.configure({"maxMessageSize": "1024"})
        target.configure({"maxMessageSize": "5242880"})  # already the broker's value: fine
        target.stop()
        posts = [path for method, path, _ in admin.requests if method == "POST"]
        assert posts == ["/admin/v2/brokers/configuration/allowAutoTopicCreation/true",
                         "/admin/v2/brokers/configuration/allowAutoTopicCreation/false"]  # its own value back
        # Each POST was confirmed in the runtime config before the case went on (a real Pulsar
        # applies dynamic config asynchronously).
        after_post = [admin.requests[i + 1][1] for i, (m, _, _) in enumerate(admin.requests) if m == "POST"]
        assert after_post == ["/admin/v2/brokers/configuration/runtime"] * 2
    finally:
        wire.close()
        admin.close()


class _RuntimeRoutes(dict):
    """Routes of a FakeAdminServer whose runtime config shows a POSTed value on the ``lag``-th
    runtime GET after the POST (at once when lag is 0), the way Pulsar applies dynamic config."""

    RUNTIME = ("GET", "/admin/v2/brokers/configuration/runtime")

    def __init__(self, admin, runtime: dict, lag: int = 0):
        super().__init__(admin.routes)
        self.admin, self.runtime, self.lag = admin, dict(runtime), lag
        self.seen, self.pending, self.gets = 0, None, 0

    def get(self, key, default=None):
        if key != self.RUNTIME:
            return super().get(key, default)
        for method, path, _ in self.admin.requests[self.seen:]:  # includes this GET
            if method == "POST" and path.startswith("/admin/v2/brokers/configuration/"):
                self.pending, self.gets = path.split("/")[-2:], 0
            elif (method, path) == self.RUNTIME and self.pending:
                self.gets += 1
                if self.gets >= self.lag:
                    self.runtime[self.pending[0]] = self.pending[1]
                    self.pending = None
        self.seen = len(self.admin.requests)
        return 200, dict(self.runtime)


def test_url_target_waits_until_the_broker_applied_a_dynamic_key_and_says_when_it_did_not():
    from conformance.errors import Indefinite
    from tests.conformance.helpers import SILENCE, FakeAdminServer, FakePulsarServer

    wire = FakePulsarServer(lambda e: SILENCE, server_version="Pulsar Server4.0.13")
    admin = FakeAdminServer({("GET", "/admin/v2/brokers/version"): (200, '"4.0.13"')})
    admin.routes = _RuntimeRoutes(admin, {"allowAutoTopicCreationType": "NON_PARTITIONED"}, lag=3)
    try:
        target = make_target(f"url:{wire.url},{admin.url}", timeout=2)
        target.start()
        target.configure({"allowAutoTopicCreationType": "partitioned"})  # shown on the 3rd runtime GET
        runtime_gets = [p for m, p, _ in admin.requests if p.endswith("/runtime")]
        assert len(runtime_gets) == 1 + 3  # detect() once, then until it showed
        target.configure({})  # back to the broker's own value; the enum spelling NON_PARTITIONED matches
        admin.routes.lag = 10 ** 6  # a broker that never applies it
        with pytest.raises(Indefinite, match=r"runtime config still shows allowAutoTopicCreationType="
                                             r"NON_PARTITIONED \(set to partitioned\) after 2 s"):
            target.configure({"allowAutoTopicCreationType": "partitioned"})
    finally:
        wire.close()
        admin.close()


@pytest.mark.slow
def test_url_target_end_to_end_against_the_reference_broker(tmp_path):
    """A running reference broker named by URL: same detection as when launched, cases pass."""
    import io

    from conformance.results import read_results
    from conformance.runner import run

    launched = ReferenceTarget(timeout=5)
    launched.start()
    try:
        spec = f"url:{launched.service_url},{launched.admin_url}"
        target = make_target(spec, timeout=5)
        stream = io.StringIO()
        code = run([], targets=[target], pips=["344"], out_dir=tmp_path, run_id="url-e2e", stream=stream)
        text = stream.getvalue()
        assert code == 0, text[-3000:]
        detected = {k: target.describe()[k] for k in ("version", "era", "admin_api", "flag5")}
        assert detected == {k: launched.describe()[k] for k in detected}
        assert detected == {"version": "0.1.0-reference", "era": "pip344", "admin_api": "yes", "flag5": "yes"}
        records = read_results(tmp_path / "results" / "url-e2e.jsonl")
        assert records and {r.target for r in records} == {target.name}
        assert all(r.target_version == "0.1.0-reference" for r in records)
        assert any(r.verdict == "passed" and r.driver == "rest" for r in records)
        assert any(r.verdict == "passed" and r.driver == "wire" for r in records)
        # a client library's known divergences fail on every broker, the reference one included
        assert not [r for r in records if r.verdict in ("failed", "broken", "indefinite") and not r.known_divergence]
        assert launched.process.alive()  # the harness did not stop somebody else's broker
        # ...and put its config back: every key a case set is at the broker's own value again.
        from conformance.drivers.rest import RestDriver
        rest = RestDriver(launched.admin_url, timeout=5)
        runtime = rest.request("GET", "/admin/v2/brokers/configuration/runtime").json()
        rest.close()
        assert str(runtime["allowAutoTopicCreationType"]) == "non-partitioned"
        assert str(runtime["allowAutoTopicCreation"]).lower() == "true"
    finally:
        launched.stop()


@pytest.mark.slow
def test_a_secured_broker_given_by_url_is_tested_with_the_token_and_ca_given(tmp_path):
    """--auth-token and --tls-trust-certs against somebody else's broker: the cases of PIP-344's own
    table (pip344-seed-*) pass through TLS with the token, a row that needs no token runs, and a row
    that needs a token of another role is unsupported (the harness does not hold that broker's key)."""
    from conformance.results import read_results
    from conformance.runner import run
    from conformance.security import RunSecurity
    from tests.reference_broker.broker_process import start_secured, stop

    process, key, tls = start_secured(tmp_path / "tls")  # the key in Pulsar's data: form
    try:
        _, _, service, admin = process.urls
        security = RunSecurity(token=key.token("superuser"), trust_certs=str(tls.ca))
        code = run([f"url:{service},{admin}"], pips={"344"}, out_dir=tmp_path / "out", run_id="r",
                   keyword="seed-new-001 or auth-metadata-none or authz-metadata-intruder", security=security,
                   stream=open(os.devnull, "w"))
    finally:
        stop(process)
    verdicts = {r.case_id: (r.verdict, r.reason) for r in read_results(tmp_path / "out" / "results" / "r.jsonl")}
    assert all(verdicts[f"pip344-seed-new-001-param-{flag}[{api}]"][0] == "passed"
               for flag in ("true", "false") for api in ("rest", "binary"))
    assert verdicts["pip344-auth-metadata-none[binary]"][0] == "passed"
    assert verdicts["pip344-authz-metadata-intruder[rest]"][0] == "unsupported"
    assert "does not hold this target's token signing key" in verdicts["pip344-authz-metadata-intruder[rest]"][1]
    assert code == 0
