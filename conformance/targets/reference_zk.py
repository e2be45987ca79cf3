"""``reference-zk``: the reference broker on a REAL ZooKeeper, with its metadata store exposed.

The white-box rows of PIP-157 (spec/pip157.yaml, table ``layout``) check where each managed
ledger lives; this target lets the harness read the znodes themselves (drivers/metadata.py).

``start`` launches a standalone ZooKeeper (Debian's ``zookeeper`` package, which ``make test``
installs; targets/zookeeper.py) on 127.0.0.1 and an ephemeral port, then the reference broker as
ReferenceTarget does, with ``--metadata-store zk:127.0.0.1:PORT/conformance-<hex>``.
``metadata_store_url`` is that URL, which the metadata driver reads. Without java or ZooKeeper the
target cannot start, and the reason says what to install (every case target-error, as runner.py
reports a target that could not start).

Every broker launch gets a FRESH chroot (``_launch``), so a broker restarted for a non-dynamic key
(ReferenceTarget restarts it in place for one) starts from Pulsar's defaults, as a memory: store
would: the reference broker keeps dynamic configuration in its store (reference_broker's
metadata/layout.py, ``/admin/configuration``). Such a restart keeps the ZooKeeper; ``stop`` at the
end stops both.
"""

from __future__ import annotations

import secrets
from typing import Optional

from conformance.targets.reference import ReferenceTarget
from conformance.targets.zookeeper import ZooKeeperServer, missing_reason


class ReferenceZkTarget(ReferenceTarget):
    kind = "reference-zk"
    max_instances = 2  # each with a ZooKeeper of its own

    def __init__(self, name: Optional[str] = None, **kwargs):
        super().__init__(name, **kwargs)
        self.zookeeper: Optional[ZooKeeperServer] = None
        self._keep_zookeeper = False

    def argv(self) -> list[str]:
        argv = super().argv()
        argv[argv.index("--metadata-store") + 1] = self.metadata_store_url
        return argv

    def _launch(self) -> None:
        if self.zookeeper is None or self.zookeeper.process is None or self.zookeeper.process.poll() is not None:
            reason = missing_reason()
            if reason:
                raise RuntimeError(f"reference-zk needs ZooKeeper: {reason}")
            self.zookeeper = ZooKeeperServer().start(timeout=self.start_timeout)
        self.metadata_store_url = self.zookeeper.url(f"/conformance-{secrets.token_hex(6)}")  # fresh per launch
        super()._launch()

    def _configure(self, wanted: dict[str, str]) -> None:
        self._keep_zookeeper = True  # a restart for a static key replaces the broker only, not the ZooKeeper
        try:
            super()._configure(wanted)
        finally:
            self._keep_zookeeper = False

    def stop(self) -> None:
        super().stop()
        if not self._keep_zookeeper and self.zookeeper is not None:
            self.zookeeper.stop()
            self.zookeeper = None

    def describe(self) -> dict[str, str]:
        info = super().describe()
        info["metadata_store"] = self.metadata_store_url or ""
        return info
