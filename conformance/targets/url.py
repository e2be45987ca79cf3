"""An already running broker, named by URL: ``url:pulsar://H:P[,http://H:Q]``.

Rule 1: the harness neither starts nor stops it; start() only connects and detects.
Rule 2: broker config is set through the dynamic-config REST call when there is an admin API.
        Before the first change the broker's runtime values are read
        (GET /admin/v2/brokers/configuration/runtime) so stop() can put them back: this is
        somebody else's broker. A non-dynamic key can only be "set" if it already has the
        wanted value; otherwise, and without an admin API, the case is Unsupported. It is a real
        Pulsar, so a dynamic key counts as set once its runtime config shows it (base Rule 3).
Rule 3: detection is the base class's, the same as for launched targets: version from CONNECTED
        and GET /admin/v2/brokers/version, admin API, feature flag 5, era from the version.
"""

from __future__ import annotations

from typing import Optional

from conformance.drivers.rest import RestDriver
from conformance.drivers.wire import parse_service_url
from conformance.errors import Indefinite, Unsupported, UsageError
from conformance.targets import config as pulsar_config
from conformance.targets.base import Target


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


class UrlTarget(Target):
    kind = "url"
    confirms_dynamic_config = True
    launches = False  # somebody else's broker: presented --auth-token, never reconfigured for security

    def __init__(self, spec: str, name: Optional[str] = None, **kwargs):
        service, admin = parse_url_spec(spec)
        host, port = parse_service_url(service)
        super().__init__(name or f"url-{host}-{port}", **kwargs)
        self.spec = spec
        self._service, self._admin = service, admin
        self._original: Optional[dict[str, str]] = None

    def _launch(self) -> None:
        self.service_url, self.admin_url = self._service, self._admin

    def detect(self) -> None:
        super().detect()
        if self.has_admin:
            self._runtime()  # Rule 2: the values to put back, read before any case changes them

    def stop(self) -> None:
        # Rule 2: leave somebody else's broker as we found it.
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
        return self._runtime().get(key) or pulsar_config.default_of(key)

    def _configure(self, wanted: dict[str, str]) -> None:
        if wanted and not self.has_admin:
            raise Unsupported(f"{self.name} has no admin REST API, so broker config {wanted} cannot be set")
        fixed = pulsar_config.static_keys(wanted)
        for key, value in wanted.items():
            if key in fixed and self._baseline(key) != value:
                why = "is not dynamic in Pulsar" if not pulsar_config.is_dynamic(key) else \
                    "would be rewritten by a running Pulsar (conformance/targets/config.py Rule 3)"
                raise Unsupported(f"{key} {why} and {self.name} has "
                                  f"{key}={self._baseline(key)}; restart it with {key}={value}")
        self._configure_over_rest({k: v for k, v in wanted.items() if k not in fixed})
