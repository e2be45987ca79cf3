"""Target: one Pulsar-speaking broker the harness runs cases against.

A target is started once per run, configured per case, and stopped at the end. It knows its
URLs, and it *detects* (never assumes) what it is (``detect``):

- ``version`` is read from the broker: CONNECTED.server_version through the wire driver and,
  when there is an admin API, GET /admin/v2/brokers/version (the REST text wins).
- ``has_admin`` is true only if the admin REST API answered. ``release`` is the Apache Pulsar
  release the *version* names (None for other implementations, which are held to the current
  spec), and every expectation is computed for it (model/releases.py); ``era`` follows from it
  (``era_of_version``): a release without PIP-344 is judged by PIP-344's table of the behaviour
  before it.
  Feature flag 5 is *not* used to pick the era: whether a broker advertises it is itself a spec
  row (pip344-flag-001), so a broker lacking PIP-344 fails rows instead of having them skipped.
- ``implicit_namespaces`` is detected, never declared (``_serves_uncreated_namespaces``): a
  target without an admin API (so no way to create a namespace) serves namespaces nobody created
  when a binary LOOKUP of a topic in a fresh tenant and namespace answers with a broker to
  connect to. Such a target needs no I/O for a setup step that creates a namespace (routing.py,
  ``NamespaceLedger``); a case whose namespace must be missing still runs, and the target's
  answer is judged.

Configuration: ``configure(broker_config)`` makes the broker behave as Pulsar with those
broker.conf values, or raises ``Unsupported(reason)``. Keys a previous case (or a
SetBrokerConfig step, via ``note_config_change``) changed and this case does not set are put back
first, so no case sees its predecessor's config. A real Pulsar applies a dynamic key
asynchronously (the REST call stores it in the metadata store; the broker's listener applies it
later), so targets with ``confirms_dynamic_config`` then poll GET
/admin/v2/brokers/configuration/runtime, within ``timeout``, until every key it reports has the
value set; a key it does not report is taken as set (``_await_runtime``).

Lifecycle:

- A target that cannot start keeps ``start_error``; the runner reports its cases target-error
  with "target could not start: ...", never passed nor unsupported.
- ``generation`` increases whenever the broker process is replaced, so drivers holding its old
  address know to reconnect.
- A target that started and then stops answering a fresh CONNECT, or answers it with what no
  Pulsar broker sends (``unresponsive``), is down from then on: the case that found it and every
  later one are target-error, not indefinite or failed.

Security (conformance/security.py): a target presents, to its own detection and config calls and
to every driver, the credentials ``credentials()`` gives for the configuration it runs with; a
target the harness starts (``launches``) runs a secure run's keys under each case's own
(``RunSecurity.overlay``).
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Optional

from conformance import capacity, timing
from conformance.drivers.base import DEFAULT_TIMEOUT
from conformance.drivers.rest import RestDriver, error_reason
from conformance.drivers.wire import WireDriver
from conformance.errors import Indefinite, ProtocolViolation, TargetError, Unsupported
from conformance.security import Credentials, RunSecurity
from conformance.targets import config as pulsar_config
from model import ops, releases
from model.outcomes import LookupAnswer, ServerError

# Fresh CONNECTs, each bounded by the run's timeout, that must all go unanswered before a target is
# taken to have stopped serving (Target.unresponsive).
UNRESPONSIVE_ATTEMPTS = 3

ERA_PIP344 = "pip344"
ERA_PRE_PIP344 = "pre-pip344"
FLAG5 = "supports_get_partitioned_metadata_without_auto_creation"


def _same_value(shown: str, wanted: str) -> bool:
    """A runtime-config value equals a set one (``True``/``true``; an enum's ``NON_PARTITIONED``
    is ``non-partitioned``)."""
    def canon(text: str) -> str:
        return pulsar_config.normalise(text).lower().replace("_", "-")
    return canon(shown) == canon(wanted)


def era_of_version(version: Optional[str]) -> str:
    """Which table judges a broker of this version (model/releases.py).

    Only strings shaped like an Apache Pulsar release (``4.0.7``, ``Pulsar Server3.0.2``) can be
    old; other implementations (the reference broker is 0.x, pulsar-lite has its own numbering)
    are held to the current spec.
    """
    return releases.era_of(releases.parse_release(version))


class Target:
    """Base class: detection, config bookkeeping and the lifecycle contract."""

    kind = "target"  # registry name
    # Detected at start, never declared; read by routing.NamespaceLedger.
    implicit_namespaces = False
    # True for real Pulsar brokers, which apply a dynamic key asynchronously: wait until it shows
    # in the runtime config.
    confirms_dynamic_config = False
    # How many brokers of this kind the scheduler may run side by side for one target
    # (conformance/scheduler.py, lanes); 1 for targets it cannot make more of (a URL, a container).
    max_instances = 1
    # What one instance takes of the machine while it serves cases: its share of a core and its
    # memory at its peak (conformance/capacity.py ``lanes``: at most cores / instance_cores
    # instances of a target, and no more than the memory available holds).
    instance_cores = 1.0
    instance_memory_mb = 256
    # The cores one of its starts or restarts takes while it lasts (conformance/capacity.py
    # ``startup``): a JVM's, a whole one.
    start_cores = 1.0
    # At most this many of its cases at once (None: the run's --jobs), for brokers that answer
    # slowly when many cases share the machine with them.
    max_jobs: Optional[int] = None
    # How much of the machine one of its cases takes, against the run's case units
    # (conformance/capacity.py): a JVM broker spends more of the machine per case than the reference.
    case_weight = 1
    # The spec/divergences/ file of this kind of target (conformance/divergences.py); None: decided
    # by the detected version (an Apache Pulsar release has "apache-pulsar", others none).
    divergence_profile: Optional[str] = None
    # True for targets the harness starts with a configuration of its choosing: a secure run's keys
    # go under each case's own.
    launches = True

    def __init__(self, name: Optional[str] = None, *, timeout: float = DEFAULT_TIMEOUT,
                 start_timeout: float = 30.0, log_dir: Optional[Path] = None,
                 security: Optional[RunSecurity] = None):
        self.name = name or self.kind
        self.security = security or RunSecurity()
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.log_dir = Path(log_dir) if log_dir else None
        self.service_url: Optional[str] = None
        self.admin_url: Optional[str] = None
        # The metadata store the broker uses, when the target exposes it (reference-zk:
        # zk:127.0.0.1:P/chroot) for white-box reads (drivers/metadata.py); None = not exposed.
        self.metadata_store_url: Optional[str] = None
        self.has_admin = False
        self.versions: dict[str, str] = {}
        self.era: Optional[str] = None
        # The Apache Pulsar release the detected version names; None for other implementations
        # (model/releases.py NEWEST). Expectations are computed for it.
        self.release: Optional[tuple[int, int, int]] = None
        self.advertises_flag5 = False
        # FeatureFlags names CONNECTED set to true (detect); None until detected. Cases whose row
        # lists a protocol-feature-flag feature need it (conformance/capabilities.py).
        self.advertised_flags: Optional[frozenset[str]] = None
        self.generation = 0
        self.started = False
        self.start_error: Optional[str] = None
        self._dirty: dict[str, str] = {}  # key -> value we set away from the baseline

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Launch or reach the broker, then detect version and capabilities (bounded)."""
        if self.launches and self.security.secure and getattr(self, "static", None) == {}:
            # started secured at once, so the first case does not restart it
            self.static = {key: pulsar_config.normalise(value) for key, value in self.security.overlay({}).items()
                           if not pulsar_config.is_dynamic(key)}
        try:
            with capacity.machine().startup(self.start_cores), timing.timed(timing.START_UP, self.name):
                self._launch()
                self.detect()
            self.started = True
        except Exception as exc:
            self.start_error = str(exc) or type(exc).__name__
            self.stop()
            raise TargetError(self.start_error) from exc

    def _launch(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        """Stop whatever start() launched; safe to call twice and after a failed start."""

    def spawn(self, index: int) -> "Target":
        """A fresh, unstarted broker of the same kind and settings, the ``index``-th extra one
        (the scheduler's lanes); only kinds with ``max_instances`` > 1 can."""
        raise NotImplementedError(f"{self.kind} cannot run more than one instance")

    @property
    def log_name(self) -> str:
        """The file name (without .log) this instance's process output goes to."""
        return self.name + self.instance_label

    instance_label = ""

    def check_alive(self) -> Optional[str]:
        """Why a started target no longer serves (its process exited), or None; targets that
        launch a process answer it."""
        return None

    def unresponsive(self) -> Optional[str]:
        """Why the target no longer answers a fresh CONNECT with a Pulsar answer, or None when it
        does; a refusal is an answer. Asked after a case ends indefinite or with a protocol
        violation. A busy machine can keep a live broker from answering one CONNECT in time, and
        calling it gone would end every later case of the run, so it is gone only when each of
        ``UNRESPONSIVE_ATTEMPTS`` fresh connections, each given the run's whole bound, went
        unanswered (or when it answers with bytes that are not Pulsar's)."""
        why = None
        for attempt in range(UNRESPONSIVE_ATTEMPTS):
            if attempt:
                time.sleep(1.0)
            wire = WireDriver(self.service_url, timeout=self.timeout, credentials=self.credentials())
            try:
                wire.handshake()
                return None
            except Indefinite as exc:
                why = f"no CONNECTED from {self.service_url} at {UNRESPONSIVE_ATTEMPTS} attempts: {exc.reason}"
            except ProtocolViolation as exc:
                return f"{self.service_url} answers CONNECT with what no Pulsar broker sends: {exc.reason}"
            finally:
                wire.close()
        return why

    def credentials(self) -> Credentials:
        """What drivers present to this target as it runs now (conformance/security.py)."""
        return self.security.credentials(getattr(self, "static", None), launched=self.launches)

    def config_group(self, broker_config: dict[str, str]) -> tuple:
        """The non-dynamic keys of ``broker_config`` that differ from Pulsar's defaults: cases with
        equal groups need no restart between them, so each distinct one starts once per run."""
        if self.launches:  # as configure() will run it, a secure run's keys included
            broker_config = self.security.overlay(broker_config)
        fixed = pulsar_config.static_keys(broker_config)
        static = {k: pulsar_config.normalise(v) for k, v in broker_config.items() if k in fixed}
        return tuple(sorted(self._without_defaults(static).items()))

    @property
    def version(self) -> Optional[str]:
        return self.versions.get("rest") or self.versions.get("binary")

    # -- detection: version, admin API, release and era --------------------------------------

    def detect(self) -> None:
        wire = WireDriver(self.service_url, timeout=self.timeout, credentials=self.credentials())
        try:
            answer = wire.handshake()
        except Indefinite as exc:
            raise TargetError(f"{self.name}: no CONNECTED from {self.service_url}: {exc.reason}") from exc
        finally:
            wire.close()
        if isinstance(answer, ServerError):
            raise TargetError(f"{self.name}: CONNECT refused with {answer.error}: {answer.message}")
        self.versions["binary"] = answer.server_version
        flags = answer.feature_flags if answer.has("feature_flags") else None
        self.advertises_flag5 = bool(flags is not None and getattr(flags, FLAG5))
        self.advertised_flags = frozenset(field.name for field, value in flags.ListFields() if value is True) \
            if flags is not None else frozenset()
        self.has_admin = False
        if self.admin_url:
            rest = RestDriver(self.admin_url, timeout=self.timeout, credentials=self.credentials())
            try:
                response = rest.request("GET", "/admin/v2/brokers/version")
                self.has_admin = True  # any HTTP answer means the admin API is there
                if response.status_code == 200:
                    self.versions["rest"] = rest.broker_version()
            except Indefinite:
                self.has_admin = False
            finally:
                rest.close()

        self.release = releases.parse_release(self.version)
        self.era = releases.era_of(self.release)
        self.implicit_namespaces = not self.has_admin and self._serves_uncreated_namespaces()

    def _serves_uncreated_namespaces(self) -> bool:
        """Whether a LOOKUP in a tenant and namespace nobody created answers Connect or Redirect."""
        probe = f"persistent://probe-{secrets.token_hex(4)}/ns/t"
        wire = WireDriver(self.service_url, timeout=self.timeout, credentials=self.credentials())
        try:
            return isinstance(wire.perform(ops.Lookup(probe, "binary")), LookupAnswer)
        except (Indefinite, ProtocolViolation, Unsupported):
            return False
        finally:
            wire.close()

    def describe(self) -> dict[str, str]:
        """What environment.properties and the run summary show for this target."""
        info = {"kind": self.kind, "service_url": self.service_url or "", "admin_url": self.admin_url or "",
                "version": self.version or "unknown", "era": self.era or "unknown",
                "admin_api": "yes" if self.has_admin else "no",
                "flag5": "yes" if self.advertises_flag5 else "no",
                "implicit_namespaces": "yes" if self.implicit_namespaces else "no"}
        if self.start_error:
            info["start_error"] = self.start_error.splitlines()[0]
        return info

    # -- configuration: each case's broker.conf values, the last case's put back --------------

    def configure(self, broker_config: dict[str, str]) -> None:
        """Make the broker have ``broker_config`` (Pulsar key names) or raise Unsupported."""
        if self.start_error:
            raise Unsupported("not-run", f"target could not start: {self.start_error}")
        if self.launches:  # a secure run's keys under the case's own
            broker_config = self.security.overlay(broker_config)
        wanted = {key: pulsar_config.normalise(value) for key, value in broker_config.items()}
        self._configure(wanted)

    def _configure(self, wanted: dict[str, str]) -> None:
        self._configure_over_rest(wanted)

    def note_config_change(self, key: str, value: str) -> None:
        """A SetBrokerConfig step changed ``key``; the next configure() puts it back."""
        self._dirty[key] = pulsar_config.normalise(value)

    def _baseline(self, key: str) -> Optional[str]:
        """The value a key goes back to when no case sets it (Pulsar's default)."""
        return pulsar_config.default_of(key)

    def _relaunch(self, settings) -> None:
        """Launch the stopped broker again with new static ``settings``; a failure is this target's
        start error from then on (its cases become target-error with it)."""
        self.versions.clear()
        try:
            keys = [f"{key}={value}" for key, value in sorted(dict(settings).items())] or ["defaults"]
            with capacity.machine().startup(self.start_cores), timing.timed(timing.RESTART, self.name, *keys):
                self._launch()
                self.detect()
        except Exception as exc:
            self.start_error = f"restart with {settings} failed: {exc}"
            self.stop()
            raise

    def _without_defaults(self, values: dict[str, str]) -> dict[str, str]:
        """``values`` less the keys set to their baseline: what a process started with ``values``
        does differently from one started with none."""
        return {k: v for k, v in values.items() if pulsar_config.normalise(v) != self._baseline(k)}

    def _stop_for_restart(self) -> None:
        """What a restart for another non-dynamic configuration stops before ``_relaunch``:
        everything, as a rule; a target whose process can serve afresh in place keeps it."""
        self.stop()

    def _configure_by_restart(self, wanted: dict[str, str], same=lambda a, b: a == b) -> None:
        """For launched targets: non-dynamic keys, and dynamic values a running broker would rewrite
        (pulsar_config.static_keys), need a new process (which starts from the defaults, so nothing
        dynamic is dirty); the other dynamic keys then go over REST."""
        fixed = pulsar_config.static_keys(wanted)
        static = {k: v for k, v in wanted.items() if k in fixed}
        if not same(static, getattr(self, "static", {})):
            self._stop_for_restart()
            self.static = static
            self._dirty.clear()
            self._relaunch(static)
        self._configure_over_rest({k: v for k, v in wanted.items() if k not in fixed})

    def _configure_over_rest(self, wanted: dict[str, str]) -> None:
        """Dynamic keys through POST /admin/v2/brokers/configuration/{key}/{value}."""
        if not wanted and not self._dirty:
            return
        if not self.has_admin:
            raise Unsupported("config-differs", f"{self.name} has no admin REST API to set broker config {wanted}")
        rest = RestDriver(self.admin_url, timeout=self.timeout, credentials=self.credentials())
        posted: dict[str, str] = {}  # key -> the value the runtime config must come to show
        try:
            for key in [k for k in self._dirty if k not in wanted]:
                baseline = self._baseline(key)
                if baseline is None:
                    response = rest.request("DELETE", f"/admin/v2/brokers/configuration/{key}")
                else:
                    response = rest.request("POST", f"/admin/v2/brokers/configuration/{key}/{baseline}")
                if not 200 <= response.status_code < 300:
                    raise TargetError(f"{self.name}: cannot reset {key} after the previous case: "
                                      f"{response.status_code} {error_reason(response)}")
                del self._dirty[key]
                if baseline is not None:
                    posted[key] = baseline
            for key, value in sorted(wanted.items(), key=lambda item: pulsar_config.post_order(item[0])):
                # Sent even when it equals the baseline: cheap, and it does not trust the target
                # to start with Pulsar's defaults.
                response = rest.request("POST", f"/admin/v2/brokers/configuration/{key}/{value}")
                if not 200 <= response.status_code < 300:
                    raise Unsupported("config-refused", f"{self.name} refused broker config {key}={value}: "
                                      f"{response.status_code} {error_reason(response)}")
                self._dirty[key] = value
                posted[key] = value
            if self.confirms_dynamic_config and posted:
                self._await_runtime(rest, posted)
        finally:
            rest.close()

    def _await_runtime(self, rest: RestDriver, posted: dict[str, str]) -> None:
        """Poll the runtime config until it shows every posted value, or Indefinite:
        a real Pulsar applies dynamic keys asynchronously."""
        deadline = time.monotonic() + self.timeout
        while True:
            response = rest.request("GET", "/admin/v2/brokers/configuration/runtime")
            try:
                runtime = response.json() if response.status_code == 200 else None
            except ValueError:
                runtime = None
            if not isinstance(runtime, dict):
                return  # the broker does not show its runtime config: nothing to wait for
            pending = {key: str(runtime[key]) for key, value in posted.items()
                       if key in runtime and not _same_value(str(runtime[key]), value)}
            if not pending:
                return
            if time.monotonic() >= deadline:
                shown = ", ".join(f"{key}={pending[key]} (set to {posted[key]})" for key in sorted(pending))
                raise Indefinite(f"{self.name} accepted the dynamic config but its runtime config still "
                                 f"shows {shown} after {self.timeout:g} s")
            time.sleep(0.1)
