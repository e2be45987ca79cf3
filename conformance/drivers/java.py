"""The java-client and java-admin drivers: Pulsar's official Java client and admin client, driven
through the client-driver protocol (drivers/external.py, clients/README.md).

The operations are composed from the protocol's commands in drivers/protocol_client.py, as for
every client library; what is the Java client's own is here:

- its processes: two drivers of the run's pool (``protocol_client.POOL``), started from the jars
  java_build.py builds, with the library versions chosen for the run (``configure``; default
  java_build's); ``close_shared`` ends every driver process of the run;
- what its exceptions mean (java_exceptions.py): a client that could not connect to the broker
  (Java's ``ConnectException`` and the client's own ``PulsarClientException$ConnectException``, as
  the exception or a cause) has not answered anything: ``NoContact``, never an outcome.
"""

from __future__ import annotations

from typing import Optional

from conformance.drivers.base import DEFAULT_TIMEOUT
from conformance.drivers.java_build import DEFAULT_ADMIN_VERSION, DEFAULT_CLIENT_VERSION, driver_command
from conformance.drivers.java_exceptions import outcome_of
from conformance.drivers.protocol_client import POOL, ProtocolAdminDriver, ProtocolClientDriver
from conformance.security import NO_CREDENTIALS, Credentials

POOL.register("java-client", "org.apache.pulsar:pulsar-client", DEFAULT_CLIENT_VERSION,
              lambda version: driver_command("java-client", version))
POOL.register("java-admin", "org.apache.pulsar:pulsar-client-admin", DEFAULT_ADMIN_VERSION,
              lambda version: driver_command("java-admin", version))


def configure(*, client_version: Optional[str] = None, admin_version: Optional[str] = None) -> None:
    """The library versions of this run's Java drivers; a running driver of another
    version is closed."""
    POOL.configure("java-client", client_version)
    POOL.configure("java-admin", admin_version)


def close_shared() -> None:
    """Ends every driver process of the run's pool, the Java drivers' and the other libraries'."""
    POOL.close()


def java_drivers(service_url: Optional[str], admin_url: Optional[str], *, timeout: float = DEFAULT_TIMEOUT,
                 credentials: Credentials = NO_CREDENTIALS) -> dict:
    """The Java drivers for a target: the admin one only when it has an admin URL."""
    return {
        "java-client": JavaClientDriver(service_url, admin_url, POOL.shared("java-client"), timeout=timeout,
                                        credentials=credentials),
        "java-admin": JavaAdminDriver(admin_url, POOL.shared("java-admin"), timeout=timeout,
                                      credentials=credentials) if admin_url else None,
    }


class JavaClientDriver(ProtocolClientDriver):
    """``JavaGetPartitionsForTopic`` and ``JavaProduceConsume`` with org.apache.pulsar:pulsar-client."""

    name = "java-client"
    library = "java"
    outcome_of = staticmethod(outcome_of)


class JavaAdminDriver(ProtocolAdminDriver):
    """``JavaGetPartitionedTopicMetadata`` with org.apache.pulsar:pulsar-client-admin."""

    name = "java-admin"
    library = "java"
    outcome_of = staticmethod(outcome_of)
