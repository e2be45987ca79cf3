"""Apache Pulsar in Docker: ``pulsar-container[:TAG]`` runs image ``apachepulsar/pulsar:TAG``.

The launch is split in two: a pure ``LaunchPlan`` (what to run, unit-tested) and its execution
through the ``testcontainers`` package (``DockerBackend``, the only part that needs an engine).

- The plan (``launch_plan``) starts standalone the way testcontainers' own PulsarContainer does
  (org.testcontainers.pulsar.PulsarContainer): ``/bin/bash -c
  "/pulsar/bin/apply-config-from-env.py /pulsar/conf/standalone.conf && bin/pulsar standalone
  --no-functions-worker -nss"``, broker config as ``PULSAR_PREFIX_<key>=<value>`` environment
  (written into standalone.conf by apply-config-from-env.py), ``PULSAR_MEM`` bounding the JVM.
  The default tag is the 4.0 LTS line's latest, 4.0.13 (Pulsar's release policy).
- Readiness (``_await_ready``): standalone_conf's checks (GET /admin/v2/clusters answers exactly
  ``["standalone"]``, as PulsarContainer checks, and public/default exists), polled within
  ``start_timeout`` (120 s). A container that exits, or is not ready in time, is a TargetError
  with its last output.
- Ports: a Pulsar broker answers lookups with its *advertised* address and its *own* port, and
  clients (pulsar-client, REST redirects) then connect there. A random host port mapped to 6650
  would send them to a port nothing listens on, so the plan makes the broker listen on free
  ports P and Q (``brokerServicePort``/``webServicePort``), binds them to the same numbers on the
  Docker host, and advertises the Docker host's address (``advertisedAddress``). Without chosen
  ports the plan is PulsarContainer's 6650/8080.
- The engine check: before anything else, a Docker engine must answer ``/_ping`` within 1 s
  (``docker_engine_problem``); otherwise start() raises TargetError "no Docker engine reachable
  (<why>): pulsar-container:<tag> skipped" at once, and the runner records every case of the
  target target-error with that reason. Nothing is pulled or waited for.
- Configuration: every key of targets/config.py starts at Pulsar's default through the
  environment (``config_env``; the image's standalone.conf is not trusted to have them). Per
  case, dynamic keys are set through the admin REST API and confirmed in the runtime config
  (targets/base.py, ``Target.configure``); a different value of a non-dynamic key replaces the
  container by one started with that environment: one container per config, never two at once.
- stop removes the container (forced) and appends its output to ``<log_dir>/<name>.log``;
  testcontainers' Ryuk reaper removes it too if the harness is killed.
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Protocol

import httpx

from conformance.errors import TargetError, UsageError
from conformance.targets import config as pulsar_config
from conformance.targets import standalone_conf
from conformance.targets.base import Target
from conformance.targets.process import free_ports
from conformance.targets.standalone_conf import READY_CHECKS, ReadyCheck

IMAGE_REPOSITORY = "apachepulsar/pulsar"
DEFAULT_TAG = "4.0.13"  # 4.0 LTS, latest patch (Pulsar's release policy)
BROKER_PORT = 6650
HTTP_PORT = 8080
STANDALONE = ("/pulsar/bin/apply-config-from-env.py /pulsar/conf/standalone.conf && "
              "bin/pulsar standalone --no-functions-worker -nss")
PULSAR_MEM = "-Xms256m -Xmx512m -XX:MaxDirectMemorySize=256m"
ENV_PREFIX = "PULSAR_PREFIX_"
START_TIMEOUT = 120.0
ENGINE_CHECK_TIMEOUT = 1.0
DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z")  # Docker's tag grammar


def check_tag(tag: str) -> str:
    if not _TAG.match(tag or ""):
        raise UsageError(f"bad image tag {tag!r} for pulsar-container: expected a Docker tag such as "
                         f"{DEFAULT_TAG} (pulsar-container:TAG runs {IMAGE_REPOSITORY}:TAG)")
    return tag


# -- the plan (pure) ------------------------------------------------------------------------------

@dataclass(frozen=True)
class LaunchPlan:
    tag: str
    image: str
    command: tuple[str, ...]
    env: Mapping[str, str]
    ports: Mapping[int, int]  # container port -> host port
    broker_port: int
    web_port: int
    advertised_address: str
    ready_checks: tuple[ReadyCheck, ...] = READY_CHECKS
    start_timeout: float = START_TIMEOUT
    broker_config: Mapping[str, str] = field(default_factory=dict)  # what the env sets, by key

    def service_url(self, host: str) -> str:
        return f"pulsar://{host}:{self.ports[self.broker_port]}"

    def admin_url(self, host: str) -> str:
        return f"http://{host}:{self.ports[self.web_port]}"


def config_env(static: Mapping[str, str]) -> dict[str, str]:
    """PULSAR_PREFIX_ variables: Pulsar's defaults for every known key, overlaid with ``static``."""
    values = pulsar_config.effective({k: pulsar_config.normalise(v) for k, v in static.items()})
    return {f"{ENV_PREFIX}{key}": value for key, value in sorted(values.items())}


def launch_plan(tag: Optional[str] = None, static: Optional[Mapping[str, str]] = None, *,
                broker_port: Optional[int] = None, web_port: Optional[int] = None,
                advertised_address: str = "localhost", start_timeout: float = START_TIMEOUT) -> LaunchPlan:
    """What to run for ``apachepulsar/pulsar:<tag>`` with broker config ``static``: PulsarContainer's
    command, every key in the environment, chosen ports bound to the same numbers and advertised."""
    tag = check_tag(tag or DEFAULT_TAG)
    broker_port = broker_port or BROKER_PORT
    web_port = web_port or HTTP_PORT
    env = {"PULSAR_MEM": PULSAR_MEM, **config_env(static or {}),
           f"{ENV_PREFIX}advertisedAddress": advertised_address,
           f"{ENV_PREFIX}brokerServicePort": str(broker_port),
           f"{ENV_PREFIX}webServicePort": str(web_port)}
    config = {key[len(ENV_PREFIX):]: value for key, value in env.items() if key.startswith(ENV_PREFIX)}
    return LaunchPlan(tag=tag, image=f"{IMAGE_REPOSITORY}:{tag}", command=("/bin/bash", "-c", STANDALONE),
                      env=env, ports={broker_port: broker_port, web_port: web_port}, broker_port=broker_port,
                      web_port=web_port, advertised_address=advertised_address, start_timeout=start_timeout,
                      broker_config=config)


def readiness_problem(plan: LaunchPlan, answers: Mapping[str, tuple[int, str]]) -> Optional[str]:
    """None when every check of ``plan`` is satisfied by ``answers`` (path -> (status, body))."""
    return standalone_conf.readiness_problem(plan.ready_checks, answers)


# -- the engine check (bounded) ---------------------------------------------------------------------

def docker_engine_problem(timeout: float = ENGINE_CHECK_TIMEOUT) -> Optional[str]:
    """None when a Docker engine answers /_ping within ``timeout`` seconds, else why not.

    The engine is the one testcontainers would use (its properties file, DOCKER_HOST, the docker
    context, else the default socket). The ping runs in a daemon thread joined with the bound,
    so a host that accepts and never answers cannot hold the run.
    """
    started = time.monotonic()
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


class DockerBackend:
    """Runs plans with testcontainers; imported lazily, after the engine check passed."""

    def problem(self, timeout: float) -> Optional[str]:
        return docker_engine_problem(timeout)

    def host(self) -> str:
        """The address of the Docker host as seen from here (testcontainers' own answer)."""
        from testcontainers.core.docker_client import DockerClient

        client = DockerClient()
        try:
            return client.host()
        finally:
            client.client.close()

    def launch(self, plan: LaunchPlan) -> RunningContainer:
        """Create and start the container (pulling the image when absent); not yet ready."""
        from testcontainers.core.container import DockerContainer

        container = DockerContainer(plan.image, command=list(plan.command), env=dict(plan.env))
        for container_port, host_port in plan.ports.items():
            container.with_bind_ports(container_port, host_port)
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
        try:
            wrapped = self.container.get_wrapped_container()
            wrapped.reload()
            return wrapped.status == "running"
        except Exception:  # noqa: BLE001 - gone
            return False

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


class ContainerTarget(Target):
    kind = "pulsar-container"
    confirms_dynamic_config = True

    def __init__(self, tag: Optional[str] = None, name: Optional[str] = None, *, backend=None,
                 start_timeout: float = START_TIMEOUT, engine_timeout: float = ENGINE_CHECK_TIMEOUT, **kwargs):
        self.tag = check_tag(tag or DEFAULT_TAG)
        super().__init__(name or f"pulsar-container-{self.tag}", start_timeout=start_timeout, **kwargs)
        self.backend = backend or DockerBackend()
        self.engine_timeout = engine_timeout
        self.static: dict[str, str] = {}  # non-dynamic keys the running container was started with
        self.plan: Optional[LaunchPlan] = None
        self.container: Optional[RunningContainer] = None
        self.warnings: list[str] = []
        self._engine_ok = False

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.tag}"

    # -- lifecycle ---------------------------------------------------------------------------

    def _launch(self) -> None:
        if not self._engine_ok:  # no engine: fail at once, nothing pulled or waited for
            problem = self.backend.problem(self.engine_timeout)
            if problem:
                raise TargetError(f"no Docker engine reachable ({problem}): {self.spec} skipped")
            self._engine_ok = True
        host = self.backend.host()
        for attempt in range(2):  # a free port may be taken meanwhile: once more on new ones
            broker_port, web_port = free_ports(2)
            self.plan = launch_plan(self.tag, self.static, broker_port=broker_port, web_port=web_port,
                                    advertised_address=host, start_timeout=self.start_timeout)
            try:
                self.container = self.backend.launch(self.plan)
                break
            except Exception as exc:  # noqa: BLE001 - the reason goes into the TargetError
                text = str(exc)
                if attempt == 0 and ("already allocated" in text or "address already in use" in text.lower()):
                    continue
                raise TargetError(f"{self.spec}: cannot start a container of {self.plan.image}: "
                                  f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}") from exc
        self.service_url, self.admin_url = self.plan.service_url(host), self.plan.admin_url(host)
        self.generation += 1
        self._await_ready()

    def _await_ready(self) -> None:
        """Poll the plan's readiness checks within its start_timeout; an exited container fails at once."""
        plan = self.plan
        deadline = time.monotonic() + plan.start_timeout
        problem = "no answer yet"
        with httpx.Client(timeout=min(2.0, self.timeout)) as client:
            while True:
                answers: dict[str, tuple[int, str]] = {}
                for check in plan.ready_checks:
                    try:
                        response = client.get(self.admin_url + check.path)
                        answers[check.path] = (response.status_code, response.text)
                    except httpx.HTTPError as exc:
                        answers[check.path] = (0, f"{type(exc).__name__}: {exc}")
                        break
                problem = readiness_problem(plan, answers)
                if problem is None:
                    return
                if not self.container.running():
                    raise TargetError(f"{self.spec}: the container stopped before it was ready ({problem})\n"
                                      f"last output:\n{_tail(self.container.logs())}")
                if time.monotonic() >= deadline:
                    raise TargetError(f"{self.spec} was not ready within {plan.start_timeout:g} s: {problem}\n"
                                      f"last output:\n{_tail(self.container.logs())}")
                time.sleep(0.5)

    def detect(self) -> None:
        super().detect()
        if _looks_like_release(self.tag) and self.version and self.tag not in self.version:
            warning = f"image tag {self.tag} but the broker reports version {self.version}"
            if warning not in self.warnings:
                self.warnings.append(warning)

    def stop(self) -> None:
        container, self.container = self.container, None
        if container is None:
            return
        self._save_logs(container)
        try:
            container.stop()
        except Exception as exc:  # noqa: BLE001 - Ryuk removes it when we exit
            print(f"conformance: warning: removing the container of {self.name} failed: {exc}")

    def _save_logs(self, container: RunningContainer) -> None:
        if not self.log_dir:
            return
        try:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            with open(Path(self.log_dir) / f"{self.name}.log", "a", encoding="utf-8") as log:
                log.write(f"--- {self.plan.image if self.plan else self.spec} config {self.static or 'defaults'}\n")
                log.write(container.logs())
        except OSError:
            pass

    # -- configuration: one container per config, never two at once ----------------------------

    def _configure(self, wanted: dict[str, str]) -> None:
        self._configure_by_restart(wanted, same=lambda a, b: config_env(a) == config_env(b))

    def describe(self) -> dict[str, str]:
        info = super().describe()
        info["image"] = f"{IMAGE_REPOSITORY}:{self.tag}"
        if self.static:
            info["config"] = ", ".join(f"{k}={v}" for k, v in sorted(self.static.items()))
        if self.warnings:
            info["warning"] = "; ".join(self.warnings)
        return info


def _looks_like_release(tag: str) -> bool:
    return bool(re.match(r"^\d+\.\d+\.\d+$", tag))
