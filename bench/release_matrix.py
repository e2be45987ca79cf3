"""The release matrix in one run: several Apache Pulsar releases side by side, against each alone.

Runs ``python -m conformance run`` once with one pulsar-standalone target per release (the whole
spec, start-ups included) and prints the run's wall time, where its time went (the run's own
account: start-ups, restarts and their configuration keys, quiet periods, cases) and each
release's verdict counts. With ``--alone`` it then runs each release in a run of its own and
compares every case's verdict: running releases side by side must change no verdict.

Goal: 3.0.7, 4.0.7 and 4.2.4 in one run in at most 240 s on 2 cores, every verdict as alone.

    .venv/bin/python bench/release_matrix.py [--release 3.0.7 --release 4.0.7 ...] [--alone]
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RELEASES = ("3.0.7", "4.0.7", "4.2.4")
GOAL_S = 240.0
RUN_BOUND_S = 3600


def run(releases: list[str], out: Path) -> tuple[float, int, str, dict]:
    """Wall seconds, exit code, the run's account of its time, and {(target, case): verdict}."""
    argv = [sys.executable, "-m", "conformance", "run", "--out", str(out)]
    for release in releases:
        argv += ["--target", f"pulsar-standalone:{release}"]
    started = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=RUN_BOUND_S)
    wall = time.monotonic() - started
    lines = done.stdout.splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("conformance run ")), len(lines))
    verdicts = {}
    for path in (out / "results").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            verdicts[(record["target"], record["case_id"])] = record["verdict"]
    return wall, done.returncode, "\n".join(lines[first:]), verdicts


def counts(verdicts: dict) -> dict:
    by_target: dict = collections.defaultdict(collections.Counter)
    for (target, _), verdict in verdicts.items():
        by_target[target][verdict] += 1
    return by_target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", action="append", help=f"repeatable (default {', '.join(RELEASES)})")
    parser.add_argument("--alone", action="store_true", help="also run each release alone and compare verdicts")
    args = parser.parse_args(argv)
    releases = args.release or list(RELEASES)
    with tempfile.TemporaryDirectory(prefix="release-matrix-") as scratch:
        wall, code, account, together = run(releases, Path(scratch) / "together")
        print(f"{len(releases)} releases in one run ({', '.join(releases)}): {wall:.0f} s wall, exit {code} "
              f"(goal at most {GOAL_S:.0f} s: {'met' if wall <= GOAL_S else 'not met'})")
        print(account)
        for target, counted in sorted(counts(together).items()):
            print(f"  {target}: " + ", ".join(f"{verdict} {n}" for verdict, n in sorted(counted.items())))
        if not args.alone:
            return 0
        alone: dict = {}
        for release in releases:
            seconds, _, _, verdicts = run([release], Path(scratch) / f"alone-{release}")
            alone.update(verdicts)
            print(f"{release} alone: {seconds:.0f} s wall")
        moved = sorted(key for key in together.keys() | alone.keys() if together.get(key) != alone.get(key))
        for target, case in moved:
            print(f"  moved: {target} {case}: {alone.get((target, case))} alone, "
                  f"{together.get((target, case))} side by side")
        print(f"verdicts that moved side by side: {len(moved)} of {len(together)}")
        return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main())
