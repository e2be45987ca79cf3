"""``reference-cluster``: the reference broker as a PIP-35 cluster of three brokers in one process.

- Started as ``python -m reference_broker --brokers 3 --broker-port 0 --web-port 0
  --metadata-store memory: [--set key=value]...``; ready at its one READY line, which lists every
  broker comma-separated in start order (``cluster_ready_urls``: ``READY
  pulsar://h:P1,pulsar://h:P2,... http://h:Q1,http://h:Q2,...``, docs/pip35-decisions.md B9).
  ``service_urls`` and ``admin_urls`` hold them all; ``service_url`` / ``admin_url`` are the
  first broker's, which every case talks to unless its operation asks every broker
  (SameOwnerEverywhere).
- Configuration is ReferenceTarget's: the brokers share one configuration object, so a dynamic
  key POSTed to the first broker applies to all (B9); a non-dynamic key restarts the
  process's brokers in place, cluster and all.
- Every row runs here as on one broker: on a cluster a LOOKUP answers Redirect for the bundles
  another broker owns, a PRODUCER there is refused, and an admin request about one topic is a 307
  to its owner (B6, B8), so the drivers follow lookups and redirects to the owner as Pulsar's
  clients do (drivers/wire.py ``follow_lookup``, drivers/rest.py ``request``), and the brokers ask
  each other what only an owner knows (reference_broker/admin/owners.py).

``attach_cluster`` hands a target's broker lists to the drivers that ask every broker; any target
without ``service_urls`` is a cluster of one.
"""

from __future__ import annotations

from typing import Optional

from conformance.targets.reference import ReferenceTarget, ready_fields

BROKERS = 3
def cluster_ready_urls(lines: list[str]) -> Optional[tuple[list[str], list[str]]]:
    """(service URLs, admin URLs) of the READY line, once it was printed: every
    broker, comma-separated, in start order."""
    fields = ready_fields(lines)
    return None if fields is None else (fields[0].split(","), fields[1].split(","))


def attach_cluster(driver, target):
    """Give ``driver`` every broker of ``target`` (wire: service URLs; REST: admin URLs)."""
    if hasattr(driver, "cluster_urls"):
        driver.cluster_urls = list(getattr(target, "service_urls", None) or []) or None
    if hasattr(driver, "cluster_admin_urls"):
        driver.cluster_admin_urls = list(getattr(target, "admin_urls", None) or []) or None
    return driver


class ReferenceClusterTarget(ReferenceTarget):
    kind = "reference-cluster"
    max_instances = 2

    def __init__(self, name: Optional[str] = None, *, brokers: int = BROKERS, **kwargs):
        super().__init__(name, **kwargs)
        self.brokers = brokers
        self.service_urls: list[str] = []
        self.admin_urls: list[str] = []

    def argv(self) -> list[str]:
        return [*super().argv(), "--brokers", str(self.brokers)]

    def _launch(self) -> None:
        fields = self._start_process("reference cluster", ready_fields)
        self.service_urls, self.admin_urls = (field.split(",") for field in self.pick_urls(fields))
        if len(self.service_urls) != self.brokers or len(self.admin_urls) != self.brokers:
            self.stop()
            raise RuntimeError(f"reference cluster printed {len(self.service_urls)} service and "
                               f"{len(self.admin_urls)} admin URLs, expected {self.brokers} of each")
        self.service_url, self.admin_url = self.service_urls[0], self.admin_urls[0]
        self.generation += 1

    def describe(self) -> dict[str, str]:
        info = super().describe()
        info["brokers"] = ",".join(self.service_urls) or str(self.brokers)
        return info
