"""Run a REAL ZooKeeper server for the reference-zk target, tests and benches: 127.0.0.1, an
ephemeral port, a temp data dir.

What this module owns: finding an installed ZooKeeper (the Debian package ``zookeeper``, whose
``/usr/share/java/zookeeper.jar`` names its dependencies in its manifest Class-Path), starting
``org.apache.zookeeper.server.ZooKeeperServerMain`` with a generated ``zoo.cfg``, a bounded
readiness wait on the ``srvr`` four-letter word (``ruok`` says imok before the server serves),
and a stop that leaves no process behind.

- The server listens only on 127.0.0.1; its AdminServer (Jetty, port 8080 by default) is
  switched off (``ZooKeeperServer.command``), so parallel runs never collide on a fixed port.
- ``ZooKeeperServer.start`` picks the port free just before the start; if another process takes
  it first, the server dies with "Address already in use" and we retry with a new port (3
  attempts).
- Every wait is bounded, and ``stop`` escalates SIGTERM -> SIGKILL; an ``atexit`` hook
  (``_stop_forgotten_servers``) stops any server a crashed test forgot, and on Linux the JVM dies
  with its parent (PR_SET_PDEATHSIG, targets/process.py) even when the harness is killed.
- ``missing_reason()`` says, before any start, why no ZooKeeper can run here (java or the package
  missing) and how to install it; callers turn that into a skip (tests) or a target that cannot
  start, with that reason (conformance/targets/reference_zk.py), never a guess.

The java invocation, for a Makefile::

    java -cp /usr/share/java/zookeeper.jar -Dzookeeper.admin.enableServer=false \\
         -Dzookeeper.4lw.commands.whitelist=ruok,srvr,stat \\
         org.apache.zookeeper.server.ZooKeeperServerMain <dir>/zoo.cfg
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from conformance import children

INSTALL_HINT = "install it with: apt-get install -y zookeeper (Debian/Ubuntu; pulls default-jre)"
_DEBIAN_JAR = "/usr/share/java/zookeeper.jar"
_SLF4J_SIMPLE = "/usr/share/java/slf4j-simple.jar"
_RUNNING: set["ZooKeeperServer"] = set()


def find_classpath() -> str | None:
    """The classpath of an installed ZooKeeper server, or None.

    ``$ZOOKEEPER_CLASSPATH`` wins; then ``$ZOOKEEPER_HOME/lib/*.jar`` (an Apache tarball); then the
    Debian package's jar (its manifest pulls in the dependency jars).
    """
    if os.environ.get("ZOOKEEPER_CLASSPATH"):
        return os.environ["ZOOKEEPER_CLASSPATH"]
    home = os.environ.get("ZOOKEEPER_HOME")
    if home:
        jars = sorted(glob.glob(os.path.join(home, "lib", "*.jar")))
        if jars:
            return os.pathsep.join(jars)
    if os.path.exists(_DEBIAN_JAR):
        # slf4j-simple gives the server a log (else SLF4J's no-op logger swallows everything).
        return os.pathsep.join([_DEBIAN_JAR] + ([_SLF4J_SIMPLE] if os.path.exists(_SLF4J_SIMPLE) else []))
    return None


def missing_reason() -> str | None:
    """Why no ZooKeeper can be started here, or None when one can."""
    java = shutil.which("java")
    classpath = find_classpath()
    if java is None and classpath is None:
        return f"ZooKeeper and java are not installed; {INSTALL_HINT}"
    if java is None:
        return f"java is not installed (needed to run ZooKeeper); {INSTALL_HINT}"
    if classpath is None:
        return f"ZooKeeper is not installed (no {_DEBIAN_JAR}, no $ZOOKEEPER_HOME/lib); {INSTALL_HINT}"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def four_letter_word(port: int, word: str, timeout: float = 2.0) -> str:
    """Send a ZooKeeper four-letter word (``ruok``, ``srvr``) and return the answer; '' on failure."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(word.encode("ascii"))
            chunks = []
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                chunks.append(data)
            return b"".join(chunks).decode("utf-8", "replace")
    except OSError:
        return ""


class ZooKeeperServer:
    """One standalone ZooKeeper. ``start()`` returns once it serves; ``stop()`` always cleans up."""

    def __init__(self, workdir: str | os.PathLike | None = None, *, force_sync: bool = True,
                 heap: str | None = None, jvm_flags: tuple[str, ...] = ()) -> None:
        self._own_dir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="zookeeper-"))
        self.force_sync = force_sync
        self.heap = heap
        self.jvm_flags = tuple(jvm_flags)
        self.port: int | None = None
        self.process: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, chroot: str = "") -> str:
        """A ``metadataStoreUrl``: ``zk:127.0.0.1:PORT[/chroot]``."""
        return f"zk:{self.address}{chroot}"

    def unique_url(self) -> str:
        """A URL under a fresh chroot, so tests sharing this server never see each other's nodes."""
        return self.url(f"/test-{uuid.uuid4().hex[:12]}")

    @property
    def log_path(self) -> Path:
        return self.workdir / "zookeeper.log"

    def command(self) -> list[str]:
        java, classpath = shutil.which("java"), find_classpath()
        if java is None or classpath is None:
            raise RuntimeError(missing_reason())
        flags = ["-Dzookeeper.admin.enableServer=false", "-Dzookeeper.4lw.commands.whitelist=ruok,srvr,stat",
                 "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"]
        if self.heap:
            flags += [f"-Xms{self.heap}", f"-Xmx{self.heap}"]
        return [java, "-cp", classpath, *flags, *self.jvm_flags,
                "org.apache.zookeeper.server.ZooKeeperServerMain", str(self.workdir / "zoo.cfg")]

    def _write_config(self) -> None:
        data = self.workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        (self.workdir / "zoo.cfg").write_text(
            "tickTime=2000\n"
            f"dataDir={data}\n"
            f"clientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\n"
            "maxClientCnxns=0\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=ruok,srvr,stat\n"
            f"forceSync={'yes' if self.force_sync else 'no'}\n"
        )

    def start(self, timeout: float = 30.0) -> "ZooKeeperServer":
        reason = missing_reason()
        if reason:
            raise RuntimeError(reason)
        last_log = ""
        for _attempt in range(3):  # the free port may be taken before the server binds it
            self.port = _free_port()
            self._write_config()
            log = open(self.log_path, "ab")
            try:
                self.process = children.popen(
                    self.command(), cwd=self.workdir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
            finally:
                log.close()
            _RUNNING.add(self)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.process.poll() is None:
                # "ruok" answers imok before the database is loaded; "srvr" shows a Mode only once serving.
                if "Mode:" in four_letter_word(self.port, "srvr", timeout=1.0):
                    return self
                time.sleep(0.1)
            last_log = self.log_path.read_text(errors="replace")[-2000:]
            self._kill()
            if "Address already in use" not in last_log:
                break
        raise RuntimeError(f"ZooKeeper did not start serving on {self.address} within {timeout:g} s; "
                           f"command: {' '.join(self.command())}; log tail:\n{last_log}")

    def _kill(self, timeout: float = 10.0) -> None:
        process, self.process = self.process, None
        _RUNNING.discard(self)
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout)

    def stop(self) -> None:
        self._kill()
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "ZooKeeperServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@atexit.register
def _stop_forgotten_servers() -> None:  # what a crashed test forgot is stopped at exit
    for server in list(_RUNNING):
        server.stop()
