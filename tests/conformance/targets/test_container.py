"""conformance/targets/container.py and image.py: the pulsar-container[:VERSION] target.

The launch plan and the image plans are pure and tested as data; execution is tested through a
stand-in backend that runs the reference broker from the plan (ports and PULSAR_PREFIX_ env); the
missing-engine path is tested end to end through the CLI; and the slow tests at the end run Apache
Pulsar 4.0.7 in a real container (an engine is started for them when none answers).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conformance import verdicts as v
from conformance.errors import TargetError, UsageError
from conformance.results import read_results
from conformance.targets import config as pulsar_config
from conformance.targets import image as images
from conformance.targets import maven, standalone
from conformance.targets.base import ERA_PIP344
from conformance.targets.container import (DEFAULT_TAG, LABEL_HOST, LABEL_PID, LABEL_PID_STARTED, LaunchPlan,
                                           ContainerTarget, config_env, docker_engine_problem, harness_gone,
                                           harness_labels, launch_plan, readiness_problem)
from conformance.targets.process import ManagedProcess
from conformance.targets.reference import ready_urls
from conformance.targets.registry import known_names, make_target
from tests.docker_engine import engine  # noqa: F401 - the module's fixture

NO_ENGINE = "unix:///nonexistent/conformance-test/docker.sock"
STANDALONE = ("/pulsar/bin/apply-config-from-env.py /pulsar/conf/standalone.conf && "
              "bin/pulsar standalone --no-functions-worker -nss")


# -- the plan -------------------------------------------------------------------------------------

def test_default_plan_is_pulsar_container_with_the_4_0_lts_image_on_the_host_network():
    plan = launch_plan()
    assert DEFAULT_TAG == "4.0.13"
    assert plan.image == "apachepulsar/pulsar:4.0.13" and plan.image_kind == "official"
    assert plan.command == ("/bin/bash", "-c", STANDALONE + " --bookkeeper-port 3181")
    assert plan.network_mode == "host"
    assert plan.start_timeout == 180
    env = dict(plan.env)
    assert env["PULSAR_MEM"] == "-Xms128m -Xmx1g -XX:MaxDirectMemorySize=512m"  # standalone.py's heap
    # Every key the harness knows starts at Pulsar's default, not the image's standalone.conf.
    for key, entry in pulsar_config.PULSAR_DEFAULTS.items():
        assert env[f"PULSAR_PREFIX_{key}"] == entry.default
    assert env["PULSAR_PREFIX_brokerServicePort"] == "6650" and env["PULSAR_PREFIX_webServicePort"] == "8080"
    # Loopback only: it binds and advertises 127.0.0.1, so lookups answer URLs reachable here.
    assert env["PULSAR_PREFIX_advertisedAddress"] == "127.0.0.1" and env["PULSAR_PREFIX_bindAddress"] == "127.0.0.1"
    assert all(k == "PULSAR_MEM" or k.startswith("PULSAR_PREFIX_") for k in env)


def test_plan_with_a_tag_config_and_chosen_ports():
    plan = launch_plan("3.0.5", {"enableNonPersistentTopics": "False", "maxMessageSize": "1024"},
                       broker_port=41000, web_port=41001, bookie_port=41002, start_timeout=60,
                       labels={"a": "b"})
    assert plan.image == "apachepulsar/pulsar:3.0.5" and plan.tag == "3.0.5"
    env = dict(plan.env)
    assert env["PULSAR_PREFIX_enableNonPersistentTopics"] == "false"  # normalised like Pulsar parses it
    assert env["PULSAR_PREFIX_maxMessageSize"] == "1024"
    assert env["PULSAR_PREFIX_brokerServicePort"] == "41000" and env["PULSAR_PREFIX_webServicePort"] == "41001"
    assert plan.command[-1].endswith("--bookkeeper-port 41002")
    # The broker listens on the chosen port numbers on the host's loopback, and advertises them.
    assert plan.service_url == "pulsar://127.0.0.1:41000" and plan.admin_url == "http://127.0.0.1:41001"
    assert plan.broker_config["maxMessageSize"] == "1024" and plan.start_timeout == 60
    assert dict(plan.labels) == {"a": "b"}
    # Equal config -> equal env: the target compares these to decide whether to replace the container.
    assert config_env({"enableNonPersistentTopics": "true"}) == config_env({})
    assert config_env({"maxMessageSize": "1024"}) != config_env({})


def test_local_image_plan_starts_the_standalone_starter_with_the_same_config_as_pulsar_standalone(tmp_path):
    static = {"maxMessageSize": "1024", "allowAutoTopicCreationType": "partitioned"}
    plan = launch_plan("4.0.7", static, image="pulsar-conformance/pulsar:4.0.7-abc", image_kind="local",
                       broker_port=41000, web_port=41001, bookie_port=41002)
    assert plan.image == "pulsar-conformance/pulsar:4.0.7-abc"
    assert plan.command == (images.START_SCRIPT, "--bookkeeper-port", "41002")
    jvm = standalone.launch_plan("4.0.7", static, java="java", data_dir=tmp_path, broker_port=41000,
                                 web_port=41001, bookie_port=41002)
    assert dict(plan.broker_config) == dict(jvm.config)  # container and JVM targets run one config
    assert {f"PULSAR_PREFIX_{k}": val for k, val in jvm.config.items()}.items() <= dict(plan.env).items()
    with pytest.raises(ValueError, match="image kind"):
        launch_plan("4.0.7", image_kind="other")


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
        for key, value in sorted(config.items()):
            if key in pulsar_config.PULSAR_DEFAULTS:  # the keys the reference broker models
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
    def __init__(self, problem=None, chosen=None):
        self._problem = problem
        self.chosen = chosen or images.ChosenImage("apachepulsar/pulsar:4.0.13", "official", "sha256:1", "present")
        self.plans: list[LaunchPlan] = []
        self.containers: list[_ReferenceAsContainer] = []
        self.prepared: list[str] = []
        self.sweeps = 0

    def problem(self, timeout):
        return self._problem

    def prepare(self, tag, timeout):
        self.prepared.append(tag)
        return self.chosen

    def sweep(self):
        self.sweeps += 1
        return []

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
        assert len({plan.broker_port, plan.web_port, plan.bookie_port}) == 3
        assert plan.broker_port not in (6650, 8080) and plan.network_mode == "host"
        assert plan.labels[LABEL_PID] == str(os.getpid()) and backend.sweeps == 1 and backend.prepared == ["4.0.13"]
        info = target.describe()
        assert info["image"] == "apachepulsar/pulsar:4.0.13" and info["image_kind"] == "official"
        assert info["image_source"] == "apachepulsar/pulsar:4.0.13 (official, present)"
        assert info["start_s"]
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
        assert backend.prepared == ["4.0.13"] and backend.sweeps == 1  # the image is chosen once per target
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


# -- the image: official where it can be had, else built here and reused by content ---------------

def _jars(folder: Path, names=("pulsar-broker-4.0.7.jar", "netty-4.1.jar", "rocksdbjni-8.jar")) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names:
        path = folder / name
        path.write_bytes(b"x" * (len(name) + 10))
        paths.append(path)
    return paths


def test_the_image_digest_changes_with_what_goes_into_it_and_only_then(tmp_path, monkeypatch):
    jars = _jars(tmp_path / "m2")
    plan = images.image_plan("4.0.7", jars, "base:1", "sha256:base")
    assert plan.tag == f"pulsar-conformance/pulsar:4.0.7-{plan.digest[:12]}"
    # The same inputs: the same tag, wherever the jars sit in the cache.
    moved = tmp_path / "elsewhere"
    shutil.copytree(tmp_path / "m2", moved)
    assert images.image_plan("4.0.7", jars, "base:1", "sha256:base").tag == plan.tag
    assert images.image_plan("4.0.7", [moved / j.name for j in jars], "base:1", "sha256:base").tag == plan.tag
    # Each input changes it: the base image, the jar list (order too), a jar's size, the version,
    # the start script's JVM options.
    others = [images.image_plan("4.0.7", jars, "base:1", "sha256:other"),
              images.image_plan("4.0.7", jars[:2], "base:1", "sha256:base"),
              images.image_plan("4.0.7", [jars[1], jars[0], jars[2]], "base:1", "sha256:base"),
              images.image_plan("4.0.8", jars, "base:1", "sha256:base")]
    jars[2].write_bytes(b"a rebuilt jar of another size, same name")
    others.append(images.image_plan("4.0.7", jars, "base:1", "sha256:base"))
    monkeypatch.setattr(images, "JVM_OPTIONS", ("-Dother=1",))
    others.append(images.image_plan("4.0.7", [moved / j.name for j in jars], "base:1", "sha256:base"))
    assert len({plan.tag, *(o.tag for o in others)}) == len(others) + 1, [plan.tag] + [o.tag for o in others]
    monkeypatch.undo()
    assert images.image_plan("4.0.7", [moved / j.name for j in jars], "base:1", "sha256:base").tag == plan.tag


def test_the_image_plan_carries_the_standalone_classpath_and_start(tmp_path):
    jars = _jars(tmp_path / "a") + _jars(tmp_path / "b", ("netty-4.1.jar",))  # two jars of one name
    plan = images.image_plan("4.0.7", jars, "pulsar-conformance/debian-java:bookworm-x", "sha256:base")
    assert [j.name for j in plan.jars] == ["pulsar-broker-4.0.7.jar", "netty-4.1.jar", "rocksdbjni-8.jar",
                                           "3-netty-4.1.jar"]
    assert plan.argfile == ("-cp\n/pulsar/lib/pulsar-broker-4.0.7.jar:/pulsar/lib/netty-4.1.jar:"
                            "/pulsar/lib/rocksdbjni-8.jar:/pulsar/lib/3-netty-4.1.jar\n")
    assert plan.dockerfile.startswith("FROM pulsar-conformance/debian-java:bookworm-x\n")
    assert 'CMD ["/pulsar/bin/conformance-standalone"]' in plan.dockerfile
    for part in (standalone.MAIN_CLASS, *standalone.JVM_OPTIONS, "-nss -nfw", "@/pulsar/classpath.args",
                 "${PULSAR_MEM:-" + " ".join(standalone.HEAP) + "}", "s/^PULSAR_PREFIX_//p", '"$@"'):
        assert part in plan.script
    images.write_context(plan, tmp_path / "context")
    assert sorted(p.name for p in (tmp_path / "context" / "lib").iterdir()) == sorted(j.name for j in plan.jars)
    assert os.access(tmp_path / "context" / "conformance-standalone", os.X_OK)
    assert (tmp_path / "context" / "Dockerfile").read_text() == plan.dockerfile


def test_the_base_plan_is_mmdebstrap_minbase_with_java_and_its_tag_follows_its_command():
    base = images.BasePlan()
    command = base.command(Path("/w/base.tar"))
    assert command[:3] == ["mmdebstrap", "--variant=minbase",
                           "--include=openjdk-17-jre-headless,ca-certificates,procps"]
    assert command[-3:] == ["bookworm", "/w/base.tar", "http://deb.debian.org/debian"]
    assert base.tag == images.BasePlan().tag and base.tag.startswith("pulsar-conformance/debian-java:bookworm-")
    assert images.BasePlan(mirror="http://mirror.example/debian").tag != base.tag
    assert images.BasePlan(packages=("openjdk-17-jre-headless",)).tag != base.tag


class _Engine:
    """images.Engine's operations, in memory."""

    def __init__(self, present=(), pull_problem="no registry", build_error=None):
        self.images = {ref: f"sha256:{i}" for i, ref in enumerate(present)}
        self.pull_problem = pull_problem
        self.build_error = build_error
        self.pulled, self.built, self.imported = [], [], []

    def image_id(self, ref):
        return self.images.get(ref)

    def pull(self, ref, timeout):
        self.pulled.append(ref)
        if self.pull_problem:
            return self.pull_problem
        self.images[ref] = "sha256:pulled"
        return None

    def import_tar(self, tar, tag, changes, timeout):
        self.imported.append(tag)
        self.images[tag] = "sha256:base"
        return self.images[tag]

    def build(self, context, tag, labels, timeout):
        assert (Path(context) / "Dockerfile").is_file()
        if self.build_error:
            raise TargetError(self.build_error)
        self.built.append(tag)
        self.images[tag] = f"sha256:built{len(self.built)}"
        return self.images[tag]


@pytest.fixture
def fake_jars(tmp_path, monkeypatch):
    jars = tuple(_jars(tmp_path / "m2"))
    resolved = []

    def resolve(version, **kwargs):
        resolved.append(version)
        if version == "9.9.9":
            raise TargetError("Apache Pulsar 9.9.9 is not served by the Maven repository "
                              "(org.apache.pulsar:pulsar:pom:9.9.9 is missing); pick a release it serves")
        return maven.Classpath(version, jars, tmp_path / "cp.txt", 0.0)

    monkeypatch.setattr(maven, "resolve", resolve)
    monkeypatch.setenv("PULSAR_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(images.MODE_ENV, raising=False)
    return resolved


def test_the_official_image_is_used_when_present_or_pulled(fake_jars):
    engine = _Engine(present=["apachepulsar/pulsar:4.0.7"])
    chosen = images.choose_image("4.0.7", engine=engine, say=lambda m: None)
    assert (chosen.ref, chosen.kind, chosen.how) == ("apachepulsar/pulsar:4.0.7", "official", "present")
    assert engine.pulled == [] and fake_jars == []
    engine = _Engine(pull_problem=None)
    chosen = images.choose_image("4.0.7", engine=engine, say=lambda m: None)
    assert (chosen.ref, chosen.how) == ("apachepulsar/pulsar:4.0.7", "pulled")
    assert engine.pulled == ["apachepulsar/pulsar:4.0.7"]
    assert fake_jars == [] and engine.built == []


def test_without_a_registry_the_local_image_is_built_once_then_reused(fake_jars, tmp_path):
    base = images.base_plan()
    engine = _Engine(present=[base.tag])  # the base exists: no mmdebstrap needed
    said = []
    first = images.choose_image("4.0.7", engine=engine, say=said.append)
    assert first.kind == "local" and first.how == "built" and first.ref.startswith("pulsar-conformance/pulsar:4.0.7-")
    assert first.why_local == "apachepulsar/pulsar:4.0.7 cannot be pulled: no registry"
    assert engine.built == [first.ref] and engine.imported == [] and "build" in first.seconds
    assert any("building pulsar-conformance/pulsar:4.0.7-" in m for m in said)
    again = images.choose_image("4.0.7", engine=engine, say=said.append)
    assert (again.ref, again.how, again.image_id) == (first.ref, "reused", first.image_id)
    assert engine.built == [first.ref]  # nothing rebuilt
    # The build folders are gone; only the lock file stays in the cache.
    assert [p.name for p in (tmp_path / "cache" / "docker" / "work").iterdir()] == []


def test_image_modes_and_tags_that_cannot_be_built(fake_jars, monkeypatch):
    engine = _Engine(present=[images.base_plan().tag])
    with pytest.raises(TargetError, match=r"cannot pull apachepulsar/pulsar:4.0.7 \(PULSAR_CONFORMANCE_IMAGE="
                                          r"official\): no registry"):
        images.choose_image("4.0.7", mode="official", engine=engine, say=lambda m: None)
    chosen = images.choose_image("4.0.7", mode="local", engine=_Engine(present=["apachepulsar/pulsar:4.0.7",
                                                                                images.base_plan().tag]),
                                 say=lambda m: None)
    assert chosen.kind == "local"  # the official image is not even looked at
    with pytest.raises(TargetError, match="no local image can be made for tag 'latest'"):
        images.choose_image("latest", engine=engine, say=lambda m: None)
    monkeypatch.setenv(images.MODE_ENV, "sometimes")
    with pytest.raises(TargetError, match="PULSAR_CONFORMANCE_IMAGE='sometimes': expected one of auto, official"):
        images.choose_image("4.0.7", engine=engine, say=lambda m: None)


def test_a_version_maven_cannot_resolve_and_a_failed_build_name_their_cause(fake_jars, monkeypatch):
    engine = _Engine(present=[images.base_plan().tag])
    with pytest.raises(TargetError, match=r"cannot make the local image of Apache Pulsar 9.9.9: Apache Pulsar "
                                          r"9.9.9 is not served by the Maven repository"):
        images.choose_image("9.9.9", engine=engine, say=lambda m: None)
    engine = _Engine(present=[images.base_plan().tag],
                     build_error="building image x failed: ...\nlast output:\nStep 2/7 : COPY lib/ /pulsar/lib/\n"
                                 "no space left on device")
    with pytest.raises(TargetError, match="(?s)last output:.*no space left on device"):
        images.choose_image("4.0.7", engine=engine, say=lambda m: None)
    monkeypatch.setattr(images.shutil, "which", lambda name: None)
    with pytest.raises(TargetError, match="needs mmdebstrap, which is not installed: apt-get install mmdebstrap"):
        images.choose_image("4.0.7", engine=_Engine(), say=lambda m: None)


def test_a_failed_preparation_is_the_targets_start_error_and_nothing_is_launched():
    class Backend(_Backend):
        def prepare(self, tag, timeout):
            raise TargetError("cannot make the local image of Apache Pulsar 9.9.9: not served")

    backend = Backend()
    target = ContainerTarget("9.9.9", backend=backend, timeout=1)
    with pytest.raises(TargetError, match="pulsar-container:9.9.9: no image: cannot make the local image"):
        target.start()
    assert backend.plans == [] and target.start_error.startswith("pulsar-container:9.9.9: no image")


def test_tls_runs_are_refused_with_a_reason():
    from conformance.security import RunSecurity

    backend = _Backend()
    target = ContainerTarget("4.0.7", backend=backend, timeout=1, security=RunSecurity(secure=True, tls=True))
    with pytest.raises(TargetError, match="does not run TLS runs"):
        target.start()
    assert backend.plans == []


def test_a_configuration_with_authentication_gets_the_runs_key_and_the_brokers_client_token():
    from conformance.security import RunSecurity

    security = RunSecurity()
    static = {"authenticationEnabled": "true", "authorizationEnabled": "true", "superUserRoles": "superuser"}
    plan = launch_plan("4.0.7", static, image_kind="local", extra=security.launch_config(static, pulsar=True))
    env = dict(plan.env)
    assert env["PULSAR_PREFIX_tokenSecretKey"].startswith("data:;base64,")  # no file to mount
    assert env["PULSAR_PREFIX_authenticationProviders"].endswith("AuthenticationProviderToken")
    assert env["PULSAR_PREFIX_brokerClientAuthenticationParameters"].startswith("token:")


def test_harness_labels_name_this_process_and_a_gone_harness_is_recognised():
    labels = harness_labels("pulsar-container:4.0.7")
    assert labels[LABEL_PID] == str(os.getpid()) and labels[LABEL_HOST] == socket.gethostname()
    assert labels[LABEL_PID_STARTED].isdigit()
    assert not harness_gone(labels)  # ours
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = {**labels, LABEL_PID: done.stdout.strip(), LABEL_PID_STARTED: "1"}
    assert harness_gone(gone)
    assert not harness_gone({**gone, LABEL_HOST: "another-host"})  # never another host's containers
    parent = {**labels, LABEL_PID: str(os.getppid())}
    parent.pop(LABEL_PID_STARTED)
    assert not harness_gone(parent)  # alive, start time unknown
    assert harness_gone({**parent, LABEL_PID_STARTED: "1"})  # alive, but another process (pid reused)


# -- for real: Apache Pulsar 4.0.7 in a container ----------------------------------------------

REPO = Path(__file__).resolve().parents[3]
REAL = "pulsar-container:4.0.7"


def _containers_of(pid: int) -> list[str]:
    import docker

    client = docker.from_env(timeout=30)
    try:
        return [c.name for c in client.containers.list(all=True, filters={"label": f"{LABEL_PID}={pid}"})]
    finally:
        client.close()


def _run_harness(tmp_path: Path, run_id: str, keyword: str, pips=("344",)) -> subprocess.Popen:
    argv = [sys.executable, "-m", "conformance", "run", "--target", REAL, "--out", str(tmp_path),
            "--run-id", run_id, "--timeout", "20"]
    for pip in pips:
        argv += ["--pip", pip]
    if keyword:
        argv += ["-k", keyword]
    return subprocess.Popen(argv, cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _wait_for_container(proc: subprocess.Popen, within: float) -> list[str]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and proc.poll() is None:
        names = _containers_of(proc.pid)
        if names:
            return names
        time.sleep(1.0)
    return []


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_pulsar_4_0_7_in_a_container_judges_cases_and_leaves_no_container(engine, tmp_path):
    proc = _run_harness(tmp_path, "real", "flag-001 or gpmt-001")
    try:
        out, _ = proc.communicate(timeout=2100)  # a first image build included
    finally:
        if proc.poll() is None:
            proc.kill()
    records = read_results(tmp_path / "results" / "real.jsonl")
    assert records, out[-3000:]
    assert {r.target for r in records} == {"pulsar-container-4.0.7"}
    assert all(r.target_version == "4.0.7" for r in records), out[-3000:]
    judged = [r for r in records if r.verdict != v.UNSUPPORTED]
    assert judged and all(r.verdict == v.PASSED or (r.verdict == v.FAILED and r.known_divergence)
                          for r in judged), [(r.case_id, r.verdict, r.reason[:200]) for r in judged]
    assert any(r.case_id == "pip344-flag-001[binary]" and r.verdict == v.PASSED for r in records)
    assert proc.returncode == 0, out[-3000:]
    props = (tmp_path / "allure-results" / "environment.properties").read_text()
    image = next(line.split("=", 1)[1] for line in props.splitlines()
                 if line.startswith("pulsar-container-4.0.7.image="))
    assert image.replace("\\:", ":") in ("apachepulsar/pulsar:4.0.7",) or \
        image.startswith("pulsar-conformance/pulsar\\:4.0.7-")
    assert "pulsar-container-4.0.7.image_source=" in props
    assert f"pulsar-container-4.0.7 (4.0.7, era pip344, admin API yes, image {image.replace(chr(92), '')}):" in out
    assert _containers_of(proc.pid) == []


def _judged(results: Path) -> bool:
    """Whether a case was judged on the broker (not merely found unsupported before it started)."""
    try:
        lines = results.read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        try:
            if json.loads(line)["verdict"] in (v.PASSED, v.FAILED):
                return True
        except (ValueError, KeyError):  # a line being written
            continue
    return False


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_a_harness_stopped_with_sigterm_mid_run_removes_its_container(engine, tmp_path):
    proc = _run_harness(tmp_path, "term", "")  # the whole of PIP-344: still running when stopped
    try:
        names = _wait_for_container(proc, 2000)
        assert names, (proc.stdout.read() if proc.poll() is not None else "no container appeared")[-3000:]
        deadline = time.monotonic() + 600
        while proc.poll() is None and time.monotonic() < deadline and not _judged(tmp_path / "results" / "term.jsonl"):
            time.sleep(1.0)
        assert proc.poll() is None and _judged(tmp_path / "results" / "term.jsonl")  # the broker serves cases
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert _containers_of(proc.pid) == []
    assert proc.returncode != 0 and "results are incomplete" in out, out[-2000:]


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_the_container_of_a_killed_harness_is_removed_by_the_next_start(engine, tmp_path):
    from conformance.targets.container import remove_containers

    proc = _run_harness(tmp_path, "kill", "")
    try:
        names = _wait_for_container(proc, 2000)
        assert names, "no container appeared"
        proc.kill()  # SIGKILL: no cleanup of its own
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert _containers_of(proc.pid) == names  # left behind...
    assert sorted(remove_containers(harness_gone)) == sorted(names)  # ...until the next start's sweep
    assert _containers_of(proc.pid) == []
