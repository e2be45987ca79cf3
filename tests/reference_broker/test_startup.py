"""The start-up contract of the reference-broker CLI (one READY line, exit 2 on bad config, SIGTERM,
restarts on stdin)."""

import json
import socket
import subprocess
import sys

import httpx
import pytest

from .broker_process import ROOT, ready_urls, start, stop

pytestmark = pytest.mark.slow


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "reference_broker", "--broker-port", "0", "--web-port", "0", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=30)


def test_ready_line_then_clean_sigterm():
    process, broker_url, web_url = start()
    try:
        assert broker_url.startswith("pulsar://127.0.0.1:") and web_url.startswith("http://127.0.0.1:")
        assert httpx.get(f"{web_url}/admin/v2/clusters", timeout=5).json() == ["standalone"]
        assert "public/default" in httpx.get(f"{web_url}/admin/v2/namespaces/public", timeout=5).json()
    finally:
        code = stop(process)
    assert code == 0
    assert process.stdout.read() == ""  # exactly one line was printed


def test_unknown_key_exits_2_naming_the_key():
    result = run_cli("--set", "allowAutoTopicCreationz=true")
    assert result.returncode == 2
    assert "allowAutoTopicCreationz" in result.stderr
    assert "READY" not in result.stdout


def test_bad_value_exits_2():
    result = run_cli("--set", "defaultNumPartitions=many")
    assert result.returncode == 2 and "defaultNumPartitions" in result.stderr


def test_conf_file_with_pulsar_key_names(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("# Pulsar broker.conf syntax\nallowAutoTopicCreationType=partitioned\ndefaultNumPartitions=4\n")
    process, _, web_url = start("--conf-file", str(conf))
    try:
        values = httpx.get(f"{web_url}/admin/v2/brokers/configuration/values", timeout=5).json()
        assert str(values["defaultNumPartitions"]) == "4"
    finally:
        stop(process)


def test_sqlite_store_survives_restart(tmp_path):
    store = f"sqlite:{tmp_path / 'meta.db'}"
    process, _, web_url = start("--metadata-store", store)
    try:
        assert httpx.put(f"{web_url}/admin/v2/namespaces/public/kept", timeout=5).status_code == 204
        assert httpx.put(f"{web_url}/admin/v2/persistent/public/kept/t/partitions", json=3, timeout=5).status_code == 204
    finally:
        stop(process)
    process, _, web_url = start("--metadata-store", store)
    try:
        assert "public/kept" in httpx.get(f"{web_url}/admin/v2/namespaces/public", timeout=5).json()
        assert httpx.get(f"{web_url}/admin/v2/persistent/public/kept/t/partitions", timeout=5).json()["partitions"] == 3
    finally:
        stop(process)


def test_bind_address_and_advertised_address_are_honoured_separately():
    """The listeners bind ``bindAddress``; lookups and the READY line name ``advertisedAddress``."""
    process, broker_url, web_url = start("--set", "bindAddress=127.0.0.2")
    try:
        assert broker_url.startswith("pulsar://127.0.0.2:") and web_url.startswith("http://127.0.0.2:")
        port = int(broker_url.rsplit(":", 1)[1])
        with pytest.raises(OSError):  # nothing listens on the default address
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        socket.create_connection(("127.0.0.2", port), timeout=2).close()
    finally:
        stop(process)
    process, broker_url, web_url = start("--set", "advertisedAddress=localhost")
    try:
        assert broker_url.startswith("pulsar://localhost:") and web_url.startswith("http://localhost:")
        http = web_url.replace("localhost", "127.0.0.1")
        lookup = httpx.get(f"{http}/lookup/v2/topic/persistent/public/default/t", timeout=5).json()
        assert lookup["brokerUrl"] == broker_url
    finally:
        stop(process)


def test_a_wildcard_bind_address_is_never_advertised():
    from reference_broker.config import BrokerConfig
    assert BrokerConfig(bindAddress="0.0.0.0").advertised_host == "localhost"
    assert BrokerConfig(bindAddress="0.0.0.0", advertisedAddress="b1").advertised_for("0.0.0.0") == "b1"
    assert BrokerConfig().advertised_for("::") == "localhost"


def _restart(process, *args: str) -> tuple[str, str]:
    process.stdin.write("RESTART " + json.dumps(["--broker-port", "0", "--web-port", "0", *args]) + "\n")
    process.stdin.flush()
    return ready_urls(process)


def test_a_restart_on_stdin_serves_afresh_with_its_arguments():
    process, _, web_url = start("--restart-on-stdin", stdin=subprocess.PIPE)
    try:
        assert httpx.put(f"{web_url}/admin/v2/namespaces/public/before", timeout=5).status_code == 204
        _, restarted = _restart(process, "--set", "defaultNumPartitions=4")
        assert restarted != web_url
        values = httpx.get(f"{restarted}/admin/v2/brokers/configuration/values", timeout=5).json()
        assert str(values["defaultNumPartitions"]) == "4"
        # nothing of the broker before survives: its namespace, and its listeners
        assert "public/before" not in httpx.get(f"{restarted}/admin/v2/namespaces/public", timeout=5).json()
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{web_url}/admin/v2/clusters", timeout=2)
        # each restart takes the arguments it is given, not the ones before
        _, again = _restart(process)
        values = httpx.get(f"{again}/admin/v2/brokers/configuration/values", timeout=5).json()
        assert str(values["defaultNumPartitions"]) == "1"
        process.stdin.write("HELLO\nRESTART {not json\n")  # ignored, logged
        process.stdin.flush()
        assert httpx.get(f"{again}/admin/v2/clusters", timeout=5).json() == ["standalone"]
    finally:
        code = stop(process)
    assert code == 0
    assert "ignored" in process.stderr.read()


def test_a_restart_with_a_bad_key_exits_2_naming_it_and_end_of_stdin_is_a_shutdown():
    process, _, _ = start("--restart-on-stdin", stdin=subprocess.PIPE)
    try:
        process.stdin.write('RESTART ["--set", "allowAutoTopicCreationz=true"]\n')
        process.stdin.flush()
        assert process.wait(20) == 2
        assert "allowAutoTopicCreationz" in process.stderr.read()
    finally:
        stop(process)
    process, _, _ = start("--restart-on-stdin", stdin=subprocess.PIPE)
    try:
        process.stdin.close()
        assert process.wait(20) == 0
    finally:
        stop(process)
