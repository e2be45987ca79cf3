"""The go-client, go-admin, rust-client and rust-admin drivers: Pulsar's Go client
(github.com/apache/pulsar-client-go, client and pulsaradmin) and the Rust ``pulsar`` crate, driven
through the client-driver protocol as the Java client is (drivers/protocol_client.py composes the
operations; clients/go and clients/rust are the driver programs).

- Their processes are drivers of the run's pool (``protocol_client.POOL``), started from the
  binaries native_build.py builds, at the library versions chosen for the run (``configure``;
  default native_build's).
- What their errors mean is native_errors.py's; what the libraries ask the broker, and so what each
  case expects, is model/client_libraries.py's.
- A call a library has no API for (PIP-344's two-argument lookup, the Rust crate's HTTP lookup and
  admin call) is the driver's "unsupported" answer, which names the library's source.
"""

from __future__ import annotations

from typing import Optional

from conformance.drivers.base import DEFAULT_TIMEOUT
from conformance.drivers.native_build import DEFAULT_GO_VERSION, DEFAULT_RUST_VERSION, driver_command
from conformance.drivers.native_errors import go_outcome_of, rust_outcome_of
from conformance.drivers.protocol_client import POOL, ProtocolAdminDriver, ProtocolClientDriver
from conformance.security import NO_CREDENTIALS, Credentials

# library: (what result records call it, its default version)
LIBRARIES = {"go": ("github.com/apache/pulsar-client-go", DEFAULT_GO_VERSION),
             "rust": ("pulsar (Rust crate)", DEFAULT_RUST_VERSION)}
for _library, (_label, _default) in LIBRARIES.items():
    for _role in ("client", "admin"):
        _name = f"{_library}-{_role}"
        POOL.register(_name, _label, _default, lambda version, name=_name: driver_command(name, version),
                      start_cores=0.25)  # a compiled program: no runtime to start


def configure(*, go_version: Optional[str] = None, rust_version: Optional[str] = None) -> None:
    """The library versions of this run's Go and Rust drivers; a running driver of another version is closed."""
    for library, version in (("go", go_version), ("rust", rust_version)):
        for role in ("client", "admin"):
            POOL.configure(f"{library}-{role}", version)


class GoClientDriver(ProtocolClientDriver):
    name, library = "go-client", "go"
    outcome_of = staticmethod(go_outcome_of)


class GoAdminDriver(ProtocolAdminDriver):
    name, library = "go-admin", "go"
    outcome_of = staticmethod(go_outcome_of)


class RustClientDriver(ProtocolClientDriver):
    name, library = "rust-client", "rust"
    outcome_of = staticmethod(rust_outcome_of)


class RustAdminDriver(ProtocolAdminDriver):
    name, library = "rust-admin", "rust"
    outcome_of = staticmethod(rust_outcome_of)


def native_drivers(service_url: Optional[str], admin_url: Optional[str], *, timeout: float = DEFAULT_TIMEOUT,
                   credentials: Credentials = NO_CREDENTIALS) -> dict:
    """The Go and Rust drivers for a target: the admin ones only when it has an admin URL."""
    drivers: dict = {}
    for client, admin in ((GoClientDriver, GoAdminDriver), (RustClientDriver, RustAdminDriver)):
        drivers[client.name] = client(service_url, admin_url, POOL.shared(client.name), timeout=timeout,
                                      credentials=credentials)
        drivers[admin.name] = admin(admin_url, POOL.shared(admin.name), timeout=timeout,
                                    credentials=credentials) if admin_url else None
    return drivers
