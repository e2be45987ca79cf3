"""Start the reference broker CLI as a real subprocess for tests; always stopped afterwards."""

from __future__ import annotations

import logging
import os
import select
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

# The official client logs every reconnect; broker tests provoke them on purpose.
QUIET = logging.getLogger("pulsar-quiet")
QUIET.setLevel(logging.CRITICAL)

ROOT = Path(__file__).resolve().parents[2]


def start(*args: str, timeout: float = 20.0, stdin=None):
    """Popen the broker; returns (process, broker_url, web_url) once READY, or raises."""
    process = subprocess.Popen(
        [sys.executable, "-m", "reference_broker", "--broker-port", "0", "--web-port", "0", *args],
        cwd=ROOT, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return process, *ready_urls(process, timeout)


def ready_urls(process: subprocess.Popen, timeout: float = 20.0) -> tuple[str, str]:
    """The (broker_url, web_url) of the next READY line ``process`` prints; stops it and raises
    when none comes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 0.1)
        if ready:
            line = process.stdout.readline()
            if line.startswith("READY "):
                process.urls = line.split()[1:]  # with TLS listeners, their two URLs follow
                return process.urls[0], process.urls[1]
            if not line and process.poll() is not None:
                break
    stop(process)
    raise RuntimeError(f"broker did not report READY: {process.stderr.read()}")


def start_secured(folder: Path, *, key_url=None):
    """A broker with token authentication (superUserRoles superuser), authorization and TLS on both
    ports, its key and certificates made in ``folder``; returns (process, SigningKey, TlsFiles).
    ``process.urls`` lists the plain and the TLS URLs."""
    from conformance.security import TOKEN_PROVIDER, SigningKey, make_tls_files

    key, tls = SigningKey(), make_tls_files(folder)
    process, _, _ = start(
        "--set", "authenticationEnabled=true", "--set", f"authenticationProviders={TOKEN_PROVIDER}",
        "--set", f"tokenSecretKey={key_url(key) if key_url else key.data_url}", "--set", "authorizationEnabled=true",
        "--set", "superUserRoles=superuser", "--set", "brokerServicePortTls=0", "--set", "webServicePortTls=0",
        "--set", f"tlsCertificateFilePath={tls.cert}", "--set", f"tlsKeyFilePath={tls.key}")
    return process, key, tls


def stop(process: subprocess.Popen, timeout: float = 10.0) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout)
    return process.returncode


@contextmanager
def running_broker(*args: str):
    process, broker_url, web_url = start(*args)
    try:
        yield broker_url, web_url
    finally:
        stop(process)
