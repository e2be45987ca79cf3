"""Child processes for targets the harness launches itself: start, wait for ready, stop, reap.

- Every wait is bounded. ``ManagedProcess.start`` waits for a readiness predicate (a log line or a TCP
  connect) for ``start_timeout``; a process that dies or stays silent raises TargetError with
  the last lines it printed, so the reason says why.
- ``ManagedProcess.stop`` is SIGTERM, a bounded wait, then SIGKILL and a reap; ``kill`` is SIGKILL
  and a reap, for a process whose data is thrown away. Nothing is left behind: every
  live child is also registered with ``atexit``, and on Linux the child gets
  PR_SET_PDEATHSIG(SIGKILL) so it dies with us even if we are killed with SIGKILL
  (conformance/children.py forks it from a thread that lives as long as we do).
- Output (stdout and stderr merged) is read by a daemon thread into a bounded ring and an
  optional log file, so a chatty child can never block on a full pipe; every line passes
  security.redact first, so a token or key a broker logs is never kept.
- A child that takes commands on stdin (``commands=True``) is told one line at a time
  (``tell``), and its answer is awaited as its start is: ``ready`` over the lines printed after
  the command only. Without it, stdin is /dev/null.
"""

from __future__ import annotations

import atexit
import collections
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from conformance import children
from conformance.errors import TargetError
from conformance.security import redact

STOP_TIMEOUT = 5.0
_LIVE: "set[ManagedProcess]" = set()
_LIVE_LOCK = threading.Lock()


def _stop_all_at_exit() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for process in live:
        process.stop()


atexit.register(_stop_all_at_exit)




def log_file(log_dir: Optional[Path], name: str, header: str) -> Optional[Path]:
    """``<log_dir>/<name>.log`` with ``header`` appended (what starts there now), or None without a
    log folder: each start of a launched process logs after a line saying which start it is."""
    if not log_dir:
        return None
    log = Path(log_dir) / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"--- {header}\n")
    return log


def free_port() -> int:
    """A port that was free on 127.0.0.1 a moment ago (for binaries that cannot take port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports that were free on 127.0.0.1 a moment ago (all held at once)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class Throttle:
    """True at most once per ``interval`` seconds: a JVM's readiness callback runs for every burst of
    log lines, and asking it over HTTP more often than a few times a second only slows it down."""

    def __init__(self, interval: float = 0.25):
        self.interval = interval
        self._last = float("-inf")

    def due(self) -> bool:
        now = time.monotonic()
        if now - self._last < self.interval:
            return False
        self._last = now
        return True


def start_on_free_ports(start: Callable[[], None], attempts: int = 2) -> None:
    """Call ``start`` (which picks free ports itself) again on new ports when a port it chose was
    taken between the pick and the bind; any other TargetError is raised at once."""
    last: Optional[TargetError] = None
    for _attempt in range(attempts):
        try:
            start()
            return
        except TargetError as exc:
            last = exc
            if "Address already in use" not in str(exc) and "BindException" not in str(exc):
                break
    raise last  # type: ignore[misc]


def tcp_ready(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.25):
            return True
    except OSError:
        return False


class ManagedProcess:
    """One child process with bounded start and stop."""

    def __init__(self, argv: list[str], *, name: str, cwd: Optional[str] = None,
                 env: Optional[dict] = None, log_path: Optional[Path] = None, commands: bool = False):
        self.argv = argv
        self.name = name
        self.cwd = cwd
        self.env = env
        self.log_path = log_path
        self.commands = commands
        self.lines: collections.deque[str] = collections.deque(maxlen=200)
        self.printed = 0  # lines read so far, the ring's dropped ones included
        self._line_seen = threading.Condition()
        self.popen: Optional[subprocess.Popen] = None
        self._reader: Optional[threading.Thread] = None

    @property
    def pid(self) -> Optional[int]:
        return self.popen.pid if self.popen else None

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def tail(self, count: int = 15) -> str:
        lines = list(self.lines)[-count:]
        return "\n".join(lines) if lines else "(no output)"

    def last_line(self) -> str:
        return next((line for line in reversed(self.lines) if line.strip()), "(no output)")

    def start(self, ready: Callable[[list[str]], Optional[object]], timeout: float):
        """Launch and wait until ``ready(lines)`` returns a non-None value, which is returned."""
        try:
            self.popen = children.popen(
                self.argv, cwd=self.cwd, env=self.env,
                stdin=subprocess.PIPE if self.commands else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        except OSError as exc:
            raise TargetError(f"{self.name}: cannot execute {self.argv[0]}: {exc}") from exc
        with _LIVE_LOCK:
            _LIVE.add(self)
        self._reader = threading.Thread(target=self._read, name=f"{self.name} output", daemon=True)
        self._reader.start()
        return self._await(ready, timeout, since=0, what="ready")

    def tell(self, line: str, ready: Callable[[list[str]], Optional[object]], timeout: float):
        """Write ``line`` to the running child's stdin and wait until ``ready`` returns a non-None
        value for the lines printed after it; a child that exits or stays silent is stopped and
        raises TargetError, as at its start."""
        if not self.commands or self.popen is None:
            raise TargetError(f"{self.name} takes no commands")
        with self._line_seen:
            since = self.printed
        try:
            self.popen.stdin.write(line.encode("utf-8") + b"\n")
            self.popen.stdin.flush()
        except (OSError, ValueError) as exc:
            self.stop()
            raise TargetError(f"{self.name} could not be told {line.split()[0]!r}: {exc}; "
                              f"last output:\n{self.tail()}") from exc
        return self._await(ready, timeout, since=since, what=f"done with {line.split()[0]!r}")

    def _await(self, ready: Callable[[list[str]], Optional[object]], timeout: float, *, since: int, what: str):
        """Until ``ready`` returns a non-None value for the lines printed after the first ``since``."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                with self._line_seen:
                    seen = self.printed
                    lines = list(self.lines)[max(0, len(self.lines) - (seen - since)):]
                result = ready(lines)  # outside the lock: it may do a TCP connect
                if result is not None:
                    return result
                if self.popen.poll() is not None:
                    self._reader.join(1.0)  # let the reader drain what the child printed last
                    raise TargetError(f"{self.name} exited with code {self.popen.returncode} before it was "
                                      f"{what}: {self.last_line()}\nlast output:\n{self.tail()}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TargetError(f"{self.name} was not {what} within {timeout:g} s: {self.last_line()}\n"
                                      f"last output:\n{self.tail()}")
                with self._line_seen:
                    if self.printed == seen:
                        # Wake on a new line, or poll every 0.1 s for readiness that is not a line.
                        self._line_seen.wait(min(remaining, 0.1))
        except BaseException:
            self.stop()
            raise

    def _read(self) -> None:
        log = open(self.log_path, "a", encoding="utf-8") if self.log_path else None
        try:
            for raw in iter(self.popen.stdout.readline, b""):
                line = redact(raw.decode("utf-8", errors="replace").rstrip("\n"))  # a broker may log its config
                if log:
                    log.write(line + "\n")
                    log.flush()
                with self._line_seen:
                    self.lines.append(line)
                    self.printed += 1
                    self._line_seen.notify_all()
        except (OSError, ValueError):
            pass  # the pipe went away with the process
        finally:
            self.popen.stdout.close()
            if log:
                log.close()

    def stop(self, timeout: float = STOP_TIMEOUT) -> Optional[int]:
        """SIGTERM, wait up to ``timeout``, then SIGKILL; returns the exit code."""
        self.terminate(timeout)
        return self.popen.returncode if self.popen is not None else None

    def terminate(self, timeout: float = STOP_TIMEOUT) -> bool:
        """SIGTERM, wait up to ``timeout``, then SIGKILL; whether it exited by itself in time."""
        return self._end(signal.SIGTERM, timeout)

    def kill(self) -> None:
        """SIGKILL at once (its data is thrown away, so a clean shutdown buys nothing), and reap."""
        self._end(signal.SIGKILL, STOP_TIMEOUT)

    def _end(self, how: signal.Signals, grace: float) -> bool:
        """Signal ``how``, wait up to ``grace``, then SIGKILL; whether it exited by itself in time."""
        popen = self.popen
        if popen is None:
            return False
        by_itself = False
        try:
            if popen.poll() is not None:
                by_itself = True
            else:
                popen.send_signal(how)
                try:
                    popen.wait(grace)
                    by_itself = how != signal.SIGKILL
                except subprocess.TimeoutExpired:
                    popen.kill()
                    popen.wait(STOP_TIMEOUT)
        except ProcessLookupError:
            pass
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(self)
            if popen.stdin is not None:
                try:
                    popen.stdin.close()
                except OSError:
                    pass  # the child is gone: its end of the pipe with it
        # The child is gone, so its pipe reaches EOF and the reader ends (unless a grandchild
        # still holds the pipe; then the daemon reader is abandoned, bounded by this join).
        if self._reader is not None:
            self._reader.join(1.0)
        return by_itself


def live_pids() -> list[int]:
    """Pids of children still running (tests use it to prove nothing is left behind)."""
    with _LIVE_LOCK:
        return [p.pid for p in _LIVE if p.alive()]


def env_without(*names: str) -> dict:
    return {k: v for k, v in os.environ.items() if k not in names}
