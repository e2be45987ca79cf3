"""Run inside the image while it is built (harness_image/Dockerfile), by the installed package.

The drivers were built on the build machine and arrive under the image's cache as
``java-drivers/built`` and ``<language>-drivers/built-<version>``. The harness looks a driver up
under the hash of its sources (``source_hash`` in conformance/drivers/java_build.py and
native_build.py), and the installed package hashes the sources it carries, which may differ from a
clone's: so each driver is linked under the name the installed package computes. A driver missing
from the cache fails the build, naming it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from conformance.drivers import java_build, native_build


def link(cache: Path) -> list[Path]:
    """The links made under ``cache``, one per driver folder; none when a driver is missing."""
    java = cache / "java-drivers"
    if not (java / "built" / ".built").is_file():
        raise SystemExit(f"link_drivers: {java}/built has no built Java drivers")
    for language, (_, default, binary) in native_build.LANGUAGES.items():
        if not (cache / f"{language}-drivers" / f"built-{default}" / binary).is_file():
            raise SystemExit(f"link_drivers: {cache}/{language}-drivers/built-{default} has no {binary}")
    links = {java / java_build.source_hash(): "built"}
    for language in native_build.LANGUAGES:
        folder = cache / f"{language}-drivers"
        for built in sorted(folder.glob("built-*")):
            links[folder / f"{native_build.source_hash(language)}-{built.name[len('built-'):]}"] = built.name
    for path, target in links.items():
        path.symlink_to(target)
    return list(links)

if __name__ == "__main__":
    for path in link(java_build.CACHE):
        print(f"link_drivers: {path} -> {path.readlink()}")
    sys.exit(0)
