"""Cheap JVM start-ups for Apache Pulsar's processes: a class-data archive per release, made once.

Most of a standalone's start-up is the JVM loading, verifying and compiling Pulsar's classes, and
a run starts one again for every non-dynamic configuration it needs. Two of Java's own start-up
features take most of that away without touching what Pulsar does:

- Application class-data sharing (JEP 350, Java 13+): a JVM started with
  ``-XX:ArchiveClassesAtExit=F`` writes the classes it loaded to F when it exits normally; a JVM
  started with ``-XX:SharedArchiveFile=F`` maps them instead of loading them again. The archive
  is valid for one JVM build and one classpath, so ``ClassData`` keys it by both (and by the
  options that change what is archived), under ``cache_dir()/class-data``. A JVM that cannot use
  an archive (another build, a damaged file) says so and runs without it: never a wrong answer,
  only a slower start.
- ``START_OPTIONS``: only the first JIT tier. A case is a few requests, so the optimising
  compiler's work on a 2-core machine costs more CPU at start-up than it ever wins back.

The first start of a release on a machine (no archive yet) writes one: its JVM runs with
``ArchiveClassesAtExit`` on a file of its own, is stopped with SIGTERM and given ``DUMP_TIMEOUT``
to exit and write, and only a JVM that exited by itself within it has its file moved into place
(``os.replace``, so another harness never maps half a file; the file of a harness killed before
that is removed by the next write), and the same release's archives for another JVM build or
classpath are removed. Every other stop is SIGKILL at once:
the data folder is thrown away, so a clean shutdown buys nothing. Two harnesses that both find no
archive each write their own; the last one moved into place wins, and both are whole.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Optional

from conformance import children
from conformance.targets import maven

START_OPTIONS = ("-XX:TieredStopAtLevel=1",)
DUMP_TIMEOUT = 60.0  # SIGTERM to exit for the JVM writing the archive: shutdown, then the dump


def java_build(java: str) -> str:
    """What names the JVM build an archive belongs to: the launcher's real path, and the size and
    time of it and of the JVM library beside it (a JDK update replaces both). Read from the files, so
    it costs no process."""
    launcher = Path(os.path.realpath(java))
    parts = [str(launcher)]
    for file in (launcher, launcher.parent.parent / "lib" / "server" / "libjvm.so"):
        try:
            stat = file.stat()
        except OSError:
            continue
        parts.append(f"{file.name}:{stat.st_size}:{stat.st_mtime_ns}")
    return " ".join(parts)


class ClassData:
    """The archive of one kind of JVM (``name``, e.g. ``pulsar-broker-4.0.7``) for one classpath:
    the options a start passes (``options``) and what its stop must do (``stop``)."""

    def __init__(self, name: str, java: str, classpath: str, options: tuple[str, ...],
                 root: Optional[Path] = None):
        digest = hashlib.sha256("\n".join([java_build(java), classpath, *options]).encode()).hexdigest()[:16]
        self.name = name
        self.root = Path(root) if root is not None else maven.cache_dir() / "class-data"
        self.path = self.root / f"{name}-{digest}.jsa"
        self._writing: Optional[Path] = None

    def options(self) -> tuple[str, ...]:
        """The options of the next start: map the archive, or write it when there is none yet."""
        if self.path.is_file():
            self._writing = None
            return (*START_OPTIONS, f"-XX:SharedArchiveFile={self.path}")
        self.root.mkdir(parents=True, exist_ok=True)
        self._sweep()
        self._writing = self.root / f".{self.path.name}.{os.getpid()}.{id(self)}"
        self._writing.unlink(missing_ok=True)
        return (*START_OPTIONS, f"-XX:ArchiveClassesAtExit={self._writing}")

    def _sweep(self) -> None:
        """Remove the files of writes whose harness is gone (killed before its JVM's stop)."""
        for stale in self.root.glob(".*.jsa.*.*"):
            try:
                owner = int(stale.name.rsplit(".", 2)[1])
            except (IndexError, ValueError):
                continue
            if not children.process_alive(owner):
                stale.unlink(missing_ok=True)

    @property
    def writing(self) -> bool:
        return self._writing is not None

    def stop(self, process) -> None:
        """Stop ``process`` (a ManagedProcess started with ``options()``): at once, unless it is
        writing the archive; then bounded by DUMP_TIMEOUT, and the archive kept if it exited by itself."""
        writing, self._writing = self._writing, None
        if writing is None:
            process.kill()
            return
        exited_by_itself = process.terminate(DUMP_TIMEOUT)
        try:
            if exited_by_itself and writing.is_file() and writing.stat().st_size > 0:
                os.replace(writing, self.path)
                for stale in self.root.glob(f"{self.name}-*.jsa"):  # another JVM build's or classpath's
                    if stale != self.path:
                        stale.unlink(missing_ok=True)
        finally:
            writing.unlink(missing_ok=True)
