"""conformance/targets/reference.py and the shared REST configuration of targets/base.py."""

import subprocess
import sys

import pytest

from conformance.errors import TargetError, Unsupported
from conformance.targets.base import ERA_PIP344, Target
from conformance.targets.reference import ReferenceTarget, ready_urls
from tests.conformance.helpers import FakeAdminServer


def test_ready_line_is_parsed_exactly():
    assert ready_urls(["starting", "READY pulsar://127.0.0.1:4000 http://127.0.0.1:4001"]) == (
        "pulsar://127.0.0.1:4000", "http://127.0.0.1:4001")
    assert ready_urls(["READY soon"]) is None
    assert ready_urls([]) is None


def test_a_tls_ready_line_gives_the_tls_urls_in_a_tls_run():
    from conformance.security import RunSecurity
    from conformance.targets.reference import ready_fields

    line = "READY pulsar://h:1 http://h:2 pulsar+ssl://h:3 https://h:4"
    assert ready_fields([line]) == ("pulsar://h:1", "http://h:2", "pulsar+ssl://h:3", "https://h:4")
    assert ready_urls([line]) == ("pulsar://h:1", "http://h:2")
    security = RunSecurity(tls=True)
    try:
        target = ReferenceTarget(command=["broker"], security=security)
        assert target.pick_urls(ready_fields([line])) == ("pulsar+ssl://h:3", "https://h:4")
        with pytest.raises(RuntimeError, match="no TLS URLs"):
            target.pick_urls(("pulsar://h:1", "http://h:2"))
        target.static = {"authenticationEnabled": "true", "superUserRoles": "superuser"}
        argv = target.argv()
        assert "brokerServicePortTls=0" in argv and "webServicePortTls=0" in argv
        key = next(a for a in argv if a.startswith("tokenSecretKey="))
        assert key.startswith("tokenSecretKey=file:///")  # a key file, never the key on the command line
        assert f"tlsCertificateFilePath={security.tls_files().cert}" in argv
    finally:
        security.close()


def test_launch_arguments_follow_the_cli_contract():
    target = ReferenceTarget(command=["broker"])
    target.static = {"maxMessageSize": "1024"}
    assert target.argv() == ["broker", "--broker-port", "0", "--web-port", "0", "--metadata-store", "memory:",
                             "--restart-on-stdin", "--set", "maxMessageSize=1024"]


def test_a_broker_that_exits_is_a_clear_start_error():
    target = ReferenceTarget(command=[sys.executable, "-c", "import sys; print('config error: nope'); sys.exit(2)"],
                             start_timeout=10)
    with pytest.raises(TargetError, match="config error: nope"):
        target.start()
    assert "exited with code 2" in target.start_error
    assert target.process is None


@pytest.mark.slow
def test_a_non_dynamic_key_restarts_the_broker_in_place():
    """The process stays (no interpreter start, no imports); the broker is new: new listeners,
    the new value, a new generation for the drivers, nothing of the old broker's state."""
    import httpx

    target = ReferenceTarget(start_timeout=30)
    try:
        target.start()
        pid, urls, generation = target.process.pid, (target.service_url, target.admin_url), target.generation
        assert httpx.put(f"{target.admin_url}/admin/v2/namespaces/public/before", timeout=5).status_code == 204
        target.configure({"maxConcurrentNonPersistentMessagePerConnection": "2"})  # not dynamic in Pulsar
        assert target.process.pid == pid and target.generation == generation + 1
        assert (target.service_url, target.admin_url) != urls
        assert target.static == {"maxConcurrentNonPersistentMessagePerConnection": "2"}
        namespaces = httpx.get(f"{target.admin_url}/admin/v2/namespaces/public", timeout=5).json()
        assert "public/before" not in namespaces
        target.configure({})  # back to the defaults: in place again
        assert target.process.pid == pid and target.static == {}
    finally:
        target.stop()
    assert target.process is None


@pytest.mark.slow
def test_a_broker_process_that_died_is_started_anew_for_its_next_configuration():
    target = ReferenceTarget(start_timeout=30)
    try:
        target.start()
        gone = target.process.pid
        target.process.popen.kill()
        target.process.popen.wait(10)
        target.configure({"maxConcurrentNonPersistentMessagePerConnection": "2"})
        assert target.process.alive() and target.process.pid != gone
    finally:
        target.stop()


class _RestTarget(Target):
    """A started target whose admin API is the fake server (no process)."""

    def __init__(self, admin_url):
        super().__init__("rest-target")
        self.admin_url, self.has_admin, self.era = admin_url, True, ERA_PIP344


def test_configure_sets_keys_and_resets_what_the_previous_case_changed():
    admin = FakeAdminServer({("POST", "/admin/v2/brokers/configuration/allowAutoTopicCreation/maybe"):
                             (412, {"reason": "Invalid value maybe"})})
    try:
        target = _RestTarget(admin.url)
        target.configure({"allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": "3"})
        target.configure({"allowAutoTopicCreation": "False"})
        target.note_config_change("maxTopicsPerNamespace", "9")
        target.configure({})
        paths = [path for method, path, _ in admin.requests]
        assert paths == [
            "/admin/v2/brokers/configuration/allowAutoTopicCreationType/partitioned",
            "/admin/v2/brokers/configuration/defaultNumPartitions/3",
            "/admin/v2/brokers/configuration/allowAutoTopicCreationType/non-partitioned",  # Pulsar defaults
            "/admin/v2/brokers/configuration/defaultNumPartitions/1",
            "/admin/v2/brokers/configuration/allowAutoTopicCreation/false",
            "/admin/v2/brokers/configuration/allowAutoTopicCreation/true",
            "/admin/v2/brokers/configuration/maxTopicsPerNamespace/0",
        ]
        with pytest.raises(Unsupported, match="refused broker config allowAutoTopicCreation=maybe: 412 Invalid value maybe"):
            target.configure({"allowAutoTopicCreation": "maybe"})
    finally:
        admin.close()


def test_the_maximum_partitions_are_posted_before_the_default():
    # a running Pulsar lowers defaultNumPartitions to the maximum it has when the default is posted
    admin = FakeAdminServer({})
    try:
        target = _RestTarget(admin.url)
        target.configure({"defaultNumPartitions": "2", "maxNumPartitionsPerPartitionedTopic": "2"})
        paths = [path for method, path, _ in admin.requests]
        assert paths == ["/admin/v2/brokers/configuration/maxNumPartitionsPerPartitionedTopic/2",
                         "/admin/v2/brokers/configuration/defaultNumPartitions/2"]
    finally:
        admin.close()


def test_configure_without_admin_api_is_unsupported():
    target = _RestTarget("http://127.0.0.1:1")
    target.has_admin = False
    target.configure({})  # nothing to set: fine
    with pytest.raises(Unsupported, match="no admin REST API"):
        target.configure({"allowAutoTopicCreation": "false"})


def _reference_cli_works() -> bool:
    probe = subprocess.run([sys.executable, "-m", "reference_broker", "--help"], capture_output=True, timeout=30)
    return probe.returncode == 0


@pytest.mark.slow
def test_real_reference_broker_starts_detects_and_stops(tmp_path):
    if not _reference_cli_works():
        pytest.skip("python -m reference_broker --help fails: the reference broker CLI is not usable yet")
    target = ReferenceTarget(log_dir=tmp_path, start_timeout=30, timeout=5)
    try:
        target.start()
        assert target.service_url.startswith("pulsar://127.0.0.1:")
        assert target.admin_url.startswith("http://127.0.0.1:")
        assert target.has_admin and target.version
        assert target.era == ERA_PIP344
        target.configure({"allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": "2"})
        target.configure({})
        pid, generation = target.process.pid, target.generation
        # Non-dynamic keys at their defaults, as every PIP-2 case names them: no restart.
        target.configure({"maxConcurrentNonPersistentMessagePerConnection": "1000", "enablePersistentTopics": "True"})
        assert (target.process.pid, target.generation) == (pid, generation)
        target.configure({"maxConcurrentNonPersistentMessagePerConnection": "0"})  # a real change: restart
        assert target.generation == generation + 1 and "--set" in target.argv()
        target.configure({"maxConcurrentNonPersistentMessagePerConnection": "1000"})  # back to the default
        assert target.generation == generation + 2
        pid = target.process.pid
    finally:
        target.stop()
    import os
    assert not os.path.exists(f"/proc/{pid}")


@pytest.mark.parametrize("version, era", [
    ("3.0.5", "pre-pip344"), ("Pulsar Server3.0.5", "pre-pip344"), ("2.11.4", "pre-pip344"),
    ("3.2.4", "pre-pip344"), ("3.3.0", "pre-pip344"), ("3.0.6", "pip344"), ("3.3.1", "pip344"),
    ("4.0.13", "pip344"), ("4.2.4", "pip344"), ("0.1.0-reference", "pip344"), ("Pulsar-Lite-0.1.0", "pip344"),
    (None, "pip344"),
])
def test_era_is_keyed_by_apache_release_version(version, era):
    from conformance.targets.base import era_of_version
    assert era_of_version(version) == era
