"""Building the Java client drivers (clients/java) and the command that starts one.

``python -m conformance.drivers.java_build [--client V] [--admin V]`` builds what a run needs
(``make java-drivers`` calls it); the java-client and java-admin drivers call ``driver_command``
when a case first needs them, which builds whatever is missing.

- Nothing lands in the repository: Maven's local repository, the built jars and the resolved
  classpaths live under ``CACHE`` (``$PULSAR_CONFORMANCE_CACHE``, default
  ``~/.cache/pulsar-conformance``), and Maven reads ``clients/java/settings.xml``, which serves
  every repository from Maven Central.
- ``built_jars``: the jars are keyed by a hash of clients/java's files (``source_hash``), so a
  changed driver is rebuilt and an unchanged one never is; they are compiled once against the API
  of ``pulsar.compile.version`` (clients/java/pom.xml).
- ``classpath``: the library version is chosen by the classpath: one file per (driver, version),
  resolved with ``dependency:build-classpath -Dpulsar.client.version=V`` (or
  ``pulsar.admin.version``) and kept. A client release older than the compile API still runs: a
  method it lacks is answered "unsupported" by the driver.
- Builds run under a lock file (``_locked``), so two runs sharing the cache never build at once,
  and are bounded by ``BUILD_TIMEOUT``; a failure raises ``BuildError`` naming the command and
  the end of Maven's output.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "clients" / "java"
CACHE = Path(os.environ.get("PULSAR_CONFORMANCE_CACHE") or Path.home() / ".cache" / "pulsar-conformance")
BUILD_TIMEOUT = 900.0
DEFAULT_CLIENT_VERSION = "4.0.13"  # the newest release of the 4.0 LTS line this workplace's mirror serves
DEFAULT_ADMIN_VERSION = "4.0.13"
DRIVERS = {
    # driver name: (Maven module, version property, main class)
    "java-client": ("client", "pulsar.client.version", "conformance.driver.client.JavaClientDriver"),
    "java-admin": ("admin", "pulsar.admin.version", "conformance.driver.admin.JavaAdminDriver"),
}
# Small heap, fast start: a driver makes a handful of calls per case.
JVM_OPTIONS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-XX:MaxDirectMemorySize=128m",
               "-XX:+ExitOnOutOfMemoryError", "-Djava.net.preferIPv4Stack=true",
               "-Dio.netty.tryReflectionSetAccessible=true",
               "--add-opens", "java.base/java.nio=ALL-UNNAMED",
               "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED")


class BuildError(RuntimeError):
    """A driver could not be built or its classpath resolved."""


def source_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in SOURCES.rglob("*") if p.is_file() and "target" not in p.parts):
        digest.update(str(path.relative_to(SOURCES)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _maven(*args: str) -> list[str]:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BuildError("Maven (mvn) is not installed: run `make java-drivers`, which installs it")
    return [mvn, "-q", "-B", "-s", str(SOURCES / "settings.xml"), f"-Dmaven.repo.local={CACHE / 'm2'}", *args]


def run_build(argv: list[str], what: str, *, cwd: Path = SOURCES, env: Optional[dict] = None,
              timeout: float = BUILD_TIMEOUT) -> None:
    """Run one build command within ``timeout``; BuildError naming ``what`` and the end of its
    output when it fails (the Java drivers' Maven, native_build.py's go and cargo)."""
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise BuildError(f"{what}: {argv[0]} is not installed") from None
    except subprocess.TimeoutExpired:
        raise BuildError(f"{what}: did not finish within {timeout:g} s ({' '.join(argv)})") from None
    if done.returncode != 0:
        tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-8:])
        raise BuildError(f"{what} failed (exit {done.returncode}): {tail}")


@contextmanager
def build_lock(name: str = "java-drivers.lock"):
    """Held while building into the cache, so two runs sharing it never build the same thing at once."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / name, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def built_jars() -> Path:
    """The folder holding this source's driver-core, driver-client and driver-admin jars, built
    when missing."""
    out = CACHE / "java-drivers" / source_hash()
    if (out / ".built").exists():
        return out
    with build_lock():
        if not (out / ".built").exists():
            run_build(_maven(f"-Ddriver.out={out}", "install"), "building clients/java")
            (out / ".built").write_text("ok\n")
    return out


def classpath(driver: str, version: str) -> str:
    """The library classpath of ``driver`` at ``version``, resolved once and kept."""
    module, prop, _ = DRIVERS[driver]
    if not version or any(ch in version for ch in "/\\ ") or version.startswith("-"):
        raise BuildError(f"{driver}: {version!r} is not a release version such as {DEFAULT_CLIENT_VERSION}")
    path = CACHE / "java-drivers" / "classpath" / f"{module}-{version}.txt"
    if not path.exists():
        built_jars()  # the driver-core artifact must be in the local repository
        with build_lock():
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                partial = path.with_suffix(".partial")
                run_build(_maven("-f", str(SOURCES / module / "pom.xml"), "dependency:build-classpath", f"-D{prop}={version}",
                            "-DexcludeArtifactIds=driver-core", f"-Dmdep.outputFile={partial}"),
                     f"resolving {driver} {version} (is it served by the Maven mirror?)")
                partial.replace(path)
    return path.read_text().strip()


def driver_command(driver: str, version: str) -> list[str]:
    """The argv that starts ``driver`` with its library at ``version``, building what is missing."""
    module, _, main = DRIVERS[driver]
    java = shutil.which("java")
    if java is None:
        raise BuildError("java is not installed: run `make java-drivers`, which installs a JDK")
    jars = built_jars()
    own = [jars / "driver-core" / "driver-core-1.jar", jars / f"driver-{module}" / f"driver-{module}-1.jar"]
    return [java, *JVM_OPTIONS, "-cp", os.pathsep.join([*map(str, own), classpath(driver, version)]), main]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.drivers.java_build", description=__doc__.splitlines()[0])
    parser.add_argument("--client", action="append", default=[], metavar="V",
                        help=f"pulsar-client version (repeatable; default {DEFAULT_CLIENT_VERSION})")
    parser.add_argument("--admin", action="append", default=[], metavar="V",
                        help=f"pulsar-client-admin version (repeatable; default {DEFAULT_ADMIN_VERSION})")
    args = parser.parse_args(argv)
    try:
        for driver, versions in (("java-client", args.client or [DEFAULT_CLIENT_VERSION]),
                                 ("java-admin", args.admin or [DEFAULT_ADMIN_VERSION])):
            for version in versions:
                driver_command(driver, version)
                print(f"{driver} {version}: ready")
    except BuildError as exc:
        print(f"java_build: error: {exc}", file=sys.stderr)
        return 1
    print(f"java drivers ready in {CACHE / 'java-drivers'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
