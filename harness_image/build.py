"""``python -m harness_image.build`` (``make image``): the harness as a container image.

The image (harness_image/Dockerfile) holds everything a run needs, so a CI job needs only a Docker
engine: the package in a virtualenv with its dependencies and the reports extra (Spark), the
official Python client, a Java runtime with the Java client drivers already built for the default
client releases, and Node with the Allure CLI. Usage (docs/ci.md)::

    docker run --rm --network host -v "$PWD/out:/out" pulsar-conformance \\
        run --target url:pulsar://127.0.0.1:6650,http://127.0.0.1:8080 --out /out

The build context is prepared here, from what this machine already reaches, so the build itself
fetches nothing when the base has every package:

- ``wheels/``: every dependency's wheel for the image's Python (``PYTHON_VERSION``, Debian's in
  ``SUITE``), pinned to the versions this virtualenv runs (``pip freeze``), so the image judges
  with the same official client as the clone; kept in the cache by what decides them
  (``wheelhouse_key``);
- ``package/``: the package's wheel, built from its sdist as a user's pip would build it;
- ``cache/``: the Java drivers (conformance/drivers/java_build.py) and the classpaths of the
  default client and admin releases, their jars laid out as Maven's local repository under the
  image's ``PULSAR_CONFORMANCE_CACHE`` (``IMAGE_CACHE``); the Go and Rust drivers' binaries at their
  default library versions (conformance/drivers/native_build.py), as the image carries no Go or
  Rust toolchain; link_drivers.py, run in the image, files every driver under the source hash the
  installed package computes;
- ``node/``: package.json, package-lock.json and node_modules (``make node_modules``).

The base (``choose_base``), chosen as the ``pulsar-container`` target chooses its image
(conformance/targets/image.py, ``PULSAR_CONFORMANCE_IMAGE``: ``auto``, ``official``, ``local``):
``debian:trixie-slim`` when the engine has it or can pull it, and otherwise a Debian base made
here with mmdebstrap from ``PACKAGES`` by the same code that makes the Pulsar image's base
(``BasePlan``, ``build_base``), once per machine. The Dockerfile installs whichever of
``PACKAGES`` its base lacks, so the two bases give the same system.

The image's tag is ``pulsar-conformance:<version>-<digest>`` (``ContextPlan.digest``: the
Dockerfile, the base's id and packages, the package's wheel and the drivers by content, the other
wheels by name and size, the classpaths, package-lock.json), also tagged ``pulsar-conformance:latest``:
built once, and again only when one of those changes. Each change of the package's code makes a new
tag, so only the newest ``KEEP_IMAGES`` harness images are kept (``remove_older``): more than one,
as two clones sharing an engine may each be running the image they built last. Waits are bounded as
the Pulsar image's are (a pull ``PULL_TIMEOUT``, base and build ``PREPARE_TIMEOUT``), each pip step
``PIP_TIMEOUT``, and builds of either image never run at once (the same lock file).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = Path(__file__).with_name("Dockerfile")
REPOSITORY = "pulsar-conformance"
DISTRIBUTION = "pulsar-conformance"
EXTRAS = "reports"
OFFICIAL_BASE = "debian:trixie-slim"
SUITE = "trixie"
PYTHON_VERSION = "3.13"  # Debian trixie's python3, on the official base and the local one alike
GLIBC_MINOR = 41  # trixie's glibc 2.41: the newest manylinux tag the image's Python accepts
PACKAGES = ("python3", "python3-venv", "openjdk-21-jre-headless", "nodejs", "ca-certificates", "procps")
# Published only as an sdist: built into a wheel here (it is pure Python), then found like the others.
SDIST_ONLY = ("pyspark",)
IMAGE_CACHE = "/opt/pulsar-conformance/cache"
PIP_TIMEOUT = 1200.0
DIGEST_LENGTH = 12
LABEL_DIGEST = "pulsar-conformance.digest"
LABEL_STAGE = "pulsar-conformance.stage"
KEEP_IMAGES = 3
LINK_SCRIPT = Path(__file__).with_name("link_drivers.py")


class ImageError(RuntimeError):
    """The image could not be prepared; the message names the step and what to do."""


def _sha256(document) -> str:
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# -- what goes in (pure) ----------------------------------------------------------------------------

def platform_tags(machine: str, glibc_minor: int = GLIBC_MINOR) -> list[str]:
    """Every manylinux platform tag a glibc 2.<glibc_minor> system runs, newest first (pip takes the
    list as given and does not widen a manylinux_2_N tag by itself)."""
    tags = [f"manylinux_2_{minor}_{machine}" for minor in range(glibc_minor, 16, -1)]
    tags.append(f"manylinux2014_{machine}")
    if machine in ("x86_64", "i686"):
        tags += [f"manylinux_2_12_{machine}", f"manylinux2010_{machine}",
                 f"manylinux_2_5_{machine}", f"manylinux1_{machine}"]
    return tags


def pip_target_args(machine: str) -> list[str]:
    """pip's options that choose wheels for the image's Python rather than the running one."""
    args = ["--only-binary=:all:", "--python-version", PYTHON_VERSION, "--implementation", "cp",
            "--abi", "cp" + PYTHON_VERSION.replace(".", "")]
    for tag in platform_tags(machine):
        args += ["--platform", tag]
    return args


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(freeze_text: str, exclude: Iterable[str] = (DISTRIBUTION,)) -> list[str]:
    """``name==version`` lines of ``pip freeze``'s output, sorted, without ``exclude`` and without what
    is not a plain pin (an editable install, a direct URL)."""
    skipped = {_normalise(name) for name in exclude}
    found = []
    for line in freeze_text.splitlines():
        line = line.strip()
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)", line)
        if match and _normalise(match.group(1)) not in skipped:
            found.append(f"{_normalise(match.group(1))}=={match.group(2)}")
    return sorted(found)


def pinned_version(pin_lines: Sequence[str], name: str) -> Optional[str]:
    wanted = _normalise(name)
    for line in pin_lines:
        pinned, _, version = line.partition("==")
        if pinned == wanted:
            return version
    return None


def wheelhouse_key(pin_lines: Sequence[str], requires: Sequence[str], machine: str) -> str:
    """What decides the dependency wheels: the pins, the package's own requirements, the target."""
    return _sha256({"pins": list(pin_lines), "requires": sorted(requires), "python": PYTHON_VERSION,
                    "platforms": platform_tags(machine), "extras": EXTRAS, "sdist_only": list(SDIST_ONLY)})[:16]


def wheel_requires(wheel: Path) -> list[str]:
    """The ``Requires-Dist`` lines of a wheel's METADATA."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(name).decode()
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]


def wheel_content_digest(wheel: Path) -> str:
    """A wheel's members and their bytes, not its zip timestamps: equal sources give equal digests."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(wheel) as archive:
        for name in sorted(archive.namelist()):
            digest.update(name.encode() + b"\0" + archive.read(name) + b"\0")
    return digest.hexdigest()


def image_classpath(text: str, host_repository: Path) -> tuple[str, dict[str, Path]]:
    """A classpath file of the host's cache as the image reads it: each jar under the host's Maven
    repository named by the same path under ``IMAGE_CACHE/m2``; also the jars to copy, by that path."""
    jars: dict[str, Path] = {}
    entries = []
    for part in filter(None, text.strip().split(os.pathsep)):
        path = Path(part)
        try:
            relative = path.relative_to(host_repository).as_posix()
        except ValueError:
            raise ImageError(f"classpath entry {path} is outside the Maven repository {host_repository}; "
                             f"rebuild the drivers (make java-drivers)") from None
        jars[relative] = path
        entries.append(f"{IMAGE_CACHE}/m2/{relative}")
    return os.pathsep.join(entries), jars


@dataclass(frozen=True)
class Base:
    ref: str
    image_id: str
    kind: str  # "official" or "local"
    how: str  # "present", "pulled", "reused", "built"
    why_local: str = ""


@dataclass(frozen=True)
class ContextPlan:
    """Everything the build context holds, and the tag it gives."""

    version: str
    base: Base
    dockerfile: str
    own_wheel: Path
    own_wheel_digest: str
    wheels: tuple[Path, ...]
    drivers: dict  # path in the context under cache/java-drivers/built -> file
    native: dict  # path in the context under cache/ (<language>-drivers/built-<version>/...) -> file
    classpaths: dict  # file name under cache/java-drivers/classpath -> text as the image reads it
    jars: dict  # path under cache/m2 -> file
    node: Path  # the folder holding package.json, package-lock.json and node_modules
    lock_digest: str

    @property
    def stage(self) -> str:
        """What the Dockerfile's dependencies stage is made of: the base and the wheels."""
        return _sha256({"base_id": self.base.image_id, "packages": list(PACKAGES), "python": PYTHON_VERSION,
                        "wheels": [[w.name, w.stat().st_size] for w in sorted(self.wheels)]})[:DIGEST_LENGTH]

    @property
    def buildargs(self) -> dict[str, str]:
        return {"BASE": self.base.ref, "PACKAGES": " ".join(PACKAGES), "PYTHON_VERSION": PYTHON_VERSION,
                "VERSION": self.version, "STAGE": self.stage}

    @property
    def digest(self) -> str:
        return _sha256({
            "dockerfile": self.dockerfile, "base_id": self.base.image_id, "buildargs": self.buildargs,
            "own_wheel": [self.own_wheel.name, self.own_wheel_digest],
            "wheels": [[w.name, w.stat().st_size] for w in sorted(self.wheels)],
            "drivers": {k: file_digest(v) for k, v in sorted(self.drivers.items())},
            "native": {k: file_digest(v) for k, v in sorted(self.native.items())},
            "link_script": LINK_SCRIPT.read_text(),
            "classpaths": dict(sorted(self.classpaths.items())),
            "jars": {k: v.stat().st_size for k, v in sorted(self.jars.items())},
            "node_lock": self.lock_digest})

    @property
    def tag(self) -> str:
        return f"{REPOSITORY}:{self.version}-{self.digest[:DIGEST_LENGTH]}"


def _link_or_copy(source, target) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def write_context(plan: ContextPlan, folder: Path) -> None:
    """The build context: hard links into the caches where they share a file system, copies otherwise."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Dockerfile").write_text(plan.dockerfile)
    shutil.copy2(LINK_SCRIPT, folder / LINK_SCRIPT.name)
    for name, wheels in (("wheels", plan.wheels), ("package", (plan.own_wheel,))):
        (folder / name).mkdir()
        for wheel in wheels:
            _link_or_copy(wheel, folder / name / wheel.name)
    drivers = folder / "cache" / "java-drivers"
    for relative, source in plan.drivers.items():
        (drivers / "built" / relative).parent.mkdir(parents=True, exist_ok=True)
        _link_or_copy(source, drivers / "built" / relative)
    (drivers / "classpath").mkdir(parents=True)
    for relative, source in plan.native.items():
        (folder / "cache" / relative).parent.mkdir(parents=True, exist_ok=True)
        _link_or_copy(source, folder / "cache" / relative)
    for name, text in plan.classpaths.items():
        (drivers / "classpath" / name).write_text(text + "\n")
    for relative, source in plan.jars.items():
        (folder / "cache" / "m2" / relative).parent.mkdir(parents=True, exist_ok=True)
        _link_or_copy(source, folder / "cache" / "m2" / relative)
    node = folder / "node"
    node.mkdir()
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(plan.node / name, node / name)
    shutil.copytree(plan.node / "node_modules", node / "node_modules", symlinks=True, copy_function=_link_or_copy)


# -- the steps on this machine ------------------------------------------------------------------------

def _say(message: str) -> None:
    print(f"make image: {message}", file=sys.stderr, flush=True)


def _run(argv: Sequence[str], what: str, timeout: float = PIP_TIMEOUT, cwd: Optional[Path] = None) -> str:
    try:
        done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                              cwd=cwd, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ImageError(f"{what} did not finish within {timeout:g} s: {' '.join(map(str, argv))}") from None
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise ImageError(f"{what} failed (exit {done.returncode}): {' '.join(map(str, argv))}\n{tail}")
    return done.stdout


def build_own_wheel(python: str, out: Path) -> Path:
    """The package's wheel, built from its sdist (``python -m build``), as an installing user gets it."""
    out.mkdir(parents=True, exist_ok=True)
    _run([python, "-m", "build", "--outdir", out, ROOT], "building the package's wheel")
    wheels = sorted(out.glob("pulsar_conformance-*.whl"))
    if len(wheels) != 1:
        raise ImageError(f"building the package left {len(wheels)} wheels in {out}, expected one")
    return wheels[0]


def prepare_wheelhouse(python: str, own_wheel: Path, cache: Path, machine: str,
                       say: Callable[[str], None] = _say) -> tuple[Path, str]:
    """The dependency wheels for the image's Python, reused from the cache when their key is there;
    the folder and the key."""
    pin_lines = pins(_run([python, "-m", "pip", "freeze", "--exclude-editable"], "pip freeze"))
    key = wheelhouse_key(pin_lines, wheel_requires(own_wheel), machine)
    root = cache / "harness-image" / "wheels"
    house = root / key
    if (house / ".complete").exists():
        return house, key
    say(f"collecting the wheels for Python {PYTHON_VERSION} ({len(pin_lines)} pins from this virtualenv)")
    root.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f"{key}.partial-", dir=root))
    try:
        constraints = partial / "constraints.txt"
        constraints.write_text("\n".join(pin_lines) + "\n")
        for name in SDIST_ONLY:
            version = pinned_version(pin_lines, name)
            _run([python, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", partial,
                  f"{name}=={version}" if version else name], f"building a wheel of {name}")
        _run([python, "-m", "pip", "download", "--quiet", *pip_target_args(machine), "--dest", partial,
              "--find-links", partial, "--find-links", own_wheel.parent, "--constraint", constraints,
              f"{DISTRIBUTION}[{EXTRAS}]=={own_wheel.name.split('-')[1]}"],
             f"downloading the dependencies' wheels for Python {PYTHON_VERSION} (every pin of this virtualenv "
             f"needs a wheel for it)")
        for copied in partial.glob("pulsar_conformance-*.whl"):
            copied.unlink()
        constraints.unlink()
        (partial / ".complete").write_text("ok\n")
        if house.exists():
            shutil.rmtree(house)
        partial.rename(house)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    for other in root.iterdir():
        if other.name != key and ".partial-" not in other.name:
            shutil.rmtree(other, ignore_errors=True)
    return house, key


def java_drivers() -> tuple[dict, dict, dict]:
    """The built drivers, the default releases' classpaths as the image reads them, and their jars;
    built and resolved first when missing (Maven)."""
    from conformance.drivers import java_build

    classpaths: dict[str, str] = {}
    jars: dict[str, Path] = {}
    for driver, version in (("java-client", java_build.DEFAULT_CLIENT_VERSION),
                            ("java-admin", java_build.DEFAULT_ADMIN_VERSION)):
        java_build.driver_command(driver, version)
        module = java_build.DRIVERS[driver][0]
        name = f"{module}-{version}.txt"
        text, needed = image_classpath(java_build.classpath(driver, version), java_build.CACHE / "m2")
        classpaths[name] = text
        jars.update(needed)
    built = java_build.built_jars()
    drivers = {".built": built / ".built"}
    for module in ("core", *(spec[0] for spec in java_build.DRIVERS.values())):
        relative = f"driver-{module}/driver-{module}-1.jar"
        drivers[relative] = built / relative
    missing = [str(path) for path in drivers.values() if not path.is_file()]
    if missing:
        raise ImageError(f"the built Java drivers lack {', '.join(missing)}; run make java-drivers")
    return drivers, classpaths, jars


def native_drivers() -> dict:
    """The Go and Rust drivers at their default library versions, built first when missing: the
    binary and the folder's ``.built`` mark, by their path under the image's cache."""
    from conformance.drivers import native_build

    files: dict[str, Path] = {}
    for language, (_, version, binary) in native_build.LANGUAGES.items():
        built = native_build.built_driver(language, version)
        folder = built.parents[len(Path(binary).parts) - 1]
        place = f"{language}-drivers/built-{version}"
        files[f"{place}/.built"] = folder / ".built"
        files[f"{place}/{binary}"] = built
    return files


def node_folder() -> tuple[Path, str]:
    if not (ROOT / "node_modules" / ".bin" / "allure").exists():
        raise ImageError("node_modules has no allure CLI: run make node_modules")
    return ROOT, hashlib.sha256((ROOT / "package-lock.json").read_bytes()).hexdigest()


def base_plan():
    from conformance.targets import image as images

    return images.BasePlan(suite=SUITE, mirror=images.base_plan().mirror, packages=PACKAGES)


def choose_base(engine, mode: Optional[str], work: Path, deadline, say: Callable[[str], None] = _say) -> Base:
    """``OFFICIAL_BASE`` when present or pulled (unless local is asked for), else the local base."""
    from conformance.errors import TargetError
    from conformance.targets import image as images

    mode = images.check_mode(mode)
    why_local = f"{images.MODE_ENV}=local"
    if mode in ("auto", "official"):
        image_id = engine.image_id(OFFICIAL_BASE)
        if image_id:
            return Base(OFFICIAL_BASE, image_id, "official", "present")
        problem = engine.pull(OFFICIAL_BASE, min(images.PULL_TIMEOUT, deadline.left("pulling the base")))
        if problem is None:
            return Base(OFFICIAL_BASE, engine.image_id(OFFICIAL_BASE) or "", "official", "pulled")
        if mode == "official":
            raise TargetError(f"cannot pull {OFFICIAL_BASE} ({images.MODE_ENV}=official): {problem}")
        why_local = f"{OFFICIAL_BASE} cannot be pulled: {problem}"
    plan = base_plan()
    image_id = engine.image_id(plan.tag)
    if image_id:
        return Base(plan.tag, image_id, "local", "reused", why_local)
    say(f"making the Debian base {plan.tag} with mmdebstrap (once per machine)")
    return Base(plan.tag, images.build_base(engine, plan, work, deadline), "local", "built", why_local)


def tag_also(engine, image_id: str, repository: str, tag: str) -> None:
    client = engine.client_factory(30)
    try:
        client.images.get(image_id).tag(repository, tag)
    finally:
        client.close()


def older_images(images: Iterable[tuple[str, str, Sequence[str]]], keep: int = KEEP_IMAGES) -> list[str]:
    """Of the harness images, as (created, id, tags), the tags to remove: every tag of this repository
    (but ``latest``) on all but the ``keep`` newest images."""
    newest_first = sorted(images, key=lambda image: image[0], reverse=True)
    return [tag for _, _, tags in newest_first[keep:] for tag in tags
            if tag.startswith(f"{REPOSITORY}:") and tag != f"{REPOSITORY}:latest"]


def older_stages(images: Iterable[tuple[str, str]], current: str) -> list[str]:
    """Of the untagged images of the Dockerfile's dependencies stage, as (id, its ``LABEL_STAGE``),
    the ids to remove: those of another base or other wheels than ``current`` (``ContextPlan.stage``)."""
    return [image_id for image_id, stage in images if stage != current]


def remove_older(engine, current_stage: str, keep: int = KEEP_IMAGES) -> list[str]:
    """Remove the tags ``older_images`` names and the images ``older_stages`` names; an image a
    container still uses stays (the engine refuses), as does a tag a user gave it elsewhere. Returns
    what was removed."""
    import docker.errors

    client = engine.client_factory(60)
    removed = []
    try:
        found = client.images.list(name=REPOSITORY, filters={"label": LABEL_DIGEST})
        doomed = older_images([(image.attrs.get("Created", ""), image.id, image.tags) for image in found], keep)
        stages = client.images.list(filters={"label": LABEL_STAGE, "dangling": True})
        doomed += older_stages([(image.id, image.labels.get(LABEL_STAGE, "")) for image in stages], current_stage)
        for name in doomed:
            try:
                client.images.remove(name)
                removed.append(name)
            except docker.errors.APIError:  # in use by a container: kept until a later build
                pass
    finally:
        client.close()
    return removed


@dataclass
class Built:
    ref: str
    image_id: str
    how: str  # "built" or "reused"
    base: Base
    seconds: dict[str, float] = field(default_factory=dict)

    def describe(self) -> str:
        timing = ", ".join(f"{key} {value:.1f} s" for key, value in self.seconds.items())
        return (f"{self.ref} ({self.how}; base {self.base.ref}: {self.base.kind}, {self.base.how}"
                f"{'; ' + timing if timing else ''})")


def build(*, engine=None, mode: Optional[str] = None, python: str = sys.executable,
          timeout: Optional[float] = None, say: Callable[[str], None] = _say) -> Built:
    """Prepare the context and build the image, or find it built already."""
    from conformance import children
    from conformance.targets import image as images
    from conformance.targets import maven

    if engine is None:
        from conformance.targets.container import docker_engine_problem

        problem = docker_engine_problem(5.0)
        if problem:
            raise ImageError(f"no Docker engine answers ({problem}); make docker starts one")
        engine = images.Engine()
    deadline = images._Deadline(timeout or images.PREPARE_TIMEOUT)
    seconds: dict[str, float] = {}
    began = time.monotonic()
    cache = maven.cache_dir()
    machine = platform.machine()
    state = images.docker_state_dir(cache)
    work_root = state / "work"
    work_root.mkdir(parents=True, exist_ok=True)
    children.remove_folders_of_gone(images.WORK_PREFIX, work_root)
    work = Path(tempfile.mkdtemp(prefix=f"{images.WORK_PREFIX}{os.getpid()}-", dir=work_root))
    try:
        step = time.monotonic()
        own_wheel = build_own_wheel(python, work / "own")
        house, _ = prepare_wheelhouse(python, own_wheel, cache, machine, say)
        drivers, classpaths, jars = java_drivers()
        native = native_drivers()
        node, lock_digest = node_folder()
        seconds["context"] = round(time.monotonic() - step, 1)
        lock = images._lock(state / "images.lock", deadline)
        try:
            step = time.monotonic()
            base = choose_base(engine, mode, work, deadline, say)
            if base.how in ("built", "pulled"):
                seconds["base"] = round(time.monotonic() - step, 1)
            plan = ContextPlan(version=own_wheel.name.split("-")[1], base=base, dockerfile=DOCKERFILE.read_text(),
                               own_wheel=own_wheel, own_wheel_digest=wheel_content_digest(own_wheel),
                               wheels=tuple(sorted(p for p in house.glob("*.whl"))), drivers=drivers,
                               native=native,
                               classpaths=classpaths, jars=jars, node=node, lock_digest=lock_digest)
            image_id = engine.image_id(plan.tag)
            how = "reused"
            if image_id is None:
                say(f"building {plan.tag} on {base.ref}")
                step = time.monotonic()
                write_context(plan, work / "context")
                image_id = engine.build(work / "context", plan.tag, {LABEL_DIGEST: plan.digest},
                                        deadline.left("building the image"), buildargs=plan.buildargs)
                seconds["build"] = round(time.monotonic() - step, 1)
                how = "built"
            tag_also(engine, image_id, REPOSITORY, "latest")
            if how == "built":
                remove_older(engine, plan.stage)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    seconds["total"] = round(time.monotonic() - began, 1)
    return Built(plan.tag, image_id, how, base, seconds)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness_image.build", description=__doc__.splitlines()[0])
    parser.add_argument("--ref-file", type=Path, metavar="FILE", help="also write the image's reference into FILE")
    args = parser.parse_args(argv)
    from conformance.drivers.java_build import BuildError  # native_build raises the same
    from conformance.errors import TargetError

    try:
        built = build()
    except (ImageError, TargetError, BuildError) as exc:
        print(f"make image: error: {exc}", file=sys.stderr)
        return 2
    print(f"make image: {built.describe()}; also tagged {REPOSITORY}:latest", file=sys.stderr)
    print(built.ref)
    if args.ref_file:
        args.ref_file.write_text(built.ref + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
