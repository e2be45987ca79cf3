"""Apache Pulsar in a container: ``pulsar-container[:VERSION]`` runs a release's standalone through
testcontainers.

The launch is split in two: a pure ``LaunchPlan`` (what to run, unit-tested) and its execution
through the ``testcontainers`` package (``DockerBackend``, the only part that needs an engine).

- The image (targets/image.py, chosen once per target before its first start): the official
  ``apachepulsar/pulsar:VERSION`` where the engine has it or can pull it; otherwise an image built
  on this machine from Debian's packages and the release's Maven jars (the classpath
  ``pulsar-standalone:VERSION`` runs), tagged with a digest of what went into it and reused while
  that stays the same. describe() names the image that served the run, with how it was obtained.
- The plan (``launch_plan``): the same broker configuration as ``pulsar-standalone``
  (standalone_conf.broker_conf: conf/standalone.conf's departures from the code defaults, the
  harness's loopback addresses, Pulsar's defaults for the modelled keys, the case's non-dynamic
  keys) as ``PULSAR_PREFIX_<key>=<value>`` environment, which the official image's
  apply-config-from-env.py and the local image's start script both write into standalone.conf;
  the JVM's memory as ``PULSAR_MEM`` (standalone.py's heap). The official image runs ``bin/pulsar
  standalone --no-functions-worker -nss`` (as testcontainers' own PulsarContainer does), the local
  one ``PulsarStandaloneStarter -nss -nfw`` (as standalone.py does); both on the chosen bookie port.
- Host networking (``network_mode="host"``): the broker, web and bookie ports are chosen free on
  127.0.0.1 by the harness per start, the broker binds and advertises 127.0.0.1, so lookups and
  redirects answer URLs a client here reaches, as with ``pulsar-standalone``. (So the engine must
  run on this machine.) A port taken meanwhile is retried once on new ones.
- Readiness (``_await_ready``): standalone_conf's checks (GET /admin/v2/clusters answers exactly
  ``["standalone"]`` and public/default exists), polled within ``start_timeout`` (180 s, as the
  standalone target). A container that exits, or is not ready in time, is a TargetError with its
  last output.
- The engine check: before anything else, a Docker engine must answer ``/_ping`` within 1 s
  (``docker_engine_problem``); otherwise start() raises TargetError "no Docker engine reachable
  (<why>): pulsar-container:<tag> skipped" at once, and the runner records every case of the
  target target-error with that reason. Nothing is pulled, built or waited for.
- Configuration: per case, dynamic keys are set through the admin REST API and confirmed in the
  runtime config (targets/base.py, ``Target.configure``); a different value of a non-dynamic key
  replaces the container by one started with that environment: one container per config and
  instance, never two at once.
- Nothing is left behind, without testcontainers' Ryuk reaper (its image cannot be pulled where no
  registry is reachable; ``TESTCONTAINERS_RYUK_DISABLED=true`` unless set otherwise): every
  container carries the harness's labels (``harness_labels``: its pid, the pid's start time and
  the host name). stop() removes the container (forced) and appends its output to
  ``<log_dir>/<name>.log``; at interpreter exit every container labelled with this process is
  removed; and the first start of a process removes every container whose harness process is gone
  (a harness killed with SIGKILL), as children.remove_folders_of_gone does for folders.
- Authentication: a configuration with ``authenticationEnabled=true`` (a case's, or a ``--secure``
  run's) starts with the run's token key and the broker's own client token in the environment
  (``RunSecurity.launch_config``, the keys pulsar-standalone writes into its private configuration
  file; visible to ``docker inspect`` on this machine for the container's life), and the readiness
  checks present the harness's token. TLS runs (``--tls``) are not offered: the broker would need
  the run's certificate files; the target says so as its start error.
- Measured per target: the image's preparation (pull, Maven, base and image build seconds), each
  start's seconds from creating the container to ready; describe() reports them.
"""

from __future__ import annotations

import atexit
import os
import re
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Protocol

import httpx

from conformance import children, timing
from conformance.errors import TargetError, UsageError
from conformance.security import redact
from conformance.targets import config as pulsar_config
from conformance.targets import image as images
from conformance.targets import standalone_conf
from conformance.targets.base import Target
from conformance.targets.process import free_ports
from conformance.targets.standalone import HEAP
from conformance.targets.standalone_conf import READY_CHECKS, ReadyCheck

IMAGE_REPOSITORY = images.OFFICIAL_REPOSITORY
DEFAULT_TAG = "4.0.13"  # 4.0 LTS, latest patch (Pulsar's release policy)
LOOPBACK = "127.0.0.1"
NETWORK_MODE = "host"
STANDALONE = ("/pulsar/bin/apply-config-from-env.py /pulsar/conf/standalone.conf && "
              "bin/pulsar standalone --no-functions-worker -nss")
PULSAR_MEM = " ".join(HEAP)
ENV_PREFIX = "PULSAR_PREFIX_"
START_TIMEOUT = 180.0
ENGINE_CHECK_TIMEOUT = 1.0
CLEANUP_TIMEOUT = 30.0
DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
LABEL_PID = "pulsar-conformance.harness-pid"
LABEL_PID_STARTED = "pulsar-conformance.harness-started"
LABEL_HOST = "pulsar-conformance.harness-host"
LABEL_TARGET = "pulsar-conformance.target"
# testcontainers reads these when it is first imported: no Ryuk (its image needs a registry; the
# harness removes its own containers), and the engine's host as the address (a /.dockerenv file
# would make it guess it runs inside a container).
TESTCONTAINERS_ENV = {"TESTCONTAINERS_RYUK_DISABLED": "true", "TESTCONTAINERS_CONNECTION_MODE": "docker_host"}
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z")  # Docker's tag grammar


def check_tag(tag: str) -> str:
    if not _TAG.match(tag or ""):
        raise UsageError(f"bad image tag {tag!r} for pulsar-container: expected a Docker tag such as "
                         f"{DEFAULT_TAG} (pulsar-container:TAG runs {IMAGE_REPOSITORY}:TAG)")
    return tag


def testcontainers_environment() -> None:
    """Set testcontainers' variables (unless the user set them) before it is first imported."""
    for key, value in TESTCONTAINERS_ENV.items():
        os.environ.setdefault(key, value)


# -- the plan (pure) ------------------------------------------------------------------------------

@dataclass(frozen=True)
class LaunchPlan:
    tag: str
    image: str
    image_kind: str  # "official" or "local" (targets/image.py)
    command: tuple[str, ...]
    env: Mapping[str, str]
    broker_port: int
    web_port: int
    bookie_port: int
    advertised_address: str = LOOPBACK
    network_mode: str = NETWORK_MODE
    labels: Mapping[str, str] = field(default_factory=dict)
    name: Optional[str] = None  # the container's name (None: the engine picks one)
    ready_checks: tuple[ReadyCheck, ...] = READY_CHECKS
    start_timeout: float = START_TIMEOUT
    broker_config: Mapping[str, str] = field(default_factory=dict)  # what the env sets, by key

    @property
    def service_url(self) -> str:
        return f"pulsar://{self.advertised_address}:{self.broker_port}"

    @property
    def admin_url(self) -> str:
        return f"http://{self.advertised_address}:{self.web_port}"


def config_env(static: Mapping[str, str]) -> dict[str, str]:
    """PULSAR_PREFIX_ variables of the harness's standalone configuration (conf/standalone.conf's
    departures, the harness's, Pulsar's defaults for every modelled key) overlaid with ``static``."""
    values = standalone_conf.harness_defaults()
    values.update({key: pulsar_config.normalise(value) for key, value in static.items()})
    return {f"{ENV_PREFIX}{key}": value for key, value in sorted(values.items())}


def launch_plan(tag: Optional[str] = None, static: Optional[Mapping[str, str]] = None, *,
                image: Optional[str] = None, image_kind: str = "official", broker_port: int = 6650,
                web_port: int = 8080, bookie_port: int = 3181, labels: Optional[Mapping[str, str]] = None,
                name: Optional[str] = None, extra: Optional[Mapping[str, str]] = None,
                start_timeout: float = START_TIMEOUT) -> LaunchPlan:
    """What to run for Apache Pulsar ``tag`` with non-dynamic keys ``static`` and the security keys
    ``extra`` (as pulsar-standalone has them): the standalone on the host's network, listening on
    and advertising the chosen loopback ports."""
    tag = check_tag(tag or DEFAULT_TAG)
    config = standalone_conf.broker_conf({**(static or {}), **(extra or {})}, broker_port=broker_port,
                                         web_port=web_port)
    env = {"PULSAR_MEM": PULSAR_MEM, **{f"{ENV_PREFIX}{key}": value for key, value in sorted(config.items())}}
    if image_kind == "local":
        command: tuple[str, ...] = (images.START_SCRIPT, "--bookkeeper-port", str(bookie_port))
    elif image_kind == "official":
        command = ("/bin/bash", "-c", f"{STANDALONE} --bookkeeper-port {bookie_port}")
    else:
        raise ValueError(f"image kind {image_kind!r}: expected official or local")
    return LaunchPlan(tag=tag, image=image or f"{IMAGE_REPOSITORY}:{tag}", image_kind=image_kind, command=command,
                      env=env, broker_port=broker_port, web_port=web_port, bookie_port=bookie_port,
                      advertised_address=config["advertisedAddress"], labels=dict(labels or {}), name=name,
                      start_timeout=start_timeout, broker_config=config)


def readiness_problem(plan: LaunchPlan, answers: Mapping[str, tuple[int, str]]) -> Optional[str]:
    """None when every check of ``plan`` is satisfied by ``answers`` (path -> (status, body))."""
    return standalone_conf.readiness_problem(plan.ready_checks, answers)


# -- the harness's labels: whose container is this, and is its harness still there ---------------

def process_started(pid: int) -> Optional[str]:
    """The start time of process ``pid`` in clock ticks since boot (Linux), None when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    return fields[19] if len(fields) > 19 else None


def harness_labels(target: str = "") -> dict[str, str]:
    labels = {LABEL_PID: str(os.getpid()), LABEL_HOST: socket.gethostname()}
    started = process_started(os.getpid())
    if started:
        labels[LABEL_PID_STARTED] = started
    if target:
        labels[LABEL_TARGET] = target
    return labels


def harness_gone(labels: Mapping[str, str]) -> bool:
    """Whether the harness that labelled a container is gone (on this host; another host's
    containers are never judged)."""
    if labels.get(LABEL_HOST) != socket.gethostname():
        return False
    pid_text = labels.get(LABEL_PID, "")
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    if not children.process_alive(pid):
        return True
    started = labels.get(LABEL_PID_STARTED)
    return bool(started) and process_started(pid) not in (None, started)  # the pid was reused


# -- the engine check (bounded) ---------------------------------------------------------------------

def docker_engine_problem(timeout: float = ENGINE_CHECK_TIMEOUT) -> Optional[str]:
    """None when a Docker engine answers /_ping within ``timeout`` seconds, else why not.

    The engine is the one testcontainers would use (its properties file, DOCKER_HOST, the docker
    context, else the default socket). The ping runs in a daemon thread joined with the bound,
    so a host that accepts and never answers cannot hold the run.
    """
    started = time.monotonic()
    testcontainers_environment()
    try:
        import docker
        from testcontainers.core.docker_client import get_docker_host
    except ImportError as exc:
        return f"the testcontainers package is not installed ({exc}); pip install testcontainers"
    try:
        host = get_docker_host() or DEFAULT_DOCKER_HOST
    except Exception:  # noqa: BLE001 - a broken docker context: fall back to what docker-py uses
        host = os.environ.get("DOCKER_HOST") or DEFAULT_DOCKER_HOST
    if host.startswith("unix://"):
        path = host[len("unix://"):]
        if not os.path.exists(path):
            return f"{host}: {path} does not exist"
    outcome: dict[str, str] = {}

    def ping() -> None:
        try:
            client = docker.from_env(environment={**os.environ, "DOCKER_HOST": host}, timeout=max(timeout, 0.1))
            try:
                client.ping()
            finally:
                client.close()
            outcome["ok"] = "yes"
        except Exception as exc:  # noqa: BLE001 - any failure is the reason
            outcome["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]

    thread = threading.Thread(target=ping, name="docker engine check", daemon=True)
    thread.start()
    thread.join(max(0.0, timeout - (time.monotonic() - started)))
    if "ok" in outcome:
        return None
    if "error" in outcome:
        return f"{host}: {outcome['error']}"
    return f"{host} did not answer /_ping within {timeout:g} s"


# -- execution (testcontainers) -------------------------------------------------------------------

class RunningContainer(Protocol):
    def running(self) -> bool: ...
    def logs(self) -> str: ...
    def stop(self) -> None: ...


def _docker_client(timeout: float = CLEANUP_TIMEOUT):
    testcontainers_environment()
    return images._docker_client(timeout)


def remove_containers(predicate, timeout: float = CLEANUP_TIMEOUT) -> list[str]:
    """Remove (forced) every container with the harness's labels for which ``predicate(labels)``
    holds; returns their names. Bounded; an engine that does not answer removes nothing."""
    removed: list[str] = []

    def sweep() -> None:
        client = _docker_client(timeout)
        try:
            for container in client.containers.list(all=True, filters={"label": LABEL_PID}):
                if predicate(container.labels or {}):
                    try:
                        container.remove(force=True, v=True)
                        removed.append(container.name)
                    except Exception:  # noqa: BLE001 - already gone
                        pass
        finally:
            client.close()

    try:
        images._bounded(sweep, timeout, "removing the harness's containers")
    except Exception:  # noqa: BLE001 - nothing more can be done here
        pass
    return removed


def _mine(labels: Mapping[str, str]) -> bool:
    return labels.get(LABEL_PID) == str(os.getpid()) and labels.get(LABEL_HOST) == socket.gethostname()


_exit_hook = threading.Lock()
_exit_hook_set = False
_swept = False


def _remove_mine_at_exit() -> None:
    remove_containers(_mine)


class DockerBackend:
    """Runs plans with testcontainers; imported lazily, after the engine check passed."""

    def problem(self, timeout: float) -> Optional[str]:
        return docker_engine_problem(timeout)

    def prepare(self, tag: str, timeout: float) -> images.ChosenImage:
        """The image to run (targets/image.py), pulled or built within ``timeout``."""
        return images.choose_image(tag, timeout=timeout)

    def sweep(self) -> list[str]:
        """Once per process: remove the containers of harness processes that are gone."""
        global _swept
        with _exit_hook:
            if _swept:
                return []
            _swept = True
        return remove_containers(harness_gone)

    def launch(self, plan: LaunchPlan) -> RunningContainer:
        """Create and start the container; not yet ready."""
        global _exit_hook_set
        testcontainers_environment()
        from testcontainers.core.container import DockerContainer

        with _exit_hook:
            if not _exit_hook_set:
                atexit.register(_remove_mine_at_exit)
                _exit_hook_set = True
        container = DockerContainer(plan.image, command=list(plan.command), env=dict(plan.env), name=plan.name)
        # network=None among the create arguments: testcontainers would otherwise attach the network
        # of a container it believes it runs in, which host networking excludes.
        container.with_kwargs(network_mode=plan.network_mode, network=None, labels=dict(plan.labels))
        try:
            container.start()
        except BaseException:
            try:
                container.stop()
            except Exception:  # noqa: BLE001 - nothing was created
                pass
            raise
        return _TestcontainersHandle(container)


class _TestcontainersHandle:
    def __init__(self, container):
        self.container = container

    def running(self) -> bool:
        """False once the engine says the container exited or is gone; an engine that does not
        answer this once is no evidence of that (asked before every case: check_alive)."""
        import docker

        try:
            wrapped = self.container.get_wrapped_container()
            wrapped.reload()
            return wrapped.status in ("created", "running")
        except docker.errors.NotFound:
            return False
        except Exception:  # noqa: BLE001 - a slow or busy engine
            return True

    def logs(self) -> str:
        try:
            stdout, stderr = self.container.get_logs()
            return (stdout + stderr).decode("utf-8", errors="replace")
        except Exception as exc:  # noqa: BLE001
            return f"(no logs: {exc})"

    def stop(self) -> None:
        self.container.stop()


def _tail(text: str, count: int = 15) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-count:]) if lines else "(no output)"


def _port_taken(text: str) -> bool:
    return "Address already in use" in text or "BindException" in text or "already allocated" in text


class ContainerTarget(Target):
    kind = "pulsar-container"
    confirms_dynamic_config = True
    max_instances = 2  # as pulsar-standalone: one JVM per container, two side by side at most
    instance_memory_mb = 1024
    max_jobs = 8
    case_weight = 2  # a JVM with its bookie and metadata store answers each case

    def __init__(self, tag: Optional[str] = None, name: Optional[str] = None, *, backend=None,
                 start_timeout: float = START_TIMEOUT, engine_timeout: float = ENGINE_CHECK_TIMEOUT,
                 prepare_timeout: float = images.PREPARE_TIMEOUT, **kwargs):
        self.tag = check_tag(tag or DEFAULT_TAG)
        super().__init__(name or f"pulsar-container-{self.tag}", start_timeout=start_timeout, **kwargs)
        self.backend = backend or DockerBackend()
        self.engine_timeout = engine_timeout
        self.prepare_timeout = prepare_timeout
        self.static: dict[str, str] = {}  # non-dynamic keys the running container was started with
        self.chosen: Optional[images.ChosenImage] = None
        self.plan: Optional[LaunchPlan] = None
        self.container: Optional[RunningContainer] = None
        self.warnings: list[str] = []
        self.start_seconds: list[float] = []
        self._engine_ok = False
        self._container_lock = threading.Lock()

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.tag}"

    def spawn(self, index: int) -> "ContainerTarget":
        twin = ContainerTarget(self.tag, self.name, backend=self.backend, start_timeout=self.start_timeout,
                               engine_timeout=self.engine_timeout, prepare_timeout=self.prepare_timeout,
                               timeout=self.timeout, log_dir=self.log_dir, security=self.security)
        twin.chosen, twin._engine_ok = self.chosen, self._engine_ok
        twin.instance_label = f"-{index + 1}"
        twin.start_seconds = self.start_seconds  # one target's figures, all instances
        return twin

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """The engine check and the image (pulled or built, bounded) come before the start-up proper,
        outside the machine's start-up slot, so a first build does not hold other targets' starts."""
        try:
            self._check_engine()
            self._prepare_image()
        except Exception as exc:
            self.start_error = str(exc) or type(exc).__name__
            self.stop()
            raise TargetError(self.start_error) from exc
        super().start()

    def _check_engine(self) -> None:
        if self._engine_ok:
            return
        problem = self.backend.problem(self.engine_timeout)
        if problem:  # no engine: fail at once, nothing pulled, built or waited for
            raise TargetError(f"no Docker engine reachable ({problem}): {self.spec} skipped")
        self._engine_ok = True
        self.backend.sweep()

    def _prepare_image(self) -> None:
        if self.chosen is not None:
            return
        if self.security.tls:
            raise TargetError(f"{self.spec} does not run TLS runs (--tls: the broker would need the run's "
                              f"certificate files); use pulsar-standalone")
        started = time.monotonic()
        try:
            self.chosen = self.backend.prepare(self.tag, self.prepare_timeout)
        except TargetError as exc:
            raise TargetError(f"{self.spec}: no image: {exc}") from exc
        if self.chosen.how in ("built", "pulled"):
            timing.spent(timing.START_UP, time.monotonic() - started, self.name, f"image {self.chosen.how}")

    def _launch(self) -> None:
        self._check_engine()
        self._prepare_image()
        last: Optional[TargetError] = None
        for _attempt in range(2):  # a chosen port may be taken meanwhile: once more on new ones
            try:
                self._start_once()
                return
            except TargetError as exc:
                last = exc
                if not _port_taken(str(exc)):
                    break
        raise last  # type: ignore[misc]

    def _start_once(self) -> None:
        broker_port, web_port, bookie_port = free_ports(3)
        plan = launch_plan(self.tag, self.static, image=self.chosen.ref, image_kind=self.chosen.kind,
                           broker_port=broker_port, web_port=web_port, bookie_port=bookie_port,
                           labels=harness_labels(self.spec), start_timeout=self.start_timeout,
                           extra=self.security.launch_config(self.static, pulsar=True),
                           name=f"pulsar-conformance-{os.getpid()}-{self.tag}{self.instance_label}-"
                                f"{secrets.token_hex(3)}")
        self.plan = plan
        started = time.monotonic()
        with self._container_lock:
            try:
                self.container = self.backend.launch(plan)
            except Exception as exc:  # noqa: BLE001 - the reason goes into the TargetError
                text = str(exc)
                raise TargetError(f"{self.spec}: cannot start a container of {plan.image}: "
                                  f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}") from exc
        self.service_url, self.admin_url = plan.service_url, plan.admin_url
        self.generation += 1
        try:
            self._await_ready(plan)
        except TargetError:
            self.stop()
            raise
        self.start_seconds.append(round(time.monotonic() - started, 1))

    def _await_ready(self, plan: LaunchPlan) -> None:
        """Poll the plan's readiness checks within its start_timeout; an exited container fails at once."""
        deadline = time.monotonic() + plan.start_timeout
        problem = "no answer yet"
        token = self.credentials().token  # a configuration with authentication: the harness's token
        headers = {"Authorization": f"Bearer {token.reveal()}"} if token else None
        with httpx.Client(timeout=min(2.0, self.timeout), headers=headers) as client:
            while True:
                answers: dict[str, tuple[int, str]] = {}
                for check in plan.ready_checks:
                    try:
                        response = client.get(plan.admin_url + check.path)
                        answers[check.path] = (response.status_code, response.text)
                    except httpx.HTTPError as exc:
                        answers[check.path] = (0, f"{type(exc).__name__}: {exc}")
                        break
                problem = readiness_problem(plan, answers)
                if problem is None:
                    return
                container = self.container
                if container is None:
                    raise TargetError(f"{self.spec}: the container was removed before it was ready ({problem})")
                if not container.running():
                    raise TargetError(f"{self.spec}: the container stopped before it was ready ({problem})\n"
                                      f"last output:\n{_tail(redact(container.logs()))}")
                if time.monotonic() >= deadline:
                    raise TargetError(f"{self.spec} was not ready within {plan.start_timeout:g} s: {problem}\n"
                                      f"last output:\n{_tail(redact(container.logs()))}")
                time.sleep(0.5)

    def detect(self) -> None:
        super().detect()
        if _looks_like_release(self.tag) and self.version and self.tag not in self.version:
            warning = f"image tag {self.tag} but the broker reports version {self.version}"
            if warning not in self.warnings:
                self.warnings.append(warning)

    def check_alive(self) -> Optional[str]:
        """Why the container no longer serves (it exited), or None."""
        container = self.container
        if container is None or container.running():
            return None
        return f"the {self.spec} container exited during the run: {_tail(redact(container.logs()), 3)}"

    def stop(self) -> None:
        with self._container_lock:
            container, self.container = self.container, None
        if container is None:
            return
        self._save_logs(container)
        try:
            container.stop()
        except Exception as exc:  # noqa: BLE001 - removed at exit or by the next start
            print(f"conformance: warning: removing the container of {self.name} failed: {exc}")

    def _save_logs(self, container: RunningContainer) -> None:
        if not self.log_dir:
            return
        try:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            with open(Path(self.log_dir) / f"{self.log_name}.log", "a", encoding="utf-8") as log:
                log.write(f"--- {self.plan.image if self.plan else self.spec} config {self.static or 'defaults'}\n")
                log.write(redact(container.logs()))
        except OSError:
            pass

    # -- configuration: one container per config, never two at once ----------------------------

    def _configure(self, wanted: dict[str, str]) -> None:
        self._configure_by_restart(wanted, same=lambda a, b: config_env(a) == config_env(b))

    def describe(self) -> dict[str, str]:
        info = super().describe()
        if self.chosen is not None:
            info["image"] = self.chosen.ref
            info["image_kind"] = self.chosen.kind
            info["image_source"] = self.chosen.describe()
            if self.chosen.image_id:
                info["image_id"] = self.chosen.image_id
            if self.chosen.why_local:
                info["image_why_local"] = self.chosen.why_local
        else:
            info["image"] = f"{IMAGE_REPOSITORY}:{self.tag}"
        if self.start_seconds:
            info["start_s"] = ", ".join(f"{s:.1f}" for s in self.start_seconds)
        if self.static:
            info["config"] = ", ".join(f"{k}={v}" for k, v in sorted(self.static.items()))
        if self.warnings:
            info["warning"] = "; ".join(self.warnings)
        return info


def _looks_like_release(tag: str) -> bool:
    return bool(re.match(r"^\d+\.\d+\.\d+$", tag))
