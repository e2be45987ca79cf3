"""conformance/execute.py: one case on one target, every exception turned into a verdict."""

import threading

import pytest

from conformance import verdicts as v
from conformance.errors import Indefinite, ProtocolViolation, Unsupported
from conformance.execute import TargetSession, era_mismatch
from conformance.targets.base import ERA_PIP344, ERA_PRE_PIP344, Target
from model import ops
from model.outcomes import Done, Partitions, ServerError
from tests.conformance.helpers import FakeCase, FakeDriver, FakeTarget, Step


def _session(answer, **target_kwargs):
    target = FakeTarget(**target_kwargs)
    drivers = {}

    def factory(t):
        drivers.clear()
        drivers.update({name: FakeDriver(name, answer) for name in ("rest", "wire", "client")})
        return dict(drivers)

    return TargetSession(target, driver_factory=factory), target, drivers


def _case(expected=Partitions(3), **kwargs):
    def steps(ns):
        return (Step(ops.CreateNamespace(ns), "setup", Done()),
                Step(ops.GetPartitionedMetadata(f"persistent://{ns}/t", "binary", False), "action", expected))
    return FakeCase("c-001[binary]", steps, **kwargs)


def _answer(op):
    return Done() if isinstance(op, ops.CreateNamespace) else Partitions(3)


def test_fresh_namespace_per_case_and_pass():
    session, target, drivers = _session(_answer)
    first, second = session.run_case(_case()), session.run_case(_case())
    assert first.verdict.verdict == second.verdict.verdict == v.PASSED
    assert first.namespace != second.namespace and first.namespace.startswith("public/c")
    assert drivers["rest"].performed[-1] == ops.CreateNamespace(second.namespace)
    assert first.driver == "wire" and first.transcripts


def test_mismatch_is_failed_with_step_details():
    run = _session(_answer)[0].run_case(_case(expected=ServerError("TopicNotFound", "")))
    assert run.verdict.verdict == v.FAILED and run.verdict.failing_step == 1
    assert run.verdict.actual == Partitions(3)


def test_exceptions_map_to_verdicts():
    def raising(exc):
        def answer(op):
            if isinstance(op, ops.CreateNamespace):
                return Done()
            raise exc
        return answer

    cases = {Unsupported("no-driver", "no"): v.UNSUPPORTED, Indefinite("slow"): v.INDEFINITE,
             ProtocolViolation("junk"): v.FAILED, ZeroDivisionError("bug"): v.BROKEN}
    for exc, expected in cases.items():
        run = _session(raising(exc))[0].run_case(_case())
        assert run.verdict.verdict == expected, exc
        assert run.verdict.failing_step == 1
    broken = _session(raising(ZeroDivisionError("bug")))[0].run_case(_case())
    assert "ZeroDivisionError" in broken.verdict.traceback


def test_era_mismatch_is_unsupported_with_reason_and_nothing_sent():
    session, target, drivers = _session(_answer, era=ERA_PIP344)
    run = session.run_case(_case(era=ERA_PRE_PIP344))
    assert run.verdict.verdict == v.UNSUPPORTED
    assert run.verdict.reason.startswith("row judges pre-PIP-344 Apache Pulsar releases")
    assert not drivers  # no driver was even built
    assert era_mismatch(ERA_PIP344, ERA_PRE_PIP344).startswith("row judges PIP-344 brokers")
    assert era_mismatch(None, ERA_PIP344) is None


def test_target_that_cannot_start_makes_cases_target_errors_never_passed_nor_unsupported():
    session, target, _ = _session(_answer, fail_start="binary not found")
    run = session.run_case(_case())
    assert run.verdict.verdict == v.TARGET_ERROR
    assert run.verdict.reason == "target could not start: binary not found"
    assert session.run_case(_case()).verdict.reason == run.verdict.reason  # started once only


def test_unsupported_broker_config_and_config_bookkeeping():
    session, target, _ = _session(_answer, unsupported_config=True)
    run = session.run_case(_case(broker_config={"allowAutoTopicCreation": "false"}))
    assert run.verdict.verdict == v.UNSUPPORTED and "cannot take" in run.verdict.reason
    session, target, _ = _session(_answer)
    session.run_case(_case(broker_config={"allowAutoTopicCreation": "False"}))
    assert target.configured == [{"allowAutoTopicCreation": "false"}]  # normalised like Pulsar parses it


def test_drivers_are_rebuilt_when_the_target_restarts():
    session, target, drivers = _session(_answer)
    session.run_case(_case())
    before = drivers["wire"]
    session.run_case(_case())
    assert drivers["wire"] is before
    target.generation += 1
    session.run_case(_case())
    assert drivers["wire"] is not before and before.closed


def test_a_stand_in_setup_is_judged_where_pulsar_would_succeed_and_unsupported_where_it_would_not():
    def answer(op):
        if isinstance(op, ops.CreateNonPartitionedTopic):
            return ServerError("TopicNotFound", "auto-creation is off")
        return Done()

    def steps(ns):
        return (Step(ops.CreateNonPartitionedTopic(f"persistent://{ns}/t"), "setup", Done()),
                Step(ops.GetPartitionedMetadata(f"persistent://{ns}/t", "binary", False), "action", Partitions(0)))

    wire = FakeDriver("wire", answer)
    session, target, _ = _session(answer, has_admin=False)
    session.driver_factory = lambda t: {"rest": None, "wire": wire, "client": None}
    # Pulsar with auto-creation on would create the topic for a PRODUCER: the refusal is the target's
    run = session.run_case(FakeCase("c-002[binary]", steps))
    assert run.verdict.verdict == v.FAILED and "standing in for the admin API" in run.verdict.reason
    # with auto-creation off a PRODUCER cannot create it: the setup needs the admin API, nothing is sent
    wire.performed.clear()
    run = session.run_case(FakeCase("c-002[binary]", steps, broker_config={"allowAutoTopicCreation": "false"}))
    assert (run.verdict.verdict, run.verdict.kind) == (v.UNSUPPORTED, "no-admin-api") and not wire.performed


class _Silent:
    """A TCP listener on 127.0.0.1 that accepts and then says nothing, or only ``reply``."""

    def __init__(self, reply: bytes = b""):
        import socket
        import threading

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"pulsar://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held, self.reply = [], reply
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            if self.reply:
                conn.sendall(self.reply)

    def close(self):
        self.sock.close()
        for conn in self.held:
            conn.close()


class _DeadAfterStart(FakeTarget):
    """Started fine; its broker is the silent listener from then on (base.Target.unresponsive)."""

    def __init__(self, url: str):
        super().__init__("dead", has_admin=False)
        self.url = url

    def _launch(self) -> None:
        self.service_url, self.admin_url = self.url, None

    unresponsive = Target.unresponsive  # the real probe, not the helper's stand-in


def _timing_out(op):
    raise Indefinite("no answer within 0.5 s")


@pytest.mark.parametrize("reply, why", [(b"", "no CONNECTED"), (b"\x00\x00\x00\x03abc" * 2, "no Pulsar broker sends")])
def test_a_target_that_stops_answering_makes_the_case_and_later_ones_target_errors(reply, why):
    listener = _Silent(reply)
    try:
        target = _DeadAfterStart(listener.url)
        target.timeout = 0.5
        drivers = {name: FakeDriver(name, _timing_out) for name in ("rest", "wire", "client")}
        session = TargetSession(target, driver_factory=lambda t: dict(drivers))
        run = session.run_case(_case())
        assert run.verdict.verdict == v.TARGET_ERROR, run.verdict
        assert run.verdict.reason.startswith("target stopped serving: ") and why in run.verdict.reason
        later = session.run_case(_case())
        assert later.verdict.verdict == v.TARGET_ERROR and "stopped serving during the run" in later.verdict.reason
        assert target.stopped >= 1
    finally:
        listener.close()


def test_a_slow_answer_from_a_target_that_still_serves_stays_indefinite():
    session, target, _ = _session(_timing_out)  # FakeTarget: its CONNECT still answers
    assert session.run_case(_case()).verdict.verdict == v.INDEFINITE


def test_a_session_asked_to_start_twice_at_once_starts_its_target_once_and_both_see_it_started():
    launched, entered, release = [], threading.Event(), threading.Event()

    class SlowTarget(FakeTarget):
        def _launch(self) -> None:
            launched.append(1)
            entered.set()
            assert release.wait(10)
            super()._launch()

    session = TargetSession(SlowTarget(), driver_factory=lambda t: {})
    early = threading.Thread(target=session.start)  # the runner's start while pytest collects
    early.start()
    assert entered.wait(10)
    seen = []
    late = threading.Thread(target=lambda: (session.start(), seen.append(session.target.started)))  # a schedule's
    late.start()
    late.join(0.2)
    assert late.is_alive()  # waiting for the start under way, however long it takes
    release.set()
    early.join(10)
    late.join(10)
    assert launched == [1] and seen == [True]
