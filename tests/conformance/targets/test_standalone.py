"""pulsar-standalone: the launch plan, Maven resolution, failures that name their cause, cleanup.

The slow tests at the end start Apache Pulsar itself from the Maven cache (the Makefile resolves
it before `make test`).
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conformance.errors import TargetError, UsageError
from conformance.targets import maven, standalone, standalone_conf
from conformance.targets.config import static_keys
from conformance.targets.process import live_pids
from conformance.targets.registry import known_names, make_target, pulsar_version_targets
from conformance.targets.standalone import (
    DEFAULT_VERSION, PulsarStandaloneTarget, java_major, launch_plan, new_data_dir, sweep_abandoned,
)

ROOT = Path(__file__).resolve().parents[3]


# -- the plan ---------------------------------------------------------------------------------------

def _plan(tmp_path, static=None):
    return launch_plan("4.0.7", static or {}, java="/usr/bin/java", data_dir=tmp_path, broker_port=1111,
                       web_port=2222, bookie_port=3333)


def test_plan_runs_the_release_starter_with_bin_pulsars_jvm_options(tmp_path):
    plan = _plan(tmp_path)
    argv = list(plan.argv)
    assert argv[0] == "/usr/bin/java"
    assert f"@{tmp_path / 'classpath.args'}" in argv
    main = argv.index(standalone.MAIN_CLASS)
    assert argv[main + 1:] == ["-c", str(tmp_path / "standalone.conf"), "-nss", "-nfw",
                               "--metadata-dir", str(tmp_path / "metadata"), "--bookkeeper-dir", str(tmp_path / "bookie"),
                               "--bookkeeper-port", "3333"]
    assert "java.base/jdk.internal.platform=ALL-UNNAMED" in argv and "-Djava.net.preferIPv4Stack=true" in argv
    # the JVM's temporary files (RocksDB's native library) stay in the data folder stop() removes
    assert f"-Djava.io.tmpdir={tmp_path / 'tmp'}" in argv
    assert plan.service_url == "pulsar://127.0.0.1:1111" and plan.admin_url == "http://127.0.0.1:2222"


def test_plan_config_is_standalone_conf_with_loopback_ports_and_the_case_keys(tmp_path):
    config = _plan(tmp_path, {"enableNonPersistentTopics": "False"}).config
    assert config["bindAddress"] == config["advertisedAddress"] == "127.0.0.1"
    assert (config["brokerServicePort"], config["webServicePort"]) == ("1111", "2222")
    assert config["loadManagerClassName"].endswith("NoopLoadManager")
    assert config["managedLedgerDefaultEnsembleSize"] == config["managedLedgerDefaultAckQuorum"] == "1"
    assert config["enableNonPersistentTopics"] == "false"  # normalised, overlaid on the default
    assert config["allowAutoTopicCreation"] == "true"  # every modelled key at Pulsar's default
    assert config["statsUpdateFrequencyInSecs"] == "1"
    assert "metadataStoreUrl" not in config  # the starter would parse a ZooKeeper port out of it


def test_plan_with_security_has_the_runs_key_the_brokers_client_token_and_tls_ports(tmp_path):
    from conformance.security import RunSecurity

    security = RunSecurity(tls=True)
    try:
        static = {"authenticationEnabled": "true", "authorizationEnabled": "true", "superUserRoles": "superuser"}
        plan = launch_plan("4.0.7", static, java="java", data_dir=tmp_path, broker_port=1, web_port=2,
                           bookie_port=3, extra=security.launch_config(static, pulsar=True), tls_ports=(4, 5))
        config = plan.config
        assert config["authenticationEnabled"] == "true" and config["superUserRoles"] == "superuser"
        assert config["tokenSecretKey"] == security.key.data_url  # Pulsar's data: form
        assert config["brokerClientAuthenticationParameters"] == "token:" + security.key.token("superuser").reveal()
        assert (config["brokerServicePortTls"], config["webServicePortTls"]) == ("4", "5")
        assert config["tlsCertificateFilePath"] == str(security.tls_files().cert)
        assert (plan.service_url, plan.admin_url, plan.plain_admin_url) == (
            "pulsar+ssl://127.0.0.1:4", "https://127.0.0.1:5", "http://127.0.0.1:2")
    finally:
        security.close()


def test_every_harness_departure_says_why():
    for key, (value, why) in standalone_conf.HARNESS_CONF.items():
        assert value and why, key
    assert not set(standalone_conf.HARNESS_CONF) & set(standalone_conf.STANDALONE_CONF)


def test_render_refuses_what_cannot_be_one_line():
    assert standalone_conf.render({"b": "2", "a": "1"}) == "a=1\nb=2\n"
    with pytest.raises(ValueError):
        standalone_conf.render({"a": "1\nb=2"})


@pytest.mark.parametrize("text, major", [('openjdk version "17.0.15" 2025-04-15', 17), ('java version "1.8.0_292"', 8),
                                         ('openjdk version "21" 2023-09-19', 21), ("garbage", None)])
def test_java_major(text, major):
    assert java_major(text) == major


def test_config_group_ignores_dynamic_keys_and_defaults():
    target = PulsarStandaloneTarget("4.0.7")
    assert target.config_group({"allowAutoTopicCreation": "false", "enableNonPersistentTopics": "true"}) == ()
    assert target.config_group({"enableNonPersistentTopics": "False"}) == (("enableNonPersistentTopics", "false"),)


def test_a_default_above_the_maximum_partitions_is_a_start_setting():
    # a running Pulsar lowers defaultNumPartitions to the maximum (conformance/targets/config.py, static_keys)
    target = PulsarStandaloneTarget("4.0.7")
    coupled = {"defaultNumPartitions": "3", "maxNumPartitionsPerPartitionedTopic": "2"}
    assert target.config_group(coupled) == (("defaultNumPartitions", "3"), ("maxNumPartitionsPerPartitionedTopic", "2"))
    assert static_keys(coupled) == frozenset(coupled)
    assert static_keys({"defaultNumPartitions": "2", "maxNumPartitionsPerPartitionedTopic": "2"}) == frozenset()
    assert static_keys({"defaultNumPartitions": "3", "maxNumPartitionsPerPartitionedTopic": "0"}) == frozenset()
    assert static_keys({"defaultNumPartitions": "1", "maxNumPartitionsPerPartitionedTopic": "-1"}) == frozenset(
        {"defaultNumPartitions", "maxNumPartitionsPerPartitionedTopic"})


# -- registry ---------------------------------------------------------------------------------------

def test_registry_names_and_pulsar_versions():
    target = make_target("pulsar-standalone")
    assert isinstance(target, PulsarStandaloneTarget) and target.pulsar_version == DEFAULT_VERSION
    assert make_target("pulsar-standalone:3.0.2").name == "pulsar-3.0.2"
    assert "pulsar-standalone[:VERSION]" in known_names()
    assert pulsar_version_targets("3.0.2, 4.0.7,4.2.4") == [
        "pulsar-standalone:3.0.2", "pulsar-standalone:4.0.7", "pulsar-standalone:4.2.4"]
    for bad in ("pulsar-standalone:", "pulsar-standalone:4.0", "pulsar-standalone:latest"):
        with pytest.raises(UsageError):
            make_target(bad)
    for bad in ("", "3.0.2,,4.0.7", "3.0.2,4.x"):
        with pytest.raises(UsageError):
            pulsar_version_targets(bad)


# -- Maven --------------------------------------------------------------------------------------------

MISSING_4_0_8 = (
    "[ERROR] Failed to execute goal on project p: Could not resolve dependencies for project x:y:pom:1: The following "
    "artifacts could not be resolved: org.apache.pulsar:jetcd-core-shaded:jar:4.0.8, "
    "org.apache.pulsar:pulsar-opentelemetry:jar:4.0.8: Could not find artifact "
    "org.apache.pulsar:jetcd-core-shaded:jar:4.0.8 in central (https://repo.maven.apache.org/maven2) -> [Help 1]")
MISSING_5_0_1 = (
    "[ERROR] Failed to execute goal on project p: Could not resolve dependencies for project x:y:pom:1: Failed to "
    "collect dependencies at org.apache.pulsar:pulsar-broker:jar:5.0.1 -> org.apache.pulsar:managed-ledger:jar:5.0.1 "
    "-> org.apache.bookkeeper:bookkeeper-common-allocator:jar:4.18.2: Failed to read artifact descriptor for "
    "org.apache.bookkeeper:bookkeeper-common-allocator:jar:4.18.2: Could not find artifact "
    "org.apache.bookkeeper:bookkeeper:pom:4.18.2 in central (https://repo.maven.apache.org/maven2) -> [Help 1]")
MISSING_RELEASE = ("[ERROR] Non-resolvable import POM: Could not find artifact org.apache.pulsar:pulsar:pom:9.9.9 "
                   "in central (https://repo.maven.apache.org/maven2)")


def test_missing_artifacts_are_named_by_coordinates():
    assert maven.missing_artifacts(MISSING_4_0_8) == ["org.apache.pulsar:jetcd-core-shaded:jar:4.0.8",
                                                      "org.apache.pulsar:pulsar-opentelemetry:jar:4.0.8"]
    assert maven.missing_artifacts(MISSING_5_0_1) == ["org.apache.bookkeeper:bookkeeper:pom:4.18.2",
                                                      "org.apache.bookkeeper:bookkeeper-common-allocator:jar:4.18.2"]
    assert "lacks org.apache.pulsar:jetcd-core-shaded:jar:4.0.8" in maven.resolution_failure("4.0.8", MISSING_4_0_8)
    assert "not served by the Maven repository (org.apache.pulsar:pulsar:pom:9.9.9 is missing)" in \
        maven.resolution_failure("9.9.9", MISSING_RELEASE)
    assert "Maven could not resolve" in maven.resolution_failure("4.0.7", "[ERROR] something else\n")


def test_pom_imports_the_release_bom():
    pom = maven.pom_text("3.0.7")
    assert "<artifactId>pulsar</artifactId><version>3.0.7</version>" in pom and "<scope>import</scope>" in pom
    assert "<artifactId>pulsar-broker</artifactId><version>3.0.7</version>" in pom


def _fake_maven(tmp_path, body: str) -> str:
    script = tmp_path / "mvn"
    script.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    script.chmod(0o755)
    return str(script)


def test_resolution_runs_maven_once_then_reuses_the_classpath(tmp_path):
    jar_dir = tmp_path / "jars"
    jar_dir.mkdir()
    for name in ("pulsar-broker-4.0.7.jar", "other.jar"):
        (jar_dir / name).write_text("")
    calls = tmp_path / "calls"
    fake = _fake_maven(tmp_path, f"""
        echo run >> {calls}
        for arg in "$@"; do case "$arg" in -Dmdep.outputFile=*) out="${{arg#-Dmdep.outputFile=}}";; esac; done
        printf '%s' "{jar_dir}/pulsar-broker-4.0.7.jar:{jar_dir}/other.jar" > "$out"
    """)
    cache = tmp_path / "cache"
    first = maven.resolve("4.0.7", cache=cache, maven=fake)
    second = maven.resolve("4.0.7", cache=cache, maven=fake)
    assert [j.name for j in first.jars] == ["pulsar-broker-4.0.7.jar", "other.jar"] == [j.name for j in second.jars]
    assert calls.read_text().count("run") == 1 and second.resolved_s == 0.0
    (jar_dir / "other.jar").unlink()  # a jar gone from the repository: resolve again
    with pytest.raises(TargetError):
        maven.resolve("4.0.7", cache=cache, maven=_fake_maven(tmp_path, "echo '[ERROR] offline' ; exit 1\n"))


def test_resolution_failures_name_the_problem(tmp_path, monkeypatch):
    with pytest.raises(TargetError, match="lacks org.apache.pulsar:jetcd-core-shaded:jar:4.0.8"):
        maven.resolve("4.0.8", cache=tmp_path, maven=_fake_maven(tmp_path, f"echo '{MISSING_4_0_8}'; exit 1\n"))
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(TargetError, match=r"Maven \(mvn\) is not installed"):
        maven.resolve("4.0.7", cache=tmp_path / "empty")
    with pytest.raises(UsageError, match="bad Apache Pulsar version"):
        maven.resolve("4.0", cache=tmp_path)


def test_no_java_is_named(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TargetError, match="no Java found"):
        standalone.find_java()
    old = tmp_path / "java"
    old.write_text('#!/bin/sh\necho \'java version "1.8.0_292"\' >&2\n')
    old.chmod(0o755)
    with pytest.raises(TargetError, match="no Java 17\\+ found"):
        standalone.find_java()


# -- failures and cleanup with a stand-in JVM ---------------------------------------------------------

def _stand_in_java(tmp_path, body: str) -> str:
    script = tmp_path / "java"
    script.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    script.chmod(0o755)
    return str(script)


def _target_with(tmp_path, java: str, **kwargs) -> PulsarStandaloneTarget:
    jar = tmp_path / "pulsar-broker-4.0.7.jar"
    jar.write_text("")
    cache = tmp_path / "cache"
    (cache / "classpaths").mkdir(parents=True)
    (cache / "classpaths" / "pulsar-broker-4.0.7.txt").write_text(str(jar))
    return PulsarStandaloneTarget("4.0.7", cache=cache, java=java, **kwargs)


def _our_data_dirs() -> set:
    import tempfile
    return {p for p in Path(tempfile.gettempdir()).glob(f"{standalone.DATA_PREFIX}*")
            if (p / standalone.OWNER_FILE).is_file() and (p / standalone.OWNER_FILE).read_text() == str(os.getpid())}


def test_a_jvm_that_dies_before_ready_is_named_and_leaves_nothing(tmp_path):
    before, running = _our_data_dirs(), set(live_pids())
    target = _target_with(tmp_path, _stand_in_java(tmp_path, "echo 'Exception in thread main: boom'\nexit 3\n"))
    started = time.monotonic()
    with pytest.raises(TargetError, match="exited with code 3 before it was ready: Exception in thread main: boom"):
        target.start()
    assert time.monotonic() - started < 30  # bounded; generous for a loaded machine
    assert target.start_error and "boom" in target.start_error
    assert _our_data_dirs() == before and set(live_pids()) == running


def test_a_jvm_that_never_gets_ready_is_stopped_within_the_bound(tmp_path):
    before, running = _our_data_dirs(), set(live_pids())
    target = _target_with(tmp_path, _stand_in_java(tmp_path, "echo starting\nexec sleep 60\n"), start_timeout=1.5)
    started = time.monotonic()
    with pytest.raises(TargetError, match="was not ready within 1.5 s"):
        target.start()
    assert time.monotonic() - started < 30  # bounded; generous for a loaded machine
    assert _our_data_dirs() == before and set(live_pids()) == running


def test_a_jvm_that_dies_during_the_run_makes_its_later_cases_target_errors(tmp_path):
    from conformance.execute import TargetSession
    from tests.conformance.helpers import FakeCase

    target = _target_with(tmp_path, "/bin/true")

    class Dead:
        pid, popen = 999999, type("P", (), {"returncode": 137})()

        def alive(self):
            return False

        def last_line(self):
            return "Killed"

        def kill(self):
            pass

    target.started, target.process = True, Dead()
    session = TargetSession(target, driver_factory=lambda t: {})
    session.start_attempted = True
    run = session.run_case(FakeCase("a-001[binary]", lambda ns: ()))
    assert run.verdict.verdict == "target-error"
    assert run.verdict.reason.startswith("target stopped serving: ")
    assert "pulsar-standalone:4.0.7 JVM exited with code 137 during the run: Killed" in run.verdict.reason
    later = session.run_case(FakeCase("a-002[binary]", lambda ns: ()))
    assert later.verdict.verdict == "target-error" and "exited with code 137 during the run" in later.verdict.reason


def test_abandoned_data_folders_are_swept(tmp_path):
    mine = new_data_dir(tmp_path)
    orphan = tmp_path / f"{standalone.DATA_PREFIX}orphan"
    orphan.mkdir()
    (orphan / standalone.OWNER_FILE).write_text("999999")  # no such process
    assert sweep_abandoned(tmp_path) == [orphan]
    assert mine.is_dir() and not orphan.exists()


def test_an_unresolvable_version_makes_every_case_a_target_error_and_the_run_finishes(tmp_path):
    from conformance.runner import run
    from tests.conformance.helpers import FakeCase

    fake = _fake_maven(tmp_path, f"echo '{MISSING_RELEASE}'; exit 1\n")
    target = PulsarStandaloneTarget("9.9.9", cache=tmp_path / "cache", maven_executable=fake)
    out = tmp_path / "out"
    code = run([], targets=[target], cases=[FakeCase("a-001[binary]", lambda ns: ())], out_dir=out,
               stream=open(os.devnull, "w"))
    assert code == 2  # nothing executed anywhere
    assert "not served by the Maven repository" in target.start_error


# -- Apache Pulsar itself (from the Maven cache) --------------------------------------------------------

def _cached(version: str) -> bool:
    return maven.read_classpath(maven.cache_dir() / "classpaths" / f"pulsar-broker-{version}.txt", version) is not None


needs_pulsar = pytest.mark.skipif(not _cached(DEFAULT_VERSION),
                                  reason=f"Apache Pulsar {DEFAULT_VERSION} is not in the Maven cache; "
                                         f"`make pulsar-jars` resolves it")


@pytest.mark.slow
@needs_pulsar
@pytest.mark.timeout(400)
def test_real_pulsar_runs_a_slice_of_the_spec_and_leaves_nothing(tmp_path):
    from conformance.runner import run

    before, running = _our_data_dirs(), set(live_pids())
    out = tmp_path / "out"
    code = run([f"pulsar-standalone:{DEFAULT_VERSION}"], pips={"344", "2"},
               keyword="pip344-seed-new-00 or pip2-deliver-001 or pip344-flag-001", out_dir=out,
               stream=open(os.devnull, "w"))
    records = [line for f in (out / "results").glob("*.jsonl") for line in f.read_text().splitlines()]
    import json
    verdicts = {json.loads(r)["case_id"]: json.loads(r)["verdict"] for r in records}
    assert verdicts and all(v == "passed" for v in verdicts.values()), verdicts
    assert code == 0
    env = (out / "allure-results" / "environment.properties").read_text()
    assert f"pulsar-{DEFAULT_VERSION}.start_s=" in env and f"pulsar-{DEFAULT_VERSION}.peak_rss_mb=" in env
    assert _our_data_dirs() == before and set(live_pids()) == running


@pytest.mark.slow
@needs_pulsar
@pytest.mark.timeout(400)
def test_real_pulsar_with_token_auth_and_tls_answers_as_the_auth_rows_say(tmp_path):
    """Apache Pulsar started with the run's key, authorization and TLS: the harness reaches it only
    through pulsar+ssl:// and https:// with its token, and the rows' refusals are Pulsar's own."""
    from conformance.runner import run
    from conformance.security import RunSecurity

    security = RunSecurity(tls=True)
    out = tmp_path / "out"
    try:
        code = run([f"pulsar-standalone:{DEFAULT_VERSION}"], pips={"344"}, out_dir=out, security=security,
                   keyword="pip344-auth-metadata-none or pip344-authz-metadata-intruder or "
                           "pip344-authz-metadata-tenant-admin", stream=open(os.devnull, "w"))
    finally:
        security.close()
    import json
    records = [json.loads(line) for f in (out / "results").glob("*.jsonl") for line in f.read_text().splitlines()]
    assert len(records) == 6 and all(r["verdict"] == "passed" for r in records), records
    assert code == 0
    env = (out / "allure-results" / "environment.properties").read_text()
    assert f"pulsar-{DEFAULT_VERSION}.service_url=pulsar+ssl" in env


def _standalone_children(pid: int) -> list[int]:
    """The harness's JVMs running Pulsar's standalone (not `java -version` while it looks for Java)."""
    found = subprocess.run(["pgrep", "-P", str(pid), "-f", standalone.MAIN_CLASS],
                           capture_output=True, text=True).stdout.split()
    return [int(p) for p in found]


@pytest.mark.slow
@needs_pulsar
@pytest.mark.timeout(300)
@pytest.mark.parametrize("signum, times", [(signal.SIGTERM, 1), (signal.SIGINT, 1), (signal.SIGTERM, 2)])
def test_a_stopped_harness_leaves_no_jvm_and_no_data(tmp_path, signum, times):
    """Stopped once, or twice in a row (an impatient user, a CI job's own timeout): a second signal
    while the first one's cleanup runs must not cut it short."""
    args = ["run", "--target", f"pulsar-standalone:{DEFAULT_VERSION}", "--pip", "344", "--out", str(tmp_path / "out")]
    # A background job of a non-interactive shell starts with SIGINT ignored, and Python then keeps
    # it ignored; the harness is given Python's own handler back, as an interactive start has it.
    argv = [sys.executable, "-c",
            "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            f"sys.argv = ['conformance', *{args!r}]; runpy.run_module('conformance', run_name='__main__')"]
    harness = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _stop_and_check(harness, signum, times)
    finally:
        if harness.poll() is None:  # a harness that did not stop is not left running
            harness.send_signal(signal.SIGTERM)
            try:
                harness.wait(60)
            except subprocess.TimeoutExpired:
                harness.kill()
                harness.wait()


def _stop_and_check(harness: subprocess.Popen, signum: int, times: int = 1) -> None:
    import tempfile

    deadline = time.monotonic() + 120
    jvms: list[int] = []
    while time.monotonic() < deadline and not jvms:
        time.sleep(0.2)
        jvms = _standalone_children(harness.pid)
    assert jvms, "the harness never started the JVM"
    folders = [p for p in Path(tempfile.gettempdir()).glob(f"{standalone.DATA_PREFIX}*")
               if (p / standalone.OWNER_FILE).is_file() and (p / standalone.OWNER_FILE).read_text() == str(harness.pid)]
    assert folders
    time.sleep(2)  # somewhere in start-up or the first cases
    harness.send_signal(signum)
    for _ in range(times - 1):
        time.sleep(0.3)  # inside the first signal's cleanup
        if harness.poll() is None:
            harness.send_signal(signum)
    harness.wait(60)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in jvms):
        time.sleep(0.2)
    assert not any(Path(f"/proc/{pid}").exists() for pid in jvms)
    assert not any(folder.exists() for folder in folders)


def test_the_docs_list_every_key_the_target_sets():
    page = (ROOT / "docs" / "pulsar-standalone.md").read_text()
    for key in [*standalone_conf.STANDALONE_CONF, *standalone_conf.HARNESS_CONF]:
        short = key.replace("managedLedgerDefault", "...") if key.endswith(("WriteQuorum", "AckQuorum")) else key
        assert f"`{short}`" in page, key
