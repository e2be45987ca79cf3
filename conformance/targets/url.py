"""An already running broker, named by URL: ``url:pulsar://H:P[,http://H:Q]``.

The harness neither starts nor stops it; start() only connects and detects. Detection is the
base class's, the same as for launched targets: version from CONNECTED and GET
/admin/v2/brokers/version, admin API, feature flag 5, era from the version.

Somebody else's broker is left as it was found: broker config is set through the dynamic-config
REST call when there is an admin API, and before the first change the broker's runtime values are
read (GET /admin/v2/brokers/configuration/runtime, ``_runtime``) so stop() can put them back. A
non-dynamic key can only be "set" if it already has the wanted value; otherwise, and without an
admin API, the case is Unsupported. It is a real Pulsar, so a dynamic key counts as set once its
runtime config shows it (targets/base.py, ``confirms_dynamic_config``).

Declared config: the user may say what config the broker runs with (``--broker-config``,
``declared``, ``parse_broker_config``: broker.conf key=value lines); keys not said run with
Pulsar's defaults (the model's), or, where an admin API answers, with what its runtime config
shows. Without an admin API a case runs only when every key of its broker config equals what the
broker runs with; otherwise it is unsupported (``config-differs``), naming the keys that differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from conformance.drivers.rest import RestDriver
from conformance.drivers.wire import parse_service_url
from conformance.errors import Indefinite, Unsupported, UsageError
from conformance.targets import config as pulsar_config
from conformance.targets.base import Target, _same_value
from model.config import KEYS, BrokerConfig
from model.errors import ModelUsageError


def parse_url_spec(spec: str) -> tuple[str, Optional[str]]:
    """``pulsar://H:P[,http://H:Q]`` -> (service URL, admin URL or None)."""
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    service = next((p for p in parts if p.startswith(("pulsar://", "pulsar+ssl://"))), None)
    admin = next((p for p in parts if p.startswith(("http://", "https://"))), None)
    unknown = [p for p in parts if p not in (service, admin)]
    if service is None or unknown:
        raise UsageError(f"bad url target {spec!r}: expected url:pulsar://HOST:PORT[,http://HOST:PORT] "
                         "(or pulsar+ssl:// and https://)")
    try:
        parse_service_url(service)
    except ValueError as exc:
        raise UsageError(f"bad url target {spec!r}: {exc}; expected url:pulsar://HOST:PORT[,http://HOST:PORT]") from None
    return service, admin.rstrip("/") if admin else None


def parse_broker_config(items: list[str]) -> dict[str, str]:
    """``--broker-config`` values -> {key: value}, the config the user says the broker runs with:
    each is ``key=value`` or a broker.conf style file of such lines (``#`` comments and blank
    lines ignored); later ones win. A key the model knows must have a value it can read, so a
    typo is an error rather than a silent default."""
    declared: dict[str, str] = {}
    for item in items:
        path = Path(item)
        if "=" not in item or path.is_file():
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except OSError as exc:
                raise UsageError(f"--broker-config {item!r}: neither key=value nor a readable file ({exc})") from None
            where = str(path)
        else:
            lines, where = [item], "--broker-config"
        for number, line in enumerate(lines, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            key, equals, value = text.partition("=")
            key, value = key.strip(), value.strip()
            if not equals or not key:
                raise UsageError(f"{where}:{number}: {line!r} is not key=value")
            if key in KEYS:
                try:
                    BrokerConfig().with_value(key, pulsar_config.normalise(value))
                except ModelUsageError as exc:
                    raise UsageError(f"{where}:{number}: {exc}") from None
            declared[key] = pulsar_config.normalise(value)
    return declared


def model_default(key: str) -> Optional[str]:
    """Pulsar's default of a key as the model has it (None: a key the model does not know)."""
    return BrokerConfig().to_strings(keep=frozenset(KEYS)).get(key) if key in KEYS else pulsar_config.default_of(key)


class UrlTarget(Target):
    kind = "url"
    confirms_dynamic_config = True
    launches = False  # somebody else's broker: presented --auth-token, never reconfigured for security

    def __init__(self, spec: str, name: Optional[str] = None, *, declared: Optional[dict[str, str]] = None,
                 **kwargs):
        service, admin = parse_url_spec(spec)
        host, port = parse_service_url(service)
        super().__init__(name or f"url-{host}-{port}", **kwargs)
        self.spec = spec
        self._service, self._admin = service, admin
        self._original: Optional[dict[str, str]] = None
        self.declared = {k: pulsar_config.normalise(v) for k, v in (declared or {}).items()}  # --broker-config

    def _launch(self) -> None:
        self.service_url, self.admin_url = self._service, self._admin

    def detect(self) -> None:
        super().detect()
        if self.has_admin:
            self._runtime()  # the values to put back, read before any case changes them

    def stop(self) -> None:
        # Leave somebody else's broker as we found it.
        if self._dirty and self.has_admin and not self.start_error:
            try:
                self._configure_over_rest({})
            except Exception:  # noqa: BLE001 - best effort on the way out; the run is over
                pass

    def _runtime(self) -> dict[str, str]:
        # The admin URL is the spec's, known before the target starts: the run groups cases by
        # configuration (config_group) before it starts any target.
        if self._original is None:
            self._original = {}
            if self._admin is None:
                return self._original
            rest = RestDriver(self._admin, timeout=self.timeout, credentials=self.credentials())
            try:
                response = rest.request("GET", "/admin/v2/brokers/configuration/runtime")
                if response.status_code == 200 and isinstance(response.json(), dict):
                    self._original = {k: pulsar_config.normalise(str(v)) for k, v in response.json().items()}
            except (Indefinite, ValueError):
                pass
            finally:
                rest.close()
        return self._original

    def _baseline(self, key: str) -> Optional[str]:
        return self.declared.get(key) or self._runtime().get(key) or model_default(key)

    def _configure(self, wanted: dict[str, str]) -> None:
        if not self.has_admin:  # nothing can be changed: only what it runs with will do
            differs = {key: value for key, value in wanted.items()
                       if self._baseline(key) is None or not _same_value(self._baseline(key), value)}
            if differs:
                runs = ", ".join(f"{key}={self._baseline(key)}" for key in sorted(differs))
                needs = ", ".join(f"{key}={differs[key]}" for key in sorted(differs))
                raise Unsupported("config-differs", f"{self.name} runs with {runs} (--broker-config, else Pulsar's "
                                  f"defaults) and has no admin REST API to set the case's {needs}")
            return
        fixed = pulsar_config.static_keys(wanted)
        for key, value in wanted.items():
            if key in fixed and self._baseline(key) != value:
                why = "is not dynamic in Pulsar" if not pulsar_config.is_dynamic(key) else \
                    "would be rewritten by a running Pulsar (pulsar_config.static_keys)"
                raise Unsupported("config-differs", f"{key} {why} and {self.name} has "
                                  f"{key}={self._baseline(key)}; restart it with {key}={value}")
        self._configure_over_rest({k: v for k, v in wanted.items() if k not in fixed})

    def describe(self) -> dict[str, str]:
        info = super().describe()
        if self.declared:
            info["declared_config"] = ", ".join(f"{k}={v}" for k, v in sorted(self.declared.items()))
        return info
