"""Client drivers in processes of their own: the harness's side of the client-driver protocol.

A client written in another language (the Java client, later others) is driven through a small
program of its own, its *driver*, that speaks ``clients/protocol/v1.schema.json`` on its standard
input and output: one JSON request per line in, one JSON answer per line out (clients/README.md).
``DriverProcess`` owns one such process for a whole run.

- Start-up (``DriverProcess.start``): the process starts at its first request, one start-up at a
  time on the machine (conformance/capacity.py), and ``hello`` comes first: its answer must name
  ``PROTOCOL_VERSION``. A driver that refuses hello, names another version, or cannot be run is
  remembered as refused: every later request fails at once with the same reason
  (``DriverRefused``), so a broken driver costs one start, not one per case. A start that dies or
  stays silent before hello's answer, which a starved machine can cause, fails only its own
  request; ``START_ATTEMPTS`` of them in a row refuse the driver too.
- One use of the process at a time: a start, a request and a close all hold its lock, so a start
  another thread began is never joined halfway, nor an exchange shared; a request that cannot
  have the lock within ``LOCK_WAIT_S`` sent nothing (``DriverBusy``).
- Every wait is bounded: hello by ``start_timeout``, each request by its own ``timeout`` plus
  ``grace`` (the driver is told the first bound and must answer within it; the grace covers the
  pipe and the driver's own bookkeeping).
- What can go wrong in a request (``DriverProcess.request``) maps to verdicts (the step executor,
  conformance/executor.py, turns exceptions into statuses):

  - no answer within the bound: the process is killed and ``DriverHung`` (an Indefinite) is
    raised: the case is indefinite;
  - the process ends or closes its output while a request waits: ``DriverCrashed`` (broken),
    with its exit status and the last lines of its stderr;
  - a line that is not a JSON object, an answer to another id, or not exactly one of
    ok / raised / unsupported / error: the process is killed and ``DriverProtocolError``
    (broken) is raised;
  - an "error" answer (the driver says our request was wrong): ``DriverRequestError`` (broken);
  - "unsupported": ``Unsupported`` (the case is unsupported, with the driver's reason);
  - "raised": returned as a ``Raised`` value; what it means is the caller's to decide.

  After a kill or a crash the next request starts a new process.
- Nothing is left running (``DriverProcess.close``): the driver runs in a process group of its
  own that ``close`` ends (a bounded ``shutdown``, then SIGKILL to the group); every live
  process is also closed at interpreter exit, and on Linux it is killed with the harness
  (conformance/children.py).
- stdout is read line by line by a daemon thread into a queue; stderr by another into a bounded
  ring, so a chatty driver never blocks on a full pipe and its last words can be shown in a
  reason.
- Scratch folders: each started process gets a folder of its own as ``TMPDIR``
  (clients/README.md): what a client library unpacks there (the Java client's native libraries)
  goes with the process, since the folder is removed when the process ends; at exit the harness
  removes every folder of its own no running process holds (``remove_own_scratch``: one a worker
  made just before the harness was stopped), and folders of harness processes killed before they
  could remove theirs are removed by the next harness that starts a driver
  (``remove_orphaned_scratch``).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from conformance import capacity, children
from conformance.errors import ConformanceError, Indefinite, NoContact, Unsupported

PROTOCOL_VERSION = 1
SCHEMA_PATH = Path(__file__).resolve().parents[2] / "clients" / "protocol" / f"v{PROTOCOL_VERSION}.schema.json"
ANSWER_KINDS = ("ok", "raised", "unsupported", "error")
MAX_LINE = 1 << 20  # an answer longer than this is not an answer of this protocol
STDERR_LINES = 200
CLOSE_TIMEOUT = 3.0
# A request waits this long for the requests ahead of it on the same process, each bounded itself.
LOCK_WAIT_S = 120.0
# Starts in a row that die or stay silent before hello's answer, after which the driver is refused.
START_ATTEMPTS = 2

SCRATCH_PREFIX = "pulsar-conformance-driver-"

_EOF = object()
_LIVE: "set[DriverProcess]" = set()
_LIVE_LOCK = threading.Lock()


class DriverError(ConformanceError):
    """A client driver failed as a program (verdict: broken); the message names the driver."""


class DriverCrashed(DriverError):
    """The driver process ended, or closed its output, while a request waited."""


class DriverProtocolError(DriverError):
    """The driver wrote something that is not an answer of this protocol."""


class DriverRequestError(DriverError):
    """The driver answered "error": the request we sent was wrong."""


class DriverGone(DriverError):
    """A request about something made before the process was restarted."""


class DriverRefused(DriverError):
    """The driver could not be started, or refused our protocol version; remembered for the run."""


class DriverHung(Indefinite):
    """No answer within the bound; the driver was killed (verdict: indefinite)."""


class DriverBusy(NoContact):
    """Other requests held the process for longer than ``LOCK_WAIT_S``; nothing was sent."""


@dataclass(frozen=True)
class Raised:
    """What the client library threw: its class as the language names it, and its message."""
    cls: str
    message: Optional[str]
    causes: tuple[str, ...] = ()


def _close_all_at_exit() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for process in live:
        process.close()
    remove_own_scratch()


def remove_own_scratch() -> list[Path]:
    """This harness's scratch folders that no running driver process holds: a worker thread the
    harness's end interrupted between making a folder and starting its process leaves one."""
    with _LIVE_LOCK:
        held = {process.scratch for process in _LIVE}
    removed = []
    for folder in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}{os.getpid()}-*"):
        if folder not in held:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


atexit.register(_close_all_at_exit)


def remove_orphaned_scratch(parent: Optional[Path] = None) -> list[Path]:
    """The scratch folders of driver processes whose harness is gone (killed before its exit hook)."""
    return children.remove_folders_of_gone(SCRATCH_PREFIX, parent)


_SWEPT = False


class DriverProcess:
    """One driver program, started on demand and kept for the run: hello first, bounded waits,
    failures mapped to verdicts, nothing left running, pipes never full.

    ``command`` is the argv, or a function returning it (so a driver that must first be built is
    built only when a case needs it; a failure there refuses the driver, like a refused hello).
    """

    def __init__(self, name: str, command: Sequence[str] | Callable[[], Sequence[str]], *,
                 start_timeout: float = 60.0, grace: float = 5.0, env: Optional[dict] = None,
                 start_cores: float = 1.0):
        self.name = name
        self.start_cores = start_cores  # of the machine while it starts (conformance/capacity.py ``startup``)
        self._command = command
        self.start_timeout = start_timeout
        self.grace = grace
        self.env = env
        self.info: dict = {}  # hello's "ok": driver, library, library_version, commands...
        self.refused: Optional[str] = None
        self.starts = 0
        self.failed_starts = 0  # in a row: hello not answered, or the process ended before it
        self._proc: Optional[subprocess.Popen] = None
        self._lines: "queue.Queue" = queue.Queue()
        self._stderr: collections.deque = collections.deque(maxlen=STDERR_LINES)
        self._threads: list[threading.Thread] = []
        self._next_id = 1
        # Every use of the process (start, request, close) holds it: a start that another thread
        # began must not be joined halfway, and an exchange must not share the pipes with another.
        self._lock = threading.RLock()
        self.scratch: Optional[Path] = None  # the running process's TMPDIR, removed with it

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> Optional[int]:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> dict:
        """Start the process if it is not running and agree on the protocol (hello)."""
        with self._held():
            return self._start()

    @contextlib.contextmanager
    def _held(self):
        if not self._lock.acquire(timeout=LOCK_WAIT_S):
            raise DriverBusy(f"{self.name}: other requests held the driver process for {LOCK_WAIT_S:g} s; "
                             "nothing was sent")
        try:
            yield
        finally:
            self._lock.release()

    def _start(self) -> dict:
        if self.refused:
            raise DriverRefused(self.refused)
        if self.running:
            return self.info
        self._reap()
        try:
            argv = list(self._command() if callable(self._command) else self._command)
        except Exception as exc:  # noqa: BLE001 - a driver that cannot be built is refused
            self.refused = f"{self.name}: cannot be prepared: {exc}"
            raise DriverRefused(self.refused) from exc
        env = self._scratch_env()
        with capacity.machine().startup(self.start_cores):
            return self._spawn(argv, env)

    def _spawn(self, argv: list, env: dict) -> dict:
        try:
            self._proc = children.popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True, env=env)
        except children.ChildStartTimeout as exc:  # the machine, not the driver: not remembered
            self._remove_scratch()
            raise DriverError(f"{self.name}: {exc}") from None
        except OSError as exc:
            self._remove_scratch()
            self.refused = f"{self.name}: cannot run {argv[0]!r}: {exc}"
            raise DriverRefused(self.refused) from exc
        self.starts += 1
        with _LIVE_LOCK:
            _LIVE.add(self)
        self._lines = queue.Queue()
        self._stderr.clear()
        self._threads = [
            threading.Thread(target=_read_lines, args=(self._proc.stdout, self._lines),
                             name=f"{self.name} stdout", daemon=True),
            threading.Thread(target=_read_ring, args=(self._proc.stderr, self._stderr),
                             name=f"{self.name} stderr", daemon=True)]
        for thread in self._threads:
            thread.start()
        try:
            ok = self._exchange("hello", {"protocol": PROTOCOL_VERSION}, self.start_timeout, during_start=True)
        except (DriverHung, DriverCrashed) as exc:
            self._kill()
            self.failed_starts += 1
            why = (f"did not answer hello within {self.start_timeout:g} s ({exc.reason})"
                   if isinstance(exc, DriverHung) else str(exc))
            if self.failed_starts < START_ATTEMPTS:  # a starved machine can do this once
                raise DriverCrashed(f"{self.name}: {why}; the next request starts it again") from None
            self.refused = f"{self.name}: {why}, at {self.failed_starts} starts in a row"
            raise DriverRefused(self.refused) from None
        except DriverError as exc:
            self.refused = str(exc)
            self._kill()
            raise DriverRefused(self.refused) from None
        self.failed_starts = 0
        if not isinstance(ok, dict) or ok.get("protocol") != PROTOCOL_VERSION:
            spoken = ok.get("protocol") if isinstance(ok, dict) else ok
            self.refused = (f"{self.name} answered hello with protocol {spoken!r}; the harness speaks "
                            f"{PROTOCOL_VERSION} ({SCHEMA_PATH.name}): rebuild the driver for it")
            self._kill()
            raise DriverRefused(self.refused)
        self.info = ok
        return ok

    def close(self) -> None:
        """Ask the driver to shut down, then make sure its process group is gone."""
        if not self._lock.acquire(timeout=CLOSE_TIMEOUT):
            self._kill()  # a request still holds it: its wait ends with the process
            return
        try:
            proc = self._proc
            if proc is not None and proc.poll() is None:
                try:
                    self._exchange("shutdown", {}, CLOSE_TIMEOUT, quiet=True)
                    proc.wait(CLOSE_TIMEOUT)
                except (DriverError, Indefinite, subprocess.TimeoutExpired, OSError, ValueError):
                    pass
            self._kill()
        finally:
            self._lock.release()

    def _kill(self) -> None:
        proc = self._proc
        if proc is not None:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                proc.wait(CLOSE_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
        self._reap()

    def _reap(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                try:
                    stream.close()
                except (OSError, ValueError):
                    pass
            for thread in self._threads:
                thread.join(CLOSE_TIMEOUT)
            self._threads = []
        self._remove_scratch()
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def _scratch_env(self) -> dict:
        """A new scratch folder for the process about to start, and the environment naming it."""
        global _SWEPT
        if not _SWEPT:
            _SWEPT = True
            remove_orphaned_scratch()
        self._remove_scratch()
        self.scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
        return {**(os.environ if self.env is None else self.env), "TMPDIR": str(self.scratch)}

    def _remove_scratch(self) -> None:
        scratch, self.scratch = self.scratch, None
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)

    def stderr_tail(self, lines: int = 5) -> str:
        return " | ".join(list(self._stderr)[-lines:])

    # -- requests ------------------------------------------------------------------------------

    def request(self, cmd: str, args: Optional[dict] = None, *, timeout: float, started: Optional[int] = None):
        """Send one request; returns "ok"'s object or a ``Raised``; other answers raise. With ``started``, the
        request is about something made in that start of the process (``starts``): if the process
        has been restarted since, DriverGone is raised and nothing is sent."""
        with self._held():
            self._start()
            if started is not None and started != self.starts:
                raise DriverGone(f"{self.name} was restarted since start {started}; what it made then is gone")
            return self._exchange(cmd, dict(args or {}), timeout)

    def request_making(self, cmd: str, args: Optional[dict] = None, *, timeout: float) -> tuple[Any, int]:
        """A request that makes something the process holds (a handle): its answer and the start
        (``starts``) of the process that answered, read together, so later requests about it can
        name that start."""
        with self._held():
            self._start()
            return self._exchange(cmd, dict(args or {}), timeout), self.starts

    def _exchange(self, cmd: str, args: dict, timeout: float, *, during_start: bool = False, quiet: bool = False):
        proc = self._proc
        request_id = self._next_id
        self._next_id += 1
        line = json.dumps({"id": request_id, "cmd": cmd, "args": args}, separators=(",", ":"))
        try:
            proc.stdin.write(line.encode() + b"\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise self._crashed(cmd) from None
        bound = timeout if during_start or quiet else timeout + self.grace
        try:
            raw = self._lines.get(timeout=bound)
        except queue.Empty:
            self._kill()
            raise DriverHung(f"{self.name}: no answer to {cmd} within {bound:g} s; the driver was stopped") from None
        if raw is _EOF:
            raise self._crashed(cmd)
        answer = self._parse(raw, cmd)
        if answer.get("id") != request_id:
            self._kill()
            raise DriverProtocolError(f"{self.name}: answer to {cmd} carries id {answer.get('id')!r}, "
                                      f"expected {request_id}: answers must come in request order")
        kind = next(k for k in ANSWER_KINDS if k in answer)
        value = answer[kind]
        if kind == "ok":
            if not isinstance(value, dict):
                self._kill()
                raise DriverProtocolError(f"{self.name}: \"ok\" of {cmd} must be an object, got {value!r}")
            return value
        if kind == "raised":
            if not isinstance(value, dict) or not isinstance(value.get("class"), str):
                self._kill()
                raise DriverProtocolError(f"{self.name}: \"raised\" of {cmd} needs a \"class\" string, got {value!r}")
            return Raised(value["class"], value.get("message"), tuple(value.get("causes") or ()))
        if kind == "unsupported":
            raise Unsupported("driver-declined", f"{self.name} ({self.info.get('library')} {self.info.get('library_version')}): {value}")
        raise DriverRequestError(f"{self.name} refused the request {cmd}: {value}")

    def _parse(self, raw: bytes, cmd: str) -> dict:
        try:
            answer = json.loads(raw)
        except ValueError:
            self._kill()
            raise DriverProtocolError(f"{self.name}: answer to {cmd} is not JSON: {raw[:200]!r}") from None
        kinds = [k for k in ANSWER_KINDS if k in answer] if isinstance(answer, dict) else []
        if not isinstance(answer, dict) or "id" not in answer or len(kinds) != 1:
            self._kill()
            raise DriverProtocolError(f"{self.name}: answer to {cmd} must be an object with \"id\" and exactly one "
                                      f"of {', '.join(ANSWER_KINDS)}: {raw[:200]!r}")
        return answer

    def _crashed(self, cmd: str) -> DriverCrashed:
        proc = self._proc
        status = None
        if proc is not None:
            try:
                status = proc.wait(CLOSE_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
        tail = self.stderr_tail()
        self._kill()
        return DriverCrashed(f"{self.name} ended during {cmd} (exit status {status}); stderr: {tail or '(empty)'}")


def _read_lines(stream, lines: "queue.Queue") -> None:
    try:
        while True:
            line = stream.readline(MAX_LINE)
            if not line:
                break
            lines.put(line)
    except (OSError, ValueError):
        pass
    lines.put(_EOF)


def _read_ring(stream, ring: collections.deque) -> None:
    try:
        for line in iter(stream.readline, b""):
            ring.append(line.decode(errors="replace").rstrip())
    except (OSError, ValueError):
        pass


def round_trip(process: DriverProcess, count: int, timeout: float = 10.0) -> list[float]:
    """``count`` no-op round trips, each timed in seconds (bench/client_protocol.py)."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        process.request("noop", timeout=timeout)
        times.append(time.perf_counter() - started)
    return times
