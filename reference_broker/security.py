"""Token authentication, authorization and TLS, with Pulsar's broker.conf keys.

What this module owns: reading the security keys (``authenticationEnabled``,
``authenticationProviders``, ``tokenSecretKey`` / ``tokenPublicKey`` in Pulsar's ``data:`` and
``file:`` forms, ``tokenAuthClaim``, ``authorizationEnabled``, ``superUserRoles``,
``anonymousUserRole``, the ``tls*`` keys), checking a JWT, deciding whether a role may act on a
tenant's resources, and the TLS server contexts. The binary protocol (commands.py) and the admin
API (admin/security.py) ask it and answer with Pulsar's words.

- off by default: with ``authenticationEnabled=false`` (Pulsar's default) nothing here is
  consulted: every CONNECT and every HTTP request goes through unchanged, whatever credentials it
  carries.
- the provider and its key (``read_key``, ``TokenVerifier``): the only provider is Pulsar's
  ``AuthenticationProviderToken`` (method name ``token``); a provider name it does not know is a
  ConfigError at start-up, never a silent pass. The key is read as
  ``AuthTokenUtils#readKeyFromUrl`` reads it (pulsar-broker-common @ v4.0.7): ``data:`` URL,
  ``file:`` URL, an existing path, else base64. A secret key is HMAC with at least 256 bits
  (jjwt's ``Keys.hmacShaKeyFor`` refuses less); a public key is DER X.509
  (``AuthTokenUtils#decodePublicKey``: ``X509EncodedKeySpec``), checked with ``tokenPublicAlg``
  (default RS256).
- a valid token (``TokenVerifier.role_of``): its signature verifies, it has not expired, and its
  role claim (``tokenAuthClaim``, default ``sub``) is a string. Anything else is
  AuthenticationFailed; the reason is logged by the caller, never sent to the client (Pulsar
  answers the same fixed text whatever went wrong), and the token itself is never logged.
- authorization (``Security.tenant_decision``; ``authorizationEnabled`` and
  ``authenticationEnabled``) follows ``PulsarAuthorizationProvider`` (@ v4.0.7): a role in
  ``superUserRoles`` may do anything; otherwise a role in the tenant's ``adminRoles`` may act on
  the tenant's namespaces and topics ("validateTenantAdminAccess"); namespace permissions granted
  to other roles are not implemented, so any other role is refused. A tenant that does not exist
  is "Tenant does not exist" for a role that is not a super-user.
"""

from __future__ import annotations

import base64
import logging
import os
import ssl
import urllib.parse
from dataclasses import dataclass
from typing import Callable, Optional

from .errors import ConfigError

log = logging.getLogger("reference_broker.security")

TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
TOKEN_METHOD = "token"  # AuthenticationProviderToken#getAuthMethodName
HMAC_MIN_BYTES = 32
# jjwt picks the HMAC algorithm from the header and refuses a key shorter than the algorithm.
_HMAC_ALGORITHMS = (("HS256", 32), ("HS384", 48), ("HS512", 64))
PUBLIC_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")

# The answers Pulsar gives, word for word.
# ServerCnx#authenticationFailed @ v4.0.7: Commands.newError(-1, AuthenticationError, "Failed to authenticate")
CONNECT_REFUSED = "Failed to authenticate"
# AuthenticationFilter#doFilter @ v4.0.7: httpResponse.sendError(SC_UNAUTHORIZED, "Authentication required")
HTTP_REFUSED = "Authentication required"
TENANT_MISSING = "Tenant does not exist"  # PulsarAuthorizationProvider#validateTenantAdminAccess


class AuthenticationFailed(Exception):
    """The credentials do not authenticate anyone; the message says why (for the log only)."""


@dataclass(frozen=True)
class Decision:
    """An authorization answer: allowed, or refused because the role lacks the right or the tenant
    is missing (which Pulsar answers differently)."""

    allowed: bool
    tenant_missing: bool = False


ALLOWED = Decision(True)


def read_key(url: str) -> bytes:
    """Key bytes as AuthTokenUtils#readKeyFromUrl reads them: data:, file:, a path, else base64."""
    text = url.strip()
    if text.startswith("data:"):
        header, comma, data = text[len("data:"):].partition(",")
        if not comma:
            raise ConfigError(f"Invalid key URL {_shown(url)}: a data: URL needs a comma before its data")
        if header.endswith(";base64"):
            try:
                return base64.b64decode(data, validate=True)
            except ValueError:
                raise ConfigError(f"Invalid key URL {_shown(url)}: its data is not base64") from None
        return urllib.parse.unquote_to_bytes(data)
    if text.startswith("file:"):
        path = urllib.parse.unquote(urllib.parse.urlsplit(text).path)
        return _read_key_file(path, url)
    if os.path.exists(text):
        return _read_key_file(text, url)
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise ConfigError(f"Secret/Public Key file {_shown(url)} doesn't exist") from None


def _read_key_file(path: str, url: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise ConfigError(f"Cannot read key {_shown(url)}: {exc.strerror or exc}") from None


def _shown(url: str) -> str:
    """A key URL as an error may show it: a data: URL carries the key itself, so never its data."""
    return "data:..." if url.strip().startswith("data:") else repr(url)


def roles(text: Optional[str]) -> frozenset[str]:
    """A comma-separated role list (``superUserRoles``) as a set, blanks dropped."""
    return frozenset(part.strip() for part in (text or "").split(",") if part.strip())


class TokenVerifier:
    """Checks a JWT with the configured key: signature, expiry and a string role claim."""

    def __init__(self, *, secret_key: Optional[str], public_key: Optional[str], public_alg: str,
                 role_claim: str):
        if secret_key:
            key = read_key(secret_key)
            if len(key) < HMAC_MIN_BYTES:
                raise ConfigError(f"tokenSecretKey is {len(key) * 8} bits; Pulsar's HMAC keys need at least "
                                  f"{HMAC_MIN_BYTES * 8} (pulsar tokens create-secret-key makes one)")
            self._key: object = key
            self._algorithms = [name for name, size in _HMAC_ALGORITHMS if len(key) >= size]
        elif public_key:
            if public_alg not in PUBLIC_ALGORITHMS:
                raise ConfigError(f"Invalid tokenPublicAlg {public_alg!r}: expected one of {', '.join(PUBLIC_ALGORITHMS)}")
            from cryptography.hazmat.primitives.serialization import load_der_public_key
            try:
                self._key = load_der_public_key(read_key(public_key))
            except ValueError as exc:
                raise ConfigError(f"tokenPublicKey is not a DER X.509 public key: {exc}") from None
            self._algorithms = [public_alg]
        else:
            raise ConfigError("No secret key was provided for token authentication: set tokenSecretKey or "
                              "tokenPublicKey")
        self.role_claim = role_claim

    def role_of(self, token: str) -> str:
        import jwt

        if not token:
            raise AuthenticationFailed("Blank token found")
        try:
            claims = jwt.decode(token, self._key, algorithms=self._algorithms,
                                options={"verify_aud": False, "require": []})
        except jwt.PyJWTError as exc:
            raise AuthenticationFailed(f"Failed to authentication token: {exc}") from None
        role = claims.get(self.role_claim)
        if isinstance(role, list) and role and isinstance(role[0], str):
            role = role[0]  # AuthenticationProviderToken#getPrincipal takes a list's first entry
        if not isinstance(role, str) or not role:
            raise AuthenticationFailed(f"the token has no role claim {self.role_claim!r}")
        return role


class Security:
    """The broker's security settings, read once from its config; one per broker."""

    def __init__(self, config, tenant_admins: Callable[[str], Optional[frozenset[str]]]):
        self.authentication = bool(config.get("authenticationEnabled"))
        self.authorization = bool(config.get("authorizationEnabled"))
        if self.authorization and not self.authentication:
            # PulsarService#start @ v4.0.7 refuses to start so, word for word
            raise ConfigError("Invalid broker configuration. Authentication must be enabled with "
                              "authenticationEnabled=true when authorization is enabled with authorizationEnabled=true.")
        self.super_users = roles(config.get("superUserRoles"))
        self.anonymous_role = config.get("anonymousUserRole") or None
        self._tenant_admins = tenant_admins
        self.verifier: Optional[TokenVerifier] = None
        if self.authentication:
            providers = [p.strip() for p in (config.get("authenticationProviders") or "").split(",") if p.strip()]
            unknown = [p for p in providers if p != TOKEN_PROVIDER]
            if unknown:
                raise ConfigError(f"Unsupported authenticationProviders {', '.join(unknown)}: the reference broker "
                                  f"implements only {TOKEN_PROVIDER}")
            if providers:
                self.verifier = TokenVerifier(
                    secret_key=config.get("tokenSecretKey"), public_key=config.get("tokenPublicKey"),
                    public_alg=config.get("tokenPublicAlg"), role_claim=config.get("tokenAuthClaim") or "sub")
            elif self.anonymous_role is None:
                raise ConfigError("authenticationEnabled=true needs authenticationProviders (e.g. "
                                  f"{TOKEN_PROVIDER}) or an anonymousUserRole")

    # -- authentication ---------------------------------------------------------------------

    def authenticate_connect(self, method: Optional[str], data: bytes) -> str:
        """The role of a CONNECT's credentials (ServerCnx#handleConnect: an unknown method falls
        back to anonymousUserRole, else fails), or AuthenticationFailed."""
        if method == TOKEN_METHOD and self.verifier is not None:
            return self.verifier.role_of(data.decode("utf-8", errors="replace").strip())
        if self.anonymous_role is not None:
            return self.anonymous_role
        raise AuthenticationFailed(f"No anonymous role, and no authentication provider for method {method or 'none'!r}")

    def authenticate_http(self, authorization: Optional[str]) -> str:
        """The role of an HTTP request's ``Authorization`` header, or AuthenticationFailed
        (AuthenticationService#authenticateHttpRequest: providers first, then the anonymous role)."""
        prefix = "Bearer "
        if authorization and authorization.startswith(prefix) and self.verifier is not None:
            try:
                return self.verifier.role_of(authorization[len(prefix):].strip())
            except AuthenticationFailed:
                if self.anonymous_role is None:
                    raise
        if self.anonymous_role is not None:
            return self.anonymous_role
        raise AuthenticationFailed("Authentication token has to be passed with Bearer prefix")

    # -- authorization (PulsarAuthorizationProvider) -------------------------------------------------------------

    def is_super_user(self, role: Optional[str]) -> bool:
        return not self.authorization or role in self.super_users

    def tenant_decision(self, role: Optional[str], tenant: str) -> Decision:
        """Whether ``role`` may act on ``tenant``'s namespaces and topics."""
        if self.is_super_user(role):
            return ALLOWED
        admins = self._tenant_admins(tenant)
        if admins is None:
            return Decision(False, tenant_missing=True)
        return Decision(role in admins)


def tls_server_context(config, *, port_key: str) -> Optional[ssl.SSLContext]:
    """The TLS context of a listener whose ``port_key`` (brokerServicePortTls, webServicePortTls)
    is set, from ``tlsCertificateFilePath``, ``tlsKeyFilePath`` and, when given,
    ``tlsTrustCertsFilePath`` (clients' certificates are then verified when they send one, as
    ``tlsRequireTrustedClientCertOnConnect=false`` does); None without that port."""
    if config.get(port_key) is None:
        return None
    cert, key = config.get("tlsCertificateFilePath"), config.get("tlsKeyFilePath")
    if not cert or not key:
        raise ConfigError(f"{port_key} needs tlsCertificateFilePath and tlsKeyFilePath")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert, key)
        trust = config.get("tlsTrustCertsFilePath")
        if trust:
            context.load_verify_locations(cafile=trust)
            context.verify_mode = ssl.CERT_OPTIONAL
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"Cannot load the TLS certificate {cert} / key {key}: {exc}") from None
    return context


# What ServerCnx (@ v4.0.7) answers a role that may not act on a topic's or namespace's tenant,
# per command: (message when the role lacks the right, message when the tenant does not exist).
# PARTITIONED_METADATA answers a missing tenant with TopicNotFound instead (see binary_refusal).
BINARY_REFUSALS = {
    "PartitionedMetadata": ("Client is not authorized to Get Partition Metadata", None),
    "Lookup": ("Client is not authorized to Lookup", "Exception occurred while trying to authorize lookup"),
    "Producer": ("Client is not authorized to Produce", "org.apache.pulsar.broker.web.RestException: " + TENANT_MISSING),
    "Subscribe": ("Client is not authorized to subscribe", "org.apache.pulsar.broker.web.RestException: " + TENANT_MISSING),
    "GetTopicsOfNamespace": ("Client is not authorized to GetTopicsOfNamespace",
                             "Exception occurred while trying to authorize GetTopicsOfNamespace"),
}


def binary_refusal(security: Security, role: Optional[str], command: str, tenant: str,
                   namespace: str) -> Optional[tuple[str, str]]:
    """None when ``role`` may run ``command`` on ``tenant``'s resources, else Pulsar's
    (ServerError name, message) for it (BINARY_REFUSALS)."""
    decision = security.tenant_decision(role, tenant)
    if decision.allowed:
        return None
    denied, missing = BINARY_REFUSALS[command]
    if not decision.tenant_missing:
        return "AuthorizationError", denied
    if missing is None:  # ServerCnx#handlePartitionMetadataRequest: a 404 from the authorization check
        return "TopicNotFound", f"Tenant or namespace or topic does not exist: {namespace}"
    return "AuthorizationError", missing
