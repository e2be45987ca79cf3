"""pulsar-cluster:VERSION: its name, the plan of its four kinds of process and their configurations,
readiness from ZooKeeper's and the brokers' answers, per-case configuration that restarts the brokers
only; then, slow, a real cluster from the Maven cache runs one case of each cluster row kind and leaves
nothing behind."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conformance.drivers.cluster_relations import brokers, common
from conformance.errors import Unsupported, UsageError
from conformance.targets import cluster, maven, standalone
from conformance.targets.cluster import (PulsarClusterTarget, bookie_registered, brokers_listed, cluster_plan,
                                         leader_is_ours)
from conformance.targets.process import live_pids
from conformance.targets.registry import known_names, make_target
from model.outcomes import Agreement, Partitions

VERSION = standalone.DEFAULT_VERSION


def test_the_registry_builds_a_cluster_of_the_release():
    target = make_target(f"pulsar-cluster:{VERSION}")
    assert isinstance(target, PulsarClusterTarget)
    assert target.pulsar_version == VERSION and target.spec == f"pulsar-cluster:{VERSION}"
    assert target.name == f"pulsar-cluster-{VERSION}"
    assert make_target("pulsar-cluster").pulsar_version == standalone.DEFAULT_VERSION
    assert "pulsar-cluster[:VERSION]" in known_names()


@pytest.mark.parametrize("spec", ["pulsar-cluster:", "pulsar-cluster:4.0", "pulsar-cluster:latest"])
def test_a_malformed_version_is_a_usage_error(spec):
    with pytest.raises(UsageError):
        make_target(spec)


def _plan(tmp_path, static=None):
    return cluster_plan("4.0.7", java="/usr/bin/java", data_dir=tmp_path, zookeeper_port=2100, bookie_port=3100,
                        broker_ports=(6601, 6602), web_ports=(8001, 8002), static=static)


def test_the_plan_starts_zookeeper_the_metadata_the_bookie_and_two_brokers(tmp_path):
    plan = _plan(tmp_path)
    mains = [launch.argv[launch.argv.index(f"@{tmp_path / 'classpath.args'}") + 1]
             for launch in (plan.zookeeper, plan.setup, plan.bookie, *plan.brokers)]
    assert mains == [cluster.ZOOKEEPER_CLASS, cluster.SETUP_CLASS, cluster.BOOKIE_CLASS,
                     cluster.BROKER_CLASS, cluster.BROKER_CLASS]
    for launch in (plan.zookeeper, plan.setup, plan.bookie, *plan.brokers):
        assert launch.argv[0] == "/usr/bin/java"
        assert set(standalone.JVM_OPTIONS) <= set(launch.argv)  # bin/pulsar's options, the drivers included
        assert f"-Djava.io.tmpdir={tmp_path / 'tmp'}" in launch.argv
    setup = list(plan.setup.argv)
    assert setup[setup.index("--metadata-store") + 1] == "zk:127.0.0.1:2100"
    assert setup[setup.index("--configuration-metadata-store") + 1] == "zk:127.0.0.1:2100"
    assert setup[setup.index("--cluster") + 1] == "standalone"
    assert setup[setup.index("--broker-service-url") + 1] == "pulsar://127.0.0.1:6601"
    assert setup[setup.index("--web-service-url") + 1] == "http://127.0.0.1:8001"
    assert plan.brokers[1].argv[-2:] == ("--broker-conf", str(tmp_path / "broker-2.conf"))
    assert plan.service_urls == ["pulsar://127.0.0.1:6601", "pulsar://127.0.0.1:6602"]
    assert plan.admin_urls == ["http://127.0.0.1:8001", "http://127.0.0.1:8002"]


def test_zookeeper_and_the_bookie_stay_on_loopback_in_the_data_folder(tmp_path):
    plan = _plan(tmp_path)
    assert plan.zookeeper.config["clientPort"] == "2100" and plan.zookeeper.config["clientPortAddress"] == "127.0.0.1"
    assert plan.zookeeper.config["dataDir"].startswith(str(tmp_path))
    bookie = plan.bookie.config
    assert bookie["bookiePort"] == "3100" and bookie["metadataServiceUri"] == "zk+null://127.0.0.1:2100/ledgers"
    assert bookie["allowLoopback"] == "true" and bookie["advertisedAddress"] == "127.0.0.1"
    assert bookie["journalDirectories"].startswith(str(tmp_path)) and bookie["ledgerDirectories"].startswith(str(tmp_path))


def test_a_broker_runs_the_standalone_targets_defaults_with_a_clusters_departures(tmp_path):
    conf = _plan(tmp_path, static={"enableNonPersistentTopics": "false"}).brokers[0].config
    assert conf["metadataStoreUrl"] == conf["configurationMetadataStoreUrl"] == "zk:127.0.0.1:2100"
    assert conf["clusterName"] == "standalone"
    assert (conf["brokerServicePort"], conf["webServicePort"]) == ("6601", "8001")
    assert conf["managedLedgerDefaultEnsembleSize"] == conf["managedLedgerDefaultWriteQuorum"] == \
        conf["managedLedgerDefaultAckQuorum"] == "1"
    assert conf["advertisedAddress"] == conf["bindAddress"] == "127.0.0.1"
    assert conf["loadManagerClassName"].endswith("ModularLoadManagerImpl") and conf["loadBalancerEnabled"] == "false"
    assert conf["enableNonPersistentTopics"] == "false"
    assert not set(cluster.BOOKIE_ONLY) & set(conf)


def test_readiness_reads_the_bookies_registration_and_the_broker_list():
    dump = "SessionTracker dump:\nephemeral nodes dump:\nSessions with Ephemerals (1):\n0x1:\n\t/ledgers/available/127.0.0.1:3100\n"
    assert bookie_registered(dump, 3100) and not bookie_registered(dump, 3101)
    assert not bookie_registered(dump.replace("available/", "available/readonly/"), 3100)
    assert brokers_listed(["127.0.0.1:8001", "127.0.0.1:8002"], ["a", "b"])
    assert not brokers_listed(["127.0.0.1:8001"], ["a", "b"]) and not brokers_listed(None, ["a", "b"])
    ours = ["http://127.0.0.1:8001", "http://127.0.0.1:8002"]
    assert leader_is_ours({"serviceUrl": "http://127.0.0.1:8002", "brokerId": "127.0.0.1:8002"}, ours)
    assert not leader_is_ours({"serviceUrl": "http://127.0.0.1:7001"}, ours)  # the stopped brokers' leader
    assert not leader_is_ours(None, ours) and not leader_is_ours({}, ours)


def test_a_non_dynamic_key_restarts_the_brokers_alone_after_clearing_the_stored_values(monkeypatch):
    target = PulsarClusterTarget(VERSION)
    calls = []
    monkeypatch.setattr(target, "_clear_stored", lambda: calls.append("clear stored"))
    monkeypatch.setattr(target, "_stop_brokers", lambda: calls.append("stop brokers"))
    monkeypatch.setattr(target, "stop", lambda: calls.append("stop all"))
    monkeypatch.setattr(target, "_relaunch", lambda static: calls.append(("relaunch", dict(static))))
    monkeypatch.setattr(target, "_configure_over_rest", lambda wanted: calls.append(("rest", dict(wanted))))
    target._dirty = {"allowAutoTopicCreation": "false"}
    target._configure({"brokerDeleteInactiveTopicsFrequencySeconds": "1", "allowAutoTopicCreation": "true"})
    assert calls == ["clear stored", "stop brokers", ("relaunch", {"brokerDeleteInactiveTopicsFrequencySeconds": "1"}),
                     ("rest", {"allowAutoTopicCreation": "true"})]
    calls.clear()
    target._configure({"brokerDeleteInactiveTopicsFrequencySeconds": "1"})
    assert calls == [("rest", {})]


@pytest.mark.parametrize("key", ["enablePersistentTopics", "enableNonPersistentTopics"])
def test_a_domain_turned_off_is_unsupported_with_the_load_managers_reason(key):
    with pytest.raises(Unsupported, match="ModularLoadManagerImpl") as refused:
        PulsarClusterTarget(VERSION)._configure({key: "false"})
    assert refused.value.kind == "config-differs" and f"{key}=false" in refused.value.reason


def test_the_stored_dynamic_values_are_deleted_before_the_brokers_restart(monkeypatch):
    target = PulsarClusterTarget(VERSION)
    target._stored, target._dirty = {"defaultNumPartitions", "maxNumPartitionsPerPartitionedTopic"}, {"x": "1"}
    target.brokers, target.admin_url = [object()], "http://127.0.0.1:1"
    deleted = []

    class Answer:
        status_code = 204

    class Rest:
        def __init__(self, *args, **kwargs):
            pass

        def request(self, method, path):
            deleted.append((method, path))
            return Answer()

        def close(self):
            pass

    monkeypatch.setattr(cluster, "RestDriver", Rest)
    target._clear_stored()
    assert deleted == [("DELETE", "/admin/v2/brokers/configuration/defaultNumPartitions"),
                       ("DELETE", "/admin/v2/brokers/configuration/maxNumPartitionsPerPartitionedTopic")]
    assert target._stored == set() and target._dirty == {}


def test_a_secure_run_is_refused_with_the_way_out():
    from conformance.security import RunSecurity
    target = PulsarClusterTarget(VERSION, security=RunSecurity(secure=True))
    with pytest.raises(Exception, match="pulsar-standalone"):
        target._launch()


def test_the_relations_need_two_brokers_and_answer_the_common_answer():
    with pytest.raises(Unsupported, match="target has one broker"):
        brokers(["pulsar://127.0.0.1:1"], "its service URLs")
    with pytest.raises(Unsupported):
        brokers(None, "its service URLs")
    assert brokers(["a", "b"], "x") == ["a", "b"]
    assert common([("a", Partitions(3)), ("b", Partitions(3))]) == Partitions(3)
    differ = common([("a", Partitions(3)), ("b", Partitions(0))])
    assert isinstance(differ, Agreement) and not differ.agree and len(differ.detail) == 2


# -- a real cluster ----------------------------------------------------------------------------------

def _cached() -> bool:
    return any((maven.cache_dir() / "classpaths").glob(f"{maven.BROKER_ARTIFACT}-{VERSION}.txt"))


def _our_data_dirs() -> set:
    import tempfile
    return {p for p in Path(tempfile.gettempdir()).glob(f"{standalone.DATA_PREFIX}*")
            if (p / standalone.OWNER_FILE).is_file() and (p / standalone.OWNER_FILE).read_text() == str(os.getpid())}


@pytest.mark.slow
@pytest.mark.skipif(not _cached(), reason=f"Apache Pulsar {VERSION} is not in the Maven cache; "
                                          f"`python -m conformance run --target pulsar-cluster:{VERSION}` resolves it")
@pytest.mark.timeout(900)
def test_a_cluster_runs_one_case_of_each_cluster_row_kind_and_leaves_nothing(tmp_path):
    from conformance.runner import run

    before, running = _our_data_dirs(), set(live_pids())
    out = tmp_path / "out"
    run([f"pulsar-cluster:{VERSION}"], pips={"344", "2"},
        keyword="pip344-cluster-001 or pip344-cluster-004 or pip2-cluster-001",
        out_dir=out, stream=open(os.devnull, "w"))
    records = [json.loads(line) for f in (out / "results").glob("*.jsonl") for line in f.read_text().splitlines()]
    verdicts = {r["case_id"]: r["verdict"] for r in records}
    assert len(verdicts) == 4 and all(v == "passed" for v in verdicts.values()), verdicts
    env = (out / "allure-results" / "environment.properties").read_text()
    assert "zookeeper_start_s=" in env and "broker-2_start_s=" in env and "bookie_start_s=" in env
    assert _our_data_dirs() == before and set(live_pids()) == running
