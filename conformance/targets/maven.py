"""Apache Pulsar's broker as Maven artifacts: resolve a release's runtime classpath once, reuse it.

Apache Pulsar publishes every release to Maven Central as jars, its standalone launcher
(``org.apache.pulsar.PulsarStandaloneStarter``) included in ``org.apache.pulsar:pulsar-broker``.
Resolving that artifact with its runtime dependencies gives a complete classpath; no tarball and
no Docker image is needed. Another artifact of the release resolves the same way (``artifact=``:
``pulsar-proxy`` for Apache Pulsar's proxy, targets/proxy.py), cached beside the broker's; ``pins=``
holds named modules of Pulsar's at another release (a module the repository does not serve at the
artifact's own; the classpath file's name says so).

``resolve`` keeps these:

- Everything lives in one cache outside the repository (``cache_dir``:
  ``PULSAR_CONFORMANCE_CACHE``, else ``~/.cache/pulsar-conformance``): Maven's local repository
  under ``m2/`` and one classpath file per release under ``classpaths/``. A classpath file whose
  jars all still exist is reused without running Maven (``read_classpath``).
- The generated pom (``pom_text``) imports ``org.apache.pulsar:pulsar:<version>`` as a BOM, so
  every third-party library has the version that release was built and tested with (without it
  Maven picks other versions, and for 3.0.x its conflict resolution never finishes).
- Maven runs with a settings file that sends every repository to Maven Central
  (``maven-settings.xml`` beside this module; ``PULSAR_CONFORMANCE_MAVEN_SETTINGS`` names another,
  e.g. a company mirror): Pulsar's poms declare other repositories that may be unreachable and
  are not needed for the broker.
- Every failure is a ``TargetError`` that names the problem and the fix: no Java or Maven
  installed, a version that is not a release number, artifacts the repository does not serve
  (listed by coordinates), a resolution that exceeds its time bound.
- Two resolutions never write the local repository at once (a file lock), so several
  ``pulsar-standalone`` targets of one run, or two runs, can share the cache.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

from conformance.errors import TargetError, UsageError

GROUP = "org.apache.pulsar"
BROKER_ARTIFACT = "pulsar-broker"
PROXY_ARTIFACT = "pulsar-proxy"
BOM_ARTIFACT = "pulsar"
RESOLVE_TIMEOUT = 900.0
SETTINGS = Path(__file__).with_name("maven-settings.xml")
_RELEASE = re.compile(r"^\d+\.\d+\.\d+\Z")
# Maven's ways of saying an artifact is missing; the coordinates are group:artifact:type:version.
_MISSING = (re.compile(r"Could not find artifact (\S+)"),
            re.compile(r"Failure to find (\S+)"),
            re.compile(r"Could not transfer artifact (\S+)"),
            re.compile(r"Failed to read artifact descriptor for (\S+)"),
            re.compile(r"(\S+:\S+:\S+:\S+) was not found in"))
_COORDINATES = re.compile(r"^[\w.\-]+:[\w.\-]+(:[\w.\-]+){1,3}\Z")


def cache_dir() -> Path:
    """The one cache, outside the repository: ``PULSAR_CONFORMANCE_CACHE``, else
    ``~/.cache/pulsar-conformance``."""
    configured = os.environ.get("PULSAR_CONFORMANCE_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "pulsar-conformance"


def check_version(version: str) -> str:
    if not _RELEASE.match(version or ""):
        raise UsageError(f"bad Apache Pulsar version {version!r}: expected a release number such as 4.0.7 "
                         f"(pulsar-standalone:VERSION runs {GROUP}:{BROKER_ARTIFACT}:VERSION)")
    return version


def pom_text(version: str, artifact: str = BROKER_ARTIFACT, pins: Optional[Mapping[str, str]] = None) -> str:
    """The pom whose runtime classpath is ``artifact``'s (the standalone's by default), the release's own
    BOM imported; each of ``pins`` (a module of Pulsar's -> its release) declared before the BOM, so
    it wins over the BOM's version."""
    name = "pulsar-standalone" if artifact == BROKER_ARTIFACT else artifact
    pinned = "".join(f"""
      <dependency>
        <groupId>{GROUP}</groupId><artifactId>{module}</artifactId><version>{pin}</version>
      </dependency>""" for module, pin in sorted((pins or {}).items()))
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>pulsar-conformance</groupId>
  <artifactId>{name}-{version}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencyManagement>
    <dependencies>{pinned}
      <dependency>
        <groupId>{GROUP}</groupId><artifactId>{BOM_ARTIFACT}</artifactId><version>{version}</version>
        <type>pom</type><scope>import</scope>
      </dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency>
      <groupId>{GROUP}</groupId><artifactId>{artifact}</artifactId><version>{version}</version>
    </dependency>
  </dependencies>
</project>
"""


def maven_command(pom: Path, repository: Path, classpath_file: Path, settings: Path) -> list[str]:
    return ["mvn", "-B", "-q", "-s", str(settings), f"-Dmaven.repo.local={repository}", "-f", str(pom),
            "dependency:build-classpath", f"-Dmdep.outputFile={classpath_file}", "-Dmdep.includeScope=runtime"]


def missing_artifacts(output: str) -> list[str]:
    """Coordinates Maven says it could not find or read, in the order it named them."""
    found: list[str] = []

    def add(text: str) -> None:
        text = text.strip().rstrip(":,.")
        if _COORDINATES.match(text) and text not in found:
            found.append(text)

    listed = re.search(r"could not be resolved: (.+?)(?:: [A-Z]|$)", output, re.MULTILINE)
    if listed:
        for part in listed.group(1).split(", "):
            add(part)
    for pattern in _MISSING:
        for match in pattern.finditer(output):
            add(match.group(1))
    return found


@dataclass(frozen=True)
class Classpath:
    version: str
    jars: tuple[Path, ...]
    file: Path
    resolved_s: float  # seconds Maven took; 0.0 when the cached file was reused
    artifact: str = BROKER_ARTIFACT

    def text(self) -> str:
        return os.pathsep.join(str(jar) for jar in self.jars)


def read_classpath(file: Path, version: str, artifact: str = BROKER_ARTIFACT) -> Optional[Classpath]:
    """The cached classpath of ``artifact`` ``version`` when every jar it names still exists."""
    try:
        text = file.read_text().strip()
    except OSError:
        return None
    jars = tuple(Path(part) for part in text.split(os.pathsep) if part)
    if not jars or not all(jar.is_file() for jar in jars):
        return None
    if not any(jar.name == f"{artifact}-{version}.jar" for jar in jars):
        return None
    return Classpath(version, jars, file, 0.0, artifact)


def classpath_name(version: str, artifact: str = BROKER_ARTIFACT, pins: Optional[Mapping[str, str]] = None) -> str:
    """``pulsar-proxy-4.0.8``; with pins, ``pulsar-proxy-4.0.8+pulsar-opentelemetry-4.0.7``."""
    return "+".join([f"{artifact}-{version}", *(f"{module}-{pin}" for module, pin in sorted((pins or {}).items()))])


def resolve(version: str, *, cache: Optional[Path] = None, timeout: float = RESOLVE_TIMEOUT,
            maven: Optional[str] = None, artifact: str = BROKER_ARTIFACT,
            pins: Optional[Mapping[str, str]] = None) -> Classpath:
    """The runtime classpath of Apache Pulsar ``version``'s ``artifact`` (the broker by default),
    ``pins`` at their own releases, resolved once and cached; a failure is a TargetError naming the fix."""
    check_version(version)
    cache = cache or cache_dir()
    name = classpath_name(version, artifact, pins)
    file = cache / "classpaths" / f"{name}.txt"
    cached = read_classpath(file, version, artifact)
    if cached is not None:
        return cached
    executable = maven or shutil.which("mvn")
    if not executable:
        raise TargetError("Maven (mvn) is not installed, so Apache Pulsar's jars cannot be resolved; "
                          "install it (apt-get install maven, or `make system-maven`)")
    settings = Path(os.environ.get("PULSAR_CONFORMANCE_MAVEN_SETTINGS") or SETTINGS)
    work = cache / "poms" / (version if artifact == BROKER_ARTIFACT and not pins else name)
    work.mkdir(parents=True, exist_ok=True)
    pom = work / "pom.xml"
    pom.write_text(pom_text(version, artifact, pins))
    file.parent.mkdir(parents=True, exist_ok=True)
    partial = file.with_suffix(".partial")
    command = maven_command(pom, cache / "m2", partial, settings)
    command[0] = executable
    with open(cache / "m2.lock", "a") as lock:  # never two resolutions writing the local repository
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            cached = read_classpath(file, version, artifact)  # another process may have resolved it meanwhile
            if cached is not None:
                return cached
            started = time.monotonic()
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                      stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                raise TargetError(f"resolving {GROUP}:{artifact}:{version} with Maven took more than "
                                  f"{timeout:g} s; check the network, or resolve once by hand with: "
                                  f"{' '.join(command)}") from None
            except OSError as exc:
                raise TargetError(f"cannot run Maven ({executable}): {exc}") from exc
            elapsed = time.monotonic() - started
            if done.returncode != 0:
                raise TargetError(resolution_failure(version, done.stdout + done.stderr, artifact))
            partial.replace(file)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    resolved = read_classpath(file, version, artifact)
    if resolved is None:
        raise TargetError(f"Maven resolved {GROUP}:{artifact}:{version} but {file} does not name "
                          f"its jars; delete {cache / 'classpaths'} and try again")
    return Classpath(version, resolved.jars, file, elapsed, artifact)


def resolution_failure(version: str, output: str, artifact: str = BROKER_ARTIFACT) -> str:
    """The reason a failed resolution gives: the missing artifacts, or Maven's own error line."""
    missing = missing_artifacts(output)
    what = f"Apache Pulsar {version}" if artifact == BROKER_ARTIFACT else f"Apache Pulsar's {artifact} {version}"
    if missing:
        first = missing[0]
        if first.startswith(f"{GROUP}:{BOM_ARTIFACT}:pom:{version}") or \
                first.startswith(f"{GROUP}:{artifact}:") and first.endswith(f":{version}"):
            return (f"{what} is not served by the Maven repository ({first} is missing); "
                    f"pick a release it serves")
        return (f"{what} cannot be resolved: the Maven repository lacks "
                f"{', '.join(missing)}; pick another release")
    errors = [line.strip() for line in output.splitlines() if "[ERROR]" in line and line.strip() != "[ERROR]"]
    detail = errors[0] if errors else (output.strip().splitlines() or ["(no output)"])[-1]
    return f"Maven could not resolve {GROUP}:{artifact}:{version}: {detail[:500]}"
