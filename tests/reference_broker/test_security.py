"""The reference broker with Pulsar's token authentication, authorization and TLS keys on
(security.py, admin/security.py, ``ServerCnx._refused`` in commands.py): over both APIs, every call that presents
no token, a forged or an expired one, or the token of a role without rights on the tenant, is
refused; the tests count those calls and print how many there were. The REST calls are every
operation of the broker's own OpenAPI description, so a route added later is counted too."""

from __future__ import annotations

import socket
import ssl

import httpx
import pytest

from conformance.security import TOKEN_PROVIDER, SigningKey
from pulsar_codec import CLOSED, NEED_DATA, Connection, Role, events as ev
from pulsar_codec import pulsar_api_pb2 as pb

from .broker_process import start, start_secured, stop

TENANT, NAMESPACE = "acme", "acme/ns"
PARTITIONED, PLAIN = "persistent://acme/ns/t", "persistent://acme/ns/u"
PATH_VALUES = {"tenant": "acme", "namespace": "ns", "topic": "t", "domain": "persistent", "cluster": "standalone",
               "key": "allowAutoTopicCreation", "value": "true", "property": "standalone"}
REFUSED_CREDENTIALS = ("none", "forged", "expired")


slow = pytest.mark.slow


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """A broker with authentication, authorization and TLS on both ports; acme/ns holds t (2
    partitions) and u, and acme's admin role is acme-admin."""
    folder = tmp_path_factory.mktemp("security")
    process, key, tls = start_secured(folder, key_url=lambda key: key.write(folder / "secret.key"))  # file: form
    try:
        plain_url, _, tls_url, https_url = process.urls
        assert tls_url.startswith("pulsar+ssl://") and https_url.startswith("https://")
        admin = _http(https_url, tls.ca, key.token("superuser").reveal())
        for method, path, body in (("PUT", "/admin/v2/tenants/acme", {"adminRoles": ["acme-admin"]}),
                                   ("PUT", "/admin/v2/namespaces/acme/ns", None),
                                   ("PUT", "/admin/v2/persistent/acme/ns/t/partitions", 2),
                                   ("PUT", "/admin/v2/persistent/acme/ns/u", None)):
            assert admin.request(method, path, json=body).status_code == 204, path
        operations = admin.get("/openapi.json").json()["paths"]
        admin.close()
        yield {"key": key, "ca": str(tls.ca), "binary": tls_url, "plain": plain_url, "https": https_url,
               "operations": operations}
    finally:
        stop(process)


def _http(url: str, ca: str, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return httpx.Client(base_url=url, verify=ssl.create_default_context(cafile=ca), headers=headers, timeout=10)


def _token(secured, credentials: str, role: str = "acme-admin"):
    """No token, or a token of ``role`` of that kind."""
    return None if credentials == "none" else secured["key"].token(role, credentials).reveal()


def _requests(operations: dict):
    """Every (method, path) of the OpenAPI description, its parameters filled with acme's names."""
    for template, methods in sorted(operations.items()):
        path = template
        for name, value in PATH_VALUES.items():
            path = path.replace("{" + name + "}", value)
        for method in sorted(methods):
            yield method.upper(), path.replace("{", "").replace("}", "")


@slow
def test_no_admin_call_is_accepted_without_valid_credentials_or_from_a_role_without_rights(secured, capsys):
    calls, accepted = 0, []
    for credentials in REFUSED_CREDENTIALS:
        client = _http(secured["https"], secured["ca"], _token(secured, credentials))
        for method, path in [*_requests(secured["operations"]), ("GET", "/openapi.json")]:
            response = client.request(method, path, json={} if method in ("POST", "PUT") else None)
            calls += 1
            if (response.status_code, response.json().get("reason")) != (401, "Authentication required"):
                accepted.append(f"{credentials}: {method} {path} -> {response.status_code} {response.text[:120]}")
        client.close()
    intruder = _http(secured["https"], secured["ca"], _token(secured, "valid", "intruder"))
    for method, path in _requests(secured["operations"]):
        response = intruder.request(method, path, json={} if method in ("POST", "PUT") else None)
        calls += 1
        if response.status_code not in (401, 403):
            accepted.append(f"intruder: {method} {path} -> {response.status_code} {response.text[:120]}")
    intruder.close()
    with capsys.disabled():
        print(f"\nadmin REST with authentication on: {len(accepted)} of {calls} unauthenticated or "
              f"wrong-role calls accepted")
    assert accepted == []
    # the refusals are not the broker refusing everyone: the tenant's admin and a super-user get through
    for role in ("acme-admin", "superuser"):
        client = _http(secured["https"], secured["ca"], _token(secured, "valid", role))
        assert client.get("/admin/v2/persistent/acme/ns/t/partitions").json() == {"partitions": 2}
        client.close()


@slow
def test_rest_refusals_use_pulsars_words(secured):
    intruder = _http(secured["https"], secured["ca"], _token(secured, "valid", "intruder"))
    answer = intruder.get("/admin/v2/persistent/acme/ns/t/partitions")
    assert (answer.status_code, answer.json()["reason"]) == (
        401, "Unauthorized to validateTopicOperation for operation [LOOKUP] on topic [persistent://acme/ns/t]")
    answer = intruder.get("/admin/v2/persistent/acme/ns")
    assert (answer.status_code, answer.json()["reason"]) == (
        403, "Unauthorized to validateNamespaceOperation for operation [GET_TOPICS] on namespace [acme/ns]")
    answer = intruder.get("/admin/v2/brokers/configuration/runtime")
    assert (answer.status_code, answer.json()["reason"]) == (401, "This operation requires super-user access")
    answer = intruder.get("/admin/v2/persistent/nosuch/ns/t/partitions")
    assert (answer.status_code, answer.json()["reason"]) == (404, "Tenant does not exist")
    intruder.close()
    superuser = _http(secured["https"], secured["ca"], _token(secured, "valid", "superuser"))
    assert superuser.get("/admin/v2/brokers/configuration/runtime").json()["tokenSecretKey"] == "******"
    superuser.close()


class _Link:
    """One binary connection over TLS: our codec in CLIENT role, every wait bounded."""

    def __init__(self, secured, token: str | None, method: str = "token"):
        host, port = secured["binary"].removeprefix("pulsar+ssl://").split(":")
        context = ssl.create_default_context(cafile=secured["ca"])
        self.sock = context.wrap_socket(socket.create_connection((host, int(port)), timeout=5), server_hostname=host)
        self.conn = Connection(Role.CLIENT)
        fields = {"auth_method_name": method, "auth_data": token.encode()} if token else {}
        self.sock.sendall(self.conn.send(ev.Connect(client_version="security-test", protocol_version=21, **fields)))
        self.connected = self.next()

    def next(self):
        while True:
            event = self.conn.next_event()
            if event is not NEED_DATA:
                return event
            try:
                data = self.sock.recv(65536)
            except (ConnectionResetError, ssl.SSLError):
                data = b""
            self.conn.receive_data(data)
            if not data:
                return self.conn.next_event()

    def ask(self, event):
        self.sock.sendall(self.conn.send(event))
        return self.next()

    def close(self):
        self.sock.close()


def _commands(request_id: int):
    """Every binary command that reads or writes a tenant's topics, once per topic of acme/ns."""
    for topic in (PARTITIONED, f"{PARTITIONED}-partition-0", PLAIN):
        yield ev.PartitionedMetadata(topic=topic, request_id=request_id)
        yield ev.Lookup(topic=topic, request_id=request_id + 1)
        yield ev.Producer(topic=topic, producer_id=request_id, request_id=request_id + 2)
        yield ev.Subscribe(topic=topic, subscription="s", subType=0, consumer_id=request_id, request_id=request_id + 3)
        yield ev.BatchLookup(topics=[topic], request_id=request_id + 4)
        request_id += 10
    yield ev.GetTopicsOfNamespace(namespace=NAMESPACE, request_id=request_id, mode=0)


def _refused(answer) -> bool:
    error = getattr(answer.pb, "error", None) if answer not in (CLOSED, NEED_DATA) else None
    return answer is not CLOSED and error == pb.ServerError.Value("AuthorizationError")


@slow
def test_no_binary_call_is_accepted_without_valid_credentials_or_from_a_role_without_rights(secured, capsys):
    calls, accepted = 0, []
    for credentials in REFUSED_CREDENTIALS:
        link = _Link(secured, _token(secured, credentials))
        calls += 1
        refusal = link.connected
        if not (isinstance(refusal, ev.Error) and refusal.message == "Failed to authenticate"
                and refusal.error == pb.ServerError.Value("AuthenticationError") and link.next() is CLOSED):
            accepted.append(f"CONNECT with {credentials} credentials -> {refusal!r}")
        link.close()
    link = _Link(secured, _token(secured, "valid"), method="basic")  # a provider the broker does not have
    calls += 1
    if not isinstance(link.connected, ev.Error):
        accepted.append(f"CONNECT with auth method basic -> {link.connected!r}")
    link.close()
    intruder = _Link(secured, _token(secured, "valid", "intruder"))
    assert isinstance(intruder.connected, ev.Connected)  # authenticated: CONNECT is not authorized
    for command in _commands(100):
        calls += 1
        answer = intruder.ask(command)
        if not _refused(answer):
            accepted.append(f"intruder: {command!r} -> {answer!r}")
    intruder.close()
    with capsys.disabled():
        print(f"\nbinary protocol with authentication on: {len(accepted)} of {calls} unauthenticated or "
              f"wrong-role calls accepted")
    assert accepted == []
    for role in ("acme-admin", "superuser"):
        link = _Link(secured, _token(secured, "valid", role))
        answer = link.ask(ev.PartitionedMetadata(topic=PARTITIONED, request_id=1))
        assert isinstance(answer, ev.PartitionedMetadataResponse) and answer.partitions == 2, answer
        link.close()


@slow
def test_binary_refusals_use_pulsars_words(secured):
    intruder = _Link(secured, _token(secured, "valid", "intruder"))
    answer = intruder.ask(ev.PartitionedMetadata(topic=PARTITIONED, request_id=1))
    assert answer.message == "Client is not authorized to Get Partition Metadata"
    assert intruder.ask(ev.Lookup(topic=PARTITIONED, request_id=2)).message == "Client is not authorized to Lookup"
    answer = intruder.ask(ev.Subscribe(topic=PLAIN, subscription="s", subType=0, consumer_id=1, request_id=3))
    assert answer.message == "Client is not authorized to subscribe"
    answer = intruder.ask(ev.Producer(topic=PLAIN, producer_id=1, request_id=4))
    assert answer.message == "Client is not authorized to Produce"
    answer = intruder.ask(ev.GetTopicsOfNamespace(namespace=NAMESPACE, request_id=5, mode=0))
    assert answer.message == "Client is not authorized to GetTopicsOfNamespace"
    answer = intruder.ask(ev.PartitionedMetadata(topic="persistent://nosuch/ns/t", request_id=6))
    assert (answer.error, answer.message) == (pb.ServerError.Value("TopicNotFound"),
                                              "Tenant or namespace or topic does not exist: nosuch/ns")
    intruder.close()


@slow
def test_the_plain_listener_authenticates_too(secured):
    host, port = secured["plain"].removeprefix("pulsar://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    conn = Connection(Role.CLIENT)
    sock.sendall(conn.send(ev.Connect(client_version="security-test", protocol_version=21)))
    events = []
    while CLOSED not in events:
        event = conn.next_event()
        if event is NEED_DATA:
            conn.receive_data(sock.recv(65536))
            continue
        events.append(event)
    sock.close()
    assert isinstance(events[0], ev.Error) and events[0].message == "Failed to authenticate"


@slow
def test_a_broker_without_authentication_ignores_credentials():
    process, broker_url, web_url = start()
    try:
        forged = SigningKey().token("intruder", "forged").reveal()
        assert httpx.get(f"{web_url}/admin/v2/clusters", headers={"Authorization": f"Bearer {forged}"}).status_code == 200
        host, port = broker_url.removeprefix("pulsar://").split(":")
        sock = socket.create_connection((host, int(port)), timeout=5)
        conn = Connection(Role.CLIENT)
        sock.sendall(conn.send(ev.Connect(client_version="t", protocol_version=21, auth_method_name="token",
                                          auth_data=forged.encode())))
        while (event := conn.next_event()) is NEED_DATA:
            conn.receive_data(sock.recv(65536))
        assert isinstance(event, ev.Connected)
        sock.close()
    finally:
        stop(process)


@slow
def test_security_keys_pulsar_refuses_are_configuration_errors(tmp_path):
    import subprocess
    import sys

    def refused(*sets: str) -> str:
        done = subprocess.run([sys.executable, "-m", "reference_broker", "--broker-port", "0", "--web-port", "0",
                               *[arg for item in sets for arg in ("--set", item)]],
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 2, done.stderr
        return done.stderr

    assert "Authentication must be enabled with authenticationEnabled=true when authorization is enabled" in \
        refused("authorizationEnabled=true")
    assert "implements only org.apache.pulsar.broker.authentication.AuthenticationProviderToken" in \
        refused("authenticationEnabled=true", "authenticationProviders=com.example.Basic")
    (tmp_path / "short.key").write_bytes(b"0123456789")
    assert "need at least 256" in refused("authenticationEnabled=true", f"authenticationProviders={TOKEN_PROVIDER}",
                                          f"tokenSecretKey=file://{tmp_path / 'short.key'}")
    secret = SigningKey().data_url
    shown = refused("authenticationEnabled=true", f"authenticationProviders={TOKEN_PROVIDER}",
                    f"tokenSecretKey={secret}", "brokerServicePortTls=0")
    assert "brokerServicePortTls needs tlsCertificateFilePath and tlsKeyFilePath" in shown
    assert secret.split(",")[1] not in shown  # a key is never echoed


# -- the keys and tokens themselves (no broker) ----------------------------------------------------

def _config(**values):
    from reference_broker.config import BrokerConfig
    return BrokerConfig(authenticationEnabled=True, authenticationProviders=TOKEN_PROVIDER, **values)


def test_keys_are_read_in_every_form_pulsar_reads(tmp_path):
    import base64

    from reference_broker.errors import ConfigError
    from reference_broker.security import read_key

    raw = bytes(range(32))
    encoded = base64.b64encode(raw).decode()
    (tmp_path / "k").write_bytes(raw)
    assert read_key(f"data:;base64,{encoded}") == read_key((tmp_path / "k").as_uri()) == raw
    assert read_key(str(tmp_path / "k")) == read_key(encoded) == raw
    with pytest.raises(ConfigError, match="doesn't exist") as refused:
        read_key("not a key, not a file!")
    with pytest.raises(ConfigError, match="data:...") as shown:
        read_key("data:;base64,@@@@")
    assert "@@@@" not in str(shown.value) and refused


def test_a_public_key_checks_rs256_tokens_and_the_role_claim_is_configurable(tmp_path):
    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from reference_broker.security import AuthenticationFailed, Security

    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    der = private.public_key().public_bytes(serialization.Encoding.DER,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    (tmp_path / "public.key").write_bytes(der)
    security = Security(_config(tokenPublicKey=(tmp_path / "public.key").as_uri(), tokenAuthClaim="role"),
                        tenant_admins=lambda tenant: None)
    token = jwt.encode({"role": ["alice", "bob"], "sub": "ignored"}, private, algorithm="RS256")
    assert security.authenticate_connect("token", token.encode()) == "alice"  # a list's first role
    assert security.authenticate_http(f"Bearer {token}") == "alice"
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for bad in (jwt.encode({"role": "alice"}, other, algorithm="RS256"),
                jwt.encode({"sub": "alice"}, private, algorithm="RS256"),  # no role claim
                jwt.encode({"role": "alice", "exp": 1}, private, algorithm="RS256"),
                jwt.encode({"role": "alice"}, b"k" * 32, algorithm="HS256")):  # the HMAC-with-public-key trick
        with pytest.raises(AuthenticationFailed):
            security.authenticate_connect("token", bad.encode())
    with pytest.raises(AuthenticationFailed):
        security.authenticate_http(None)


def test_anonymous_role_and_unknown_methods():
    from reference_broker.security import AuthenticationFailed, Security

    key = SigningKey()
    named = Security(_config(tokenSecretKey=key.data_url, anonymousUserRole="guest"), tenant_admins=lambda t: None)
    assert named.authenticate_connect(None, b"") == "guest"  # ServerCnx: no provider for "none"
    assert named.authenticate_http(None) == "guest"
    strict = Security(_config(tokenSecretKey=key.data_url), tenant_admins=lambda t: None)
    with pytest.raises(AuthenticationFailed):
        strict.authenticate_connect("basic", b"user:password")
    assert strict.authenticate_connect("token", key.token("alice").reveal().encode()) == "alice"


def test_tenant_decisions():
    from reference_broker.security import Security

    security = Security(_config(tokenSecretKey=SigningKey().data_url, authorizationEnabled=True,
                                superUserRoles="root, ops"),
                        tenant_admins=lambda tenant: {"acme": frozenset({"acme-admin"})}.get(tenant))
    assert security.tenant_decision("ops", "nosuch").allowed  # a super-user, whatever the tenant
    assert security.tenant_decision("acme-admin", "acme").allowed
    assert not security.tenant_decision("intruder", "acme").allowed
    assert security.tenant_decision("intruder", "nosuch").tenant_missing
