"""A run through TLS and tokens judges a broker exactly as a plain run does (conformance/security.py):
the same cases of every driver kind (wire, REST, the official Python client, the Java client and
admin client) run on the reference broker plainly and with ``secure`` and ``tls``, and every case
gets the same verdict. No token is in any output of the secured run. The whole suite is
``make conformance-secure``."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance import verdicts as v
from conformance.results import read_results
from conformance.runner import run
from conformance.security import RunSecurity

pytestmark = pytest.mark.slow

# Every driver: wire and REST (seed rows, auth rows), the Python client over both transports, PIP-2
# through the client, the Java client and admin client.
KEYWORD = ("seed-new-00 or auth-metadata or authz-metadata or seed-list-001 or pip2-deliver-001 "
           "or java-list-001-param-true or java-pc-001-exclusive or java-admin-001")


def _run(out: Path, security: RunSecurity) -> dict[str, str]:
    code = run(["reference"], keyword=KEYWORD, out_dir=out, run_id="r", security=security, timeout=10.0)
    assert code == v.EXIT_OK, (out / "results" / "r.jsonl").read_text()[-3000:]
    return {r.case_id: r.verdict for r in read_results(out / "results" / "r.jsonl")}


def test_a_secured_run_gives_the_plain_runs_verdicts_and_never_prints_a_token(tmp_path, capsys):
    plain = _run(tmp_path / "plain", RunSecurity())
    secured_run = RunSecurity(secure=True, tls=True)
    try:
        secured = _run(tmp_path / "secure", secured_run)
        token = secured_run.key.token("superuser").reveal()
    finally:
        secured_run.close()
    assert secured == plain
    drivers = {r.driver for r in read_results(tmp_path / "secure" / "results" / "r.jsonl")}
    assert {"wire", "rest", "client", "java-client", "java-admin"} <= drivers
    assert sum(verdict == v.PASSED for verdict in secured.values()) >= 30
    environment = (tmp_path / "secure" / "allure-results" / "environment.properties").read_text()
    assert "service_url=pulsar+ssl" in environment and "admin_url=https" in environment
    printed = capsys.readouterr()
    for path in (tmp_path / "secure").rglob("*"):
        if path.is_file():
            assert token not in path.read_text(errors="replace"), path
    assert token not in printed.out + printed.err
