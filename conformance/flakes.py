"""The flake hunter: the same run several times, optionally beside CPU hogs, and every case whose
verdict was not the same each time.

``pulsar-conformance run --repeat N [--cpu-hogs K] ...`` runs ``run`` with the other options N times,
one after another, each in a process of its own (as a CI job would run it) and each writing its own
``<out>/repeat-<i>/``; K busy loops run beside all of them when asked, to play a shared runner. It
then compares the records case by case (a case of a target: its ``case_id`` on that ``target``) and
writes ``<out>/flakes.json`` and ``<out>/flakes.md``: every case whose verdict differed, with each
run's verdict and reason, and each run's exit code and wall time.

A verdict is about the broker, so a case that differs between identical runs is a defect of the suite
(or of a target that answers by chance), never something to average away: ``hunt`` exits 1 when any
case differed, 2 when a run could not be made or recorded nothing, else 0. A case whose every run
names the same known divergence (an intermittent entry names passes too) differed as that entry
says it may: it is listed apart and does not count.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from conformance import children, verdicts as v
from conformance.results import read_results

RUN_BOUND_S = 3600.0  # one run of the whole spec on a slow release, start-ups included, is far below this
HOG = "while True: pass"

# Options of `run` that the hunter sets itself for each repeat, with how many values each takes.
OWN_OPTIONS = {"--repeat": 1, "--cpu-hogs": 1, "--out": 1, "--run-id": 1}


@dataclass
class Repeat:
    index: int
    out: Path
    exit_code: Optional[int] = None
    wall_s: float = 0.0
    records: dict = field(default_factory=dict)  # (target, case_id) -> ResultRecord


def run_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` of ``run`` without the options the hunter sets itself (``OWN_OPTIONS``)."""
    kept, skip = [], 0
    for arg in argv:
        if skip:
            skip -= 1
            continue
        name = arg.split("=", 1)[0]
        if name in OWN_OPTIONS:
            skip = 0 if "=" in arg else OWN_OPTIONS[name]
            continue
        kept.append(arg)
    return kept


def start_hogs(count: int) -> list[subprocess.Popen]:
    """``count`` processes that each keep a core busy; they die with the harness."""
    return [children.popen([sys.executable, "-c", HOG], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL) for _ in range(count)]


def stop_hogs(hogs: list[subprocess.Popen]) -> None:
    for hog in hogs:
        hog.kill()
    for hog in hogs:
        try:
            hog.wait(10)
        except subprocess.TimeoutExpired:
            pass


def run_once(repeat: Repeat, argv: Sequence[str], say) -> None:
    """One run in a process of its own, its console in ``console.txt``; it gets SIGTERM (and stops
    its targets) if the hunter dies, and is stopped the same way past ``RUN_BOUND_S``."""
    command = [sys.executable, "-m", "conformance", "run", *argv, "--out", str(repeat.out)]
    repeat.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(repeat.out / "console.txt", "w", encoding="utf-8") as console:
        run = children.popen(command, death_signal="TERM", stdin=subprocess.DEVNULL, stdout=console,
                             stderr=subprocess.STDOUT)
        try:
            repeat.exit_code = run.wait(RUN_BOUND_S)
        except subprocess.TimeoutExpired:
            repeat.exit_code = None
            say(f"  run {repeat.index + 1}: did not end within {RUN_BOUND_S:g} s; stopped")
            run.terminate()
            try:
                run.wait(120)
            except subprocess.TimeoutExpired:
                run.kill()
                run.wait()
    repeat.wall_s = time.monotonic() - started
    for path in sorted((repeat.out / "results").glob("*.jsonl")):
        for record in read_results(path):
            repeat.records[(record.target, record.case_id)] = record


def differing(repeats: list[Repeat]) -> dict:
    """(target, case_id) -> [record or None per repeat], for the cases whose verdicts were not all the same."""
    keys = sorted({key for repeat in repeats for key in repeat.records})
    found = {}
    for key in keys:
        seen = [repeat.records.get(key) for repeat in repeats]
        if len({record.verdict if record else None for record in seen}) > 1:
            found[key] = seen
    return found


def as_recorded(seen: list) -> Optional[str]:
    """The known divergence that says these runs may differ: every run has a record, and each names
    the same entry (an intermittent entry names passes too, conformance/divergences.py)."""
    entries = {record.known_divergence if record else None for record in seen}
    if len(entries) == 1 and None not in entries and "" not in entries:
        return entries.pop()
    return None


def summary(repeats: list[Repeat], found: dict, hogs: int) -> dict:
    per_target: dict[str, dict] = defaultdict(lambda: {"cases": 0, "differed": 0, "as recorded": 0})
    for key in {key for repeat in repeats for key in repeat.records}:
        per_target[key[0]]["cases"] += 1
        if key in found:
            per_target[key[0]]["as recorded" if as_recorded(found[key]) else "differed"] += 1
    return {
        "repeats": len(repeats), "cpu_hogs": hogs,
        "runs": [{"run": r.index + 1, "exit_code": r.exit_code, "wall_s": round(r.wall_s, 1),
                  "records": len(r.records),
                  "verdicts": dict(v.summarize(rec.verdict for rec in r.records.values()))} for r in repeats],
        "targets": dict(sorted(per_target.items())),
        "differing": [{"target": target, "case_id": case_id, "known_divergence": as_recorded(seen),
                       "runs": [{"verdict": rec.verdict, "reason": rec.reason} if rec else None for rec in seen]}
                      for (target, case_id), seen in found.items()],
    }


def markdown(report: dict) -> str:
    lines = [f"# Flake hunt: {report['repeats']} runs, {report['cpu_hogs']} CPU hog(s) beside them", "",
             "| run | exit | wall s | records | verdicts |", "|---|---|---|---|---|"]
    for run in report["runs"]:
        counts = ", ".join(f"{name} {count}" for name, count in run["verdicts"].items() if count)
        lines.append(f"| {run['run']} | {run['exit_code']} | {run['wall_s']} | {run['records']} | {counts} |")
    lines += ["", "| target | cases | differed | differed as a known divergence says they may |", "|---|---|---|---|"]
    lines += [f"| {name} | {t['cases']} | {t['differed']} | {t['as recorded']} |" for name, t in report["targets"].items()]
    unexpected = [e for e in report["differing"] if not e["known_divergence"]]
    lines += ["", f"## Cases whose verdict differed: {len(unexpected)}, and "
                  f"{len(report['differing']) - len(unexpected)} as their known divergence says they may", ""]
    for entry in sorted(report["differing"], key=lambda e: bool(e["known_divergence"])):
        known = f" (known divergence {entry['known_divergence']}, intermittent)" if entry["known_divergence"] else ""
        lines.append(f"- `{entry['case_id']}` on {entry['target']}{known}")
        for index, run in enumerate(entry["runs"], 1):
            text = "no record" if run is None else f"{run['verdict']}: {run['reason'].splitlines()[0] if run['reason'] else ''}"
            lines.append(f"  - run {index}: {text}")
    return "\n".join(lines) + "\n"


def hunt(argv: Sequence[str], *, repeat: int, hogs: int, out: Path, stream=None) -> int:
    """Run ``run`` with ``argv`` ``repeat`` times beside ``hogs`` busy loops; the exit code above."""
    def say(text: str) -> None:
        print(text, file=stream or sys.stdout, flush=True)

    argv = run_argv(argv)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    repeats = [Repeat(index, out / f"repeat-{index + 1}") for index in range(repeat)]
    say(f"flake hunt: {repeat} runs of `run {' '.join(argv)}`" + (f", {hogs} CPU hog(s) beside them" if hogs else ""))
    running = start_hogs(hogs)
    try:
        for item in repeats:
            run_once(item, argv, say)
            say(f"  run {item.index + 1}: exit {item.exit_code}, {len(item.records)} records, {item.wall_s:.0f} s")
    finally:
        stop_hogs(running)
    found = differing(repeats)
    report = summary(repeats, found, hogs)
    (out / "flakes.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out / "flakes.md").write_text(markdown(report), encoding="utf-8")
    unexpected = 0
    for entry in report["differing"]:
        verdicts = " / ".join(run["verdict"] if run else "-" for run in entry["runs"])
        if entry["known_divergence"]:
            say(f"  differed as {entry['known_divergence']} says it may: {entry['case_id']} on {entry['target']}: "
                f"{verdicts}")
        else:
            unexpected += 1
            say(f"  DIFFERED {entry['case_id']} on {entry['target']}: {verdicts}")
    say(f"flake hunt: {unexpected} case(s) differed, {len(found) - unexpected} more as their known divergence "
        f"says they may; {out / 'flakes.md'}")
    if any(item.exit_code is None or item.exit_code == v.EXIT_HARNESS and not item.records for item in repeats):
        return v.EXIT_HARNESS
    return v.EXIT_FAILED if unexpected else v.EXIT_OK
