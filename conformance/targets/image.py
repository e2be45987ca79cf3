"""The image a ``pulsar-container:VERSION`` target runs: Apache Pulsar's own, or one made here.

``choose_image`` decides, once per target (``PULSAR_CONFORMANCE_IMAGE``: ``auto``, the default,
``official`` or ``local``):

- **official**: ``apachepulsar/pulsar:VERSION`` when the engine already has it, or when a pull
  succeeds within ``PULL_TIMEOUT``. Where a registry is reachable (a user's CI) this is the image.
- **local**: where it cannot be pulled (no registry, as on the project's machines), an image made
  on this machine from two things the machine can reach, and reused by content:

  1. a Debian base (``BasePlan``): ``mmdebstrap --variant=minbase`` with a Java 17 runtime,
     ``ca-certificates`` and ``procps`` into a tar, imported with the engine's image import;
  2. on top of it, that release's broker jars exactly as ``pulsar-standalone:VERSION`` runs them
     (targets/maven.py resolves the same classpath), and a start script (``start_script``) that
     writes the ``PULSAR_PREFIX_<key>=<value>`` environment into the configuration file, as the
     official image's apply-config-from-env.py does, then starts
     ``org.apache.pulsar.PulsarStandaloneStarter`` with standalone.py's JVM options.

  Each image's tag carries a digest of what went into it (``BasePlan.digest``: the mmdebstrap
  command and the import changes; ``ImagePlan.digest``: the Dockerfile, the start script, the
  classpath file, each jar's name and size, and the base image's id), so an image is built once per
  machine and rebuilt only when one of those changes. The engine keeps images across restarts.

Bounds: pulling ``PULL_TIMEOUT`` (600 s); the whole preparation (Maven's resolution, the base and
the broker image) ``PREPARE_TIMEOUT`` (1800 s; measured here: 82-86 s the first time,
under a second when reused). Two preparations never build at once (a lock file in the cache,
waited for within the same bound). Every failure is a TargetError naming its cause: no mmdebstrap,
a version Maven cannot resolve (maven.py's reason), a build that failed (its last output).

Build folders live under ``<cache>/docker/work/build-<pid>-...``: removed when the preparation
ends, and by a later preparation when their process is gone.

``python -m conformance.targets.image VERSION [VERSION...]`` prepares images ahead of a run.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

from conformance import children
from conformance.errors import TargetError
from conformance.targets import maven
from conformance.targets.standalone import HEAP, JVM_OPTIONS, MAIN_CLASS

OFFICIAL_REPOSITORY = "apachepulsar/pulsar"
LOCAL_REPOSITORY = "pulsar-conformance/pulsar"
BASE_REPOSITORY = "pulsar-conformance/debian-java"
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
BASE_PACKAGES = ("openjdk-17-jre-headless", "ca-certificates", "procps")
BASE_CHANGES = ("ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "ENV LANG=C.UTF-8")
MODE_ENV = "PULSAR_CONFORMANCE_IMAGE"
MIRROR_ENV = "PULSAR_CONFORMANCE_DEBIAN_MIRROR"
MODES = ("auto", "official", "local")
PULL_TIMEOUT = 600.0
PREPARE_TIMEOUT = 1800.0
DIGEST_LENGTH = 12
START_SCRIPT = "/pulsar/bin/conformance-standalone"
CONF_FILE = "/pulsar/conf/standalone.conf"
DATA_DIR = "/pulsar/data"
CLASSPATH_ARGS = "/pulsar/classpath.args"
LIB_DIR = "/pulsar/lib"
WORK_PREFIX = "build-"
LABEL_DIGEST = "pulsar-conformance.digest"
LABEL_VERSION = "org.apache.pulsar.version"
_RELEASE = re.compile(r"^\d+\.\d+\.\d+\Z")


def _sha256(document) -> str:
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()


# -- the plans (pure) -----------------------------------------------------------------------------

@dataclass(frozen=True)
class BasePlan:
    """The Debian base: what mmdebstrap makes and how it is imported."""

    suite: str = DEBIAN_SUITE
    mirror: str = DEBIAN_MIRROR
    packages: tuple[str, ...] = BASE_PACKAGES
    changes: tuple[str, ...] = BASE_CHANGES

    def command(self, output: Path) -> list[str]:
        # (No path-exclude of /usr/share/man: openjdk's postinst links its man pages and fails without.)
        return ["mmdebstrap", "--variant=minbase", f"--include={','.join(self.packages)}",
                self.suite, str(output), self.mirror]

    @property
    def digest(self) -> str:
        return _sha256({"command": self.command(Path("OUTPUT.tar")), "changes": list(self.changes)})

    @property
    def tag(self) -> str:
        return f"{BASE_REPOSITORY}:{self.suite}-{self.digest[:DIGEST_LENGTH]}"


def base_plan() -> BasePlan:
    return BasePlan(mirror=os.environ.get(MIRROR_ENV) or DEBIAN_MIRROR)


@dataclass(frozen=True)
class Jar:
    name: str  # its file name in LIB_DIR
    source: Path
    size: int


@dataclass(frozen=True)
class ImagePlan:
    """The broker image of one release: its build context's text and files, and the tag they give."""

    version: str
    base_tag: str
    base_id: str
    jars: tuple[Jar, ...]
    dockerfile: str
    script: str
    argfile: str

    @property
    def digest(self) -> str:
        return _sha256({"version": self.version, "base_id": self.base_id, "dockerfile": self.dockerfile,
                        "script": self.script, "argfile": self.argfile,
                        "jars": [[jar.name, jar.size] for jar in self.jars]})

    @property
    def tag(self) -> str:
        return f"{LOCAL_REPOSITORY}:{self.version}-{self.digest[:DIGEST_LENGTH]}"


def start_script(version: str) -> str:
    """The image's entry: the broker configuration from PULSAR_PREFIX_ variables, then the standalone
    as standalone.py starts it (extra arguments, such as --bookkeeper-port, follow)."""
    options = " ".join(JVM_OPTIONS)
    return f"""#!/bin/sh
# Apache Pulsar {version}'s standalone from its Maven jars (pulsar-conformance, conformance/targets/image.py).
# Configuration: every PULSAR_PREFIX_<key>=<value> variable becomes <key>=<value> in {CONF_FILE}.
set -eu
mkdir -p {Path(CONF_FILE).parent} {DATA_DIR}/tmp
env | sed -n 's/^PULSAR_PREFIX_//p' | sort > {CONF_FILE}
exec java ${{PULSAR_MEM:-{' '.join(HEAP)}}} {options} -Djava.io.tmpdir={DATA_DIR}/tmp @{CLASSPATH_ARGS} \\
  {MAIN_CLASS} -c {CONF_FILE} -nss -nfw \\
  --metadata-dir {DATA_DIR}/metadata --bookkeeper-dir {DATA_DIR}/bookie "$@"
"""


def dockerfile(base_tag: str, version: str) -> str:
    return f"""FROM {base_tag}
COPY lib/ {LIB_DIR}/
COPY classpath.args {CLASSPATH_ARGS}
COPY conformance-standalone {START_SCRIPT}
WORKDIR /pulsar
LABEL {LABEL_VERSION}="{version}"
CMD ["{START_SCRIPT}"]
"""


def image_jars(paths: Sequence[Path], size_of: Callable[[Path], int] = lambda p: p.stat().st_size) -> tuple[Jar, ...]:
    """The classpath's jars under distinct file names, in classpath order."""
    jars, taken = [], set()
    for index, path in enumerate(paths):
        name = path.name
        if name in taken:
            name = f"{index}-{name}"
        taken.add(name)
        jars.append(Jar(name, Path(path), size_of(Path(path))))
    return tuple(jars)


def image_plan(version: str, jar_paths: Sequence[Path], base_tag: str, base_id: str,
               size_of: Optional[Callable[[Path], int]] = None) -> ImagePlan:
    jars = image_jars(jar_paths, size_of) if size_of else image_jars(jar_paths)
    argfile = "-cp\n" + ":".join(f"{LIB_DIR}/{jar.name}" for jar in jars) + "\n"
    return ImagePlan(version=version, base_tag=base_tag, base_id=base_id, jars=jars,
                     dockerfile=dockerfile(base_tag, version), script=start_script(version), argfile=argfile)


def write_context(plan: ImagePlan, folder: Path) -> None:
    """The build context: the Dockerfile, the script, the classpath file, the jars (hard links
    where the cache is on the same file system, copies otherwise)."""
    (folder / "lib").mkdir(parents=True, exist_ok=True)
    (folder / "Dockerfile").write_text(plan.dockerfile)
    (folder / "classpath.args").write_text(plan.argfile)
    script = folder / "conformance-standalone"
    script.write_text(plan.script)
    script.chmod(0o755)
    for jar in plan.jars:
        target = folder / "lib" / jar.name
        try:
            os.link(jar.source, target)
        except OSError:
            shutil.copyfile(jar.source, target)
        target.chmod(0o644)


# -- what was chosen --------------------------------------------------------------------------------

@dataclass
class ChosenImage:
    ref: str  # what containers are created from
    kind: str  # "official" or "local"
    image_id: str = ""
    how: str = ""  # "present", "pulled", "reused", "built"
    seconds: dict[str, float] = field(default_factory=dict)  # pull, resolve, base_build, build, prepare
    why_local: str = ""  # why the official image was not used

    def describe(self) -> str:
        timing = ", ".join(f"{key} {value:.1f} s" for key, value in self.seconds.items())
        return f"{self.ref} ({self.kind}, {self.how}{'; ' + timing if timing else ''})"


def check_mode(mode: Optional[str]) -> str:
    mode = (mode or os.environ.get(MODE_ENV) or "auto").strip().lower()
    if mode not in MODES:
        raise TargetError(f"{MODE_ENV}={mode!r}: expected one of {', '.join(MODES)}")
    return mode


# -- the engine side (docker-py, as testcontainers uses it) ----------------------------------------

def _docker_client(timeout: float):
    import docker
    from testcontainers.core.docker_client import get_docker_host

    host = get_docker_host()
    environment = {**os.environ, **({"DOCKER_HOST": host} if host else {})}
    return docker.from_env(environment=environment, timeout=max(1, int(timeout)))


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"[:400]


def _bounded(action: Callable[[], object], timeout: float, what: str, on_timeout: Callable[[], None] = lambda: None):
    """``action()`` in a daemon thread joined within ``timeout``; TargetError when it overruns."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = action()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            outcome["error"] = exc

    thread = threading.Thread(target=run, name=what, daemon=True)
    thread.start()
    thread.join(max(0.0, timeout))
    if thread.is_alive():
        on_timeout()
        raise TargetError(f"{what} did not end within {timeout:g} s")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome.get("value")


class Engine:
    """The image operations a preparation needs, each bounded."""

    def __init__(self, client_factory: Callable[[float], object] = _docker_client):
        self.client_factory = client_factory

    def image_id(self, ref: str) -> Optional[str]:
        import docker

        client = self.client_factory(30)
        try:
            return client.images.get(ref).id
        except docker.errors.ImageNotFound:
            return None
        finally:
            client.close()

    def pull(self, ref: str, timeout: float) -> Optional[str]:
        """None when ``ref`` was pulled, else why not (an error or the bound)."""
        client = self.client_factory(timeout)
        repository, _, tag = ref.rpartition(":")
        try:
            _bounded(lambda: client.images.pull(repository, tag=tag), timeout, f"pulling {ref}", client.close)
            return None
        except TargetError as exc:
            return str(exc)
        except Exception as exc:  # noqa: BLE001 - the reason is the answer
            return _first_line(exc)
        finally:
            client.close()

    def import_tar(self, tar: Path, tag: str, changes: Iterable[str], timeout: float) -> str:
        client = self.client_factory(timeout)
        repository, _, name = tag.rpartition(":")
        try:
            _bounded(lambda: client.api.import_image_from_file(str(tar), repository=repository, tag=name,
                                                               changes=list(changes)),
                     timeout, f"importing {tar.name} as {tag}", client.close)
            return client.images.get(tag).id
        finally:
            client.close()

    def build(self, context: Path, tag: str, labels: dict[str, str], timeout: float,
              buildargs: Optional[dict[str, str]] = None) -> str:
        """Build ``context`` as ``tag``; TargetError with the build's last output when it fails."""
        client = self.client_factory(timeout)
        lines: list[str] = []

        def build() -> None:
            for chunk in client.api.build(path=str(context), tag=tag, rm=True, forcerm=True, pull=False,
                                          decode=True, labels=labels, timeout=int(timeout),
                                          buildargs=buildargs):
                if "stream" in chunk:
                    lines.extend(line for line in chunk["stream"].splitlines() if line.strip())
                if "error" in chunk:
                    lines.append(str(chunk["error"]).strip())
                    raise TargetError("the engine refused the build")

        try:
            _bounded(build, timeout, f"building {tag}", client.close)
            return client.images.get(tag).id
        except Exception as exc:
            tail = "\n".join(lines[-12:]) or "(no output)"
            raise TargetError(f"building image {tag} failed: {_first_line(exc)}\nlast output:\n{tail}") from exc
        finally:
            client.close()


# -- preparation ------------------------------------------------------------------------------------

def docker_state_dir(cache: Optional[Path] = None) -> Path:
    return (cache or maven.cache_dir()) / "docker"


class _Deadline:
    def __init__(self, seconds: float):
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self, what: str) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise TargetError(f"preparing the image took more than {self.seconds:g} s (at: {what})")
        return left


def _lock(path: Path, deadline: _Deadline):
    """The build lock, waited for within the deadline (never two builds at once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a")
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            try:
                deadline.left("waiting for another image build to finish")
            except TargetError:
                handle.close()
                raise
            time.sleep(1.0)


def _say(message: str) -> None:
    print(f"conformance: {message}", file=sys.stderr, flush=True)


def build_base(engine: Engine, plan: BasePlan, work: Path, deadline: _Deadline) -> str:
    """mmdebstrap into a tar, imported as ``plan.tag``; its image id."""
    if shutil.which("mmdebstrap") is None:
        raise TargetError("apachepulsar/pulsar cannot be pulled and the local image's Debian base needs "
                          "mmdebstrap, which is not installed: apt-get install mmdebstrap (or make docker)")
    tar = work / "base.tar"
    log = work / "mmdebstrap.log"
    command = plan.command(tar)
    with open(log, "wb") as out:
        child = children.popen(command, death_signal="TERM", stdout=out, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True,
                               env={**os.environ, "TMPDIR": str(work)})
        try:
            code = child.wait(deadline.left("mmdebstrap"))
        except (subprocess.TimeoutExpired, TargetError):
            _end_group(child)
            raise TargetError(f"mmdebstrap did not finish within the preparation's {deadline.seconds:g} s; "
                              f"last output:\n{_tail_file(log)}") from None
    if code != 0:
        raise TargetError(f"mmdebstrap failed (exit {code}): {' '.join(command)}\nlast output:\n{_tail_file(log)}")
    image_id = engine.import_tar(tar, plan.tag, plan.changes, deadline.left("importing the base"))
    tar.unlink(missing_ok=True)
    return image_id


def _end_group(child: subprocess.Popen) -> None:
    """SIGTERM to the child's group (mmdebstrap unmounts what it mounted), SIGKILL after a bound."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 5)):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            return
        try:
            child.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail_file(path: Path, count: int = 12) -> str:
    """The last lines of a log, after its first line that names an error when that came earlier."""
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no output)"
    tail = lines[-count:]
    first_error = next((line for line in lines if re.search(r"\berror\b", line, re.IGNORECASE)), None)
    if first_error is not None and first_error not in tail:
        tail = [first_error, "...", *tail]
    return "\n".join(tail) or "(no output)"


def prepare_local(version: str, *, engine: Optional[Engine] = None, cache: Optional[Path] = None,
                  timeout: float = PREPARE_TIMEOUT, maven_executable: Optional[str] = None,
                  say: Callable[[str], None] = _say) -> ChosenImage:
    """The local image of Apache Pulsar ``version``, built when the engine lacks its digest's tag."""
    if not _RELEASE.match(version):
        raise TargetError(f"a local image needs an Apache Pulsar release number, not {version!r}")
    engine = engine or Engine()
    deadline = _Deadline(timeout)
    started = time.monotonic()
    chosen = ChosenImage(ref="", kind="local")
    try:
        classpath = maven.resolve(version, cache=cache, maven=maven_executable,
                                  timeout=min(maven.RESOLVE_TIMEOUT, deadline.left("resolving the jars")))
    except TargetError as exc:
        raise TargetError(f"cannot make the local image of Apache Pulsar {version}: {exc}") from exc
    if classpath.resolved_s:
        chosen.seconds["resolve"] = classpath.resolved_s
    state = docker_state_dir(cache)
    work_root = state / "work"
    work_root.mkdir(parents=True, exist_ok=True)
    children.remove_folders_of_gone(WORK_PREFIX, work_root)
    lock = _lock(state / "images.lock", deadline)
    work = Path(tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{os.getpid()}-", dir=work_root))
    try:
        base = base_plan()
        base_id = engine.image_id(base.tag)
        if base_id is None:
            say(f"making the Debian base image {base.tag} with mmdebstrap (once per machine; "
                f"bounded by {timeout:g} s in all)")
            began = time.monotonic()
            base_id = build_base(engine, base, work, deadline)
            chosen.seconds["base_build"] = round(time.monotonic() - began, 1)
        plan = image_plan(version, classpath.jars, base.tag, base_id)
        chosen.ref = plan.tag
        image_id = engine.image_id(plan.tag)
        if image_id is None:
            say(f"building {plan.tag}: Apache Pulsar {version}'s {len(plan.jars)} Maven jars on {base.tag}")
            began = time.monotonic()
            write_context(plan, work / "context")
            image_id = engine.build(work / "context", plan.tag, {LABEL_DIGEST: plan.digest, LABEL_VERSION: version},
                                    deadline.left("building the image"))
            chosen.seconds["build"] = round(time.monotonic() - began, 1)
            chosen.how = "built"
        else:
            chosen.how = "reused"
        chosen.image_id = image_id
    finally:
        shutil.rmtree(work, ignore_errors=True)
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
    chosen.seconds["prepare"] = round(time.monotonic() - started, 1)
    return chosen


def choose_image(tag: str, *, mode: Optional[str] = None, engine: Optional[Engine] = None,
                 cache: Optional[Path] = None, timeout: float = PREPARE_TIMEOUT,
                 pull_timeout: float = PULL_TIMEOUT, maven_executable: Optional[str] = None,
                 say: Callable[[str], None] = _say) -> ChosenImage:
    """The image ``pulsar-container:<tag>`` runs (see the module's docstring)."""
    mode = check_mode(mode)
    engine = engine or Engine()
    official = f"{OFFICIAL_REPOSITORY}:{tag}"
    why_local = f"{MODE_ENV}=local"
    if mode in ("auto", "official"):
        image_id = engine.image_id(official)
        if image_id:
            return ChosenImage(official, "official", image_id, "present")
        began = time.monotonic()
        problem = engine.pull(official, min(pull_timeout, timeout))
        if problem is None:
            return ChosenImage(official, "official", engine.image_id(official) or "", "pulled",
                               {"pull": round(time.monotonic() - began, 1)})
        if mode == "official":
            raise TargetError(f"cannot pull {official} ({MODE_ENV}=official): {problem}")
        why_local = f"{official} cannot be pulled: {problem}"
        if not _RELEASE.match(tag):
            raise TargetError(f"{why_local}; and no local image can be made for tag {tag!r}, which is not an "
                              f"Apache Pulsar release number")
    chosen = prepare_local(tag, engine=engine, cache=cache, timeout=timeout, maven_executable=maven_executable,
                           say=say)
    chosen.why_local = why_local
    return chosen


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m conformance.targets.image VERSION...``: prepare each release's image now."""
    versions = list(argv if argv is not None else sys.argv[1:])
    if not versions or any(v.startswith("-") for v in versions):
        print("usage: python -m conformance.targets.image VERSION [VERSION...]", file=sys.stderr)
        return 2
    for key, value in (("TESTCONTAINERS_RYUK_DISABLED", "true"), ("TESTCONTAINERS_CONNECTION_MODE", "docker_host")):
        os.environ.setdefault(key, value)  # as container.py sets them, before testcontainers is imported
    code = 0
    for version in versions:
        try:
            chosen = choose_image(version)
        except TargetError as exc:
            print(f"conformance image: {version}: {exc}", file=sys.stderr)
            code = 2
            continue
        print(f"conformance image: pulsar-container:{version}: {chosen.describe()}")
    return code


if __name__ == "__main__":
    sys.exit(main())
