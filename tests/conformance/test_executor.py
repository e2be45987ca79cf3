"""conformance/executor.py: every row of the trouble table, injected by a driver or a broker that
misbehaves on purpose: the step's status, whether it was performed again, and that a driver's own
trouble never becomes an answer."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from conformance import children, verdicts as v
from conformance.drivers.client import ClientDriver
from conformance.drivers.external import DriverCrashed, DriverError, DriverProcess
from conformance.drivers.java import JavaClientDriver
from conformance.drivers.wire import WireDriver
from conformance.errors import Indefinite, NoContact, ProtocolViolation, TargetError, Unsupported
from conformance.execute import TargetSession
from conformance.executor import (ANSWERED, BROKEN, INDEFINITE, TROUBLE, UNSUPPORTED, VIOLATION, RetryPolicy,
                                  StepExecutor, StepView)
from model import ops
from model.outcomes import ClientError, Done, PartitionList, Partitions
from pulsar_codec import events
from pulsar_codec import pulsar_api_pb2 as pb
from tests.conformance.helpers import (FakeAdminServer, FakeCase, FakeDriver, FakePulsarServer, FakeTarget, Step,
                                       claiming)

FAST = RetryPolicy(attempts=3, pauses_s=(0.0,))
LOOKUP = ops.GetPartitionedMetadata("persistent://public/c1/t", "binary", False)  # repeats
CREATE = ops.CreatePartitionedTopic("persistent://public/c1/t", 2)                 # does not

EXAMPLES = {Unsupported: lambda: Unsupported("no-driver", "cannot"), NoContact: lambda: NoContact("no connection"),
            DriverCrashed: lambda: DriverCrashed("ended"), DriverError: lambda: DriverError("bad answer"),
            Indefinite: lambda: Indefinite("no answer"), ProtocolViolation: lambda: ProtocolViolation("junk"),
            TargetError: lambda: TargetError("cannot drive"), Exception: lambda: ZeroDivisionError("bug")}


def _executor(answer, retry=FAST, target=None):
    target = target or FakeTarget()
    target.start()
    drivers = {name: FakeDriver(name, answer) for name in ("rest", "wire")}
    return StepExecutor(target, drivers, retry=retry), drivers


@pytest.mark.parametrize("row", TROUBLE, ids=lambda row: row.exception.__name__)
def test_every_row_of_the_trouble_table_gives_its_status_and_is_retried_only_where_it_may(row):
    assert row.exception in EXAMPLES, "a row without a fault to inject"

    def raising(op):
        raise EXAMPLES[row.exception]()

    for op, repeats in ((LOOKUP, True), (CREATE, False)):
        executor, drivers = _executor(raising)
        role = "action" if op is LOOKUP else "setup"
        result = executor.perform(StepView(op, role, Done()), "binary")
        assert result.status == row.status
        again = row.retry == "any step" or (row.retry == "repeatable steps" and repeats)
        performed = len(drivers["wire"].performed) + len(drivers["rest"].performed)
        assert performed == result.attempts == (FAST.attempts if again else 1), (op, row)
        assert (result.error is not None) == (row.status == BROKEN)
        if again:
            assert f"after {FAST.attempts} attempts" in result.reason


def test_no_driver_trouble_is_ever_an_answer():
    assert {row.status for row in TROUBLE} <= {UNSUPPORTED, INDEFINITE, VIOLATION, BROKEN}
    assert ANSWERED not in {row.status for row in TROUBLE}


def test_a_step_answered_at_its_second_attempt_is_that_answer_with_the_first_noted():
    calls = []

    def once_unreached(op):
        calls.append(op)
        if len(calls) == 1:
            raise NoContact("connect to 127.0.0.1:1: no answer within 1 s")
        return Partitions(2)

    executor, drivers = _executor(once_unreached)
    result = executor.perform(StepView(CREATE, "setup", Done()), "binary")  # even a creation: nothing happened
    assert (result.status, result.actual, result.attempts) == (ANSWERED, Partitions(2), 2)
    assert any("performing the step again" in e.summary for e in drivers["rest"].transcript.entries)


def _metadata(event):
    if isinstance(event, events.PartitionedMetadata):
        return [events.PartitionedMetadataResponse(
            request_id=event.request_id, partitions=0,
            response=pb.CommandPartitionedTopicMetadataResponse.Success)]
    return []


def test_a_broker_that_leaves_the_first_connect_unanswered_is_reached_at_the_next_attempt():
    """The wire driver against a starved broker: its CONNECT goes unanswered once (NoContact), and the
    lookup is answered on a new connection."""
    server = FakePulsarServer(_metadata, unanswered_connects=1)
    try:
        target = FakeTarget()
        target.start()
        executor = StepExecutor(target, {"wire": WireDriver(server.url, timeout=0.5)}, retry=FAST)
        op = ops.GetPartitionedMetadata("persistent://public/c1/t", "binary", False)
        result = executor.perform(StepView(op, "action", Partitions(0)), "binary")
        assert (result.status, result.actual, result.attempts) == (ANSWERED, Partitions(0), 2), result.reason
        assert sum(isinstance(e, events.Connect) for e in server.received) == 2
    finally:
        server.close()


def test_the_official_client_that_cannot_connect_in_time_is_no_answer_and_asked_again():
    """The C++ client raises ConnectError when its connection is not established in time; without an
    HTTP status that is no answer of the broker's, so the step is performed again and then answered."""
    server = FakePulsarServer(_metadata, unanswered_connects=1)
    try:
        target = FakeTarget()
        target.start()
        client = ClientDriver(server.url, None, timeout=1.0)
        executor = StepExecutor(target, {"client": client}, retry=FAST)
        op = ops.GetPartitionsForTopic("persistent://public/c1/t")
        alone = FakePulsarServer(_metadata, unanswered_connects=1)
        try:
            with pytest.raises(NoContact, match="could not connect"):
                ClientDriver(alone.url, None, timeout=1.0).perform(op)
        finally:
            alone.close()
        result = executor.perform(StepView(op, "action", PartitionList((op.topic,))), "client-binary")
        assert result.status == ANSWERED and result.actual == PartitionList((op.topic,)), result.reason
        assert result.attempts == 2
    finally:
        server.close()


def test_a_connect_error_that_is_the_brokers_http_answer_stays_an_answer_at_the_first_attempt():
    """Over HTTP the C++ client reports any error status as ConnectError, which rows expect exactly."""
    topic = "persistent://public/c1/t"
    admin = FakeAdminServer({("GET", "/admin/v2/persistent/public/c1/t/partitions?checkAllowAutoCreation=true"):
                             (404, {"reason": "Topic not found"})})
    try:
        target = FakeTarget()
        target.start()
        executor = StepExecutor(target, {"client": ClientDriver(None, admin.url, timeout=2.0)}, retry=FAST)
        op = ops.GetPartitionsForTopic(topic, "http")
        result = executor.perform(StepView(op, "action", ClientError("ConnectError")), "client-http")
        assert (result.status, result.actual, result.attempts) == (ANSWERED, ClientError("ConnectError"), 1)
    finally:
        admin.close()


def test_a_java_driver_process_that_dies_under_a_lookup_is_started_again_and_the_lookup_answered(tmp_path):
    """DriverCrashed on a repeatable step: the process starts again and the lookup is asked again."""
    marker = tmp_path / "crashed-once"
    script = tmp_path / "driver.py"
    script.write_text(f'''
import json, os, sys
for line in sys.stdin:
    r = json.loads(line); cmd = r["cmd"]
    if cmd == "hello":
        body = {{"ok": {{"protocol": 1, "driver": "fake", "options": []}}}}
    elif cmd == "client.get_partitions" and not os.path.exists({str(marker)!r}):
        open({str(marker)!r}, "w").close(); sys.exit(9)
    elif cmd == "client.create":
        body = {{"ok": {{"handle": "c1"}}}}
    elif cmd == "client.get_partitions":
        body = {{"ok": {{"topics": [r["args"]["topic"]]}}}}
    else:
        body = {{"ok": {{}}}}
    sys.stdout.write(json.dumps({{"id": r["id"], **body}}) + "\\n"); sys.stdout.flush()
''')
    process = DriverProcess("fake-java", [sys.executable, str(script)], start_timeout=5.0, grace=0.5)
    try:
        target = FakeTarget()
        target.start()
        driver = JavaClientDriver(target.service_url, None, process, timeout=1.0)
        executor = StepExecutor(target, {"java-client": driver}, retry=FAST)
        op = ops.JavaGetPartitionsForTopic("persistent://public/c1/t", False)
        result = executor.perform(StepView(op, "action", PartitionList((op.topic,))), "java-client-binary")
        assert (result.status, result.attempts) == (ANSWERED, 2) and process.starts == 2, result.reason
    finally:
        process.close()


def test_a_driver_whose_start_never_returns_makes_that_case_broken_in_bounded_time_and_the_run_goes_on(
        monkeypatch, tmp_path):
    """A start stuck between fork and exec (seen once: a child of the multi-threaded harness waiting
    for a lock): the case that needed the driver is broken with the reason within the spawn bound,
    a later case gets a new spawner thread, and the child the stuck start made after all is killed."""
    release = threading.Event()
    late: list = []
    real_popen = subprocess.Popen

    def stuck_once(argv, **kwargs):
        if any("stuck-at-spawn" in str(arg) for arg in argv):
            release.wait(30)
            late.append(real_popen([sys.executable, "-c", "import time; time.sleep(60)"], **kwargs))
            return late[-1]
        return real_popen(argv, **kwargs)

    monkeypatch.setattr(children.subprocess, "Popen", stuck_once)
    monkeypatch.setattr(children, "SPAWN_TIMEOUT_S", 1.0)
    stuck = DriverProcess("fake-java", [sys.executable, "-c", "pass", "stuck-at-spawn"], start_timeout=5.0)
    session = TargetSession(FakeTarget(), driver_factory=lambda t: {
        "rest": FakeDriver("rest", lambda op: Done()),
        "java-client": JavaClientDriver(t.service_url, None, stuck, timeout=1.0)})

    def case(name):
        topic = f"persistent://public/c1/{name}"
        return FakeCase(f"fake-{name}[java-client-binary]", lambda ns: (
            Step(ops.JavaGetPartitionsForTopic(topic, False), "action", PartitionList((topic,))),),
            api="java-client-binary")

    started = time.monotonic()
    run = session.run_case(case("first"))
    assert run.verdict.verdict == v.BROKEN and "did not return within 1 s" in run.verdict.reason
    assert time.monotonic() - started < 30  # one second's bound, and a loaded machine's slack
    later = subprocess.run([sys.executable, "-c", "print('spawned')"], capture_output=True, text=True, timeout=10)
    assert later.stdout.strip() == "spawned"
    child = children.popen([sys.executable, "-c", "pass"])  # a new spawner thread serves it
    assert child.wait(10) == 0
    release.set()
    deadline = time.monotonic() + 10
    while not late and time.monotonic() < deadline:
        time.sleep(0.05)
    assert late and late[0].wait(10) != 0, "the child a given-up start made must be killed"


def test_a_target_that_misses_one_connect_is_not_taken_for_stopped():
    """Target.unresponsive asks three times: one CONNECT a busy broker did not answer in time is not
    the end of the target, so the case stays indefinite and later cases still run."""
    from conformance.targets.base import Target

    server = FakePulsarServer(claiming(lambda event: []), unanswered_connects=1)

    class Slow(FakeTarget):
        unresponsive = Target.unresponsive

        def _launch(self):
            self.service_url, self.admin_url = server.url, None

    try:
        target = Slow(has_admin=False)
        target.timeout = 0.5
        target.start()
        assert target.unresponsive() is None
        assert sum(isinstance(e, events.Connect) for e in server.received) == 2
    finally:
        server.close()


def test_the_runner_contract_shows_every_row_of_the_trouble_table():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "runner-contract.md").read_text(encoding="utf-8")
    section = text.split("## The harness's own trouble", 1)[1].split("\n## ", 1)[0]
    for row in TROUBLE:
        if row.exception is not Exception and row.exception is not DriverError:
            assert f"`{row.exception.__name__}`" in section, row.exception.__name__
    from conformance.executor import RETRY
    words = " ".join(section.split())
    assert (RETRY.attempts, RETRY.pauses_s) == (3, (0.25, 1.0)) and "at most three times" in words \
        and "a pause of 0.25 s and then 1 s" in words, "the document states the retry policy the code has"


def test_a_setup_step_the_broker_failed_to_carry_out_is_performed_again_and_an_action_never_is():
    """A precondition answered with a server failure (here Pulsar's 500 when its topic policies service
    could not start for a new namespace) is performed again; an action's answer is the answer."""
    from model.outcomes import RestError

    answers = []

    def flaky(op):
        answers.append(op)
        if len(answers) == 1:
            return RestError(500, "Topic creation encountered an exception by initialize topic policies service.")
        return Done()

    executor, _ = _executor(flaky)
    result = executor.perform(StepView(CREATE, "setup", Done()), "binary")
    assert (result.status, result.actual, result.attempts) == (ANSWERED, Done(), 2)
    answers.clear()
    executor, _ = _executor(flaky)
    result = executor.perform(StepView(CREATE, "action", Done()), "rest")
    assert (result.actual, result.attempts) == (RestError(500, result.actual.reason), 1)
    executor, _ = _executor(lambda op: RestError(409, "This topic already exists"))
    result = executor.perform(StepView(CREATE, "setup", Done()), "binary")
    assert result.attempts == 1, "a refusal is an answer: only a failure to carry out is tried again"
    executor, _ = _executor(lambda op: RestError(503, "unavailable"))
    result = executor.perform(StepView(CREATE, "setup", Done()), "binary")
    assert result.attempts == FAST.attempts and "after 3 attempts" in result.reason
