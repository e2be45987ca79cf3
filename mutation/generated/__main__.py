"""``python -m mutation.generated``: generated mutants of the broker's decision code, tested and scored.

    python -m mutation.generated [--budget SECONDS] [--jobs N] [--module PATH]... [--out DIR]
        [--goal 0.9] [--no-scores] [--list]

- the mutants are made (mutants.py), the results that still hold are taken from the results file
  (cache.py), the rest are tested within ``--budget`` (run.py) and added to it.
- the score (``score``) is caught / (tested - equivalent): every tested mutant counts except the
  survivors triaged ``equivalent`` (triage.py); ``out-of-scope`` and ``model-gap`` survivors count
  as not caught. Errors and time-outs (``run.judge``) count as caught. ``score_in_scope`` also
  leaves out the ``out-of-scope`` survivors: the share of what a PIP states that the suite
  catches.
- the figures go to ``<out>/quality-generated.json``; a run over the whole scope appends date,
  commit, what was tested and left untested, and the score to ``mutation/generated-scores.jsonl``
  (``--no-scores``: never).
- exit 0 when the score reaches ``--goal`` and the triage check (``triage.problems``) finds
  nothing; 1 otherwise; 2 when the unmutated broker does not pass the runs (``run.baseline``) or
  the arguments or the triage file are wrong.
"""

from __future__ import annotations

import argparse
import datetime
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

from mutation.generated import cache, scope, triage
from mutation.generated.mutants import Mutant, compiles, enumerate_module
from mutation.generated import run as running
from mutation.generated.run import Outcome, Tester, baseline

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BUDGET_S = 1800.0
DEFAULT_GOAL = 0.90
SCORES_FILE = Path("mutation") / "generated-scores.jsonl"
REPORT_NAME = "quality-generated.json"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mutation.generated", description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S, metavar="SECONDS",
                        help=f"wall time for testing mutants; the rest stay untested (default {DEFAULT_BUDGET_S:.0f})")
    parser.add_argument("--jobs", type=int, default=2, metavar="N", help="mutants tested at once (default 2)")
    parser.add_argument("--module", action="append", default=[], metavar="PATH",
                        help="only this module of the scope (repeatable), e.g. reference_broker/autocreation.py")
    parser.add_argument("--out", type=Path, default=Path("reports/out"), help="where the report goes")
    parser.add_argument("--goal", type=float, default=DEFAULT_GOAL, help=f"score to reach (default {DEFAULT_GOAL})")
    parser.add_argument("--no-scores", action="store_true", help="do not append to mutation/generated-scores.jsonl")
    parser.add_argument("--list", action="store_true", help="print the mutants and their results, test nothing")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    return parser


def _commit(root: Path) -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def score(statuses: dict[str, str], entries: dict[str, triage.Entry]) -> dict:
    """The score's figures over the tested mutants: caught / (tested - equivalent), and in scope."""
    survivors = sorted(i for i, s in statuses.items() if s == "survived")
    by_verdict = triage.counts(entries.values(), survivors)
    caught = sum(1 for s in statuses.values() if s != "survived")
    judged = len(statuses) - by_verdict["equivalent"]
    return {"tested": len(statuses), "caught": caught, "survived": len(survivors),
            "equivalent": by_verdict["equivalent"], "out_of_scope": by_verdict["out-of-scope"],
            "model_gap": by_verdict["model-gap"],
            "missing_case_open": by_verdict["missing-case"],
            "untriaged": sum(1 for i in survivors if i not in entries),
            "score": round(caught / judged, 4) if judged else 0.0,
            # what the rows can state: out-of-scope survivors change behaviour no PIP states
            "score_in_scope": round(caught / (judged - by_verdict["out-of-scope"]), 4)
            if judged - by_verdict["out-of-scope"] else 0.0}


def _on_signal(signum, frame) -> None:
    running.stop_all()
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Optional[list[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        previous = signal.signal(signal.SIGTERM, _on_signal)
    except ValueError:  # not the main thread (tests): nothing to install
        previous = None
    try:
        return _main(args)
    except KeyboardInterrupt:
        running.stop_all()
        print("mutation.generated: stopped; finished results are kept", flush=True)
        return 2
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def killer_rows(mutant: Mutant, by_id: dict[str, Mutant], results: dict[str, dict],
                before: Optional[dict] = None) -> dict[str, tuple[str, ...]]:
    """run label -> the row that killed ``mutant`` in ``before`` (its result that no longer holds),
    then the rows that killed other mutants of its function, most often first, then of its module
    (the probe of ``run.judge``)."""
    same_function: dict[str, dict[str, int]] = {}
    same_module: dict[str, dict[str, int]] = {}
    for other_id, result in list(results.items()):
        other = by_id.get(other_id)
        if other is None or other.module != mutant.module or not result.get("killer_row") \
                or result.get("status") != "killed":
            continue
        bucket = same_function if other.function == mutant.function else same_module
        counts = bucket.setdefault(result.get("run", ""), {})
        counts[result["killer_row"]] = counts.get(result["killer_row"], 0) + 1
    hints: dict[str, tuple[str, ...]] = {}
    for label in set(same_function) | set(same_module):
        ranked = [row for row, _n in sorted(same_function.get(label, {}).items(), key=lambda kv: -kv[1])]
        ranked += [row for row, _n in sorted(same_module.get(label, {}).items(), key=lambda kv: -kv[1])
                   if row not in ranked]
        hints[label] = tuple(ranked)
    if before and before.get("status") == "killed" and before.get("killer_row") and before.get("run"):
        label = before["run"]
        hints[label] = (before["killer_row"],) + tuple(r for r in hints.get(label, ()) if r != before["killer_row"])
    return hints


def _main(args: argparse.Namespace) -> int:
    root: Path = args.root.resolve()

    def say(text: str) -> None:
        print(text, flush=True)

    started = time.monotonic()
    try:
        modules = [scope.module(path) for path in args.module] if args.module else list(scope.MODULES)
        entries = triage.load(root / triage.TRIAGE_FILE)
    except (KeyError, triage.TriageError) as exc:
        say(f"mutation.generated: error: {exc}")
        return 2
    if args.budget < 0 or args.jobs < 1:
        say("mutation.generated: error: --budget must be >= 0 and --jobs >= 1")
        return 2

    mutants: list[Mutant] = []
    keys: dict[str, cache.Keys] = {}
    plans = {entry.path: entry.runs for entry in modules}
    harness = cache.harness_key(root)
    for entry in modules:
        original = (root / entry.path).read_text(encoding="utf-8")
        cases = cache.cases_key(root, [pip for run in entry.runs for pip in run.pips])
        plan = cache.plan_key(entry.runs)
        for mutant in enumerate_module(root, entry):
            mutants.append(mutant)
            keys[mutant.id] = cache.Keys(cache.module_key(mutant, original), harness, cases, plan)
    results_path = root / cache.RESULTS_FILE
    stored = cache.load(results_path)
    rows = cache.RowIndex(root)
    results = {m.id: stored[m.id] for m in mutants if m.id in stored and cache.still_holds(stored[m.id], keys[m.id], rows)}
    by_id = {m.id: m for m in mutants}
    snapshots = {i: e for i, e in stored.items() if i.startswith("rows:")}
    current: dict[str, dict] = {}  # cases key -> the rows now (``cache.snapshot``)
    retries: dict[str, tuple[str, ...]] = {}
    for mutant in mutants:
        if mutant.id in results or mutant.id not in stored:
            continue
        k = keys[mutant.id]
        if k.cases not in current:
            current[k.cases] = cache.snapshot(root, [pip for run in plans[mutant.module] for pip in run.pips], k.cases)
        before = snapshots.get(cache.snapshot_id(stored[mutant.id].get("cases_key", "")))
        retry = cache.rows_to_retry(stored[mutant.id], k, before, current[k.cases])
        if retry == ():
            results[mutant.id] = stored[mutant.id]  # rows were only removed
        elif retry:
            retries[mutant.id] = retry
    todo = [m for m in mutants if m.id not in results]
    say(f"generated mutants: {len(mutants)} in {len(modules)} module(s); {len(results)} results still hold, "
        f"{len(todo)} to test, {len(retries)} of them survivors tried on new or changed rows only "
        f"(budget {args.budget:.0f} s, {args.jobs} worker(s))")
    if args.list:
        for mutant in mutants:
            status = results.get(mutant.id, {}).get("status", "untested")
            say(f"  {status:9} {mutant.describe()}")
        return 0

    if todo and args.budget > 0:  # a zero budget tests nothing, so it needs no baseline either
        broken = {m.id: problem for m in todo if (problem := compiles(m))}
        for mutant in todo:
            if mutant.id in broken:
                say(f"  not compiled, left out: {mutant.describe()}: {broken[mutant.id]}")
        todo = [m for m in todo if m.id not in broken]
        needed = list(dict.fromkeys(run for m in todo for run in plans[m.module]))
        broker = cache.broker_key(root)
        baseline_keys = {run: cache.baseline_key(root, run, harness, broker) for run in needed}
        known = {run: (stored[cache.baseline_id(run)]["duration_s"], stored[cache.baseline_id(run)]["passed"])
                 for run in needed if stored.get(cache.baseline_id(run), {}).get("key") == baseline_keys[run]
                 and "passed" in stored[cache.baseline_id(run)]}
        try:
            limits = baseline(root, needed, say, known)
        except RuntimeError as exc:
            say(f"mutation.generated: error: {exc}")
            return 2
        run_rows: dict[scope.Run, set[str]] = {}

        def only(mutant: Mutant) -> Optional[dict[str, tuple[str, ...]]]:
            """Changed rows only (``cache.rows_to_retry``): run label -> the new or changed rows of that run, for a survivor tried again."""
            if mutant.id not in retries:
                return None
            chosen = {}
            for run in plans[mutant.module]:
                if run not in run_rows:
                    run_rows[run] = cache.rows_of(root, run.pips)
                chosen[running.run_label(run)] = tuple(r for r in retries[mutant.id] if r in run_rows[run])
            return chosen

        try:
            running.baseline_rows(root, [(run, selected) for m in todo if (wanted := only(m))
                                         for run in plans[m.module]
                                         if (selected := wanted[running.run_label(run)])], limits)
        except RuntimeError as exc:
            say(f"mutation.generated: error: {exc}")
            return 2
        for run, took in running.BASELINE_TIMES.items():
            cache.append(results_path, {"id": cache.baseline_id(run), "key": baseline_keys[run],
                                        "duration_s": round(took, 2), "passed": running.BASELINE_PASSED[run]})
        done = [0]
        snapshot_lock = threading.Lock()

        def at_start(mutant: Mutant) -> str:
            """The spec the mutant's runs read: rows added while a run goes on key its later results;
            the rows of that spec are kept beside the results (``cache.snapshot``)."""
            pips = [pip for run in plans[mutant.module] for pip in run.pips]
            key = cache.cases_key(root, pips)
            with snapshot_lock:
                if cache.snapshot_id(key) not in snapshots:
                    snapshots[cache.snapshot_id(key)] = made = cache.snapshot(root, pips, key)
                    cache.append(results_path, made)
            return key

        def record(mutant: Mutant, outcome: Outcome, cases_at_start: Optional[str] = None) -> None:
            k = keys[mutant.id]
            if cases_at_start is not None:
                k = cache.Keys(k.module, k.harness, cases_at_start, k.plan)
            result = {"id": mutant.id, "status": "killed" if outcome.status == "killed" else outcome.status,
                      "killer": outcome.killer, "killer_row": outcome.killer_row, "reason": outcome.reason,
                      "run": outcome.run, "duration_s": outcome.duration_s, "module_key": k.module,
                      "harness_key": k.harness, "cases_key": k.cases, "plan": k.plan, "judge": cache.JUDGE,
                      "killer_row_digest": rows.digest(outcome.killer_row) if outcome.killer_row else None}
            if mutant.id in retries:
                result["retried_rows"] = len(retries[mutant.id])
            results[mutant.id] = result
            cache.append(results_path, result)
            done[0] += 1
            mark = "SURVIVED" if outcome.status == "survived" else outcome.status
            say(f"  [{done[0]}/{len(todo)}] {mark:8} {mutant.describe()}"
                + (f" <- {outcome.killer}" if outcome.killer else "") + f" ({outcome.duration_s} s)")

        def hints(mutant: Mutant) -> dict[str, tuple[str, ...]]:
            found = killer_rows(mutant, by_id, results, stored.get(mutant.id))
            entry = entries.get(mutant.id)
            for run in plans[mutant.module] if entry is not None else ():
                # the rows added for this mutant (a missing-case entry) are the likeliest killers
                own = tuple(r for r in entry.rows if r.split("-")[0] in {f"pip{p}" for p in run.pips})
                if own:
                    label = running.run_label(run)
                    found[label] = own + tuple(r for r in found.get(label, ()) if r not in own)
            return found

        remaining = max(0.0, args.budget - (time.monotonic() - started))
        Tester(root, limits, jobs=args.jobs, budget_s=remaining, on_result=record,
               hints=hints, on_start=at_start, only=only).run(todo, plans)
    kept = {m.id for m in mutants} | {cache.baseline_id(run) for entry in modules for run in entry.runs}
    cache.compact(results_path, kept if not args.module else kept | set(stored))

    statuses = {i: r["status"] for i, r in results.items() if i in by_id}
    figures = score(statuses, entries)
    scoped_entries = {i: e for i, e in entries.items() if not args.module or i.split(":")[0] in plans}
    found = triage.problems(scoped_entries, by_id, statuses)
    figures.update(generated=len(mutants), untested=len(mutants) - len(statuses), goal=args.goal,
                   modules=[entry.path for entry in modules], duration_s=round(time.monotonic() - started, 1))
    per_module = {}
    for mutant in mutants:
        row = per_module.setdefault(mutant.module, {"generated": 0, "caught": 0, "survived": 0})
        row["generated"] += 1
        status = statuses.get(mutant.id)
        if status == "survived":
            row["survived"] += 1
        elif status:
            row["caught"] += 1
    survivors = [{"id": i, "where": by_id[i].describe(), "verdict": entries[i].verdict if i in entries else None,
                  "why": entries[i].why if i in entries else None}
                 for i, s in sorted(statuses.items()) if s == "survived"]
    report = {**figures, "per_module": per_module, "survivors": survivors, "triage_problems": found}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / REPORT_NAME).write_text(json.dumps(report, indent=1, sort_keys=True), encoding="utf-8")

    say(f"\ngenerated-mutant score: {figures['caught']}/{figures['tested'] - figures['equivalent']} = "
        f"{figures['score']:.1%} (goal {args.goal:.0%}): {figures['tested']} tested, {figures['caught']} caught, "
        f"{figures['survived']} survived ({figures['equivalent']} equivalent, {figures['out_of_scope']} out of scope, "
        f"{figures['model_gap']} model gaps, "
        f"{figures['untriaged']} untriaged), {figures['untested']} untested, in {figures['duration_s']} s")
    for line in found:
        say(f"  triage: {line}")
    say(f"report: {args.out / REPORT_NAME}")
    if not args.no_scores and not args.module:
        line = {"date": datetime.date.today().isoformat(), "commit": _commit(root), "generated": len(mutants),
                "tested": figures["tested"], "untested": figures["untested"],
                "caught": figures["caught"], "survived": figures["survived"], "equivalent": figures["equivalent"],
                "out_of_scope": figures["out_of_scope"], "model_gap": figures["model_gap"],
                "score": figures["score"], "score_in_scope": figures["score_in_scope"]}
        cache.append(root / SCORES_FILE, line)
    return 0 if figures["score"] >= args.goal and not found else 1


if __name__ == "__main__":
    sys.exit(main())
