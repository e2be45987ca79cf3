"""The same job on a real Spark standalone cluster: a master and one worker on 127.0.0.1, started with the
``spark-class`` launcher that pyspark ships, ephemeral ports, bounded waits, always stopped.

The job runs as ``python -m reports --master spark://127.0.0.1:PORT`` (only the flag differs from local)
and must produce the same tables as the local[2] run of the session fixture.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(360)]

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 90
STOP_TIMEOUT_S = 20


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(log: Path, text: str, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(encoding="utf-8", errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.25)
    tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
    raise AssertionError(f"{text!r} not in {log.name} within {timeout} s (exit {process.poll()}):\n{tail}")


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the process group (the daemon and any executor it launched), then SIGKILL; bounded."""
    for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, 10)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                process.wait(timeout=5)
                return
            process.poll()
            time.sleep(0.2)


@contextlib.contextmanager
def standalone_cluster(work: Path):
    import pyspark

    home = Path(pyspark.__file__).parent
    spark_class = home / "bin" / "spark-class"
    marker = f"-Dpulsar.conformance.test={uuid.uuid4().hex}"
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_JAVA_OPTS=marker,
               SPARK_LOG_DIR=str(work / "logs"), SPARK_WORKER_DIR=str(work / "worker"))
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    processes = []
    try:
        master_log = work / "master.log"
        with open(master_log, "wb") as log:
            master = subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(_free_port())],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        processes.append(master)
        _wait_for(master_log, "I have been elected leader", master, START_TIMEOUT_S)
        worker_log = work / "worker.log"
        with open(worker_log, "wb") as log:
            worker = subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                 "--port", str(_free_port()), "--webui-port", str(_free_port()), "--cores", "2", "--memory", "2g",
                 "--work-dir", str(work / "worker"), url],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        processes.append(worker)
        _wait_for(worker_log, "Successfully registered with master", worker, START_TIMEOUT_S)
        yield url, master_log, worker_log
    finally:
        for process in reversed(processes):
            _stop(process)
        left = [p for p in processes if p.poll() is None]
        assert not left, f"cluster processes left running: {[p.pid for p in left]}"
        for proc in Path("/proc").iterdir():  # nothing started with our marker survives
            if proc.name.isdigit():
                with contextlib.suppress(OSError):
                    assert marker.encode() not in (proc / "cmdline").read_bytes(), f"process {proc.name} left behind"


def test_the_same_job_on_a_standalone_cluster(fixed_results, fixed_job, tmp_path):
    source, _ = fixed_results
    _, _, local_out = fixed_job
    out = tmp_path / "cluster-out"
    with standalone_cluster(tmp_path) as (url, master_log, worker_log):
        done = subprocess.run([sys.executable, "-m", "reports", "--results", str(source / "results"), "--out",
                               str(out), "--master", url, "--no-allure", "--quiet", "--executor-memory", "1g"],
                              capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        worker_text = worker_log.read_text(encoding="utf-8", errors="replace")
        assert "Asked to launch executor" in worker_text, "the job must run on the cluster's worker"
        assert "Registered app pulsar-conformance-report" in master_log.read_text(encoding="utf-8", errors="replace")
    for name in ("matrix", "history", "flaky", "diff", "durations_case", "durations_target", "runs", "bad_lines"):
        assert (out / "csv" / f"{name}.csv").read_text() == (local_out / "csv" / f"{name}.csv").read_text(), name
    assert sorted(p.name for p in (out / "dataset").iterdir()) == sorted(p.name for p in (local_out / "dataset").iterdir())
