"""pulsar-lite (PyPI ``pulsar-lite``): an independent broker, run from the binary in its wheel.

- It is started as ``pulsar-lite --config <tmp toml> --addr 127.0.0.1:<free port> --db-path <tmp
  dir> --log-level info`` and is ready when it logs "Server listening on" or a TCP connect
  succeeds, within ``start_timeout``.
- Its TOML has ``[metrics] enabled = false`` (``render_toml``). Otherwise it binds a Prometheus
  endpoint on 0.0.0.0:8080 (verified: without the table it logs "Metrics endpoint listening on
  http://0.0.0.0:8080/metrics"; with it, nothing but the broker port listens).
- broker.conf keys map to its TOML where there is an equivalent (``map_config``); any key without
  one raises Unsupported with the reason. A different mapping restarts the process (same port and
  data directory when possible).
- It has no admin REST API; that it serves namespaces nobody created is detected at start like
  on any target (targets/base.py, implicit namespaces), and a case whose namespace must be
  missing runs and is judged on what it answers.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Optional

from conformance.errors import TargetError, Unsupported
from conformance.targets import config as pulsar_config
from conformance.targets.base import Target
from conformance.targets.process import ManagedProcess, free_port, tcp_ready

READY_LINE = "Server listening on"
METRICS_LINE = "Metrics endpoint listening on"

# broker.conf key -> pulsar-lite TOML key, for the keys that are a plain integer on both sides.
_INT_KEYS = {
    "maxConcurrentNonPersistentMessagePerConnection": "max_concurrent_non_persistent_messages_per_connection",
    "maxMessageSize": "max_message_size_bytes",
    "keepAliveIntervalSeconds": "keep_alive_interval_secs",
}
_AUTO_CREATION_KEYS = ("allowAutoTopicCreationType", "defaultNumPartitions")
# broker.conf keys pulsar-lite cannot change but always behaves as if set to this value: any
# other value has no equivalent.
FIXED = {
    "allowAutoTopicCreation": ("true", "pulsar-lite always auto-creates topics"),
    "maxNumPartitionsPerPartitionedTopic": ("0", "pulsar-lite has no partition limit"),
    "maxTopicsPerNamespace": ("0", "pulsar-lite has no topics-per-namespace limit"),
    "enablePersistentTopics": ("true", "pulsar-lite always serves persistent topics"),
    "enableNonPersistentTopics": ("true", "pulsar-lite always serves non-persistent topics"),
}


def find_binary() -> str:
    """The executable shipped in the pulsar-lite wheel (pulsar_lite/bin/pulsar-lite)."""
    try:
        from pulsar_lite.binary_finder import find_pulsar_lite_binary
        return find_pulsar_lite_binary()
    except ImportError as exc:
        raise TargetError(f"pulsar-lite is not installed ({exc}); install the pulsar-lite package") from exc
    except FileNotFoundError as exc:
        raise TargetError(f"pulsar-lite binary not found: {exc}") from exc


def _int(key: str, value: str) -> int:
    try:
        return int(value, 10)
    except ValueError:
        raise Unsupported("config-no-equivalent", f"{key}={value!r} is not an integer; pulsar-lite's TOML needs one") from None


def map_config(broker_config: dict[str, str]) -> dict[str, int]:
    """broker.conf keys -> pulsar-lite TOML values (top level), or Unsupported with the reason."""
    for key in broker_config:
        if key not in _INT_KEYS and key not in _AUTO_CREATION_KEYS and key not in FIXED:
            raise Unsupported("config-no-equivalent", f"pulsar-lite has no equivalent of broker.conf key {key}")
    eff = pulsar_config.effective({k: pulsar_config.normalise(v) for k, v in broker_config.items()})
    for key, (value, why) in FIXED.items():
        if key in eff and eff[key] != value:
            raise Unsupported("config-no-equivalent", f"{why}: {key}={eff[key]} has no equivalent")
    kind = eff["allowAutoTopicCreationType"]
    if kind == "non-partitioned":
        default_partitions = 0  # 0 = auto-create non-partitioned topics
    elif kind == "partitioned":
        default_partitions = _int("defaultNumPartitions", eff["defaultNumPartitions"])
        if default_partitions <= 0:
            # Pulsar refuses to auto-create with defaultNumPartitions <= 0 (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync);
            # pulsar-lite would read 0 as "non-partitioned", which is a different behaviour.
            raise Unsupported("config-no-equivalent", f"defaultNumPartitions={default_partitions} with partitioned auto-creation "
                              "has no pulsar-lite equivalent")
    else:
        raise Unsupported("config-no-equivalent", f"allowAutoTopicCreationType={kind!r} is not a Pulsar topic type")
    toml = {"default_partitions": default_partitions}
    for key, toml_key in _INT_KEYS.items():
        toml[toml_key] = _int(key, eff[key])
    return toml


def render_toml(values: dict[str, int]) -> str:
    lines = [f"{key} = {value}" for key, value in values.items()]
    lines += ["", "[metrics]", "enabled = false", ""]  # else it binds 0.0.0.0:8080 for Prometheus
    return "\n".join(lines)


class PulsarLiteTarget(Target):
    kind = "pulsar-lite"
    divergence_profile = "pulsar-lite"  # spec/divergences/pulsar-lite.yaml
    max_instances = 2

    def __init__(self, name: Optional[str] = None, *, binary: Optional[str] = None, **kwargs):
        super().__init__(name, **kwargs)
        self.binary = binary
        self.toml = map_config({})
        self.process: Optional[ManagedProcess] = None
        self.port: Optional[int] = None
        self.workdir: Optional[Path] = None
        self.warnings: list[str] = []

    def spawn(self, index: int) -> "PulsarLiteTarget":
        twin = PulsarLiteTarget(self.name, binary=self.binary, timeout=self.timeout, start_timeout=self.start_timeout,
                                log_dir=self.log_dir)
        twin.instance_label = f"-{index + 1}"
        return twin

    def _launch(self) -> None:
        binary = self.binary or find_binary()
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="conformance-pulsar-lite-"))
        config_path = self.workdir / "pulsar-lite.toml"
        config_path.write_text(render_toml(self.toml))
        last_error: Optional[Exception] = None
        for _attempt in range(2):  # a reused port may have been taken meanwhile: retry on a new one
            self.port = self.port or free_port()
            log = self.log_dir / f"{self.log_name}.log" if self.log_dir else None
            if log:
                log.parent.mkdir(parents=True, exist_ok=True)
            argv = [binary, "--config", str(config_path), "--addr", f"127.0.0.1:{self.port}",
                    "--db-path", str(self.workdir / "db"), "--log-level", "info"]
            self.process = ManagedProcess(argv, name=f"pulsar-lite ({self.name})", cwd=str(self.workdir), log_path=log)
            port = self.port

            def ready(lines: list[str]):
                if any(READY_LINE in line for line in lines) or tcp_ready("127.0.0.1", port):
                    return True
                return None

            try:
                self.process.start(ready, self.start_timeout)
                break
            except TargetError as exc:
                last_error, self.port = exc, None
        else:
            raise TargetError(str(last_error))
        self.service_url = f"pulsar://127.0.0.1:{self.port}"
        self.admin_url = None  # it has no admin REST API
        self.generation += 1
        if any(METRICS_LINE in line for line in self.process.lines):
            warning = "pulsar-lite ignored [metrics] enabled = false and serves metrics on 0.0.0.0:8080"
            self.warnings.append(warning)
            print(f"conformance: warning: {warning}", file=sys.stderr)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def _stop_process_only(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None

    def _configure(self, wanted: dict[str, str]) -> None:
        toml = map_config(wanted)
        if toml == self.toml:
            return
        self._stop_process_only()
        self.toml = toml
        self._relaunch(toml)

    def describe(self) -> dict[str, str]:
        info = super().describe()
        info["config"] = ", ".join(f"{k}={v}" for k, v in self.toml.items())
        if self.warnings:
            info["warning"] = "; ".join(self.warnings)
        return info
