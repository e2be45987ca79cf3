"""Runner: one conformance run, programmatically (the CLI and tests call ``run``).

- Arguments are checked before anything starts: an unknown target name or a case loader that
  cannot be imported (``load_cases``) is exit code 2 with a message that names the fix.
- pytest runs in-process with our plugin and no project config or conftest (``pytest_args``:
  ``-c /dev/null --noconftest``), writing ``<out>/junit.xml``, ``<out>/allure-results/`` and
  ``<out>/results/<run_id>.jsonl``.
- Targets start as soon as the arguments hold, in the background while pytest sets up and
  collects (``TargetSession.start`` starts each once, whoever asks first); with ``-k`` a target
  may have no case left, so it starts when its schedule does.
- Targets are stopped at the end whatever happens: the plugin's sessionfinish, ``run``'s
  ``finally``, the process module's atexit hook, and SIGTERM or SIGINT turned into one
  KeyboardInterrupt while the run and its cleanup last (``_stop_signals``), so pytest unwinds
  normally and a second signal cannot cut the cleanup short.
- The exit code is computed from the verdicts (verdicts.exit_code), not from pytest's own
  status: a skipped (unsupported) item is not a pass, and a failed item may be a harness
  problem. A run that selects or executes no case exits 2 and says why.
- Target errors: a target that could not start (no Docker engine, a binary missing) or stopped
  serving has its cases recorded ``target-error`` with the reason; the console summary names
  such targets first, before the per-target counts (``target_error_lines``), and the run exits 2
  (verdicts.exit_code).
- A target's unsupported count is split by why (conformance/reasons.py groups), so a broker the
  harness cannot configure shows how many cases its config excluded and how many need an admin
  API it lacks.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import time
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Optional, TextIO

import pytest

from conformance import timing, verdicts as v
from conformance.drivers import java, native_clients
from conformance.errors import UsageError
from conformance.execute import TargetSession, default_drivers
from conformance.plugin import ConformancePlugin
from conformance.reasons import group_counts, kind_of
from conformance.results import new_run_id
from conformance.scheduler import DEFAULT_JOBS
from conformance.security import RunSecurity
from conformance.targets.base import Target
from conformance.targets.url import UrlTarget
from spec.schema import SpecError, load_divergences
from conformance.targets.registry import make_target

DEFAULT_OUT = Path("reports/out")
BACKSTOP_TIMEOUT_S = 300  # pytest-timeout per item, far above any sum of our own bounded waits


def load_cases(pips: Optional[set[str]]):
    """The whole spec's cases (conformance.suite: spec/ rows and kept generated sequences, their
    expectations from the model), or UsageError naming the fix."""
    try:
        from conformance.suite import load_cases as loader
    except ImportError as exc:
        raise UsageError(f"cannot load cases: conformance.suite is not importable ({exc}); "
                         "conformance.suite must provide load_cases()") from exc
    return list(loader(pips=pips))


@contextmanager
def _stop_signals():
    """SIGTERM (and SIGINT, unless the shell started us with it ignored) stop the run once: the first
    raises KeyboardInterrupt so pytest unwinds and every target is stopped; any later one, while
    that cleanup runs, is only noted, so it cannot cut the cleanup short and leave a broker or its
    data behind. The previous handlers come back when the block, cleanup included, ends."""
    stopping = []

    def handler(signum, frame):
        if stopping:
            print(f"conformance: signal {signum} again: still stopping the targets", file=sys.stderr, flush=True)
            return
        stopping.append(signum)
        raise KeyboardInterrupt(f"signal {signum}")

    installed = {}
    for signum in (signal.SIGTERM, signal.SIGINT):
        try:
            if signal.getsignal(signum) is signal.SIG_IGN:
                continue  # a background job's SIGINT stays ignored, as the shell meant
            installed[signum] = signal.signal(signum, handler)
        except ValueError:  # not the main thread: nothing to install
            break
    try:
        yield
    finally:
        for signum, previous in installed.items():
            signal.signal(signum, previous)


def pytest_args(out_dir: Path, keyword: Optional[str], extra: Iterable[str] = ()) -> list[str]:
    # -c /dev/null would make /dev the rootdir; the working directory keeps item paths short.
    # Only the plugins a run uses are loaded: the environment's others (a property-testing or an
    # API-fuzzing plugin) would add their imports to every run's start, and the unraisable-exception
    # plugin its forced garbage collections to every run's end.
    args = ["-c", os.devnull, "--rootdir", os.getcwd(), "--noconftest", "--disable-plugin-autoload",
            "-p", "allure_pytest.plugin", "-p", "no:cacheprovider", "-p", "no:unraisableexception",
            "-rfEs", "--assert=plain", f"--junitxml={out_dir / 'junit.xml'}", f"--alluredir={out_dir / 'allure-results'}"]
    if importlib.util.find_spec("pytest_timeout") is not None:
        args += ["-p", "pytest_timeout", f"--timeout={BACKSTOP_TIMEOUT_S}"]
    if keyword:
        args += ["-k", keyword]
    return args + list(extra)


def run(target_specs: list[str], *, pips: Optional[Iterable[str]] = None, keyword: Optional[str] = None,
        out_dir: Path = DEFAULT_OUT, run_id: Optional[str] = None, timeout: float = 10.0,
        cases: Optional[list] = None, targets: Optional[list[Target]] = None,
        driver_factory: Callable = default_drivers, pytest_extra: Iterable[str] = (),
        stream: Optional[TextIO] = None, java_client_version: Optional[str] = None,
        java_admin_version: Optional[str] = None, go_client_version: Optional[str] = None,
        rust_client_version: Optional[str] = None, jobs: int = DEFAULT_JOBS,
        security: Optional[RunSecurity] = None, broker_config: Optional[dict[str, str]] = None,
        known_divergences: Optional[Path] = None, stop_at_failure: bool = False) -> int:
    """Run the selected cases on every target; returns the exit code (verdicts.exit_code).

    ``stop_at_failure``: a target's first failed case stops its schedule (scheduler.py, ``stop_at_failure``).

    ``cases`` and ``targets`` may be given directly (tests); otherwise they come from
    conformance.cases and the target registry.  ``broker_config`` is what the url: targets' brokers run with
    (``--broker-config``, targets/url.py, declared config); ``known_divergences`` is their divergence file.
    """
    def say(text: str) -> None:
        print(text, file=stream or sys.stdout, flush=True)

    out_dir = Path(out_dir)
    run_id = run_id or new_run_id()
    try:
        if targets is None:
            if not target_specs:
                raise UsageError("no target given; use --target reference, --target pulsar-lite, "
                                 "--target pulsar-container[:TAG], --pulsar-versions V1,V2 or "
                                 "--target url:pulsar://HOST:PORT[,http://HOST:PORT]")
            security = security or RunSecurity()
            if broker_config and not any(spec.startswith("url:") for spec in target_specs):
                raise UsageError("--broker-config says what an already running broker runs with; give it with "
                                 "--target url:pulsar://HOST:PORT (the harness configures the brokers it starts)")
            if known_divergences is not None and not any(spec.startswith("url:") for spec in target_specs):
                raise UsageError("--known-divergences is for a broker given by --target url:...; the targets the "
                                 "harness starts keep theirs in spec/divergences/")
            targets = [make_target(spec, timeout=timeout, log_dir=out_dir / "logs", security=security,
                                   **({"declared": broker_config} if spec.startswith("url:") and broker_config else {}))
                       for spec in target_specs]
            if known_divergences is not None:
                if not known_divergences.is_file():
                    raise UsageError(f"--known-divergences {known_divergences}: no such file")
                try:
                    entries = load_divergences(known_divergences.stem, known_divergences.parent)
                except (OSError, SpecError) as exc:
                    raise UsageError(f"--known-divergences {known_divergences}: {exc}") from None
                for target in targets:
                    if isinstance(target, UrlTarget):
                        target.known_divergences = entries
        names = [t.name for t in targets]
        if len(set(names)) != len(names):
            raise UsageError(f"targets named twice: {names}; give each target once")
        if cases is None:
            cases = load_cases(set(pips) if pips else None)
    except UsageError as exc:
        say(f"conformance: error: {exc}")
        return v.EXIT_HARNESS
    if not cases:
        say(f"conformance: error: no cases selected (pips={sorted(pips) if pips else 'all'}); "
            "nothing was run. Check --pip against `python -m conformance cases`.")
        return v.EXIT_HARNESS

    java.configure(client_version=java_client_version, admin_version=java_admin_version)
    native_clients.configure(go_version=go_client_version, rust_version=rust_client_version)
    timing.reset()
    started = time.monotonic()
    sessions = [TargetSession(t, driver_factory=driver_factory) for t in targets]
    if keyword is None:  # every target will run cases: each starts while pytest sets up and collects
        for session in sessions:
            threading.Thread(target=session.start, name=f"start {session.target.name}", daemon=True).start()
    plugin = ConformancePlugin(cases, sessions, out_dir=out_dir, run_id=run_id,
                               allure_dir=out_dir / "allure-results", jobs=jobs, stop_at_failure=stop_at_failure)
    out_dir.mkdir(parents=True, exist_ok=True)
    with _stop_signals():
        try:
            status = pytest.main(pytest_args(out_dir, keyword, pytest_extra), plugins=[plugin])
        finally:
            for session in sessions:
                session.stop()
            java.close_shared()  # the run's client driver processes (drivers/protocol_client.py, one pool)
    return _report(plugin, sessions, status, keyword, say, time.monotonic() - started)


def stale_divergences(plugin: ConformancePlugin) -> list[str]:
    """Known divergences whose cases passed in this run: the entry may be out of date. An entry
    that says it is intermittent is not: its cases pass in some runs."""
    lines = []
    for session in plugin.sessions:
        target = session.target
        known = plugin._known(target)
        for record in plugin.records:
            if record.target != target.name or record.verdict != v.PASSED:
                continue
            entries = known.covering_all(record.case_id, record.row_id, target.release)
            if entries and not any(entry.intermittent for entry in entries):
                entry = entries[0]
                lines.append(f"{record.case_id} passed on {target.name}, which {entry.file} (entry {entry.id}) "
                             f"lists as a known divergence; remove it if the release now conforms")
    return lines


def target_error_lines(plugin: ConformancePlugin, sessions: list[TargetSession]) -> list[str]:
    """One line per target with target-error cases: how many, and the first reason."""
    lines = []
    for session in sessions:
        name = session.target.name
        mine = [r for r in plugin.records if r.target == name and r.verdict == v.TARGET_ERROR]
        if mine:
            lines.append(f"  TARGET ERROR {name}: {len(mine)} case(s) not judged: {mine[0].reason.splitlines()[0]}")
    return lines


def _report(plugin: ConformancePlugin, sessions: list[TargetSession], status, keyword, say,
            wall_s: float = 0.0) -> int:
    verdict_names = plugin.verdicts()
    say(f"\nconformance run {plugin.run_id} ({len(plugin.records)} records, jobs {plugin.jobs}, "
        f"harness CPU {time.process_time():.1f} s)")
    for line in target_error_lines(plugin, sessions):  # target errors first, before the counts
        say(line)
    for session in sessions:
        target = session.target
        mine = [r for r in plugin.records if r.target == target.name]
        counts = v.summarize(r.verdict for r in mine)
        known = sum(1 for r in mine if r.verdict == v.FAILED and r.known_divergence)
        known_silent = sum(1 for r in mine if r.verdict == v.INDEFINITE and r.known_divergence)
        info = target.describe()
        state = f"could not start: {target.start_error.splitlines()[0]}" if target.start_error else \
            f"{info['version']}, era {info['era']}, admin API {info['admin_api']}" + \
            (f", image {info['image']}" if info.get("image") else "")  # a container target's image
        shown = [n for n in v.VERDICTS if n != v.TARGET_ERROR or counts[n]]
        groups = group_counts(kind_of(r.reason) for r in mine if r.verdict == v.UNSUPPORTED)
        detail = {v.FAILED: f" ({known} known divergences)" if known else "",
                  v.INDEFINITE: f" ({known_silent} known divergences)" if known_silent else "",
                  v.UNSUPPORTED: " (" + ", ".join(f"{g}: {n}" for g, n in groups.items()) + ")" if groups else ""}
        say(f"  {target.name} ({state}): " + ", ".join(f"{n} {counts[n]}{detail.get(n, '')}" for n in shown))
    say(f"  results: {plugin.writer.path if plugin.writer else '-'}")
    case_seconds: dict[str, float] = {}
    case_counts: dict[str, int] = {}
    for record in plugin.records:
        if record.verdict != v.UNSUPPORTED:
            case_seconds[record.target] = case_seconds.get(record.target, 0.0) + record.duration_s
            case_counts[record.target] = case_counts.get(record.target, 0) + 1
    for line in timing.account(wall_s, case_seconds, case_counts):
        say(line)
    if status in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        say(f"conformance: error: pytest ended with {status.name}; results are incomplete")
        return v.EXIT_HARNESS
    if plugin.selected == 0:
        say(f"conformance: error: no case selected{f' by -k {keyword!r}' if keyword else ''}; nothing was run")
        return v.EXIT_HARNESS
    known_failures = sum(1 for r in plugin.records if r.verdict == v.FAILED and r.known_divergence)
    known_indefinite = sum(1 for r in plugin.records if r.verdict == v.INDEFINITE and r.known_divergence)
    code = v.exit_code(verdict_names, known_failures, known_indefinite)  # a target that did not start decides nothing itself
    for line in stale_divergences(plugin):
        say(f"conformance: note: {line}")
    counts = v.summarize(verdict_names)
    executed = any(counts[n] for n in v.EXECUTED)
    troubled = {r.target for r in plugin.records if r.verdict == v.TARGET_ERROR}
    if not executed:
        say("conformance: error: no case was executed on any target"
            + (f" ({len(troubled)} target(s) down or misbehaving, see above)" if troubled else
               ": every selected case was unsupported"))
    known = known_failures + known_indefinite
    explanation = {v.EXIT_OK: "no failures" if not known else f"no failures besides {known} known divergences",
                   v.EXIT_FAILED: "failures",
                   v.EXIT_HARNESS: "target error" if troubled and not counts[v.BROKEN] else "harness error",
                   v.EXIT_INDEFINITE: "only indefinite results besides passes"}[code]
    say(f"exit {code}: {explanation}")
    return code
