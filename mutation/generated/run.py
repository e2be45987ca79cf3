"""Testing generated mutants: each one on disk in a scratch copy of the broker, judged by conformance runs.

- a scratch copy (``Scratch``): a worker owns a scratch folder holding a copy of
  ``reference_broker/`` (without bytecode) and runs ``python -m conformance run ... -x`` with that
  folder as its working directory, so the harness, which comes from the repository, starts
  brokers that import the copy: ``-m`` puts the working directory first on the path. The mutated
  module is written into the copy for one mutant and the original put back after it. Bytecode is
  never written there: a mutant of the same size written within the same second as the original
  would otherwise be run from the original's cached bytecode.
- judging (``judge``): a mutant is KILLED by the first of its module's runs (``scope.Module.runs``)
  that exits non-zero: exit 1 is a failed case, named as the killer; exit 2 or 3 (the broker did
  not start, a case could not be judged) and a run past its time limit are tried once more and, if
  they happen again, kill the mutant with status ``error`` or ``timeout``: a broker that does not
  start or hangs is as visible as a wrong answer. A run that exits 0 with fewer cases passed than
  on the unmutated broker also kills (status ``killed``, the first case not passed as killer): the
  harness reports a case whose capability probe fails as unsupported, so a mutant that breaks a
  feature (numberOfTopicBuckets, a feature flag) turns that PIP's cases unsupported, and a run
  mixing PIPs still exits 0. A mutant all of whose runs exit 0 with every baseline case passed
  SURVIVED.
- the probe (``probe``, the ``hints`` of ``judge``): before a run, the row that killed this mutant
  in a result that no longer holds, then the rows that killed other mutants of the same function
  (else of the same module) in that run, are tried alone (``-k``, at most ``PROBE_ROWS``): a
  failure there is a kill by that case, the same answer the whole run gives sooner; otherwise the
  whole run decides. The probe changes how long a mutant takes, never whether it is killed: a
  probe that passes, selects nothing or has trouble leaves the verdict to the whole run.
- changed rows only (the ``only`` of ``judge``; ``cache.rows_to_retry``): a survivor tried again
  on new or changed rows only runs, of each of its module's runs, only those rows (``-k``); a run
  with none of them is skipped. Its passed cases are compared with the same rows' run on the
  unmutated copy (``baseline_rows``), made once per run and set of rows.
- the baseline (``baseline``): before any mutant, each run the untested mutants need is made on
  the unmutated copy and must exit 0; otherwise nothing is tested (exit 2): a case that fails
  anyway would kill every mutant. Its duration sets that run's time limit. A baseline that passed
  is kept in the results file under ``known`` (a key of the whole broker, the harness and the
  run's spec files) and not made again while that key holds.
- the budget (``Tester``): ``budget`` bounds the wall time: no mutant is started once it is spent;
  mutants already running finish. Mutants whose result still holds (``cache.still_holds``) are not
  run at all. The untested rest is reported as such, never as killed or survived.
- ``stop_all()`` (SIGTERM, Ctrl-C) ends every running conformance run's process group and records
  nothing more: a run ended that way says nothing about its mutant.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from mutation.generated import scope
from mutation.generated.mutants import Mutant

MIN_RUN_LIMIT_S = 120.0
RUN_LIMIT_FACTOR = 4.0
PROBLEM_EXITS = (2, 3)

BASELINE_TIMES: dict[scope.Run, float] = {}  # the baselines made by this process, for the results file
BASELINE_PASSED: dict[scope.Run, int] = {}  # cases each run passes on the unmutated broker (``judge`` compares)
# Changed rows only: cases a run restricted to some rows passes on the unmutated broker
ROWS_BASELINE_PASSED: dict[tuple[scope.Run, tuple[str, ...]], int] = {}
SELECTS_NOTHING: set[tuple[scope.Run, tuple[str, ...]]] = set()  # rows that make no case of that run
_RUNNING: set[subprocess.Popen] = set()
_RUNNING_LOCK = threading.Lock()
STOPPING = threading.Event()


class Stopped(Exception):
    """The tester was stopped while a mutant was being judged (``stop_all``)."""


def stop_all() -> None:
    STOPPING.set()
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for process in running:
        _end_group(process)


@dataclass
class Outcome:
    status: str                  # killed, survived, error, timeout
    killer: str = ""             # case id
    killer_row: str = ""
    reason: str = ""
    run: str = ""                # the run that killed it, "target:pips"
    duration_s: float = 0.0


@dataclass
class Scratch:
    """One worker's copy of the broker, written without bytecode."""

    root: Path
    folder: Path = field(init=False)

    def __post_init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="pulsar-mutant-"))
        shutil.copytree(self.root / "reference_broker", self.folder / "reference_broker",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))

    def path_of(self, module: str) -> Path:
        return self.folder / module

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


PROBE_ROWS = 3


def run_label(run: scope.Run) -> str:
    return f"{run.target}:{','.join(run.pips)}"


def run_command(run: scope.Run, out: Path, rows: tuple[str, ...] = ()) -> list[str]:
    argv = [sys.executable, "-m", "conformance", "run", "--target", run.target]
    for pip in run.pips:
        argv += ["--pip", pip]
    if rows:
        argv += ["-k", " or ".join(rows)]
    # One broker instance, its cases one at a time: a mutant's run is one of several at once on a
    # shared machine, where the CPU of the brokers a wider run starts costs more than its waits.
    return argv + ["-x", "--jobs", "1", "--out", str(out)]


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the scratch copy never holds bytecode
    env.pop("PYTHONPATH", None)
    return env


def execute(argv: list[str], cwd: Path, limit: float) -> tuple[Optional[int], str]:
    """(exit code or None past ``limit``, the output's tail). The run's own process group is ended
    on a time-out, brokers included."""
    with tempfile.TemporaryFile() as output:
        if STOPPING.is_set():
            raise Stopped()
        process = subprocess.Popen(argv, cwd=cwd, env=_environment(), stdin=subprocess.DEVNULL, stdout=output,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        with _RUNNING_LOCK:
            _RUNNING.add(process)
        try:
            code: Optional[int] = process.wait(limit)
        except subprocess.TimeoutExpired:
            code = None
            _end_group(process)
        finally:
            with _RUNNING_LOCK:
                _RUNNING.discard(process)
        if STOPPING.is_set():
            raise Stopped()
        output.seek(0)
        tail = output.read()[-4000:].decode("utf-8", "replace")
    return code, tail


def _end_group(process: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _records(out: Path) -> list[dict]:
    records = []
    for path in sorted((out / "results").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
    return records


def passed_count(out: Path) -> int:
    return sum(1 for record in _records(out) if record.get("verdict") == "passed")


def first_not_passed(out: Path) -> tuple[str, str, str]:
    """(case id, row id, reason) of the first record neither passed nor stopped by -x."""
    for record in _records(out):
        if record.get("verdict") != "passed" and "stopped" not in str(record.get("reason", "")):
            return record.get("case_id", ""), record.get("row_id", ""), str(record.get("reason", ""))[:300]
    return "", "", ""


def first_problem(out: Path) -> tuple[str, str, str]:
    """(case id, row id, reason) of the first failed record of a run, else of the first one not
    passed and not unsupported."""
    records = _records(out)
    for wanted in (("failed",), ("broken", "indefinite", "target-error")):
        for record in records:
            if record.get("verdict") in wanted:
                return record.get("case_id", ""), record.get("row_id", ""), str(record.get("reason", ""))[:300]
    return "", "", ""


def probe(run: scope.Run, rows: tuple[str, ...], cwd: Path, limit: float) -> Optional[tuple[str, str, str]]:
    """The probe: (case, row, reason) when one of ``rows`` fails on what is in ``cwd``, else None."""
    out = cwd / "out"
    shutil.rmtree(out, ignore_errors=True)
    code, _tail = execute(run_command(run, out, rows), cwd, limit)
    found = first_problem(out) if code == 1 else None
    shutil.rmtree(out, ignore_errors=True)
    return found if found and found[0] else None


def judge(runs: tuple[scope.Run, ...], cwd: Path, limits: dict[scope.Run, float],
          hints: Optional[dict[str, tuple[str, ...]]] = None,
          only: Optional[dict[str, tuple[str, ...]]] = None) -> Outcome:
    """Judges whatever is in ``cwd`` now; ``hints``: run label -> rows to try first (the probe);
    ``only``: run label -> the only rows to run (changed rows only)."""
    started = time.monotonic()
    for run in runs:
        label = run_label(run)
        selected: tuple[str, ...] = ()
        if only is not None:
            selected = tuple(only.get(label, ()))
            if not selected or (run, selected) in SELECTS_NOTHING:
                continue
        rows = tuple((hints or {}).get(label, ()))[:PROBE_ROWS]
        if rows and not selected:
            found = probe(run, rows, cwd, limits.get(run, MIN_RUN_LIMIT_S))
            if found:
                return Outcome("killed", *found, label, round(time.monotonic() - started, 2))
        code, tail, out = None, "", cwd / "out"
        for _attempt in range(2):
            shutil.rmtree(out, ignore_errors=True)
            code, tail = execute(run_command(run, out, selected), cwd, limits.get(run, MIN_RUN_LIMIT_S))
            if code in (0, 1):
                break
        if code == 0:
            expected = ROWS_BASELINE_PASSED.get((run, selected)) if selected else BASELINE_PASSED.get(run)
            passed = passed_count(out)
            if expected is None or passed >= expected:
                continue
            case, row, reason = first_not_passed(out)
            shutil.rmtree(out, ignore_errors=True)
            return Outcome("killed", case, row, f"{expected - passed} case(s) that pass on the unmutated broker did "
                           f"not pass: {reason}"[:300], label, round(time.monotonic() - started, 2))
        case, row, reason = first_problem(out)
        shutil.rmtree(out, ignore_errors=True)
        if code == 1:
            status = "killed"
        elif code is None:
            status, reason = "timeout", reason or f"no exit within {limits.get(run, MIN_RUN_LIMIT_S):.0f} s"
        else:
            status = "error"
            reason = reason or (tail.strip().splitlines() or [f"exit {code}"])[-1][:300]
        return Outcome(status, case, row, reason, label, round(time.monotonic() - started, 2))
    shutil.rmtree(cwd / "out", ignore_errors=True)
    return Outcome("survived", duration_s=round(time.monotonic() - started, 2))


def baseline(root: Path, runs: list[scope.Run], say: Callable[[str], None],
             known: Optional[dict[scope.Run, tuple[float, int]]] = None) -> dict[scope.Run, float]:
    """Each run on the unmutated copy; its time limit, or RuntimeError naming the run that fails.
    ``known``: runs whose baseline still holds, with its duration and its passed cases."""
    known = known or {}
    limits = {run: max(MIN_RUN_LIMIT_S, RUN_LIMIT_FACTOR * known[run][0]) for run in runs if run in known}
    BASELINE_PASSED.update({run: known[run][1] for run in runs if run in known})
    runs = [run for run in runs if run not in known]
    if not runs:
        return limits
    scratch = Scratch(root)
    try:
        for run in runs:
            shutil.rmtree(scratch.folder / "out", ignore_errors=True)  # each run's own results only
            started = time.monotonic()
            code, tail = execute(run_command(run, scratch.folder / "out"), scratch.folder, 10 * MIN_RUN_LIMIT_S)
            took = time.monotonic() - started
            if code != 0:
                case, _row, reason = first_problem(scratch.folder / "out")
                raise RuntimeError(f"the unmutated broker does not pass run {run.target} --pip {' --pip '.join(run.pips)}"
                                   f" (exit {code}): {case} {reason or tail.strip()[-300:]}")
            limits[run] = max(MIN_RUN_LIMIT_S, RUN_LIMIT_FACTOR * took)
            BASELINE_TIMES[run] = took
            BASELINE_PASSED[run] = passed_count(scratch.folder / "out")
            say(f"  baseline {run.target} PIP {','.join(run.pips)}: passes in {took:.1f} s")
    finally:
        scratch.remove()
    return limits


def baseline_rows(root: Path, wanted: list[tuple[scope.Run, tuple[str, ...]]], limits: dict[scope.Run, float]) -> None:
    """Changed rows only: each run restricted to its rows, on the unmutated copy; RuntimeError when one fails."""
    wanted = [item for item in dict.fromkeys(wanted) if item not in ROWS_BASELINE_PASSED and item not in SELECTS_NOTHING]
    if not wanted:
        return
    scratch = Scratch(root)
    try:
        for run, rows in wanted:
            out = scratch.folder / "out"
            shutil.rmtree(out, ignore_errors=True)
            code, tail = execute(run_command(run, out, rows), scratch.folder, limits.get(run, MIN_RUN_LIMIT_S))
            if code == 2 and "no case selected" in tail:
                SELECTS_NOTHING.add((run, rows))
                continue
            if code != 0:
                case, _row, reason = first_problem(out)
                raise RuntimeError(f"the unmutated broker does not pass rows {', '.join(rows)} of run "
                                   f"{run_label(run)} (exit {code}): {case} {reason or tail.strip()[-300:]}")
            ROWS_BASELINE_PASSED[(run, rows)] = passed_count(out)
    finally:
        scratch.remove()


class Tester:
    """Runs mutants on ``jobs`` workers, each with its own scratch copy (``Scratch``), within a budget."""

    def __init__(self, root: Path, limits: dict[scope.Run, float], *, jobs: int, budget_s: float,
                 on_result: Callable[..., None], clock: Callable[[], float] = time.monotonic,
                 hints: Optional[Callable[[Mutant], dict[str, tuple[str, ...]]]] = None,
                 on_start: Optional[Callable[[Mutant], object]] = None,
                 only: Optional[Callable[[Mutant], Optional[dict[str, tuple[str, ...]]]]] = None):
        self.root = root
        self.limits = limits
        self.jobs = max(1, jobs)
        self.budget_s = budget_s
        self.on_result = on_result
        self.clock = clock
        self.hints = hints or (lambda mutant: {})
        self.only = only or (lambda mutant: None)  # changed rows only
        # what was true when the mutant's runs started (the spec they read), handed to on_result
        self.on_start = on_start
        self._lock = threading.Lock()
        self._free: list[Scratch] = []

    def run(self, mutants: list[Mutant], plans: dict[str, tuple[scope.Run, ...]]) -> list[str]:
        """Test ``mutants``; returns the ids left untested when the budget ran out."""
        started = self.clock()
        untested: list[str] = []
        queue = list(mutants)
        scratches = [Scratch(self.root) for _ in range(min(self.jobs, len(queue)) or 1)]
        self._free = list(scratches)

        def work(mutant: Mutant) -> None:
            if STOPPING.is_set():
                return
            if self.clock() - started >= self.budget_s:
                with self._lock:
                    untested.append(mutant.id)
                return
            with self._lock:
                scratch = self._free.pop()
            target = scratch.path_of(mutant.module)
            original = target.read_text(encoding="utf-8")
            started_with = self.on_start(mutant) if self.on_start else None
            try:
                target.write_text(mutant.source, encoding="utf-8")
                outcome = judge(plans[mutant.module], scratch.folder, self.limits, self.hints(mutant),
                                self.only(mutant))
            except Stopped:
                return
            finally:
                target.write_text(original, encoding="utf-8")
                with self._lock:
                    self._free.append(scratch)
            if self.on_start:
                self.on_result(mutant, outcome, started_with)
            else:
                self.on_result(mutant, outcome)

        try:
            with ThreadPoolExecutor(max_workers=len(scratches)) as pool:
                for future in [pool.submit(work, mutant) for mutant in queue]:
                    future.result()
        finally:
            for scratch in scratches:
                scratch.remove()
        return untested
