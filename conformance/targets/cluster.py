"""Apache Pulsar as a cluster: ``pulsar-cluster:VERSION`` runs ZooKeeper, one bookie and two brokers.

Every process is a JVM of the release's own Maven jars (targets/maven.py: the broker's runtime
classpath holds ZooKeeper's and BookKeeper's server classes too), started by the harness on free
127.0.0.1 ports with one private data folder, in this order, each ready before the next starts:

1. ZooKeeper (``org.apache.zookeeper.server.ZooKeeperServerMain`` with a generated ``zoo.cfg``):
   ready when its ``srvr`` four-letter word shows a Mode (it then serves; ``ruok`` says imok
   earlier).
2. The cluster's metadata (``org.apache.pulsar.PulsarClusterMetadataSetup``, as Pulsar's
   ``bin/pulsar initialize-cluster-metadata`` runs it): the cluster, tenant ``public``, namespace
   ``public/default`` and BookKeeper's ledger root in ZooKeeper; done when it exits 0.
3. One bookie (``org.apache.bookkeeper.server.Main --conf bookkeeper.conf``, as ``bin/pulsar
   bookie`` runs it): ready when its registration ``/ledgers/available/127.0.0.1:<port>`` shows in
   ZooKeeper's ``dump`` (a writable bookie; a read-only one registers under ``readonly/``).
4. Two brokers (``org.apache.pulsar.PulsarBrokerStarter --broker-conf broker.conf``), one after the
   other: each ready when its binary port accepts a connection and its admin API answers as a
   standalone's does (standalone_conf.READY_CHECKS); the cluster is ready when the first broker's
   GET /admin/v2/brokers/<cluster> lists both (each registered in the load manager, so lookups
   may assign bundles to either) and GET /admin/v2/brokers/leaderBroker names one of them
   (``leader_is_ours``: after a restart the stopped leader's node outlives it for a while).

Each process has its own bound; one that exits first, or is not ready in time, is a TargetError
with its last lines of output, and everything started so far is stopped.

- The brokers' configuration (``cluster_broker_conf``) is the standalone target's
  (standalone_conf.harness_defaults: quorums of 1, loopback addresses, stats every second, Pulsar's
  defaults for the modelled keys, then a case's keys) with what a cluster needs instead
  (``CLUSTER_CONF``): the ZooKeeper metadata stores, and ``conf/broker.conf``'s load manager,
  ModularLoadManagerImpl, which places each bundle on the least loaded broker, as a cluster does
  (a standalone's NoopLoadManager always names the broker asked). Its load shedding stays off,
  so a bundle does not move between brokers during a case. The cluster is named as the
  standalone's (``standalone``), the name the model's initial state gives its cluster
  (model/state.py).
- ``service_urls`` and ``admin_urls`` list both brokers (``service_url``/``admin_url`` are the
  first's, which every case talks to); the drivers then follow lookups and 307s to each topic's
  owner, and the operations that ask every broker reach both (targets/reference_cluster.py
  ``attach_cluster``).
- Configuration per case: a dynamic key goes over the first broker's admin API (Pulsar keeps
  dynamic configuration cluster-wide in the metadata store) and is confirmed in the runtime
  configuration of BOTH brokers (``_configure_over_rest``); a different non-dynamic key restarts
  the two brokers with a configuration file that has it, ZooKeeper and the bookie staying up
  (``_configure``). A stored dynamic value overrides the file, and the store outlives the brokers,
  so every dynamic value set since the brokers started is deleted from it first (``_clear_stored``).
  A case that turns a topic domain off (``enablePersistentTopics`` or ``enableNonPersistentTopics``
  false) is unsupported here: ModularLoadManagerImpl then finds no broker to own a topic of that
  domain, and the model answers for a standalone's load manager (docs/cluster.md).
- Nothing is left behind: stop() ends the brokers, the bookie and ZooKeeper (process.py kills
  each if the harness dies) and removes the data folder, which is of the standalone target's
  kind, so the next start of either removes one a killed harness abandoned (``sweep_abandoned``).
- describe() gives the release, every broker, and each process's seconds to ready.
- Authentication: a case with ``authenticationEnabled=true`` starts the brokers as the standalone
  target does (security.py ``launch_config``: the run's key in each broker's configuration file,
  which only its owner may read, and the brokers' own client credentials, with which they ask each
  other), and the readiness checks present the harness's token. A ``--secure``/``--tls`` run is
  not supported: the bookie and ZooKeeper would need TLS of their own; run it on pulsar-standalone.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

import httpx

from conformance.drivers.rest import RestDriver, error_reason
from conformance.errors import TargetError, Unsupported
from conformance.targets import config as pulsar_config
from conformance.targets import maven, standalone, standalone_conf
from conformance.targets.base import Target
from conformance.targets.process import ManagedProcess, Throttle, free_ports, log_file, start_on_free_ports, tcp_ready
from conformance.targets.zookeeper import four_letter_word

BROKERS = 2
CLUSTER = standalone_conf.CLUSTER
ZOOKEEPER_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
SETUP_CLASS = "org.apache.pulsar.PulsarClusterMetadataSetup"
BOOKIE_CLASS = "org.apache.bookkeeper.server.Main"
BROKER_CLASS = "org.apache.pulsar.PulsarBrokerStarter"
START_TIMEOUT = 180.0  # each process's own bound
STOP_TIMEOUT = 3.0
# Heaps: bin/pulsar's small ones for ZooKeeper and the bookie; the brokers half the standalone's,
# two of them sharing the machine.
HEAPS = {
    "zookeeper": ("-Xms32m", "-Xmx256m"),
    "setup": ("-Xms32m", "-Xmx256m"),
    "bookie": ("-Xms64m", "-Xmx384m", "-XX:MaxDirectMemorySize=256m"),
    "broker": ("-Xms128m", "-Xmx768m", "-XX:MaxDirectMemorySize=384m"),
}
FOUR_LETTER_WORDS = "ruok,srvr,dump"

# Where a cluster's broker.conf differs from the standalone target's, and why.
CLUSTER_CONF: dict[str, tuple[str, str]] = {
    "loadManagerClassName": ("org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
                             "conf/broker.conf's: bundles go to the least loaded broker"),
    "loadBalancerEnabled": ("false", "no load shedding: a bundle stays where a lookup placed it during a case"),
    "functionsWorkerEnabled": ("false", "no functions worker"),
}
# A topic domain turned off on every broker: the load manager then finds no broker for it (_configure).
DOMAIN_KEYS = ("enablePersistentTopics", "enableNonPersistentTopics")
# The standalone's keys for its in-process bookie; here the bookie has a file of its own.
BOOKIE_ONLY = ("journalSyncData", "allowLoopback", "listeningInterface", "allowEphemeralPorts")


def zookeeper_conf(data_dir: Path, port: int) -> dict[str, str]:
    return {"tickTime": "2000", "dataDir": str(data_dir / "zookeeper"), "clientPort": str(port),
            "clientPortAddress": "127.0.0.1", "maxClientCnxns": "0", "admin.enableServer": "false",
            "4lw.commands.whitelist": FOUR_LETTER_WORDS, "forceSync": "no"}


def bookie_conf(data_dir: Path, *, bookie_port: int, zookeeper_port: int) -> dict[str, str]:
    """bin/pulsar bookie's essentials: loopback, one journal and ledger folder, no HTTP server."""
    return {
        "bookiePort": str(bookie_port),
        "advertisedAddress": "127.0.0.1",
        "listeningInterface": "lo",
        "allowLoopback": "true",
        "useHostNameAsBookieID": "false",
        "metadataServiceUri": f"zk+null://127.0.0.1:{zookeeper_port}/ledgers",
        "journalDirectories": str(data_dir / "bookie" / "journal"),
        "ledgerDirectories": str(data_dir / "bookie" / "ledgers"),
        "journalSyncData": "false",
        "httpServerEnabled": "false",
        "diskUsageThreshold": "0.99",
        "diskUsageWarnThreshold": "0.99",
    }


def cluster_broker_conf(static: Mapping[str, str], *, zookeeper_port: int, broker_port: int,
                        web_port: int) -> dict[str, str]:
    """One broker's whole configuration: the standalone target's defaults, a cluster's departures,
    the case's non-dynamic keys, the metadata stores and the ports."""
    values = standalone_conf.broker_conf(static, broker_port=broker_port, web_port=web_port)
    for key in BOOKIE_ONLY:
        values.pop(key, None)
    values.update({key: value for key, (value, _why) in CLUSTER_CONF.items() if key not in static})
    store = f"zk:127.0.0.1:{zookeeper_port}"
    values.update(clusterName=CLUSTER, metadataStoreUrl=store, configurationMetadataStoreUrl=store)
    return values


# -- the plan (pure) ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Launch:
    """One process of the cluster: what it is, its command line, its configuration file."""
    role: str
    argv: tuple[str, ...]
    config_file: Optional[Path] = None
    config: Optional[Mapping[str, str]] = None


@dataclass(frozen=True)
class ClusterPlan:
    version: str
    data_dir: Path
    argfile: Path
    zookeeper_port: int
    bookie_port: int
    broker_ports: tuple[int, ...]
    web_ports: tuple[int, ...]
    zookeeper: Launch
    setup: Launch
    bookie: Launch
    brokers: tuple[Launch, ...]

    @property
    def service_urls(self) -> list[str]:
        return [f"pulsar://127.0.0.1:{port}" for port in self.broker_ports]

    @property
    def admin_urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.web_ports]


def _java(java: str, role: str, data_dir: Path, argfile: Path, main: str, *args: str) -> tuple[str, ...]:
    # Each JVM's temporary files go in the data folder, which stop() removes.
    return (java, *HEAPS[role], *standalone.JVM_OPTIONS, f"-Djava.io.tmpdir={data_dir / 'tmp'}",
            f"-Dzookeeper.4lw.commands.whitelist={FOUR_LETTER_WORDS}", "-Dzookeeper.admin.enableServer=false",
            f"@{argfile}", main, *args)


def cluster_plan(version: str, *, java: str, data_dir: Path, zookeeper_port: int, bookie_port: int,
                 broker_ports: tuple[int, ...], web_ports: tuple[int, ...],
                 static: Optional[Mapping[str, str]] = None) -> ClusterPlan:
    """What to run for a cluster of Apache Pulsar ``version`` on the ports chosen for this start."""
    argfile = data_dir / "classpath.args"
    zk_file = data_dir / "zoo.cfg"
    zookeeper = Launch("zookeeper", _java(java, "zookeeper", data_dir, argfile, ZOOKEEPER_CLASS, str(zk_file)),
                       zk_file, zookeeper_conf(data_dir, zookeeper_port))
    store = f"zk:127.0.0.1:{zookeeper_port}"
    setup = Launch("setup", _java(java, "setup", data_dir, argfile, SETUP_CLASS,
                                  "--cluster", CLUSTER, "--metadata-store", store,
                                  "--configuration-metadata-store", store,
                                  "--web-service-url", f"http://127.0.0.1:{web_ports[0]}",
                                  "--broker-service-url", f"pulsar://127.0.0.1:{broker_ports[0]}"))
    bk_file = data_dir / "bookkeeper.conf"
    bookie = Launch("bookie", _java(java, "bookie", data_dir, argfile, BOOKIE_CLASS, "--conf", str(bk_file)),
                    bk_file, bookie_conf(data_dir, bookie_port=bookie_port, zookeeper_port=zookeeper_port))
    brokers = []
    for index, (broker_port, web_port) in enumerate(zip(broker_ports, web_ports)):
        conf_file = data_dir / f"broker-{index + 1}.conf"
        brokers.append(Launch(f"broker-{index + 1}",
                              _java(java, "broker", data_dir, argfile, BROKER_CLASS, "--broker-conf", str(conf_file)),
                              conf_file, cluster_broker_conf(static or {}, zookeeper_port=zookeeper_port,
                                                             broker_port=broker_port, web_port=web_port)))
    return ClusterPlan(version, data_dir, argfile, zookeeper_port, bookie_port, tuple(broker_ports),
                       tuple(web_ports), zookeeper, setup, bookie, tuple(brokers))


def bookie_registered(dump: str, port: int) -> bool:
    """Whether ZooKeeper's ``dump`` shows a writable bookie registered on ``port``."""
    return f"/ledgers/available/127.0.0.1:{port}" in dump


def brokers_listed(body: object, service_urls: list[str]) -> bool:
    """Whether GET /admin/v2/brokers/<cluster> lists every broker (``host:webPort`` ids, or the
    service URLs' ``host:port``: either names each broker once)."""
    return isinstance(body, list) and len(body) >= len(service_urls)


def leader_is_ours(leader: object, admin_urls: list[str]) -> bool:
    """Whether GET /admin/v2/brokers/leaderBroker names one of the brokers started now. After a restart
    the leader's node of the brokers stopped lives on in ZooKeeper until its session expires; until
    then no broker is the leader, and each sends a request about an unowned bundle to the other,
    neither authoritatively (NamespaceService#searchForCandidateBroker, PulsarWebResource
    #validateNamespaceBundleOwnership), so a REST request is redirected back and forth."""
    url = leader.get("serviceUrl") if isinstance(leader, dict) else None
    return isinstance(url, str) and url.rstrip("/") in {admin.rstrip("/") for admin in admin_urls}


# -- the target -----------------------------------------------------------------------------------

class PulsarClusterTarget(Target):
    kind = "pulsar-cluster"
    confirms_dynamic_config = True
    max_jobs = 8
    case_weight = 3  # two brokers, a bookie and ZooKeeper answer its cases

    def __init__(self, version: Optional[str] = None, name: Optional[str] = None, *,
                 start_timeout: float = START_TIMEOUT, cache: Optional[Path] = None, java: Optional[str] = None,
                 maven_executable: Optional[str] = None, **kwargs):
        self.pulsar_version = maven.check_version(version or standalone.DEFAULT_VERSION)
        super().__init__(name or f"pulsar-cluster-{self.pulsar_version}", start_timeout=start_timeout, **kwargs)
        self.cache = cache
        self.maven_executable = maven_executable
        self.java = java
        self.static: dict[str, str] = {}
        self.classpath: Optional[maven.Classpath] = None
        self.plan: Optional[ClusterPlan] = None
        self.data_dir: Optional[Path] = None
        self.zookeeper: Optional[ManagedProcess] = None
        self.bookie: Optional[ManagedProcess] = None
        self.brokers: list[ManagedProcess] = []
        self.service_urls: list[str] = []
        self.admin_urls: list[str] = []
        self.start_seconds: dict[str, list[float]] = {}  # role -> seconds to ready, per start
        self._stored: set[str] = set()  # dynamic keys set in the metadata store since the brokers started
        self._ready_checks = Throttle()

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.pulsar_version}"

    # -- lifecycle ---------------------------------------------------------------------------

    def _launch(self) -> None:
        if self.security.secure:
            raise TargetError(f"{self.spec} does not run a --secure or --tls run: ZooKeeper and the bookie would "
                              "need TLS and credentials of their own; run a secure run on pulsar-standalone instead")
        if self.java is None:
            self.java = standalone.find_java()
        if self.classpath is None:
            self.classpath = maven.resolve(self.pulsar_version, cache=self.cache, maven=self.maven_executable)
        if self.zookeeper is None or not self.zookeeper.alive():
            standalone.sweep_abandoned()
            start_on_free_ports(self._start_storage)
        start_on_free_ports(self._start_brokers)

    def _start_storage(self) -> None:
        """ZooKeeper, the cluster's metadata and the bookie, on a fresh data folder."""
        self._discard()
        zookeeper_port, bookie_port, *ports = free_ports(2 + 2 * BROKERS)
        data_dir = standalone.new_data_dir()
        standalone._DATA_DIRS.add(data_dir)
        self.data_dir = data_dir
        for folder in ("tmp", "zookeeper", "bookie/journal", "bookie/ledgers"):
            (data_dir / folder).mkdir(parents=True, exist_ok=True)
        plan = self._plan(zookeeper_port, bookie_port, ports)
        plan.argfile.write_text(f"-cp\n{self.classpath.text()}\n")
        try:
            self.zookeeper = self._run(plan.zookeeper, lambda lines: self._zookeeper_ready(plan))
            self._run_to_completion(plan.setup)
            self.bookie = self._run(plan.bookie, lambda lines: self._bookie_ready(plan))
        except TargetError:
            self._discard()
            raise

    def _plan(self, zookeeper_port: int, bookie_port: int, ports: list[int],
              extra: Optional[Mapping[str, str]] = None) -> ClusterPlan:
        plan = cluster_plan(self.pulsar_version, java=self.java, data_dir=self.data_dir,
                            zookeeper_port=zookeeper_port, bookie_port=bookie_port,
                            broker_ports=tuple(ports[:BROKERS]), web_ports=tuple(ports[BROKERS:]),
                            static={**self.static, **(extra or {})})
        self.plan = plan
        return plan

    def _start_brokers(self) -> None:
        """The brokers, on new ports each start (a restart with other non-dynamic keys included)."""
        self._stop_brokers()
        ports = free_ports(2 * BROKERS)
        # The metadata setup named the first broker's URLs as the cluster's; a broker started on
        # other ports is found through its own registration, as any broker joining a cluster is.
        plan = self._plan(self.plan.zookeeper_port, self.plan.bookie_port, ports,
                          extra=self.security.launch_config(self.static, pulsar=True))
        credentials = self.credentials()  # the readiness checks present the harness's token
        client = httpx.Client(timeout=2.0, headers={"Authorization": f"Bearer {credentials.token.reveal()}"}
                              if credentials.token else None)
        try:
            for index, launch in enumerate(plan.brokers):
                admin = plan.admin_urls[index]
                last = index == len(plan.brokers) - 1
                self.brokers.append(self._run(launch, lambda lines, i=index, a=admin, l=last:
                                              self._broker_ready(client, plan, i, a, l)))
        except TargetError:
            self._stop_brokers()
            raise
        finally:
            client.close()
        self.service_urls, self.admin_urls = plan.service_urls, plan.admin_urls
        self.service_url, self.admin_url = self.service_urls[0], self.admin_urls[0]
        self.generation += 1

    def _spawn(self, launch: Launch) -> ManagedProcess:
        if launch.config_file is not None:
            launch.config_file.write_text("")
            launch.config_file.chmod(0o600)  # a broker's may hold the run's token key
            launch.config_file.write_text(standalone_conf.render(launch.config))
        log = log_file(self.log_dir, f"{self.log_name}-{launch.role}",
                       f"{self.spec} {launch.role}, non-dynamic config {self.static or 'defaults'}")
        return ManagedProcess(list(launch.argv), name=f"Apache Pulsar {self.pulsar_version} {launch.role}",
                              cwd=str(self.data_dir), log_path=log)

    def _wait(self, process: ManagedProcess, launch: Launch, ready) -> None:
        started = time.monotonic()
        try:
            process.start(ready, self.start_timeout)
        except TargetError as exc:
            raise TargetError(f"{self.spec}: {exc}") from exc
        self.start_seconds.setdefault(launch.role, []).append(round(time.monotonic() - started, 2))

    def _run_to_completion(self, launch: Launch) -> None:
        """A process that does its work and exits: done when it exits 0, within the bound. (ManagedProcess
        calls an exit before its readiness check saw it a failure; with code 0 it is none.)"""
        process = self._spawn(launch)
        started = time.monotonic()
        try:
            process.start(lambda lines: True if process.popen.poll() == 0 else None, self.start_timeout)
        except TargetError as exc:
            if process.popen is None or process.popen.returncode != 0:
                raise TargetError(f"{self.spec}: {exc}") from exc
        self.start_seconds.setdefault(launch.role, []).append(round(time.monotonic() - started, 2))

    def _run(self, launch: Launch, ready) -> ManagedProcess:
        process = self._spawn(launch)
        self._wait(process, launch, ready)
        return process

    def _zookeeper_ready(self, plan: ClusterPlan):
        if not self._ready_checks.due():
            return None
        return True if "Mode:" in four_letter_word(plan.zookeeper_port, "srvr", timeout=1.0) else None

    def _bookie_ready(self, plan: ClusterPlan):
        if not self._ready_checks.due():
            return None
        return True if bookie_registered(four_letter_word(plan.zookeeper_port, "dump", timeout=1.0),
                                         plan.bookie_port) else None

    def _broker_ready(self, client: httpx.Client, plan: ClusterPlan, index: int, admin: str, last: bool):
        if not self._ready_checks.due() or not tcp_ready("127.0.0.1", plan.broker_ports[index]):
            return None
        answers: dict[str, tuple[int, str]] = {}
        try:
            for check in standalone_conf.READY_CHECKS:
                response = client.get(admin + check.path)
                answers[check.path] = (response.status_code, response.text)
            if standalone_conf.readiness_problem(standalone_conf.READY_CHECKS, answers) is not None:
                return None
            if not last:
                return True
            listed = client.get(f"{plan.admin_urls[0]}/admin/v2/brokers/{CLUSTER}")
            body = listed.json() if listed.status_code == 200 else None
            leader = client.get(f"{plan.admin_urls[0]}/admin/v2/brokers/leaderBroker")
            elected = leader.json() if leader.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
        return True if brokers_listed(body, plan.service_urls) and leader_is_ours(elected, plan.admin_urls) else None

    def stop(self) -> None:
        self._discard()

    def _stop_brokers(self) -> None:
        brokers, self.brokers = self.brokers, []
        for process in reversed(brokers):
            process.stop(STOP_TIMEOUT)

    def _discard(self) -> None:
        self._stop_brokers()
        for attribute in ("bookie", "zookeeper"):
            process = getattr(self, attribute)
            setattr(self, attribute, None)
            if process is not None:
                process.stop(STOP_TIMEOUT)
        folder, self.data_dir = self.data_dir, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
            standalone._DATA_DIRS.discard(folder)

    def check_alive(self) -> Optional[str]:
        """Why the cluster no longer serves (one of its JVMs exited), or None."""
        for role, process in (("ZooKeeper", self.zookeeper), ("bookie", self.bookie),
                              *((f"broker {i + 1}", p) for i, p in enumerate(self.brokers))):
            if process is not None and not process.alive():
                code = process.popen.returncode if process.popen else None
                return f"the {self.spec} {role} JVM exited with code {code} during the run: {process.last_line()}"
        return None

    # -- configuration: dynamic keys cluster-wide, a restart of the brokers for the others -----

    def _configure(self, wanted: dict[str, str]) -> None:
        off = [key for key in DOMAIN_KEYS if wanted.get(key) == "false"]
        if off:
            raise Unsupported("config-differs", f"{self.spec}'s brokers place a topic with ModularLoadManagerImpl, "
                              f"which keeps only brokers that serve the topic's domain (its BrokerTopicLoadingPredicate, "
                              f"LoadManagerShared#applyNamespacePolicies, apache/pulsar@v4.0.7): with "
                              f"{', '.join(f'{key}=false' for key in off)} on every broker no broker may own such a "
                              "topic, where the model answers for a standalone's NoopLoadManager, which names the "
                              "broker asked; run the case on pulsar-standalone")
        fixed = pulsar_config.static_keys(wanted)
        static = {k: v for k, v in wanted.items() if k in fixed}
        if self._without_defaults(static) != self._without_defaults(self.static):
            self._clear_stored()
            self._stop_brokers()
            self.static = static
            self._relaunch(static)
        self._configure_over_rest({k: v for k, v in wanted.items() if k not in fixed})

    def _clear_stored(self) -> None:
        """Delete every dynamic value set so far from the metadata store, before the brokers restart:
        a stored value overrides the configuration file a broker starts with (Pulsar's dynamic
        configuration, kept in ZooKeeper, which outlives the brokers here), so a key a case now needs
        in the file would otherwise keep the value a previous case stored."""
        stored, self._stored = sorted(self._stored), set()
        self._dirty.clear()
        if not stored or not self.brokers or not self.admin_url:
            return
        rest = RestDriver(self.admin_url, timeout=self.timeout, credentials=self.credentials())
        try:
            for key in stored:
                response = rest.request("DELETE", f"/admin/v2/brokers/configuration/{key}")
                if not 200 <= response.status_code < 300 and response.status_code != 404:
                    raise TargetError(f"{self.spec}: cannot delete the stored dynamic value of {key} before "
                                      f"restarting the brokers: {response.status_code} {error_reason(response)}")
        finally:
            rest.close()

    def _configure_over_rest(self, wanted: dict[str, str]) -> None:
        """Over the first broker's admin API, then confirmed in every broker's runtime configuration."""
        reset = {key: self._baseline(key) for key in self._dirty if key not in wanted}
        self._stored.update(wanted, reset)  # what the store may hold from now on (_clear_stored)
        super()._configure_over_rest(wanted)
        posted = {**{k: v for k, v in reset.items() if v is not None}, **wanted}
        if not posted:
            return
        for admin in self.admin_urls[1:]:
            rest = RestDriver(admin, timeout=self.timeout, credentials=self.credentials())
            try:
                self._await_runtime(rest, posted)
            finally:
                rest.close()

    def describe(self) -> dict[str, str]:
        info = super().describe()
        info["release"] = self.pulsar_version
        info["launch"] = (f"{maven.GROUP}:{maven.BROKER_ARTIFACT}:{self.pulsar_version}: ZooKeeper, one bookie, "
                          f"{BROKERS} brokers ({BROKER_CLASS})")
        info["brokers"] = ",".join(self.service_urls) or str(BROKERS)
        info["broker_admin_urls"] = ",".join(self.admin_urls)
        if self.classpath is not None:
            info["jars"] = str(len(self.classpath.jars))
        for role, seconds in sorted(self.start_seconds.items()):
            info[f"{role}_start_s"] = ", ".join(f"{s:.1f}" for s in seconds)
        if self.static:
            info["config"] = ", ".join(f"{k}={v}" for k, v in sorted(self.static.items()))
        return info
