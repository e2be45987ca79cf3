"""What the harness presents to a secured broker, the keys it makes per run, and redaction.

A run may test brokers with Pulsar's token authentication and TLS: the harness then presents a
token on every connection and request, trusts a CA for ``pulsar+ssl://`` and ``https://``, and,
for targets it starts itself, makes the signing key, the tokens and the TLS certificates.

- Redaction: a token is a ``Secret``: its ``str`` and ``repr`` are ``<redacted>``, and every
  token the harness holds or makes (and the signing key) is registered so that ``redact`` removes
  it (and its bytes' hex) from any text: transcripts, logs of launched brokers, verdict reasons.
  Only ``reveal()`` gives the token, at the point where it is sent.
- Key material: keys and certificates are made per run (``RunSecurity``), held in memory and,
  where a broker needs a file, written to a private temporary folder removed at exit
  (``RunSecurity.folder``); nothing is ever written inside the repository. A process killed
  outright cannot remove its folder, so the folder's name carries the process id and the next
  run removes the folders of processes that are gone (``remove_orphaned_folders``).
- Launched targets: a target started by the harness runs with the run's signing key whenever
  its configuration has ``authenticationEnabled=true`` (a row's setup, or ``secure`` for every
  case): ``launch_config`` adds Pulsar's keys for it (the token provider, ``tokenSecretKey`` as a
  ``data:;base64,`` URL; for Apache Pulsar also the broker's own client credentials), and the
  harness presents a token of the first role in ``superUserRoles`` (``RunSecurity.credentials``).
  A target the harness did not start is presented the ``--auth-token`` it was given, if any; it
  cannot mint tokens for such a target (``Credentials.mint`` is None).
- Secure and TLS runs (``RunSecurity.overlay``): ``secure`` runs every case of the targets the
  harness starts with token authentication and authorization on (``SECURE_CONFIG``), the
  harness's role a super-user; ``tls`` starts them with TLS listeners too and talks to them only
  over TLS.
"""

from __future__ import annotations

import atexit
import base64
import datetime
import functools
import ipaddress
import os
import secrets
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Optional

from conformance import children

TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
CLIENT_TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
SUPERUSER = "superuser"  # the role of the harness's own token on targets it starts
REDACTED = "<redacted>"
# The keys a row or a secure run sets (model/config.py knows them too): Pulsar's, not dynamic.
SECURE_CONFIG = {"authenticationEnabled": "true", "authorizationEnabled": "true", "superUserRoles": SUPERUSER}
TOKEN_KINDS = ("valid", "forged", "expired")

_SECRETS: set[str] = set()
_LOCK = threading.Lock()


class Secret:
    """A token: never shown by str/repr/format, and registered so that ``redact`` removes it."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        if not isinstance(value, str) or not value:
            raise ValueError("a token must be a non-empty string")
        self._value = value
        with _LOCK:
            _SECRETS.add(value)

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return REDACTED

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def redact(text: str) -> str:
    """``text`` with every registered token replaced by ``<redacted>``, and the hex of its bytes by
    as many ``*``."""
    if not text or not _SECRETS:
        return text
    with _LOCK:
        known = sorted(_SECRETS, key=len, reverse=True)
    for value in known:
        if value in text:
            text = text.replace(value, REDACTED)
        hexed = value.encode().hex()
        if hexed in text:  # a frame's hex keeps its length, so its layout stays readable
            text = text.replace(hexed, "*" * len(hexed))
    return text


# -- tokens ---------------------------------------------------------------------------------------

class SigningKey:
    """An HMAC-SHA256 key as ``pulsar tokens create-secret-key`` makes one (32 random bytes)."""

    def __init__(self, key: Optional[bytes] = None):
        self._key = key or secrets.token_bytes(32)
        Secret(base64.b64encode(self._key).decode("ascii"))  # registered: redact hides the key too
        self._tokens: dict[tuple[str, str], Secret] = {}  # one token per role and kind, so few to redact

    @property
    def data_url(self) -> str:
        """Pulsar's ``tokenSecretKey`` form ``data:;base64,...`` (AuthTokenUtils#readKeyFromUrl)."""
        return "data:;base64," + base64.b64encode(self._key).decode("ascii")

    def write(self, path: Path) -> str:
        """The key in a file only its owner reads; returns Pulsar's ``file://`` form for it."""
        path.write_bytes(b"")
        os.chmod(path, 0o600)
        path.write_bytes(self._key)
        return path.resolve().as_uri()

    def token(self, role: str, kind: str = "valid") -> Secret:
        """A JWT for ``role`` (claim ``sub``): ``valid``; ``forged``, signed with another key;
        ``expired``, whose ``exp`` passed an hour ago."""
        import jwt

        if kind not in TOKEN_KINDS:
            raise ValueError(f"token kind {kind!r}: expected one of {', '.join(TOKEN_KINDS)}")
        made = self._tokens.get((role, kind))
        if made is None:
            claims: dict = {"sub": role}
            if kind == "expired":
                claims["exp"] = int(time.time()) - 3600
            key = secrets.token_bytes(32) if kind == "forged" else self._key
            made = self._tokens[(role, kind)] = Secret(jwt.encode(claims, key, algorithm="HS256"))
        return made


def read_token(path: Path) -> Secret:
    """``--auth-token-file``: the token is the file's text, stripped; a ``token:`` prefix (the
    Pulsar CLI's ``authParams`` form) or a ``file:`` URL are not accepted here, only the token."""
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ValueError(f"cannot read --auth-token-file {path}: {exc.strerror or exc}") from None
    if not text:
        raise ValueError(f"--auth-token-file {path} is empty; it must hold the token")
    return Secret(text)


# -- TLS ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TlsFiles:
    """PEM files of one run's CA and of a server certificate it signed for 127.0.0.1/localhost."""

    ca: Path
    cert: Path
    key: Path


def make_tls_files(folder: Path) -> TlsFiles:
    """A CA and a server certificate (SAN 127.0.0.1, localhost) signed by it, valid a day, in ``folder``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pulsar-conformance run CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    # Pulsar's Netty TLS handler reads a PKCS#8 key; an RSA key suits every TLS stack involved.
    from cryptography.hazmat.primitives.asymmetric import rsa
    server_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    server = (x509.CertificateBuilder()
              .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
              .issuer_name(ca_name).public_key(server_key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
              .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                          x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                             critical=False)
              .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
              .sign(ca_key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(folder / "ca.pem", folder / "server.pem", folder / "server-key.pem")
    files.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files.cert.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    files.key.write_bytes(server_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption()))
    os.chmod(files.key, 0o600)
    return files


_FOLDERS: set[Path] = set()
FOLDER_PREFIX = "pulsar-conformance-security-"


def _remove_folders() -> None:
    for folder in list(_FOLDERS):
        shutil.rmtree(folder, ignore_errors=True)


def remove_orphaned_folders(parent: Optional[Path] = None) -> list[Path]:
    """The key folders of harness processes that are gone (killed before their exit hook)."""
    return children.remove_folders_of_gone(FOLDER_PREFIX, parent)


atexit.register(_remove_folders)


# -- what a driver is given ------------------------------------------------------------------------

@dataclass(frozen=True)
class Credentials:
    """What a driver presents to one target: its token (None: none), the CA it trusts for TLS URLs
    (None: the system's), and, for a target running with the harness's key, ``mint(role, kind)``
    to make the tokens of an operation performed as another role."""

    token: Optional[Secret] = None
    trust_certs: Optional[str] = None
    mint: Optional[Callable[[str, str], Secret]] = None

    def of(self, role: Optional[str], kind: str = "valid") -> "Credentials":
        """The credentials of an operation made as ``role`` (None: no token at all), with a token
        of ``kind`` minted for it; Unsupported when this target's key is not the harness's."""
        if role is None:
            return Credentials(None, self.trust_certs, self.mint)
        if self.mint is None:
            from conformance.errors import Unsupported
            raise Unsupported("cannot-mint-token",
                              "the harness does not hold this target's token signing key, so it cannot make a "
                              f"token for role {role!r}; run the case on a target the harness starts")
        return Credentials(self.mint(role, kind), self.trust_certs, self.mint)


NO_CREDENTIALS = Credentials()


@functools.lru_cache(maxsize=None)
def https_verify(trust_certs: Optional[str]):
    """What httpx verifies an https:// admin URL against: the given CA file, else httpx's own bundle.
    One context per file for the whole process, shared by every client: making one reads every CA
    certificate, which costs more CPU than the requests a driver makes with it."""
    import ssl

    import httpx
    return ssl.create_default_context(cafile=trust_certs) if trust_certs else httpx.create_ssl_context()


class RunSecurity:
    """One run's security settings and material: its keys and certificates, what launched targets
    run with, and what drivers present."""

    def __init__(self, *, token: Optional[Secret] = None, trust_certs: Optional[str] = None,
                 secure: bool = False, tls: bool = False):
        self.token = token
        self.trust_certs = trust_certs
        self.secure = secure
        self.tls = tls
        self.key = SigningKey()
        self._folder: Optional[Path] = None
        self._tls_files: Optional[TlsFiles] = None
        self._key_url: Optional[str] = None

    def folder(self) -> Path:
        """The run's private temporary folder, removed at exit; never inside the repository."""
        if self._folder is None:
            remove_orphaned_folders()
            self._folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
            _FOLDERS.add(self._folder)
        return self._folder

    def tls_files(self) -> TlsFiles:
        """The run's CA and server certificate, made on first use."""
        if self._tls_files is None:
            self._tls_files = make_tls_files(self.folder())
        return self._tls_files

    def key_url(self, *, as_file: bool) -> str:
        """``tokenSecretKey`` in either of Pulsar's forms: ``file://`` (a key file in the run's
        folder) or ``data:;base64,``."""
        if not as_file:
            return self.key.data_url
        if self._key_url is None:
            self._key_url = self.key.write(self.folder() / "token-secret.key")
        return self._key_url

    def close(self) -> None:
        """Remove the run's folder now (it is removed at exit anyway)."""
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            _FOLDERS.discard(self._folder)
            self._folder = self._tls_files = self._key_url = None

    def trusted(self) -> Optional[str]:
        """The CA file drivers trust: the one given, else the run's own when it starts TLS targets."""
        if self.trust_certs:
            return self.trust_certs
        return str(self.tls_files().ca) if self.tls else None

    def overlay(self, broker_config: Mapping[str, str]) -> dict[str, str]:
        """A case's config as a target the harness starts runs it (a secure run's keys
        under the case's own)."""
        if not self.secure or not _true(broker_config.get("authenticationEnabled", "true")):
            return dict(broker_config)  # a case that turns authentication off wants none of it
        return {**SECURE_CONFIG, **broker_config}

    def launch_config(self, static: Mapping[str, str], *, pulsar: bool) -> dict[str, str]:
        """The keys a launched broker needs beside its static ``static`` config: the token
        provider and the run's key when authentication is on (and, for Apache Pulsar, the
        credentials of the broker's own internal client), the TLS keys when the run is TLS."""
        extra: dict[str, str] = {}
        if _true(static.get("authenticationEnabled")):
            extra["authenticationProviders"] = TOKEN_PROVIDER
            # Apache Pulsar reads its config file (kept in a private data folder) and gets the key
            # itself; the reference broker gets a key file, since its config comes on the command line.
            extra["tokenSecretKey"] = self.key_url(as_file=not pulsar)
            role = first_role(static.get("superUserRoles"))
            if pulsar and role:
                extra["brokerClientAuthenticationPlugin"] = CLIENT_TOKEN_PLUGIN
                extra["brokerClientAuthenticationParameters"] = "token:" + self.key.token(role).reveal()
        if self.tls:
            files = self.tls_files()
            extra.update(tlsCertificateFilePath=str(files.cert), tlsKeyFilePath=str(files.key),
                         tlsTrustCertsFilePath=str(files.ca))
        return extra

    def credentials(self, static: Optional[Mapping[str, str]], *, launched: bool) -> Credentials:
        """What drivers present to a target whose static config is ``static``: for a
        launched one, a token of its first super-user role and the means to mint others."""
        trust = self.trusted()
        if not launched:
            return Credentials(self.token, trust, None)
        token = self.token
        if static is not None and _true(static.get("authenticationEnabled")):
            role = first_role(static.get("superUserRoles"))
            token = token or (self.key.token(role) if role else None)
        return Credentials(token, trust, self.key.token)


def first_role(text: Optional[str]) -> Optional[str]:
    return next((part.strip() for part in (text or "").split(",") if part.strip()), None)


def _true(value) -> bool:
    return str(value).strip().lower() == "true"

