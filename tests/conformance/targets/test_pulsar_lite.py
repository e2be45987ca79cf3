"""conformance/targets/pulsar_lite.py: config mapping, and the real binary started and stopped."""

import os
from pathlib import Path

import pytest

from conformance.drivers.wire import WireDriver
from conformance.errors import Unsupported
from conformance.targets.base import ERA_PIP344
from conformance.targets.process import live_pids
from conformance.targets.pulsar_lite import PulsarLiteTarget, map_config, render_toml
from model import ops
from model.outcomes import Partitions, ServerError

DEFAULTS = {"max_concurrent_non_persistent_messages_per_connection": 1000, "max_message_size_bytes": 5242880,
            "keep_alive_interval_secs": 30}


def test_auto_creation_maps_to_default_partitions():
    assert map_config({}) == {"default_partitions": 0, **DEFAULTS}
    assert map_config({"allowAutoTopicCreationType": "non-partitioned", "defaultNumPartitions": "5"})[
        "default_partitions"] == 0
    partitioned = {"allowAutoTopicCreation": "true", "allowAutoTopicCreationType": "partitioned",
                   "defaultNumPartitions": "3"}
    assert map_config(partitioned)["default_partitions"] == 3
    assert map_config({"allowAutoTopicCreationType": "partitioned"})["default_partitions"] == 1  # Pulsar's default
    # What every case carries (all modelled keys, defaults included) maps without complaint.
    assert map_config({"allowAutoTopicCreation": "true", "allowAutoTopicCreationType": "non-partitioned",
                       "defaultNumPartitions": "1", "maxNumPartitionsPerPartitionedTopic": "0",
                       "maxTopicsPerNamespace": "0"})["default_partitions"] == 0
    assert map_config({"maxConcurrentNonPersistentMessagePerConnection": "7", "maxMessageSize": "1024",
                       "keepAliveIntervalSeconds": "5"}) == {
        "default_partitions": 0, "max_concurrent_non_persistent_messages_per_connection": 7,
        "max_message_size_bytes": 1024, "keep_alive_interval_secs": 5}


@pytest.mark.parametrize("config, reason", [
    ({"allowAutoTopicCreation": "false"}, "always auto-creates"),
    ({"maxNumPartitionsPerPartitionedTopic": "2"}, "no partition limit"),
    ({"allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": "0"}, "defaultNumPartitions=0"),
    ({"maxTopicsPerNamespace": "3"}, "no topics-per-namespace limit"),
    ({"enableNonPersistentTopics": "false"}, "always serves non-persistent"),
    ({"maxConcurrentLookupRequest": "1"}, "no equivalent of broker.conf key maxConcurrentLookupRequest"),
    ({"maxMessageSize": "big"}, "not an integer"),
])
def test_keys_without_an_equivalent_are_unsupported_with_the_reason(config, reason):
    with pytest.raises(Unsupported, match=reason):
        map_config(config)


def test_toml_always_disables_metrics():
    text = render_toml(map_config({}))
    assert "[metrics]\nenabled = false" in text and "default_partitions = 0" in text


def _listening_ports(pid: int) -> set[int]:
    """TCP ports the process listens on, from /proc (no psutil needed)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # 0A = LISTEN
                ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


@pytest.mark.slow
def test_real_binary_starts_detects_restarts_and_leaves_nothing_behind(tmp_path):
    target = PulsarLiteTarget(log_dir=tmp_path, start_timeout=20, timeout=5)
    try:
        target.start()
        pid, workdir = target.process.pid, target.workdir
        assert target.service_url.startswith("pulsar://127.0.0.1:")
        assert target.admin_url is None and not target.has_admin
        assert target.version and target.era == ERA_PIP344  # not an Apache release: held to the current spec
        assert not target.advertises_flag5  # which the flag row then reports as a failure
        assert target.implicit_namespaces
        # Metrics disabled: the broker port is the only thing it listens on (not 0.0.0.0:8080).
        assert _listening_ports(pid) == {target.port}
        assert not target.warnings

        wire = WireDriver(target.service_url, timeout=5)
        answer = wire.perform(ops.GetPartitionedMetadata("persistent://public/c1/t", "binary", False))
        wire.close()
        assert isinstance(answer, (Partitions, ServerError))

        generation = target.generation
        target.configure({"allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": "3"})
        assert target.generation == generation + 1 and target.process.pid != pid
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
        assert target.toml["default_partitions"] == 3
        target.configure({"allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": "3"})
        assert target.generation == generation + 1  # same mapping: no restart
        last_pid = target.process.pid
    finally:
        target.stop()
    assert last_pid not in live_pids() and not os.path.exists(f"/proc/{last_pid}")
    assert not workdir.exists()
    assert "Server listening on" in (tmp_path / "pulsar-lite.log").read_text()


@pytest.mark.slow
def test_missing_binary_is_a_clear_start_error(tmp_path):
    from conformance.errors import TargetError
    target = PulsarLiteTarget(binary=str(tmp_path / "no-such-binary"), start_timeout=5)
    with pytest.raises(TargetError, match="cannot execute"):
        target.start()
    assert target.start_error and target.process is None
