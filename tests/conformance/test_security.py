"""conformance/security.py: tokens never shown, keys and certificates made per run, what a launched
target is started with and what drivers present; and that no token reaches a transcript."""

from __future__ import annotations

import base64
import os
import ssl
import time

import jwt
import pytest

from conformance import security
from conformance.__main__ import build_parser, run_security
from conformance.drivers.rest import RestDriver
from conformance.drivers.wire import connect_event
from conformance.transcript import Transcript, format_transcript


def test_a_secret_never_shows_and_is_redacted_everywhere():
    token = security.Secret("header.payload.signature-abc")
    assert str(token) == repr(token) == f"{token}" == "<redacted>"
    assert token.reveal() == "header.payload.signature-abc"
    text = f"Bearer {token.reveal()} and its bytes {token.reveal().encode().hex()}"
    assert security.redact(text) == f"Bearer <redacted> and its bytes {'*' * len(token.reveal().encode().hex())}"


def test_tokens_are_pulsar_jwts_of_the_runs_key():
    key = security.SigningKey()
    raw = base64.b64decode(key.data_url.removeprefix("data:;base64,"))
    assert len(raw) == 32 and key.data_url.startswith("data:;base64,")
    valid = key.token("alice").reveal()
    assert jwt.decode(valid, raw, algorithms=["HS256"]) == {"sub": "alice"}
    assert key.token("alice") is key.token("alice")  # one per role and kind: few secrets to redact
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(key.token("alice", "forged").reveal(), raw, algorithms=["HS256"])
    with pytest.raises(jwt.ExpiredSignatureError):
        jwt.decode(key.token("alice", "expired").reveal(), raw, algorithms=["HS256"])
    assert security.redact(key.data_url) == "data:;base64,<redacted>"  # the key itself is never shown


def test_a_key_file_is_private_and_in_pulsars_file_form(tmp_path):
    url = security.SigningKey().write(tmp_path / "k")
    assert url == (tmp_path / "k").resolve().as_uri() and url.startswith("file:///")
    assert (tmp_path / "k").stat().st_mode & 0o777 == 0o600


def test_tls_files_make_a_working_server_context(tmp_path):
    files = security.make_tls_files(tmp_path)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(files.cert, files.key)
    client = ssl.create_default_context(cafile=str(files.ca))
    assert client.verify_mode == ssl.CERT_REQUIRED and client.check_hostname
    assert files.key.stat().st_mode & 0o777 == 0o600


def test_launch_config_and_credentials_follow_the_static_config():
    run = security.RunSecurity()
    try:
        plain = {"authenticationEnabled": "false"}
        assert run.launch_config(plain, pulsar=True) == {}
        assert run.credentials(plain, launched=True).token is None
        secured = {"authenticationEnabled": "true", "superUserRoles": "superuser,other"}
        pulsar = run.launch_config(secured, pulsar=True)
        assert pulsar["authenticationProviders"] == security.TOKEN_PROVIDER
        assert pulsar["tokenSecretKey"] == run.key.data_url
        assert pulsar["brokerClientAuthenticationPlugin"] == security.CLIENT_TOKEN_PLUGIN
        assert pulsar["brokerClientAuthenticationParameters"] == "token:" + run.key.token("superuser").reveal()
        assert run.launch_config(secured, pulsar=False)["tokenSecretKey"].startswith("file:///")
        given = run.credentials(secured, launched=True)
        assert given.token == run.key.token("superuser") and given.mint is not None
        # somebody else's broker: only the token given, never a minted one
        assert run.credentials(secured, launched=False).mint is None
    finally:
        run.close()


def test_a_secure_run_puts_its_keys_under_each_cases_own():
    run = security.RunSecurity(secure=True)
    assert run.overlay({"allowAutoTopicCreation": "false"}) == {**security.SECURE_CONFIG,
                                                                "allowAutoTopicCreation": "false"}
    assert run.overlay({"authorizationEnabled": "false"})["authorizationEnabled"] == "false"
    # Pulsar refuses authorization without authentication: a case that turns it off gets neither
    assert run.overlay({"authenticationEnabled": "false"}) == {"authenticationEnabled": "false"}
    assert security.RunSecurity().overlay({"a": "b"}) == {"a": "b"}


def test_no_token_reaches_a_transcript():
    token = security.SigningKey().token("superuser")
    transcript = Transcript("wire")
    event = connect_event(security.Credentials(token=token))
    assert event.auth_method_name == "token" and event.auth_data == token.reveal().encode()
    from pulsar_codec import Connection, Role
    transcript.sent(repr(event), Connection(Role.CLIENT).send(event))
    text = format_transcript(transcript)
    assert token.reveal() not in text and token.reveal().encode().hex() not in text.replace(" ", "")
    assert "<redacted>" in text


def test_the_rest_driver_sends_the_token_and_never_records_it():
    import httpx

    token = security.SigningKey().token("superuser")
    seen = []

    def answer(request):
        seen.append(request.headers.get("authorization"))
        return httpx.Response(401, text="<html><head><title>Error 401 Authentication required</title></head></html>")

    driver = RestDriver("https://broker:8443", transport=httpx.MockTransport(answer),
                        credentials=security.Credentials(token=token))
    response = driver.request("GET", "/admin/v2/clusters")
    assert seen == [f"Bearer {token.reveal()}"]
    from conformance.drivers.rest import error_reason
    assert error_reason(response) == "Authentication required"  # Jetty's page, as Pulsar 4.0.7 answers
    assert token.reveal() not in format_transcript(driver.transcript)


def test_cli_options_build_the_runs_security(tmp_path):
    file = tmp_path / "token"
    file.write_text("  the.token.value\n")
    args = build_parser().parse_args(["run", "--target", "reference", "--auth-token-file", str(file), "--secure",
                                      "--tls"])
    made = run_security(args)
    assert made.token.reveal() == "the.token.value" and made.secure and made.tls
    assert made.trusted() == str(made.tls_files().ca)
    made.close()
    with pytest.raises(ValueError, match="no such file"):
        run_security(build_parser().parse_args(["run", "--tls-trust-certs", str(tmp_path / "missing.pem")]))
    (tmp_path / "empty").write_text("")
    with pytest.raises(ValueError, match="is empty"):
        run_security(build_parser().parse_args(["run", "--auth-token-file", str(tmp_path / "empty")]))
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--auth-token", "a", "--auth-token-file", str(file)])


def test_expired_tokens_stay_expired():
    token = security.SigningKey().token("x", "expired").reveal()
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["exp"] < time.time()


def test_the_key_folders_of_processes_that_are_gone_are_removed(tmp_path):
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    orphan = tmp_path / f"{security.FOLDER_PREFIX}{gone}-abc"
    mine = tmp_path / f"{security.FOLDER_PREFIX}{os.getpid()}-abc"
    unrelated = tmp_path / f"{security.FOLDER_PREFIX}notapid"
    for folder in (orphan, mine, unrelated):
        folder.mkdir()
    assert security.remove_orphaned_folders(tmp_path) == [orphan]
    assert mine.exists() and unrelated.exists() and not orphan.exists()
