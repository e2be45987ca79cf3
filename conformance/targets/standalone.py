"""Apache Pulsar itself, no Docker: ``pulsar-standalone:VERSION`` runs the release's own standalone.

The release's broker jars come from Maven (targets/maven.py, resolved once and cached); the
harness starts ``org.apache.pulsar.PulsarStandaloneStarter`` in a JVM child process, as
Pulsar's ``bin/pulsar standalone`` does, and stops it at the end.

- The launch is a pure ``LaunchPlan`` (``launch_plan``, unit-tested): java with the options
  ``bin/pulsar`` passes (Java 17 module opens, IPv4, the BookKeeper metadata drivers), the
  classpath in an argument file, ``-c <conf> -nss -nfw --metadata-dir D/metadata
  --bookkeeper-dir D/bookie --bookkeeper-port B`` with a fresh data folder D; the configuration
  is standalone_conf.py's.
- Ports: the broker, web and bookie ports are chosen free on 127.0.0.1 per start (a bound port
  is retried once on new ones); the broker advertises 127.0.0.1, so lookups answer URLs a client
  here can reach.
- Ready when standalone_conf's checks pass (``_ready``), within ``start_timeout``; a JVM that
  exits first, or is not ready in time, is a TargetError with its last lines of output.
- Configuration per case: dynamic keys over the admin REST API, confirmed in the runtime
  configuration (targets/base.py); a different value of a non-dynamic key restarts the JVM with
  a configuration file that has it. Cases are ordered so that each distinct non-dynamic
  configuration starts once per run (``config_group``).
- Start-ups are cheap (targets/class_data.py): the release's class-data archive, written by its
  first start on the machine, and the first JIT tier only.
- Nothing is left behind. stop() ends the JVM (SIGKILL: its data is thrown away, so a clean
  shutdown buys nothing; SIGTERM and a bound only for the start that writes the class-data
  archive) and removes its data folder; process.py kills
  it if the harness dies; a data folder whose owner process is gone (the harness was killed with
  SIGKILL) is removed by the next start (``sweep_abandoned``).
- Every failure names its cause: a version that is not a release, no Java 17+, no Maven,
  artifacts the repository lacks, a JVM that dies or never gets ready. The runner reports the
  target's cases target-error with that reason, and the run goes on.
- Security (conformance/security.py): a configuration with ``authenticationEnabled=true`` starts
  with the run's key (``tokenSecretKey=data:;base64,...`` in the configuration file of the
  private data folder) and the broker's own client credentials, and the readiness checks present
  the harness's token; a TLS run adds ``brokerServicePortTls`` and ``webServicePortTls`` on free
  ports with the run's certificate, and the harness then uses only the ``pulsar+ssl://`` and
  ``https://`` URLs (the plain listeners stay, for the standalone's own clients).
- Measured per target: each start's seconds to ready, Maven's resolution time, and the JVM's
  peak resident memory (VmHWM) at each stop; describe() reports them.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

import httpx

from conformance import children
from conformance.errors import TargetError
from conformance.targets import class_data, maven
from conformance.targets import standalone_conf
from conformance.targets.base import Target
from conformance.targets.process import ManagedProcess, Throttle, free_ports, log_file, start_on_free_ports

DEFAULT_VERSION = "4.0.7"  # the 4.0 LTS line's newest release whose broker Maven Central serves here whole
MAIN_CLASS = "org.apache.pulsar.PulsarStandaloneStarter"
START_TIMEOUT = 180.0
JAVA_MIN_MAJOR = 17
DATA_PREFIX = "pulsar-conformance-standalone-"
OWNER_FILE = "owner.pid"
HEAP = ("-Xms128m", "-Xmx1g", "-XX:MaxDirectMemorySize=512m")
# What bin/pulsar passes to the JVM on Java 17 (Pulsar 3.0 to 4.2).
JVM_OPTIONS = (
    "--add-opens", "java.base/java.io=ALL-UNNAMED",
    "--add-opens", "java.base/java.util.zip=ALL-UNNAMED",
    "--add-opens", "java.base/sun.net=ALL-UNNAMED",
    "--add-opens", "java.management/sun.management=ALL-UNNAMED",
    "--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
    "--add-opens", "java.base/java.nio=ALL-UNNAMED",
    "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-opens", "java.base/jdk.internal.platform=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djava.net.preferIPv4Stack=true",
    "-Djute.maxbuffer=10485760",
    "-Dlog4j2.is.webapp=false",
    "-Dlog4j.shutdownHookEnabled=false",
    "-Dbookkeeper.metadata.bookie.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataBookieDriver",
    "-Dbookkeeper.metadata.client.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataClientDriver",
)


# -- the plan (pure) ------------------------------------------------------------------------------

@dataclass(frozen=True)
class LaunchPlan:
    version: str
    argv: tuple[str, ...]
    config: Mapping[str, str]
    data_dir: Path
    config_file: Path
    argfile: Path
    broker_port: int
    web_port: int
    bookie_port: int
    tls_ports: Optional[tuple[int, int]] = None  # a TLS run's (brokerServicePortTls, webServicePortTls)

    @property
    def service_url(self) -> str:
        if self.tls_ports:
            return f"pulsar+ssl://127.0.0.1:{self.tls_ports[0]}"
        return f"pulsar://127.0.0.1:{self.broker_port}"

    @property
    def admin_url(self) -> str:
        if self.tls_ports:
            return f"https://127.0.0.1:{self.tls_ports[1]}"
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def plain_admin_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"


def launch_plan(version: str, static: Mapping[str, str], *, java: str, data_dir: Path,
                broker_port: int, web_port: int, bookie_port: int, extra: Optional[Mapping[str, str]] = None,
                tls_ports: Optional[tuple[int, int]] = None, start_options: tuple[str, ...] = ()) -> LaunchPlan:
    """What to run for Apache Pulsar ``version`` with non-dynamic keys ``static`` and the security
    keys ``extra``, on the ports chosen for this start, with the JVM's ``start_options``
    (targets/class_data.py)."""
    config = standalone_conf.broker_conf({**static, **(extra or {})}, broker_port=broker_port, web_port=web_port)
    if tls_ports:
        config.update(brokerServicePortTls=str(tls_ports[0]), webServicePortTls=str(tls_ports[1]))
    config_file = data_dir / "standalone.conf"
    argfile = data_dir / "classpath.args"
    # The JVM's own temporary files (RocksDB extracts its native library there) go in the data
    # folder, which stop() removes: a JVM ended with SIGKILL never deletes them itself.
    argv = (java, *HEAP, *JVM_OPTIONS, *start_options, f"-Djava.io.tmpdir={data_dir / 'tmp'}", f"@{argfile}",
            MAIN_CLASS, "-c", str(config_file), "-nss", "-nfw",
            "--metadata-dir", str(data_dir / "metadata"), "--bookkeeper-dir", str(data_dir / "bookie"),
            "--bookkeeper-port", str(bookie_port))
    return LaunchPlan(version=version, argv=argv, config=config, data_dir=data_dir, config_file=config_file,
                      argfile=argfile, broker_port=broker_port, web_port=web_port, bookie_port=bookie_port,
                      tls_ports=tls_ports)


def java_major(version_output: str) -> Optional[int]:
    """The major version in ``java -version``'s output (``openjdk version "17.0.15"`` -> 17)."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def find_java() -> str:
    """A Java 17+ executable (JAVA_HOME first, then PATH), or TargetError naming the fix."""
    home = os.environ.get("JAVA_HOME")
    candidates = [str(Path(home) / "bin" / "java")] if home else []
    found = shutil.which("java")
    if found:
        candidates.append(found)
    for java in candidates:
        try:
            done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        major = java_major(done.stderr + done.stdout)
        if major is not None and major >= JAVA_MIN_MAJOR:
            return java
    if not candidates:
        raise TargetError(f"no Java found (JAVA_HOME unset, no java on PATH); Apache Pulsar needs Java "
                          f"{JAVA_MIN_MAJOR}+: install it (apt-get install openjdk-17-jre-headless)")
    raise TargetError(f"no Java {JAVA_MIN_MAJOR}+ found ({', '.join(candidates)}); Apache Pulsar needs Java "
                      f"{JAVA_MIN_MAJOR} or newer: install it or point JAVA_HOME at one")


def peak_rss_mb(pid: int) -> Optional[float]:
    """VmHWM of a live process in MiB (Linux), None elsewhere or when it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return round(int(match.group(1)) / 1024, 1) if match else None


# -- data folders: nothing left behind, not even by a killed harness ----------------------------

def sweep_abandoned(root: Optional[Path] = None) -> list[Path]:
    """Remove data folders whose owner process is gone; returns what was removed."""
    root = Path(root or tempfile.gettempdir())
    removed = []
    for folder in root.glob(f"{DATA_PREFIX}*"):
        try:
            owner = int((folder / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            owner = None
        if owner is not None and children.process_alive(owner):
            continue
        if owner is None and time.time() - folder.stat().st_mtime < 3600:
            continue  # being created right now by someone, or not ours to judge yet
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def new_data_dir(root: Optional[Path] = None) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=DATA_PREFIX, dir=root))
    (folder / OWNER_FILE).write_text(str(os.getpid()))
    return folder


_DATA_DIRS: set[Path] = set()


def _remove_data_dirs_at_exit() -> None:
    for folder in list(_DATA_DIRS):
        shutil.rmtree(folder, ignore_errors=True)


atexit.register(_remove_data_dirs_at_exit)


def prepare_start_ups(version: str) -> tuple[Path, bool]:
    """Apache Pulsar ``version``'s class-data archive (targets/class_data.py), written now by one start
    and stop of its standalone when the machine has none yet; and whether it was written now."""
    target = PulsarStandaloneTarget(version)
    target.java = find_java()
    target.classpath = maven.resolve(version)
    archive = target.start_up_data().path
    if archive.is_file():
        return archive, False
    target._launch()
    target.stop()
    return archive, True


# -- the target -----------------------------------------------------------------------------------

class PulsarStandaloneTarget(Target):
    kind = "pulsar-standalone"
    confirms_dynamic_config = True
    max_instances = 2  # more would mostly fight over start-up CPU
    instance_memory_mb = 1024  # its heap's bound, its direct memory and the JVM's own
    max_jobs = 8  # beyond that its ledger writes and reads slow down more than concurrency gains
    case_weight = 2  # a JVM with its bookie and metadata store answers each case

    def __init__(self, version: Optional[str] = None, name: Optional[str] = None, *,
                 start_timeout: float = START_TIMEOUT, cache: Optional[Path] = None, java: Optional[str] = None,
                 maven_executable: Optional[str] = None, **kwargs):
        self.pulsar_version = maven.check_version(version or DEFAULT_VERSION)
        super().__init__(name or f"pulsar-{self.pulsar_version}", start_timeout=start_timeout, **kwargs)
        self.cache = cache
        self.maven_executable = maven_executable
        self.static: dict[str, str] = {}
        self.classpath: Optional[maven.Classpath] = None
        self.java: Optional[str] = java
        self.plan: Optional[LaunchPlan] = None
        self.process: Optional[ManagedProcess] = None
        self.class_data: Optional[class_data.ClassData] = None
        self.start_seconds: list[float] = []
        self.peak_rss: list[float] = []
        self.warnings: list[str] = []
        self._ready_checks = Throttle()

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.pulsar_version}"

    def spawn(self, index: int) -> "PulsarStandaloneTarget":
        twin = PulsarStandaloneTarget(self.pulsar_version, self.name, start_timeout=self.start_timeout,
                                      cache=self.cache, java=self.java, maven_executable=self.maven_executable,
                                      timeout=self.timeout, log_dir=self.log_dir)
        twin.classpath = self.classpath
        twin.instance_label = f"-{index + 1}"
        twin.start_seconds, twin.peak_rss = self.start_seconds, self.peak_rss  # one target's figures, all instances
        return twin

    # -- lifecycle ---------------------------------------------------------------------------

    def _launch(self) -> None:
        if self.java is None:
            self.java = find_java()
        if self.classpath is None:
            self.classpath = maven.resolve(self.pulsar_version, cache=self.cache, maven=self.maven_executable)
        sweep_abandoned()
        start_on_free_ports(self._start_once)

    def _start_once(self) -> None:
        broker_port, web_port, bookie_port, broker_tls, web_tls = free_ports(5)
        data_dir = new_data_dir()
        _DATA_DIRS.add(data_dir)
        plan = launch_plan(self.pulsar_version, self.static, java=self.java, data_dir=data_dir,
                           broker_port=broker_port, web_port=web_port, bookie_port=bookie_port,
                           extra=self.security.launch_config(self.static, pulsar=True),
                           tls_ports=(broker_tls, web_tls) if self.security.tls else None,
                           start_options=self.start_up_data().options())
        self.plan = plan
        (data_dir / "tmp").mkdir(exist_ok=True)
        plan.config_file.write_text("")
        os.chmod(plan.config_file, 0o600)  # it may hold the run's token key
        plan.config_file.write_text(standalone_conf.render(plan.config))
        plan.argfile.write_text(f"-cp\n{self.classpath.text()}\n")
        log = log_file(self.log_dir, self.log_name, f"{self.spec} non-dynamic config {self.static or 'defaults'}")
        self.process = ManagedProcess(list(plan.argv), name=f"Apache Pulsar {self.pulsar_version} standalone",
                                      cwd=str(data_dir), log_path=log)
        started = time.monotonic()
        credentials = self.credentials()  # the readiness checks present the harness's token
        client = httpx.Client(timeout=2.0, headers={"Authorization": f"Bearer {credentials.token.reveal()}"}
                              if credentials.token else None)
        try:
            self.process.start(lambda lines: self._ready(client, plan), self.start_timeout)
        except TargetError as exc:
            self._discard(plan)
            raise TargetError(f"{self.spec}: {exc}") from exc
        finally:
            client.close()
        self.start_seconds.append(round(time.monotonic() - started, 2))
        self.service_url, self.admin_url = plan.service_url, plan.admin_url
        self.generation += 1

    def start_up_data(self) -> class_data.ClassData:
        if self.class_data is None:
            self.class_data = class_data.ClassData(self.classpath.file.stem, self.java, self.classpath.text(),
                                                   (*HEAP, *JVM_OPTIONS))
        return self.class_data

    def _ready(self, client: httpx.Client, plan: LaunchPlan):
        if not self._ready_checks.due():
            return None
        answers: dict[str, tuple[int, str]] = {}
        for check in standalone_conf.READY_CHECKS:
            try:
                response = client.get(plan.plain_admin_url + check.path)
                answers[check.path] = (response.status_code, response.text)
            except httpx.HTTPError as exc:
                answers[check.path] = (0, f"{type(exc).__name__}: {exc}")
                return None
        return True if standalone_conf.readiness_problem(standalone_conf.READY_CHECKS, answers) is None else None

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.pid is not None:
            rss = peak_rss_mb(process.pid)
            if rss is not None and process.alive():
                self.peak_rss.append(rss)
            if self.class_data is not None:
                self.class_data.stop(process)
            else:
                process.kill()
        if self.plan is not None:
            self._discard(self.plan)

    def _discard(self, plan: LaunchPlan) -> None:
        if self.process is not None:
            self.process.kill()
            self.process = None
        shutil.rmtree(plan.data_dir, ignore_errors=True)
        _DATA_DIRS.discard(plan.data_dir)

    def check_alive(self) -> Optional[str]:
        """Why the JVM is no longer serving (it exited), or None."""
        process = self.process
        if process is None or process.alive():
            return None
        code = process.popen.returncode if process.popen else None
        return f"the {self.spec} JVM exited with code {code} during the run: {process.last_line()}"

    # -- configuration: dynamic keys over REST, a restart for the others ----------------------

    def _configure(self, wanted: dict[str, str]) -> None:
        self._configure_by_restart(wanted, same=lambda a, b: self._without_defaults(a) == self._without_defaults(b))

    def describe(self) -> dict[str, str]:
        info = super().describe()
        info["release"] = self.pulsar_version
        info["launch"] = f"{maven.GROUP}:{maven.BROKER_ARTIFACT}:{self.pulsar_version} ({MAIN_CLASS})"
        if self.classpath is not None:
            info["jars"] = str(len(self.classpath.jars))
            info["resolve_s"] = f"{self.classpath.resolved_s:.1f}"
        if self.start_seconds:
            info["start_s"] = ", ".join(f"{s:.1f}" for s in self.start_seconds)
        if self.peak_rss:
            info["peak_rss_mb"] = f"{max(self.peak_rss):.0f}"
        if self.static:
            info["config"] = ", ".join(f"{k}={v}" for k, v in sorted(self.static.items()))
        if self.warnings:
            info["warning"] = "; ".join(self.warnings)
        return info
