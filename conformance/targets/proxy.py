"""Apache Pulsar's proxy in front of its standalone: ``pulsar-proxy:PROXY_VERSION/BROKER_VERSION``.

The pair a rolling upgrade runs: the proxy of one release (``org.apache.pulsar:pulsar-proxy``,
``org.apache.pulsar.proxy.server.ProxyServiceStarter``, from its Maven jars, resolved and cached as
the broker's are: targets/maven.py with ``artifact=pulsar-proxy``) in front of a
``pulsar-standalone`` of another (or the same) release (targets/standalone.py). The harness talks
to the proxy's two ports only; its own bookkeeping (readiness, configuration) may reach the broker.

- Maven's repository may lack a module of Pulsar's that the proxy's runtime names at the proxy's
  own release while serving the proxy itself. For the modules that play no part in what a client is
  answered (``LEAF_MODULES``: the shaded etcd client, which only the etcd metadata store uses, and
  the OpenTelemetry set-up of the proxy's metrics), the same release line's module already in the
  local repository stands in (``stand_ins``); ``describe()`` names each such pin. Any other missing
  module is the TargetError Maven's resolution gives.
- The proxy reaches the broker by URL (``brokerServiceURL``, ``brokerWebServiceURL``), with no
  metadata store (``proxy_conf``): ProxyServiceStarter then needs none. Both listen on free
  loopback ports chosen per start, the proxy's configuration in the broker's private data folder.
- The launch of the proxy is a pure ``ProxyPlan`` (``proxy_plan``, unit-tested): java with
  ``bin/pulsar``'s options, the classpath in an argument file, ``-c <proxy.conf>``.
- One start-up at a time (conformance/capacity.py ``machine().startup()``, taken once by
  ``Target.start`` for both): the broker first, ready as the standalone target judges it, then the
  proxy, ready when its binary port accepts a connection and GET /admin/v2/clusters through its web
  port answers the broker's cluster list (``proxy_ready``). Each within its own bound; a JVM that
  exits first, or is not ready in time, is a TargetError with its last lines of output.
- Detection (targets/base.py) is made through the proxy: the binary version is the proxy's own
  CONNECTED, the REST one the broker's, answered through the proxy's web port; ``version`` joins
  them as ``<broker> via proxy <proxy>``, which spec/versions.py reads as a ``Proxied`` release, so
  the model computes every answer for the pair (model/proxy.py) and ``conformance record`` keeps
  the pair's observations apart from the bare release's.
- Configuration per case goes to the broker, as on the standalone target: dynamic keys over the
  broker's admin API, confirmed in its runtime configuration; a different non-dynamic key restarts
  the broker, and with it the proxy (the broker's ports change). A run with authentication or TLS,
  or a case that turns authentication on, is not supported: the proxy would need its own
  credentials for the broker (``Unsupported``, never a wrong answer).
- Nothing is left behind: stop() ends the proxy's JVM, then the broker's, and removes both data
  folders (the proxy's lives in the same swept folder kind as the standalone's).
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

import httpx

from conformance.errors import TargetError, Unsupported, UsageError
from conformance.targets import class_data, maven, standalone, standalone_conf
from conformance.targets.base import Target
from conformance.targets.process import ManagedProcess, Throttle, free_ports, log_file, start_on_free_ports, tcp_ready
from spec.versions import parse_release, release_text

MAIN_CLASS = "org.apache.pulsar.proxy.server.ProxyServiceStarter"
START_TIMEOUT = 120.0
HEAP = ("-Xms64m", "-Xmx512m", "-XX:MaxDirectMemorySize=256m")
# bin/pulsar's options for every Pulsar JVM on Java 17 (targets/standalone.py), less the bookie's.
JVM_OPTIONS = tuple(option for option in standalone.JVM_OPTIONS if "bookkeeper.metadata" not in option)
SECURITY_KEYS = ("authenticationEnabled", "authorizationEnabled")
# Modules of Pulsar's on the proxy's classpath that take no part in what a client is answered:
# jetcd-core-shaded is used by pulsar-metadata's EtcdMetadataStore only (this proxy has no metadata
# store), pulsar-opentelemetry by the proxy's metrics.
LEAF_MODULES = ("jetcd-core-shaded", "pulsar-opentelemetry")


def parse_pair(text: str) -> tuple[str, str]:
    """``"4.0.8/4.0.7"`` -> ("4.0.8", "4.0.7"): the proxy's release, then the broker's."""
    proxy, slash, broker = (text or "").partition("/")
    if not slash or not proxy or not broker or "/" in broker:
        raise UsageError(f"target pulsar-proxy:{text}: expected pulsar-proxy:PROXY_VERSION/BROKER_VERSION, e.g. "
                         "pulsar-proxy:4.0.8/4.0.7 (a 4.0.8 proxy in front of a 4.0.7 standalone)")
    try:
        return maven.check_version(proxy), maven.check_version(broker)
    except UsageError as exc:
        raise UsageError(f"target pulsar-proxy:{text}: {exc}") from None


def proxy_conf(*, service_port: int, web_port: int, broker_service_url: str, broker_web_url: str) -> dict[str, str]:
    """The proxy's whole configuration: loopback ports, the broker by URL, no metadata store, no auth."""
    return {
        "bindAddress": "127.0.0.1",
        "advertisedAddress": "127.0.0.1",
        "servicePort": str(service_port),
        "webServicePort": str(web_port),
        "brokerServiceURL": broker_service_url,
        "brokerWebServiceURL": broker_web_url,
        "metadataStoreUrl": "",
        "configurationMetadataStoreUrl": "",
        "clusterName": standalone_conf.CLUSTER,
        "authenticationEnabled": "false",
        "authorizationEnabled": "false",
        # A client's own connection through the proxy names the broker's port, chosen per start; the
        # default allows 6650 and 6651 only (ProxyConfiguration#brokerProxyAllowedTargetPorts).
        "brokerProxyAllowedTargetPorts": "*",
    }


@dataclass(frozen=True)
class ProxyPlan:
    version: str
    argv: tuple[str, ...]
    config: Mapping[str, str]
    config_file: Path
    argfile: Path
    service_port: int
    web_port: int

    @property
    def service_url(self) -> str:
        return f"pulsar://127.0.0.1:{self.service_port}"

    @property
    def admin_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"


def proxy_plan(version: str, *, java: str, data_dir: Path, service_port: int, web_port: int,
               broker_service_url: str, broker_web_url: str, start_options: tuple[str, ...] = ()) -> ProxyPlan:
    """What to run for Apache Pulsar ``version``'s proxy in front of the broker at those URLs, with
    the JVM's ``start_options`` (targets/class_data.py)."""
    config = proxy_conf(service_port=service_port, web_port=web_port, broker_service_url=broker_service_url,
                        broker_web_url=broker_web_url)
    config_file = data_dir / "proxy.conf"
    argfile = data_dir / "proxy-classpath.args"
    argv = (java, *HEAP, *JVM_OPTIONS, *start_options, f"-Djava.io.tmpdir={data_dir / 'tmp'}", f"@{argfile}",
            MAIN_CLASS, "-c", str(config_file))
    return ProxyPlan(version, argv, config, config_file, argfile, service_port, web_port)


class PulsarProxyTarget(Target):
    kind = "pulsar-proxy"
    confirms_dynamic_config = True
    max_jobs = 8
    case_weight = 2  # two JVMs, but the proxy's share of a case is small beside the broker's

    def __init__(self, proxy_version: str, broker_version: str, name: Optional[str] = None, *,
                 start_timeout: float = START_TIMEOUT, cache: Optional[Path] = None, java: Optional[str] = None,
                 maven_executable: Optional[str] = None, **kwargs):
        self.proxy_version = maven.check_version(proxy_version)
        self.broker_version = maven.check_version(broker_version)
        super().__init__(name or f"pulsar-proxy-{self.proxy_version}-on-{self.broker_version}",
                         start_timeout=start_timeout, **kwargs)
        self.cache = cache
        self.maven_executable = maven_executable
        self.java = java
        self.static: dict[str, str] = {}
        self.broker = standalone.PulsarStandaloneTarget(
            self.broker_version, f"{self.name}-broker", cache=cache, java=java, maven_executable=maven_executable,
            timeout=self.timeout, log_dir=self.log_dir)
        self.classpath: Optional[maven.Classpath] = None
        self.pins: dict[str, str] = {}  # LEAF_MODULES at another release than the proxy's (stand_ins)
        self.plan: Optional[ProxyPlan] = None
        self.process: Optional[ManagedProcess] = None
        self.class_data: Optional[class_data.ClassData] = None
        self.data_dir: Optional[Path] = None
        self.start_seconds: list[float] = []  # the proxy's, from its launch to ready
        self.peak_rss: list[float] = []
        self._ready_checks = Throttle()

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.proxy_version}/{self.broker_version}"

    @property
    def version(self) -> Optional[str]:
        """``<broker> via proxy <proxy>`` from what each answered (the REST version is the broker's,
        through the proxy's web port; CONNECTED is the proxy's own)."""
        broker = parse_release(self.versions.get("rest") or self.broker.version)
        proxy = parse_release(self.versions.get("binary"))
        if broker is None or proxy is None:
            return self.versions.get("rest") or self.versions.get("binary")
        return f"{release_text(broker)} via proxy {release_text(proxy)}"

    # -- lifecycle ---------------------------------------------------------------------------

    def _launch(self) -> None:
        if self.security.secure:
            raise TargetError(f"{self.spec} runs without authentication or TLS: the proxy would need credentials "
                              "of its own for the broker; run a secure run on pulsar-standalone instead")
        if self.java is None:
            self.java = standalone.find_java()
        self.broker.java = self.java
        self.broker.static = dict(self.static)
        self.broker._dirty.clear()  # a new broker starts from its defaults
        self.broker._launch()
        self.broker.detect()
        if self.classpath is None:
            self.classpath, self.pins = resolve_proxy(self.proxy_version, cache=self.cache,
                                                      maven_executable=self.maven_executable)
        start_on_free_ports(self._start_proxy)

    def _start_proxy(self) -> None:
        service_port, web_port = free_ports(2)
        data_dir = standalone.new_data_dir()
        standalone._DATA_DIRS.add(data_dir)
        self.data_dir = data_dir
        if self.class_data is None:
            self.class_data = class_data.ClassData(self.classpath.file.stem, self.java, self.classpath.text(),
                                                   (*HEAP, *JVM_OPTIONS))
        plan = proxy_plan(self.proxy_version, java=self.java, data_dir=data_dir, service_port=service_port,
                          web_port=web_port, broker_service_url=self.broker.service_url,
                          broker_web_url=self.broker.admin_url, start_options=self.class_data.options())
        self.plan = plan
        (data_dir / "tmp").mkdir(exist_ok=True)
        plan.config_file.write_text(standalone_conf.render(plan.config))
        plan.argfile.write_text(f"-cp\n{self.classpath.text()}\n")
        log = log_file(self.log_dir, f"{self.log_name}-proxy",
                       f"{self.spec}: proxy in front of {self.broker.service_url}")
        self.process = ManagedProcess(list(plan.argv), name=f"Apache Pulsar {self.proxy_version} proxy",
                                      cwd=str(data_dir), log_path=log)
        started = time.monotonic()
        client = httpx.Client(timeout=2.0)
        try:
            self.process.start(lambda lines: self._ready(client, plan), self.start_timeout)
        except TargetError as exc:
            self._discard_proxy()
            raise TargetError(f"{self.spec}: {exc}") from exc
        finally:
            client.close()
        self.start_seconds.append(round(time.monotonic() - started, 2))
        self.service_url, self.admin_url = plan.service_url, plan.admin_url
        self.generation += 1

    def _ready(self, client: httpx.Client, plan: ProxyPlan):
        if not self._ready_checks.due():
            return None
        return True if proxy_ready(client, plan) else None

    def stop(self) -> None:
        self._discard_proxy()
        self.broker.stop()

    def _discard_proxy(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            if process.pid is not None and process.alive():
                rss = standalone.peak_rss_mb(process.pid)
                if rss is not None:
                    self.peak_rss.append(rss)
            if self.class_data is not None:
                self.class_data.stop(process)
            else:
                process.kill()
        folder, self.data_dir = self.data_dir, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
            standalone._DATA_DIRS.discard(folder)

    def check_alive(self) -> Optional[str]:
        process = self.process
        if process is not None and not process.alive():
            code = process.popen.returncode if process.popen else None
            return f"the {self.spec} proxy JVM exited with code {code} during the run: {process.last_line()}"
        return self.broker.check_alive()

    # -- configuration: the broker's, as on pulsar-standalone ----------------------------------

    def _configure(self, wanted: dict[str, str]) -> None:
        turned_on = [key for key in SECURITY_KEYS if wanted.get(key) == "true"]
        if turned_on:
            raise Unsupported("config-differs", f"{self.spec} runs its proxy without authentication; the case needs "
                                                f"{', '.join(f'{key}=true' for key in turned_on)} (run it on "
                                                "pulsar-standalone)")
        self._configure_by_restart(wanted, same=lambda a, b: self._without_defaults(a) == self._without_defaults(b))

    def _configure_over_rest(self, wanted: dict[str, str]) -> None:
        """Dynamic keys over the broker's own admin API, confirmed in its runtime configuration."""
        self.broker._configure_over_rest(wanted)

    def note_config_change(self, key: str, value: str) -> None:
        self.broker.note_config_change(key, value)

    def describe(self) -> dict[str, str]:
        info = super().describe()
        info["release"] = f"{self.broker_version} via proxy {self.proxy_version}"
        info["proxy_release"] = self.proxy_version
        info["broker_release"] = self.broker_version
        info["launch"] = (f"{maven.GROUP}:{maven.PROXY_ARTIFACT}:{self.proxy_version} ({MAIN_CLASS}) in front of "
                          f"{maven.GROUP}:{maven.BROKER_ARTIFACT}:{self.broker_version} ({standalone.MAIN_CLASS})")
        info["broker_service_url"] = self.broker.service_url or ""
        if self.classpath is not None:
            info["proxy_jars"] = str(len(self.classpath.jars))
            info["proxy_resolve_s"] = f"{self.classpath.resolved_s:.1f}"
        if self.pins:
            info["proxy_pins"] = ", ".join(f"{module} {pin}" for module, pin in sorted(self.pins.items()))
        if self.start_seconds:
            info["proxy_start_s"] = ", ".join(f"{s:.1f}" for s in self.start_seconds)
        if self.broker.start_seconds:
            info["broker_start_s"] = ", ".join(f"{s:.1f}" for s in self.broker.start_seconds)
        if self.peak_rss:
            info["proxy_peak_rss_mb"] = f"{max(self.peak_rss):.0f}"
        if self.broker.peak_rss:
            info["broker_peak_rss_mb"] = f"{max(self.broker.peak_rss):.0f}"
        if self.static:
            info["config"] = ", ".join(f"{k}={v}" for k, v in sorted(self.static.items()))
        return info


def resolve_proxy(version: str, *, cache: Optional[Path] = None,
                  maven_executable: Optional[str] = None) -> tuple[maven.Classpath, dict[str, str]]:
    """The proxy's classpath, and the LEAF_MODULES pinned to another release where Maven's repository
    lacks them at ``version`` (a classpath resolved so before is reused without asking Maven)."""
    cache = cache or maven.cache_dir()
    for file in sorted((cache / "classpaths").glob(f"{maven.PROXY_ARTIFACT}-{version}+*.txt")):
        pins = dict(part.rsplit("-", 1) for part in file.stem.split("+")[1:])
        if set(pins) <= set(LEAF_MODULES) and maven.read_classpath(file, version, maven.PROXY_ARTIFACT):
            return maven.resolve(version, cache=cache, maven=maven_executable, artifact=maven.PROXY_ARTIFACT,
                                 pins=pins), pins
    try:
        return maven.resolve(version, cache=cache, maven=maven_executable, artifact=maven.PROXY_ARTIFACT), {}
    except TargetError as exc:
        # maven.resolution_failure names what the repository lacks by coordinates
        modules = set(re.findall(rf"{re.escape(maven.GROUP)}:([\w.\-]+):jar:{re.escape(version)}\b", str(exc)))
        if not modules or not modules <= set(LEAF_MODULES):
            raise
        # Maven may name only the first it missed: every leaf module stands in where one had to
        pins = stand_ins(version, list(LEAF_MODULES), cache)
        if not modules <= set(pins):
            raise TargetError(f"{exc}; no release of {', '.join(sorted(modules - set(pins)))} of the "
                              f"{'.'.join(version.split('.')[:2])} line is in the local repository to stand in: "
                              f"run pulsar-standalone of that line once, then this target") from None
        return maven.resolve(version, cache=cache, maven=maven_executable, artifact=maven.PROXY_ARTIFACT,
                             pins=pins), pins


def stand_ins(version: str, modules: list[str], cache: Path) -> dict[str, str]:
    """For each module, the newest release of ``version``'s line (same major.minor) whose jar the local
    repository holds: the module as that line ships it, without asking Maven's repository for it."""
    line = tuple(version.split(".")[:2])
    pins = {}
    for module in modules:
        found = []
        for folder in (cache / "m2" / maven.GROUP.replace(".", "/") / module).glob("*"):
            parts = folder.name.split(".")
            if len(parts) == 3 and all(p.isdigit() for p in parts) and tuple(parts[:2]) == line and \
                    (folder / f"{module}-{folder.name}.jar").is_file():
                found.append(tuple(map(int, parts)))
        if found:
            pins[module] = ".".join(map(str, max(found)))
    return pins


def proxy_ready(client: httpx.Client, plan: ProxyPlan) -> bool:
    """The proxy's binary port accepts a connection and its web port relays the broker's cluster list."""
    if not tcp_ready("127.0.0.1", plan.service_port):
        return False
    try:
        response = client.get(plan.admin_url + standalone_conf.READY_CHECKS[0].path)
    except httpx.HTTPError:
        return False
    return standalone_conf.READY_CHECKS[0].problem(response.status_code, response.text) is None
