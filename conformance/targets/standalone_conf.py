"""What an Apache Pulsar standalone runs with, and how the harness knows it is ready.

Shared by the targets that start Apache Pulsar's own standalone: ``pulsar-standalone`` (its
Maven jars in a JVM of ours) and ``pulsar-container`` (its Docker image).

- The baseline is Pulsar's ``conf/standalone.conf`` where it sets a key away from
  ``ServiceConfiguration``'s code default and the key matters to a single-process broker
  (``STANDALONE_CONF``): one bookie with quorums of 1, the no-op load manager (it decides how
  lookups answer), the load balancer off, backlog quota 10 GB. The modelled keys of
  targets/config.py then start at Pulsar's defaults, and a case's keys overlay them
  (``harness_defaults``, ``broker_conf``).
- The harness departs from standalone.conf only where a run needs it, each departure listed in
  ``HARNESS_CONF`` with its reason: loopback addresses and ports chosen per start, and topic
  stats updated every second instead of every minute, so a rate row waits a second for the
  broker's next stats update rather than a minute (the rates themselves are computed exactly as
  on any Pulsar, over the last update interval).
- Ready (``READY_CHECKS``) when GET /admin/v2/clusters answers exactly ``["standalone"]`` and GET
  /admin/v2/namespaces/public lists ``public/default``, which the standalone creates last
  (PulsarStandalone#createDefaultNamespaceIfNeeded); Pulsar's own integration tests wait for the
  same namespace.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping, Optional

from conformance.targets import config as pulsar_config

CLUSTER = "standalone"
DEFAULT_NAMESPACE = "public/default"

# The baseline: conf/standalone.conf (apache/pulsar) where it departs from ServiceConfiguration's defaults.
STANDALONE_CONF: dict[str, str] = {
    "clusterName": CLUSTER,
    "managedLedgerDefaultEnsembleSize": "1",      # code default 2: one bookie
    "managedLedgerDefaultWriteQuorum": "1",       # code default 2
    "managedLedgerDefaultAckQuorum": "1",         # code default 2
    "loadManagerClassName": "org.apache.pulsar.broker.loadbalance.NoopLoadManager",  # code: ModularLoadManagerImpl
    "loadBalancerEnabled": "false",               # code default true
    "backlogQuotaDefaultLimitGB": "10",           # code default -1
    "webSocketServiceEnabled": "true",            # code default false
    "transactionCoordinatorEnabled": "false",
    # The in-process bookie reads the same file.
    "journalSyncData": "false",
    "allowLoopback": "true",
    "diskUsageThreshold": "0.99",
    "diskUsageWarnThreshold": "0.99",
}

# Where the harness's standalone differs from conf/standalone.conf, and why.
HARNESS_CONF: dict[str, tuple[str, str]] = {
    "bindAddress": ("127.0.0.1", "loopback only (standalone.conf: 0.0.0.0)"),
    "advertisedAddress": ("127.0.0.1", "lookups answer a loopback URL, not the host name"),
    "listeningInterface": ("lo", "the bookie listens on loopback too"),
    "allowEphemeralPorts": ("true", "the bookie may take the port chosen for it"),
    "statsUpdateFrequencyInSecs": ("1", "rates are recomputed every second (default 60)"),
    "statsUpdateInitialDelayInSecs": ("1", "the first stats update after one second (default 60)"),
}


def harness_defaults() -> dict[str, str]:
    """Every key a harness-started standalone runs with before a case's own keys:
    standalone.conf's, the harness's departures, then Pulsar's defaults for the modelled keys."""
    values = dict(STANDALONE_CONF)
    values.update({key: value for key, (value, _why) in HARNESS_CONF.items()})
    values.update(pulsar_config.effective({}))
    return values


def broker_conf(static: Mapping[str, str], *, broker_port: int, web_port: int) -> dict[str, str]:
    """The whole configuration of one start: defaults, the case's non-dynamic keys, the ports."""
    values = harness_defaults()
    values.update({key: pulsar_config.normalise(value) for key, value in static.items()})
    values["brokerServicePort"] = str(broker_port)
    values["webServicePort"] = str(web_port)
    return values


def render(values: Mapping[str, str]) -> str:
    """A ``broker.conf``-style file: one ``key=value`` per line, sorted."""
    for key, value in values.items():
        if "\n" in key or "\n" in str(value) or "=" in key:
            raise ValueError(f"broker.conf key {key!r} or its value {value!r} cannot be written as one line")
    return "".join(f"{key}={value}\n" for key, value in sorted(values.items()))


@dataclass(frozen=True)
class ReadyCheck:
    """One HTTP readiness condition: GET ``path`` and judge (status, body)."""

    path: str
    wants: str  # what the body must show, for messages

    def problem(self, status: int, body: str) -> Optional[str]:
        """None when satisfied, else what is missing."""
        if not status:
            return f"GET {self.path}: no HTTP answer ({body})"
        if status != 200:
            return f"GET {self.path} answered {status}, not 200 with {self.wants}"
        try:
            value = json.loads(body)
        except ValueError:
            value = None
        if self.path.endswith("/clusters"):
            ok = value == [CLUSTER]
        else:
            ok = isinstance(value, list) and DEFAULT_NAMESPACE in value
        return None if ok else f"GET {self.path} answered {body.strip()[:200]!r}, not {self.wants}"


READY_CHECKS = (
    ReadyCheck("/admin/v2/clusters", f'["{CLUSTER}"]'),
    ReadyCheck("/admin/v2/namespaces/public", f"a list with {DEFAULT_NAMESPACE}"),
)


def readiness_problem(checks: tuple[ReadyCheck, ...], answers: Mapping[str, tuple[int, str]]) -> Optional[str]:
    """None when every check is satisfied by ``answers`` (path -> (status, body))."""
    for check in checks:
        if check.path not in answers:
            return f"GET {check.path} not answered yet"
        problem = check.problem(*answers[check.path])
        if problem:
            return problem
    return None
