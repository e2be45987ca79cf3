"""The admin API against its own OpenAPI description (admin/openapi.py): a bounded schemathesis run with
every check finds nothing; a 405 names every method of its path; persistent topics have stats."""

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from .broker_process import running_broker

pytestmark = pytest.mark.slow

CONFIG = Path(__file__).with_name("schemathesis.toml")


def test_a_bounded_schemathesis_run_finds_nothing(tmp_path):
    with running_broker() as (_, web_url):
        result = subprocess.run(
            [sys.executable, "-c", "from schemathesis.cli import schemathesis; schemathesis()", "--config-file", str(CONFIG), "run", f"{web_url}/openapi.json",
             "--checks", "all", "--max-examples", "5", "--seed", "26", "--continue-on-failure", "--no-color",
             "--request-timeout", "10"],
            capture_output=True, text=True, timeout=400, cwd=tmp_path)
    summary = [line for line in result.stdout.splitlines() if "generated" in line or line.startswith("=")]
    print("\nschemathesis:", " | ".join(summary[-2:]))
    assert result.returncode == 0, result.stdout[-6000:]


def test_a_405_names_every_method_served_at_its_path():
    with running_broker() as (_, web_url):
        answer = httpx.request("OPTIONS", f"{web_url}/admin/v2/namespaces/public/default", timeout=5)
        assert (answer.status_code, answer.headers["Allow"]) == (405, "DELETE, GET, PUT")
        answer = httpx.delete(f"{web_url}/admin/v2/brokers/configuration/runtime", timeout=5)
        assert (answer.status_code, answer.headers["Allow"]) == (405, "GET")


def test_a_persistent_topic_has_stats_and_internal_stats():
    with running_broker() as (_, web_url):
        base = f"{web_url}/admin/v2/persistent/public/default"
        httpx.put(f"{base}/st", timeout=5).raise_for_status()
        stats = httpx.get(f"{base}/st/stats", timeout=5)
        assert stats.status_code == 200 and stats.json()["storageSize"] == 0
        assert httpx.get(f"{base}/st/internalStats", timeout=5).json()["numberOfEntries"] == 0
        httpx.put(f"{base}/pst/partitions", json=2, timeout=5).raise_for_status()
        partitioned = httpx.get(f"{base}/pst/partitioned-stats", timeout=5)
        assert partitioned.status_code == 200 and partitioned.json()["metadata"] == {"partitions": 2}
