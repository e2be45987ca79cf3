"""The suite's own wall time: the whole spec per target, one case at a time against concurrent.

For each target and each PIP (and the whole spec), runs ``python -m conformance run`` twice in a
row, ``--jobs 1`` (one case at a time on one broker) and ``--jobs N`` (the default), and prints
wall time (start-up included), the ratio, the harness's own CPU (the run reports it), whether
both runs gave the same verdict for every case (concurrency must change nothing but the time),
and for targets that report them (pulsar-standalone) each broker start-up's seconds and the
broker's peak resident memory.

    .venv/bin/python bench/suite.py [--target reference] [--target pulsar-standalone:4.0.7]
                                    [--pip 344 --pip 2 ...] [--jobs N] [--whole-only]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conformance.scheduler import DEFAULT_JOBS  # noqa: E402

PIPS = ("344", "2", "157", "35")
RUN_BOUND_S = 3600
_SUMMARY = re.compile(r"conformance run \S+ \((\d+) records, jobs (\d+), harness CPU ([\d.]+) s\)")


def run_once(target: str, pip: str | None, jobs: int, out: Path) -> dict:
    argv = [sys.executable, "-m", "conformance", "run", "--target", target, "--jobs", str(jobs), "--out", str(out)]
    if pip:
        argv += ["--pip", pip]
    started = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=RUN_BOUND_S)
    wall = time.monotonic() - started
    match = _SUMMARY.search(done.stdout)
    verdicts = {}
    for path in (out / "results").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            verdicts[record["case_id"]] = record["verdict"]
    facts = {}
    environment = out / "allure-results" / "environment.properties"
    if environment.is_file():
        for line in environment.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.endswith((".start_s", ".peak_rss_mb")):
                facts[key.rsplit(".", 1)[1]] = value.replace("\\", "")
    return {"wall_s": wall, "exit": done.returncode, "records": int(match.group(1)) if match else 0,
            "harness_cpu_s": float(match.group(3)) if match else None, "verdicts": verdicts,
            "tail": done.stdout[-400:] if not match else "", "facts": facts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", action="append", default=[], help="default: reference")
    parser.add_argument("--pip", action="append", default=[], help=f"default: each of {', '.join(PIPS)}")
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS)
    parser.add_argument("--whole-only", action="store_true", help="only the whole spec, not each PIP")
    args = parser.parse_args(argv)
    targets = args.target or ["reference"]
    scopes = [None] if args.whole_only else [*(args.pip or PIPS), None]
    print(f"{'target':28} {'scope':6} {'records':>7} {'jobs 1 s':>9} {f'jobs {args.jobs} s':>9} {'ratio':>6} "
          f"{'CPU 1 s':>8} {f'CPU {args.jobs} s':>8}  same verdicts")
    same_everywhere = True
    for target in targets:
        for pip in scopes:
            with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp:
                one = run_once(target, pip, 1, Path(tmp) / "one")
                many = run_once(target, pip, args.jobs, Path(tmp) / "many")
            same = one["verdicts"] == many["verdicts"]
            same_everywhere &= same
            ratio = one["wall_s"] / many["wall_s"] if many["wall_s"] else float("nan")
            print(f"{target:28} {pip or 'all':6} {many['records']:>7} {one['wall_s']:>9.1f} {many['wall_s']:>9.1f} "
                  f"{ratio:>5.1f}x {one['harness_cpu_s'] or 0:>8.1f} {many['harness_cpu_s'] or 0:>8.1f}  "
                  f"{'yes' if same else 'NO'}")
            for name, result in (("jobs 1", one), (f"jobs {args.jobs}", many)):
                if result["facts"]:
                    print(f"  {name}: broker start-ups {result['facts'].get('start_s', '?')} s, "
                          f"peak RSS {result['facts'].get('peak_rss_mb', '?')} MiB")
                if result["tail"]:
                    print(f"  {name}: no run summary (exit {result['exit']}): {result['tail']!r}")
            if not same:
                differing = sorted(c for c in set(one["verdicts"]) | set(many["verdicts"])
                                   if one["verdicts"].get(c) != many["verdicts"].get(c))
                print(f"  verdicts differ for {len(differing)} cases, e.g. " +
                      ", ".join(f"{c}: {one['verdicts'].get(c)} / {many['verdicts'].get(c)}" for c in differing[:5]))
    return 0 if same_everywhere else 1


if __name__ == "__main__":
    sys.exit(main())
