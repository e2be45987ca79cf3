"""Building the Go and Rust client drivers (clients/go, clients/rust) and the command that starts one.

``python -m conformance.drivers.native_build [--go V] [--rust V]`` builds what a run needs (``make
native-drivers`` calls it); the go- and rust- drivers call ``driver_command`` when a case first
needs them, which builds whatever is missing.

- Nothing lands in the repository: each build copies the driver's sources into
  ``CACHE/<language>-drivers/<source hash>-<library version>/`` (java_build's ``CACHE``,
  ``~/.cache/pulsar-conformance`` by default) and builds there; Go's module and build caches are
  under ``CACHE/go``, Cargo's target folder under ``CACHE/rust-drivers/target`` (shared by every
  version, so a second version compiles only what differs); crates come through Cargo's own home.
- A changed driver is rebuilt, an unchanged one never is: the folder is keyed by a hash of the
  driver's files (``source_hash``) and the library version, and holds the binary once built.
- The library version is chosen by the copy's requirement: Go's ``go.mod`` is moved to
  ``github.com/apache/pulsar-client-go@vV`` (``go get``, then ``go mod tidy``), Rust's
  ``Cargo.toml`` to ``pulsar = "=V"``; the default versions build from the lock files in the
  repository (``go.sum``, ``Cargo.lock``) as they are.
- The Rust crate compiles Pulsar's protocol with ``protoc`` (its build script): Debian's
  protobuf-compiler, which ``make native-drivers`` installs when it is missing.
- Builds run under a lock file, so two runs sharing the cache never build at once, and are bounded
  by ``BUILD_TIMEOUT``; a failure raises ``BuildError`` naming the command and the end of its output.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import sys
from pathlib import Path

from conformance.drivers.java_build import CACHE, BuildError, build_lock, run_build

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT = 1200.0
DEFAULT_GO_VERSION = "0.21.0"  # the Go module proxy's @latest answers an older release: pinned
DEFAULT_RUST_VERSION = "6.9.1"
GO_MODULE = "github.com/apache/pulsar-client-go"
VERSION = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?\Z")
LANGUAGES = {
    # language: (sources, default version, the built binary inside its folder)
    "go": (ROOT / "clients" / "go", DEFAULT_GO_VERSION, "go-driver"),
    "rust": (ROOT / "clients" / "rust", DEFAULT_RUST_VERSION, "target-link/rust-driver"),
}
DRIVERS = {"go-client": "go", "go-admin": "go", "rust-client": "rust", "rust-admin": "rust"}


def source_hash(language: str) -> str:
    sources = LANGUAGES[language][0]
    digest = hashlib.sha256()
    for path in sorted(p for p in sources.rglob("*") if p.is_file() and "target" not in p.parts):
        digest.update(str(path.relative_to(sources)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _go_env() -> dict:
    home = CACHE / "go"
    return {**os.environ, "GOPATH": str(home), "GOMODCACHE": str(home / "mod"), "GOCACHE": str(home / "build"),
            "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0",
            # the checksum database is not reachable here; go.sum is what the proxy served
            "GOSUMDB": "off"}


def _build_go(work: Path, version: str) -> None:
    go = shutil.which("go") or "go"
    env = _go_env()
    if version != DEFAULT_GO_VERSION:
        run_build([go, "get", f"{GO_MODULE}@v{version}"], f"resolving {GO_MODULE} v{version}",
                  cwd=work, env=env, timeout=BUILD_TIMEOUT)
    run_build([go, "mod", "tidy"], f"resolving the Go driver's modules ({GO_MODULE} v{version})",
              cwd=work, env=env, timeout=BUILD_TIMEOUT)
    run_build([go, "build", "-trimpath", "-o", "go-driver", "."], f"building the Go driver ({GO_MODULE} v{version})",
              cwd=work, env=env, timeout=BUILD_TIMEOUT)


def _build_rust(work: Path, version: str) -> None:
    if shutil.which("protoc") is None and "PROTOC" not in os.environ:
        raise BuildError("protoc is not installed (the pulsar crate compiles Pulsar's protocol with it): "
                         "run `make native-drivers`, which installs Debian's protobuf-compiler")
    if version != DEFAULT_RUST_VERSION:
        manifest = work / "Cargo.toml"
        text = manifest.read_text()
        manifest.write_text(re.sub(r'pulsar = \{ version = "=[^"]+"', f'pulsar = {{ version = "={version}"', text))
    target = CACHE / "rust-drivers" / "target"
    cargo = shutil.which("cargo") or "cargo"
    env = {**os.environ, "CARGO_TARGET_DIR": str(target), "CARGO_TERM_COLOR": "never"}
    run_build([cargo, "build", "--release", "--quiet"], f"building the Rust driver (pulsar {version})",
              cwd=work, env=env, timeout=BUILD_TIMEOUT)
    link = work / "target-link"
    link.mkdir(exist_ok=True)
    # the target folder is shared by every version: keep this version's binary beside its sources
    shutil.copy2(target / "release" / "rust-driver", link / "rust-driver")


def built_driver(language: str, version: str) -> Path:
    """The driver binary of ``language`` with its library at ``version``, built when missing."""
    sources, _, binary = LANGUAGES[language]
    if not VERSION.match(version or ""):
        raise BuildError(f"{language} driver: {version!r} is not a release version such as {LANGUAGES[language][1]}")
    out = CACHE / f"{language}-drivers" / f"{source_hash(language)}-{version}"
    if (out / ".built").exists():
        return out / binary
    with build_lock("native-drivers.lock"):
        if not (out / ".built").exists():
            work = out.with_name(out.name + ".partial")
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(sources, work, ignore=shutil.ignore_patterns("target", "target-link", "go-driver"))
            (_build_go if language == "go" else _build_rust)(work, version)
            shutil.rmtree(out, ignore_errors=True)
            work.replace(out)
            (out / ".built").write_text("ok\n")
    return out / binary


def driver_command(driver: str, version: str) -> list[str]:
    """The argv that starts ``driver`` (go-client, go-admin, rust-client, rust-admin) with its library at
    ``version``, building what is missing."""
    return [str(built_driver(DRIVERS[driver], version)), driver]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.drivers.native_build", description=__doc__.splitlines()[0])
    parser.add_argument("--go", action="append", default=[], metavar="V",
                        help=f"{GO_MODULE} version (repeatable; default {DEFAULT_GO_VERSION})")
    parser.add_argument("--rust", action="append", default=[], metavar="V",
                        help=f"pulsar crate version (repeatable; default {DEFAULT_RUST_VERSION})")
    args = parser.parse_args(argv)
    try:
        for language, versions in (("go", args.go or [DEFAULT_GO_VERSION]), ("rust", args.rust or [DEFAULT_RUST_VERSION])):
            for version in versions:
                print(f"{language} driver {version}: {built_driver(language, version)}", flush=True)
    except BuildError as exc:
        print(f"native_build: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
