"""The Go client's and the Rust crate's drivers end to end: each built into the cache, speaking the
client-driver protocol as the schema says, and running PIP-344's client cases on the reference broker
with the model's expectations (drivers/native_clients.py, clients/go, clients/rust)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from conformance import verdicts as v
from conformance.drivers import native_clients, protocol_client
from conformance.drivers.external import SCHEMA_PATH, DriverProcess, Raised
from conformance.drivers.native_build import DEFAULT_GO_VERSION, DEFAULT_RUST_VERSION, driver_command
from conformance.execute import TargetSession
from conformance.suite import load_cases
from conformance.targets.reference import ReferenceTarget
from tests.conformance.drivers.test_external import gone_soon

pytestmark = pytest.mark.slow

# library: (its client driver, its version, the cases that pass, the cases its API cannot express and
# the source each reason must name)
LIBRARIES = {
    "go": ("go-client", DEFAULT_GO_VERSION,
           ["pip344-java-onearg-001[go-client-binary]", "pip344-java-onearg-002[go-client-http]",
            "pip344-java-onearg-003[go-client-binary]", "pip344-java-pc-001-shared[go-client-binary]",
            "pip344-java-pc-004-refused[go-client-http]", "pip344-java-admin-001[go-admin]",
            "pip344-java-admin-002[go-admin]"],
           {"pip344-java-list-005[go-client-binary]": "apache/pulsar-client-go@v0.21.0:pulsar/client.go"}),
    "rust": ("rust-client", DEFAULT_RUST_VERSION,
             ["pip344-java-onearg-001[rust-client-binary]", "pip344-java-onearg-003[rust-client-binary]",
              "pip344-java-pc-001-shared[rust-client-binary]", "pip344-java-pc-004-refused[rust-client-binary]"],
             {"pip344-java-list-005[rust-client-binary]": "pulsar@6.9.1:src/client.rs",
              "pip344-java-onearg-001[rust-client-http]": "pulsar@6.9.1:src/connection.rs",
              "pip344-java-admin-001[rust-admin]": "pulsar@6.9.1:src/admin.rs"}),
}


@pytest.fixture(scope="module")
def reference():
    target = ReferenceTarget(start_timeout=30)
    target.start()
    yield target
    target.stop()


@pytest.fixture(scope="module")
def run_drivers():
    native_clients.configure()
    yield
    protocol_client.POOL.close()


def _speaks_the_schema(reference, driver: str, version: str) -> None:
    """hello, a client, a partitions lookup and reset, each request and answer valid by the schema."""
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    process = DriverProcess(driver, lambda: driver_command(driver, version))
    original, sent = process._exchange, []

    def recording(cmd, args, timeout, **kwargs):
        sent.append({"id": process._next_id, "cmd": cmd, "args": args})
        answer = original(cmd, args, timeout, **kwargs)
        body = {"raised": {"class": answer.cls, "message": answer.message, "causes": list(answer.causes)}} \
            if isinstance(answer, Raised) else {"ok": answer}
        validator.validate({"id": sent[-1]["id"], **body})
        return answer

    process._exchange = recording
    try:
        info = process.start()
        assert info["library_version"] == version and info["driver"] == driver
        client = process.request("client.create", {"service_url": reference.service_url, "operation_timeout_ms": 5000,
                                                   "connection_timeout_ms": 3000, "timeout_ms": 10000}, timeout=10)
        topic = f"persistent://public/default/{driver}-schema"
        assert process.request("client.get_partitions", {"client": client["handle"], "topic": topic,
                                                         "timeout_ms": 10000}, timeout=10) == {"topics": [topic]}
        assert process.request("noop", timeout=5) == {}
        assert process.request("reset", timeout=10) == {"closed": 1}
        for message in sent:
            validator.validate(message)
    finally:
        pid = process.pid
        process.close()
    assert gone_soon(pid)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_the_driver_builds_speaks_the_protocol_and_runs_its_cases(reference, run_drivers, library):
    driver, version, passing, lacking = LIBRARIES[library]
    _speaks_the_schema(reference, driver, version)
    wanted = {*passing, *lacking}
    cases = [case for case in load_cases({"344"}) if case.id in wanted]
    assert {case.id for case in cases} == wanted
    session = TargetSession(reference)
    try:
        runs = {case.id: session.run_case(case) for case in cases}
    finally:
        session._close_drivers()
    verdicts = {case_id: (run.verdict.verdict, run.verdict.kind, run.verdict.reason) for case_id, run in runs.items()}
    assert {case_id: verdicts[case_id][0] for case_id in passing} == dict.fromkeys(passing, v.PASSED), verdicts
    for case_id, source in lacking.items():
        verdict, kind, reason = verdicts[case_id]
        assert (verdict, kind) == (v.UNSUPPORTED, "driver-declined") and source in reason, verdicts[case_id]
