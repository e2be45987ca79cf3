"""conformance/targets/container.py: the pulsar-container[:TAG] target.

The launch plan is pure and tested as data; execution is tested through a stand-in backend that
runs the reference broker from the plan (ports and PULSAR_PREFIX_ env), since this machine has no
Docker engine; the missing-engine path is tested for real, end to end through the CLI.
"""

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from conformance import verdicts as v
from conformance.errors import TargetError, UsageError
from conformance.results import read_results
from conformance.targets import config as pulsar_config
from conformance.targets.base import ERA_PIP344
from conformance.targets.container import (DEFAULT_TAG, LaunchPlan, ContainerTarget, config_env,
                                           docker_engine_problem, launch_plan, readiness_problem)
from conformance.targets.process import ManagedProcess
from conformance.targets.reference import ready_urls
from conformance.targets.registry import known_names, make_target

NO_ENGINE = "unix:///nonexistent/conformance-test/docker.sock"
STANDALONE = ("/pulsar/bin/apply-config-from-env.py /pulsar/conf/standalone.conf && "
              "bin/pulsar standalone --no-functions-worker -nss")


# -- the plan -------------------------------------------------------------------------------------

def test_default_plan_is_pulsar_container_with_the_4_0_lts_image():
    plan = launch_plan()
    assert DEFAULT_TAG == "4.0.13"
    assert plan.image == "apachepulsar/pulsar:4.0.13"
    assert plan.command == ("/bin/bash", "-c", STANDALONE)
    assert dict(plan.ports) == {6650: 6650, 8080: 8080}
    assert plan.start_timeout == 120
    env = dict(plan.env)
    assert env["PULSAR_MEM"].startswith("-Xms")
    # Every key the harness knows starts at Pulsar's default, not the image's standalone.conf.
    for key, entry in pulsar_config.PULSAR_DEFAULTS.items():
        assert env[f"PULSAR_PREFIX_{key}"] == entry.default
    assert env["PULSAR_PREFIX_brokerServicePort"] == "6650" and env["PULSAR_PREFIX_webServicePort"] == "8080"
    assert env["PULSAR_PREFIX_advertisedAddress"] == "localhost"
    assert all(k == "PULSAR_MEM" or k.startswith("PULSAR_PREFIX_") for k in env)


def test_plan_with_a_tag_config_and_chosen_ports():
    plan = launch_plan("3.0.5", {"enableNonPersistentTopics": "False", "maxMessageSize": "1024"},
                       broker_port=41000, web_port=41001, advertised_address="docker-host", start_timeout=60)
    assert plan.image == "apachepulsar/pulsar:3.0.5" and plan.tag == "3.0.5"
    env = dict(plan.env)
    assert env["PULSAR_PREFIX_enableNonPersistentTopics"] == "false"  # normalised like Pulsar parses it
    assert env["PULSAR_PREFIX_maxMessageSize"] == "1024"
    assert env["PULSAR_PREFIX_brokerServicePort"] == "41000" and env["PULSAR_PREFIX_webServicePort"] == "41001"
    assert env["PULSAR_PREFIX_advertisedAddress"] == "docker-host"
    # The broker listens on the same port numbers the host sees, so lookups point somewhere real.
    assert dict(plan.ports) == {41000: 41000, 41001: 41001}
    assert plan.service_url("h") == "pulsar://h:41000" and plan.admin_url("h") == "http://h:41001"
    assert plan.broker_config["maxMessageSize"] == "1024" and plan.start_timeout == 60
    # Equal config -> equal env: the target compares these to decide whether to replace the container.
    assert config_env({"enableNonPersistentTopics": "true"}) == config_env({})
    assert config_env({"maxMessageSize": "1024"}) != config_env({})


@pytest.mark.parametrize("tag", ["::", "has space", ":4.0", "-x", "a" * 200])
def test_bad_tags_are_usage_errors(tag):
    with pytest.raises(UsageError, match="bad image tag"):
        launch_plan(tag)


def test_readiness_needs_the_standalone_cluster_and_public_default():
    plan: LaunchPlan = launch_plan()
    clusters, namespaces = "/admin/v2/clusters", "/admin/v2/namespaces/public"
    assert [c.path for c in plan.ready_checks] == [clusters, namespaces]
    ready = {clusters: (200, '["standalone"]'), namespaces: (200, '["public/default","public/functions"]')}
    assert readiness_problem(plan, ready) is None
    assert "not answered" in readiness_problem(plan, {})
    assert "no HTTP answer (ConnectError: refused)" in readiness_problem(plan, {clusters: (0, "ConnectError: refused")})
    assert "answered 500" in readiness_problem(plan, {**ready, clusters: (500, "")})
    assert "not [\"standalone\"]" in readiness_problem(plan, {**ready, clusters: (200, "[]")})
    assert "not [\"standalone\"]" in readiness_problem(plan, {**ready, clusters: (200, '["standalone","x"]')})
    # Testcontainers' PulsarContainer: /clusters can answer before public/default exists.
    assert "public/default" in readiness_problem(plan, {**ready, namespaces: (200, "[]")})
    assert "answered 404" in readiness_problem(plan, {**ready, namespaces: (404, '{"reason":"Tenant does not exist"}')})


def test_registry_names_and_pulsar_versions():
    target = make_target("pulsar-container")
    assert isinstance(target, ContainerTarget) and target.tag == DEFAULT_TAG
    assert target.name == "pulsar-container-4.0.13" and target.spec == "pulsar-container:4.0.13"
    assert make_target("pulsar-container:3.0.5").tag == "3.0.5"
    assert "pulsar-container[:TAG]" in known_names()
    with pytest.raises(UsageError, match="empty tag"):
        make_target("pulsar-container:")


# -- no Docker engine -----------------------------------------------------------------------------

def test_missing_engine_is_a_clean_skip_within_a_second(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
    target = make_target("pulsar-container:4.0.13", timeout=5)
    started = time.monotonic()
    with pytest.raises(TargetError) as info:
        target.start()
    assert time.monotonic() - started < 10  # no engine: no wait at all, even on a loaded machine
    assert str(info.value) == (f"no Docker engine reachable ({NO_ENGINE}: /nonexistent/conformance-test/docker.sock "
                               "does not exist): pulsar-container:4.0.13 skipped")
    assert target.start_error == str(info.value) and not target.started and target.container is None
    assert target.describe()["start_error"] == str(info.value)


def test_an_engine_that_never_answers_is_given_one_second(monkeypatch):
    silent = socket.create_server(("127.0.0.1", 0))
    accepted = []
    stop = threading.Event()

    def accept():
        silent.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(silent.accept()[0])  # held open, never answered
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{silent.getsockname()[1]}")
    try:
        started = time.monotonic()
        problem = docker_engine_problem(1.0)
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        thread.join(1)
        for conn in accepted:
            conn.close()
        silent.close()
    assert elapsed < 15, elapsed  # one second given, and a loaded machine's slack
    assert problem and "127.0.0.1" in problem


def test_missing_testcontainers_package_is_a_reason_not_a_crash(monkeypatch):
    monkeypatch.setitem(sys.modules, "testcontainers.core.docker_client", None)
    assert "testcontainers package is not installed" in docker_engine_problem(1.0)


@pytest.mark.slow
def test_cli_without_engine_reports_the_container_target_a_target_error(tmp_path):
    env = {**_env(), "DOCKER_HOST": NO_ENGINE}
    proc = subprocess.run([sys.executable, "-m", "conformance", "run", "--target", "pulsar-container:4.0.13",
                           "--target", "reference", "--pip", "344", "-k", "flag or seed-bg-001",
                           "--out", str(tmp_path), "--run-id", "noengine", "--timeout", "5"],
                          capture_output=True, text=True, timeout=300, env=env)
    out = proc.stdout + proc.stderr
    records = read_results(tmp_path / "results" / "noengine.jsonl")
    mine = [r for r in records if r.target == "pulsar-container-4.0.13"]
    others = [r for r in records if r.target == "reference"]
    assert mine and others
    reason = (f"target could not start: no Docker engine reachable ({NO_ENGINE}: "
              "/nonexistent/conformance-test/docker.sock does not exist): pulsar-container:4.0.13 skipped")
    assert all(r.verdict == "target-error" and r.reason == reason for r in mine)
    assert any(r.verdict == "passed" for r in others)
    assert proc.returncode == v.EXIT_HARNESS, out[-3000:]  # a target that is down is a finding
    assert "pulsar-container-4.0.13 (could not start: no Docker engine reachable" in out
    assert f"TARGET ERROR pulsar-container-4.0.13: {len(mine)} case(s) not judged: {reason}" in out
    allure = [json.loads(p.read_text()) for p in (tmp_path / "allure-results").glob("*-result.json")]
    judged = [r for r in allure if "[pulsar-container-4.0.13-" in r["name"]]
    assert len(judged) == len(mine)
    assert all(r["status"] == "broken" and "target-error: " in r["statusDetails"]["message"]
               and "no Docker engine reachable" in r["statusDetails"]["message"] for r in judged)
    props = (tmp_path / "allure-results" / "environment.properties").read_text()
    assert "pulsar-container-4.0.13.start_error=no Docker engine reachable" in props
    assert "pulsar-container-4.0.13.image=apachepulsar/pulsar\\:4.0.13" in props


@pytest.mark.slow
def test_containers_without_engine_is_exit_2_and_nothing_passes(tmp_path):
    env = {**_env(), "DOCKER_HOST": NO_ENGINE}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "conformance", "run", "--target", "pulsar-container:3.0.5",
                           "--target", "pulsar-container:4.0.13",
                           "--pip", "344", "--out", str(tmp_path), "--run-id", "versions"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert time.monotonic() - started < 110  # bounded: inside the subprocess's own timeout
    assert proc.returncode == v.EXIT_HARNESS, proc.stdout[-2000:]
    records = read_results(tmp_path / "results" / "versions.jsonl")
    assert {r.target for r in records} == {"pulsar-container-3.0.5", "pulsar-container-4.0.13"}
    assert all(r.verdict == "target-error" and "no Docker engine reachable" in r.reason for r in records)
    assert "no case was executed" in proc.stdout


def _env():
    return dict(os.environ)


# -- execution, with the reference broker standing in for the image ------------------------------

class _ReferenceAsContainer:
    """A RunningContainer: the reference broker started from a plan's ports and PULSAR_PREFIX_ env."""

    def __init__(self, plan: LaunchPlan):
        config = dict(plan.broker_config)
        argv = [sys.executable, "-m", "reference_broker", "--broker-port", config.pop("brokerServicePort"),
                "--web-port", config.pop("webServicePort"), "--metadata-store", "memory:"]
        config.pop("advertisedAddress")
        for key, value in sorted(config.items()):
            argv += ["--set", f"{key}={value}"]
        self.argv = argv
        self.process = ManagedProcess(argv, name="reference broker as container")
        self.process.start(ready_urls, 30)

    def running(self) -> bool:
        return self.process.alive()

    def logs(self) -> str:
        return "\n".join(self.process.lines)

    def stop(self) -> None:
        self.process.stop()


class _Backend:
    def __init__(self, problem=None):
        self._problem = problem
        self.plans: list[LaunchPlan] = []
        self.containers: list[_ReferenceAsContainer] = []

    def problem(self, timeout):
        return self._problem

    def host(self):
        return "127.0.0.1"

    def launch(self, plan):
        self.plans.append(plan)
        self.containers.append(_ReferenceAsContainer(plan))
        return self.containers[-1]


@pytest.mark.slow
def test_container_target_runs_the_plan_waits_until_ready_and_restarts_per_config(tmp_path):
    backend = _Backend()
    target = ContainerTarget("4.0.13", backend=backend, timeout=5, start_timeout=30, log_dir=tmp_path)
    try:
        target.start()
        [plan] = backend.plans
        assert plan.image == "apachepulsar/pulsar:4.0.13" and plan.advertised_address == "127.0.0.1"
        assert plan.broker_port != plan.web_port and plan.broker_port not in (6650, 8080)
        assert target.service_url == f"pulsar://127.0.0.1:{plan.broker_port}"
        assert target.admin_url == f"http://127.0.0.1:{plan.web_port}"
        assert target.has_admin and target.era == ERA_PIP344 and target.version == "0.1.0-reference"
        assert "image tag 4.0.13 but the broker reports version 0.1.0-reference" in target.describe()["warning"]
        generation = target.generation
        # Dynamic keys: REST, confirmed in the runtime config, no new container.
        target.configure({"allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": "3"})
        target.configure({})
        assert len(backend.plans) == 1 and target.generation == generation
        # A non-dynamic key: a new container started with it in the environment.
        target.configure({"maxMessageSize": "1048576"})
        assert len(backend.plans) == 2 and target.generation == generation + 1
        assert dict(backend.plans[1].env)["PULSAR_PREFIX_maxMessageSize"] == "1048576"
        assert not backend.containers[0].running() and backend.containers[1].running()
        assert target.describe()["config"] == "maxMessageSize=1048576"
        target.configure({"maxMessageSize": "1048576", "defaultNumPartitions": "2"})  # same config: kept
        assert len(backend.plans) == 2
        target.configure({"enableNonPersistentTopics": "true"})  # back to the defaults: a new container
        assert len(backend.plans) == 3
    finally:
        target.stop()
    assert not any(c.running() for c in backend.containers)
    assert "--- apachepulsar/pulsar:4.0.13" in (tmp_path / "pulsar-container-4.0.13.log").read_text()


def test_a_container_that_exits_before_ready_is_a_target_error_with_its_output():
    class Dead:
        def running(self):
            return False

        def logs(self):
            return "Exception in thread main\njava.lang.OutOfMemoryError: Java heap space"

        def stop(self):
            self.stopped = True

    class Backend(_Backend):
        def launch(self, plan):
            self.plans.append(plan)
            self.dead = Dead()
            return self.dead

    backend = Backend()
    target = ContainerTarget("3.0.5", backend=backend, timeout=1, start_timeout=5)
    with pytest.raises(TargetError, match=r"(?s)pulsar-container:3.0.5: the container stopped before it was "
                                          r"ready .*OutOfMemoryError"):
        target.start()
    assert backend.dead.stopped and target.container is None


# -- version-keyed era (base.py), as the images of --pulsar-versions get it ----------------------

def test_era_of_an_image_version():
    from conformance.targets.base import ERA_PRE_PIP344, era_of_version

    assert [era_of_version(t) for t in ("3.0.5", "4.0.13", "4.2.4", "Pulsar Server3.0.2")] == \
        [ERA_PRE_PIP344, ERA_PIP344, ERA_PIP344, ERA_PRE_PIP344]
