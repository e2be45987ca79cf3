"""The java-client and java-admin drivers end to end: the real Java client against the reference
broker, through the client-driver protocol (drivers/java.py, clients/java)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from conformance import verdicts as v
from conformance.suite import load_cases
from conformance.drivers import java
from conformance.drivers.external import SCHEMA_PATH, DriverProcess, Raised
from conformance.drivers.java_build import DEFAULT_CLIENT_VERSION, driver_command
from conformance.errors import Unsupported
from conformance.execute import TargetSession
from conformance.targets.reference import ReferenceTarget
from tests.conformance.drivers.test_external import gone_soon

pytestmark = pytest.mark.slow

OLD_CLIENT = "3.0.5"  # the last 3.0 release before PIP-344: no getPartitionsForTopic(String, boolean)


@pytest.fixture(scope="module")
def reference():
    target = ReferenceTarget(start_timeout=30)
    target.start()
    yield target
    target.stop()


@pytest.fixture(scope="module")
def run_drivers():
    java.configure()
    yield
    java.close_shared()


def test_cases_of_every_java_table_pass_on_the_reference_broker(reference, run_drivers):
    wanted = {"pip344-java-list-005[java-client-binary]", "pip344-java-list-005[java-client-http]",
              "pip344-java-list-005-no-metadata[java-client-binary]", "pip344-java-onearg-002[java-client-http]",
              "pip344-java-pc-001-shared[java-client-binary]", "pip344-java-pc-004-refused[java-client-http]",
              "pip344-java-admin-001[java-admin]", "pip344-java-admin-002[java-admin]"}
    cases = [c for c in load_cases({"344"}) if c.id in wanted]
    assert {c.id for c in cases} == wanted
    session = TargetSession(reference)
    try:
        runs = {case.id: session.run_case(case) for case in cases}
    finally:
        session._close_drivers()
    verdicts = {cid: (run.verdict.verdict, run.verdict.reason) for cid, run in runs.items()}
    assert all(verdict == v.PASSED for verdict, _ in verdicts.values()), verdicts
    # the real client's exceptions came through the mapping (the expectations name them)
    assert "TopicDoesNotExistException" in repr(runs["pip344-java-list-005[java-client-binary]"].verdict.actual)
    assert "NotFoundException" in repr(runs["pip344-java-admin-001[java-admin]"].verdict.actual)


def test_the_driver_speaks_the_schema(reference):
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    process = DriverProcess("java-client", lambda: driver_command("java-client", DEFAULT_CLIENT_VERSION))
    sent = []
    original = process._exchange

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
        assert info["library_version"] == DEFAULT_CLIENT_VERSION and info["language"] == "java"
        client = process.request("client.create", {"service_url": reference.service_url, "operation_timeout_ms": 5000,
                                                   "connection_timeout_ms": 3000, "timeout_ms": 10000}, timeout=10)
        absent = process.request("client.get_partitions", {"client": client["handle"], "auto_create": False,
                                                           "topic": "persistent://public/default/java-schema-absent",
                                                           "timeout_ms": 10000}, timeout=10)
        assert isinstance(absent, Raised) and absent.cls.endswith("PulsarClientException$TopicDoesNotExistException")
        assert process.request("noop", timeout=5) == {}
        assert process.request("reset", timeout=10) == {"closed": 1}
        for message in sent:
            validator.validate(message)
    finally:
        pid = process.pid
        process.close()
    assert gone_soon(pid)


def test_an_old_client_has_no_two_argument_form_but_answers_the_old_one(reference):
    process = DriverProcess("java-client old", lambda: driver_command("java-client", OLD_CLIENT))
    try:
        assert process.start()["library_version"] == OLD_CLIENT
        client = process.request("client.create", {"service_url": reference.service_url, "operation_timeout_ms": 5000,
                                                   "connection_timeout_ms": 3000, "timeout_ms": 10000}, timeout=10)
        args = {"client": client["handle"], "topic": "persistent://public/default/java-old", "timeout_ms": 10000}
        with pytest.raises(Unsupported, match="has no getPartitionsForTopic\\(String, boolean\\)"):
            process.request("client.get_partitions", {**args, "auto_create": False}, timeout=10)
        assert process.request("client.get_partitions", args, timeout=10) == {"topics": [args["topic"]]}
    finally:
        process.close()
