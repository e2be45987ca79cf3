"""conformance/drivers/external.py: the client-driver protocol against drivers that misbehave on
purpose (fake_client_driver.py): every failure gives a clean verdict in bounded time, the run goes
on, and nothing is left running."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import jsonschema
import pytest

from conformance import verdicts as v
from conformance.drivers.external import (
    SCHEMA_PATH, SCRATCH_PREFIX, DriverCrashed, DriverGone, DriverHung, DriverProcess, DriverProtocolError,
    DriverRefused, DriverRequestError, Raised, remove_orphaned_scratch, remove_own_scratch, round_trip)
from conformance.drivers.java import JavaClientDriver
from conformance.errors import Indefinite, NoContact, Unsupported
from conformance.execute import TargetSession
from model import ops
from model.outcomes import ClientError, Done, PartitionList
from tests.conformance.helpers import FakeCase, FakeDriver, FakeTarget, Step

FAKE = Path(__file__).with_name("fake_client_driver.py")
SCHEMA = json.loads(SCHEMA_PATH.read_text())


def fake(mode: str = "ok", **kwargs) -> DriverProcess:
    kwargs.setdefault("start_timeout", 5.0)
    kwargs.setdefault("grace", 0.5)
    return DriverProcess(f"fake-{mode}", [sys.executable, str(FAKE), mode], **kwargs)


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def gone_soon(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def get_partitions(process: DriverProcess, name: str, timeout: float = 0.5):
    client = process.request("client.create", {"service_url": "pulsar://127.0.0.1:1", "operation_timeout_ms": 1000,
                                               "connection_timeout_ms": 1000, "timeout_ms": 1000}, timeout=timeout)
    return process.request("client.get_partitions", {"client": client["handle"], "topic": f"persistent://t/ns/{name}",
                                                     "timeout_ms": int(timeout * 1000)}, timeout=timeout)


def test_a_well_behaved_driver_agrees_answers_and_is_gone_after_close():
    process = fake()
    assert process.request("noop", timeout=1) == {}
    assert process.info["protocol"] == 1 and process.info["driver"] == "fake"
    assert get_partitions(process, "t") == {"topics": ["persistent://t/ns/t"]}
    pid = process.pid
    process.close()
    assert gone_soon(pid) and not process.running


def test_each_process_keeps_its_files_in_a_folder_of_its_own_that_goes_with_it():
    process = fake("keeps-files")
    process.start()
    first = process.scratch
    assert first is not None and [p.name[:9] for p in first.iterdir()] == ["unpacked-"]
    with pytest.raises(DriverHung):
        get_partitions(process, "hang", timeout=0.3)
    assert not first.exists()  # killed: its folder went with it
    process.start()
    second = process.scratch
    assert second != first and second.exists()
    process.close()
    assert not second.exists() and process.scratch is None


def test_the_folders_of_a_harness_killed_outright_are_removed_by_the_next(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphan = tmp_path / f"{SCRATCH_PREFIX}{dead.pid}-abc"
    live = tmp_path / f"{SCRATCH_PREFIX}{os.getpid()}-abc"
    orphan.mkdir(), live.mkdir()
    assert remove_orphaned_scratch(tmp_path) == [orphan]
    assert live.exists() and not orphan.exists()


def test_at_exit_a_folder_made_for_a_process_that_never_started_goes_and_a_running_ones_stays():
    running, interrupted = fake(), fake()
    running.start()
    interrupted._scratch_env()  # a worker stopped between making the folder and starting the process
    stranded = interrupted.scratch
    assert remove_own_scratch() == [stranded]
    assert not stranded.exists() and running.scratch.exists()
    running.close()


def test_starts_requests_and_kills_from_many_threads_never_mix_two_processes():
    """What the Java drivers do at once on one shared process: ask for its hello (the options a
    secured target needs) outside any request, make a client, ask about it; meanwhile the process
    is killed again and again, as a hung request of another case has it killed. A request may find
    its process gone, never another process's answers or a handle that process never made."""
    process = fake("ok")
    unexpected: list[BaseException] = []
    answered = []
    stop = threading.Event()

    served: set[int] = set()  # processes past hello: killing one in its start would refuse the driver

    def user() -> None:
        while not stop.is_set():
            try:
                process.start()
                made, born = process.request_making("client.create", {"timeout_ms": 1000}, timeout=2.0)
                served.add(process.pid or 0)
                answered.append(process.request("client.get_partitions", {
                    "client": made["handle"], "topic": "persistent://t/ns/x", "timeout_ms": 1000},
                    timeout=2.0, started=born))
            except (DriverGone, DriverCrashed, DriverHung):
                pass  # the process was killed under this request: reported as such
            except BaseException as exc:  # noqa: BLE001 - any other is the race this test looks for
                unexpected.append(exc)

    def killer() -> None:
        killed: set[int] = set()
        while not stop.is_set():
            for pid in served - killed - {0}:
                killed.add(pid)
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            stop.wait(0.1)

    threads = [threading.Thread(target=user) for _ in range(6)] + [threading.Thread(target=killer)]
    for thread in threads:
        thread.start()
    stop.wait(4.0)
    stop.set()
    for thread in threads:
        thread.join(30)
    process.close()
    assert not unexpected, [f"{type(e).__name__}: {e}" for e in unexpected[:5]]
    assert answered, "no request was answered between the kills"


def test_wrong_protocol_version_is_refused_once_and_remembered():
    for mode, words in (("wrong-version", "answered hello with protocol 2"), ("refuse", "refused the request hello")):
        process = fake(mode)
        with pytest.raises(DriverRefused, match=words):
            process.request("noop", timeout=1)
        with pytest.raises(DriverRefused):
            process.request("noop", timeout=1)
        assert process.starts == 1 and not process.running  # not restarted per case, not left running


def test_a_driver_that_never_answers_hello_or_dies_at_start_is_refused_in_bounded_time():
    """A starved machine can make one start fail, so the first failure is that request's alone; the
    second in a row refuses the driver for the run."""
    silent = fake("silent", start_timeout=0.5)
    started = time.monotonic()
    with pytest.raises(DriverCrashed, match="did not answer hello within 0.5 s.*starts it again"):
        silent.request("noop", timeout=1)
    with pytest.raises(DriverRefused, match="did not answer hello within 0.5 s.*2 starts in a row"):
        silent.request("noop", timeout=1)
    with pytest.raises(DriverRefused):
        silent.request("noop", timeout=1)
    assert time.monotonic() - started < 30 and not silent.running and silent.starts == 2  # bounded, loaded or not
    crashing = fake("crash-at-start")
    with pytest.raises(DriverCrashed, match="ended during hello"):
        crashing.request("noop", timeout=1)
    with pytest.raises(DriverRefused, match="ended during hello"):
        crashing.request("noop", timeout=1)
    with pytest.raises(DriverRefused, match="cannot run"):
        DriverProcess("nothing", ["/nonexistent/driver"]).request("noop", timeout=1)


def test_a_crash_mid_request_is_reported_with_its_stderr_and_the_next_request_restarts():
    process = fake()
    with pytest.raises(DriverCrashed, match=r"exit status 3.*crashing as asked"):
        get_partitions(process, "crash")
    assert get_partitions(process, "t") == {"topics": ["persistent://t/ns/t"]}
    assert process.starts == 2
    process.close()


def test_a_hang_is_indefinite_within_its_bound_and_kills_the_whole_process_group():
    process = fake()
    started = time.monotonic()
    with pytest.raises(DriverHung, match="no answer to client.get_partitions within 1 s"):
        get_partitions(process, "hang", timeout=0.5)
    assert time.monotonic() - started < 30  # bounded; generous for a loaded machine
    assert not process.running
    grandchild = re.search(r"grandchild (\d+)", process.stderr_tail(20))
    assert grandchild, process.stderr_tail(20)
    assert gone_soon(int(grandchild.group(1)))
    assert get_partitions(process, "t") == {"topics": ["persistent://t/ns/t"]}
    process.close()


def test_answers_that_break_the_protocol_kill_the_driver():
    process = fake()
    with pytest.raises(DriverProtocolError, match="is not JSON"):
        get_partitions(process, "garbage")
    assert not process.running
    with pytest.raises(DriverProtocolError, match="carries id"):
        get_partitions(process, "wrong-id")
    assert not process.running
    process.close()


def test_raised_unsupported_and_error_answers():
    process = fake()
    raised = get_partitions(process, "raise")
    assert raised == Raised("org.apache.pulsar.client.api.PulsarClientException$TopicDoesNotExistException",
                            "topic does not exist", ())
    with pytest.raises(Unsupported, match="this fake has no such method"):
        get_partitions(process, "unsupported")
    with pytest.raises(DriverRequestError, match="must be a string"):
        get_partitions(process, "error")
    assert process.running  # none of these is the driver's fault as a program
    process.close()


def test_round_trip_times_no_op_requests():
    process = fake()
    times = round_trip(process, 5)
    assert len(times) == 5 and all(t > 0 for t in times)  # bench/client_protocol.py measures them
    process.close()


def test_the_schema_accepts_what_the_harness_sends_and_rejects_what_it_must_not():
    validator = jsonschema.Draft202012Validator(SCHEMA)
    good = [{"id": 1, "cmd": "hello", "args": {"protocol": 1}},
            {"id": 2, "cmd": "client.get_partitions", "args": {"client": "c1", "topic": "persistent://a/b/c",
                                                               "timeout_ms": 10}},
            {"id": 2, "ok": {"topics": []}}, {"id": None, "error": "not JSON"},
            {"id": 3, "raised": {"class": "java.util.concurrent.TimeoutException", "message": None}}]
    bad = [{"id": 1, "cmd": "hello", "args": {"protocol": 2}},
           {"id": 2, "cmd": "client.get_partitions", "args": {"client": "c1", "topic": "t", "auto_create": "no",
                                                              "timeout_ms": 10}},
           {"id": 2, "ok": {}, "error": "both"}, {"id": 3, "raised": {"message": "no class"}}]
    for message in good:
        validator.validate(message)
    for message in bad:
        assert not validator.is_valid(message), message


# -- through a run: each misbehaviour is one case's verdict, and the run goes on ------------------


def _java_case(name: str) -> FakeCase:
    def steps(ns):
        topic = f"persistent://{ns}/{name}"
        return (Step(ops.CreateNamespace(ns), "setup", Done()),
                Step(ops.JavaGetPartitionsForTopic(topic, False), "action", PartitionList((topic,))))
    return FakeCase(f"fake-{name}[java-client-binary]", steps, api="java-client-binary")


def test_in_a_run_crash_is_broken_hang_is_indefinite_and_the_next_case_passes():
    process = fake()
    target = FakeTarget()

    def factory(t):
        return {"rest": FakeDriver("rest", lambda op: Done()),
                "java-client": JavaClientDriver(t.service_url, t.admin_url, process, timeout=0.5)}

    session = TargetSession(target, driver_factory=factory)
    names = ["t", "crash", "t", "hang", "t", "garbage", "t", "raise", "unsupported"]
    started = time.monotonic()
    verdicts = [session.run_case(_java_case(name)).verdict for name in names]
    assert [x.verdict for x in verdicts] == [v.PASSED, v.BROKEN, v.PASSED, v.INDEFINITE, v.PASSED, v.BROKEN,
                                             v.PASSED, v.FAILED, v.UNSUPPORTED]
    assert verdicts[7].actual == ClientError("PulsarClientException.TopicDoesNotExistException")
    assert "DriverCrashed" in verdicts[1].reason and "DriverProtocolError" in verdicts[5].reason
    assert time.monotonic() - started < 60  # bounded; generous for a loaded machine
    pid = process.pid
    process.close()
    assert pid is None or gone_soon(pid)


def test_in_a_run_a_driver_of_another_protocol_version_makes_every_case_broken_after_one_start():
    process = fake("wrong-version")
    session = TargetSession(FakeTarget(), driver_factory=lambda t: {
        "rest": FakeDriver("rest", lambda op: Done()),
        "java-client": JavaClientDriver(t.service_url, t.admin_url, process, timeout=0.5)})
    verdicts = [session.run_case(_java_case("t")).verdict for _ in range(3)]
    assert all(x.verdict == v.BROKEN and "answered hello with protocol 2" in x.reason for x in verdicts)
    assert process.starts == 1 and not process.running


class _StoppedAfterMaking(DriverProcess):
    """A shared process that another case's hung request stops right after this case made a handle."""

    def __init__(self, *args, stops: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.stops = stops

    def request_making(self, *args, **kwargs):
        made = super().request_making(*args, **kwargs)
        if self.stops:
            self.stops -= 1
            self._kill()
        return made


def _stopped_after_making(stops: int) -> _StoppedAfterMaking:
    return _StoppedAfterMaking("fake-ok", [sys.executable, str(FAKE), "ok"], start_timeout=5.0, grace=0.5, stops=stops)


def test_a_lookup_whose_client_went_with_a_restarted_process_is_asked_again_from_a_new_client():
    process = _stopped_after_making(1)
    driver = JavaClientDriver("pulsar://127.0.0.1:1", None, process, timeout=0.5)
    topic = "persistent://t/ns/t"
    # Without the restart check, c1 would be asked of the new process, which never made it.
    with pytest.raises(NoContact, match="was not sent"):
        driver.perform(ops.JavaGetPartitionsForTopic(topic))
    session = TargetSession(FakeTarget(), driver_factory=lambda t: {
        "rest": FakeDriver("rest", lambda op: Done()),
        "java-client": JavaClientDriver(t.service_url, t.admin_url, process, timeout=0.5)})
    process.stops = 1
    run = session.run_case(_java_case("t"))
    assert run.verdict.verdict == v.PASSED, run.verdict.reason
    assert process.starts == 3  # stopped after each c1; the third start made the client that answered
    assert any("performing the step again" in entry.summary for t in run.transcripts for entry in t.entries)
    process.close()


def test_a_process_stopped_under_every_attempt_is_indefinite_and_so_is_a_produce_consume_it_interrupted():
    process = _stopped_after_making(3)
    session = TargetSession(FakeTarget(), driver_factory=lambda t: {
        "rest": FakeDriver("rest", lambda op: Done()),
        "java-client": JavaClientDriver(t.service_url, t.admin_url, process, timeout=0.5)})
    run = session.run_case(_java_case("t"))
    assert run.verdict.verdict == v.INDEFINITE and "after 3 attempts" in run.verdict.reason, run.verdict.reason
    driver = JavaClientDriver("pulsar://127.0.0.1:1", None, process, timeout=0.5)
    process.stops = 1
    with pytest.raises(Indefinite, match="producer and consumer went with it"):
        driver.perform(ops.JavaProduceConsume("persistent://t/ns/t", count=1))
    process.close()
