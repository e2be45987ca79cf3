"""``python -m conformance``: run the conformance suite against brokers, or list its cases.

  python -m conformance run --target reference --target pulsar-lite \\
      [--target pulsar-container[:TAG]] [--pulsar-versions 3.0.5,4.0.13,4.2.4] \\
      [--target url:pulsar://H:P,http://H:Q] [--pip 344] [-k EXPR] [--out reports/out]
  python -m conformance cases [--pip 344]
  python -m conformance report [--results DIR ...] [--master local[2]|spark://HOST:7077] [--out DIR]

Exit codes of ``run``: 0 no failures; 1 failures; 2 harness error (broken case, bad arguments,
nothing executed on any target); 3 only indefinite results besides passes. A target that could
not start has its cases reported unsupported and is named in the summary; the other targets'
verdicts decide the exit code.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conformance import verdicts as v
from conformance.errors import UsageError
from conformance.runner import DEFAULT_OUT, load_cases, run
from conformance.targets.registry import known_names, pulsar_version_targets


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m conformance", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    run_cmd = commands.add_parser("run", help="run cases against one or more targets")
    run_cmd.add_argument("--target", action="append", default=[], metavar="NAME",
                         help=f"repeatable; one of: {', '.join(known_names())}")
    run_cmd.add_argument("--pulsar-versions", metavar="V1,V2,...",
                         help="comma-separated apachepulsar/pulsar image tags; adds one "
                              "pulsar-container:<tag> target per version (needs a Docker engine)")
    run_cmd.add_argument("--pip", action="append", default=[], metavar="N", help="only this PIP (repeatable), e.g. 344")
    run_cmd.add_argument("-k", dest="keyword", metavar="EXPR", help="pytest -k expression over item names")
    run_cmd.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    run_cmd.add_argument("--timeout", type=float, default=10.0, help="bound of every wait, seconds (default 10)")
    run_cmd.add_argument("--run-id", help="identifier of this run (default: UTC time + random)")

    cases_cmd = commands.add_parser("cases", help="list case ids with grade and sources")
    cases_cmd.add_argument("--pip", action="append", default=[], metavar="N")
    from conformance.fuzz_cli import add_commands  # fuzz, diff, quality
    add_commands(commands)
    return parser


def _pips(values: list[str]) -> set[str] | None:
    return {p.lower().removeprefix("pip-").removeprefix("pip") for p in values} or None


def list_cases(pips: set[str] | None) -> int:
    try:
        cases = load_cases(pips)
    except UsageError as exc:
        print(f"conformance: error: {exc}", file=sys.stderr)
        return v.EXIT_HARNESS
    for case in cases:
        print(f"{case.id}\t{case.grade}\t{' '.join(case.source or ())}")
    print(f"# {len(cases)} cases", file=sys.stderr)
    return v.EXIT_OK if cases else v.EXIT_HARNESS


def report(argv: list[str]) -> int:
    """``report ...``: the reports stage, run as its own program. The harness never imports the
    reports package (data flows one way: results -> reports), it only hands it the arguments."""
    import subprocess
    return subprocess.call([sys.executable, "-m", "reports", *argv])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["report"]:
        return report(argv[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad arguments, which is our code too
        return int(exc.code or 0)
    if args.command == "cases":
        return list_cases(_pips(args.pip))
    if args.command in ("fuzz", "diff", "quality"):
        from conformance.fuzz_cli import run_command
        return run_command(args)
    if args.timeout <= 0:
        print("conformance: error: --timeout must be positive", file=sys.stderr)
        return v.EXIT_HARNESS
    targets = list(args.target)
    if args.pulsar_versions is not None:
        try:
            targets += pulsar_version_targets(args.pulsar_versions)
        except UsageError as exc:
            print(f"conformance: error: {exc}", file=sys.stderr)
            return v.EXIT_HARNESS
    return run(targets, pips=_pips(args.pip), keyword=args.keyword, out_dir=args.out,
               run_id=args.run_id, timeout=args.timeout)


if __name__ == "__main__":
    sys.exit(main())
