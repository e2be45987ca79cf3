"""``python -m conformance``: run the conformance suite against brokers, or list its cases.

  python -m conformance run --target reference --target pulsar-lite \\
      [--target pulsar-standalone[:VERSION]] [--pulsar-versions 3.0.2,4.0.7,4.2.4] \\
      [--target pulsar-container[:TAG]] \\
      [--target url:pulsar://H:P,http://H:Q] [--pip 344] [-k EXPR] [--out reports/out]
  python -m conformance cases [--pip 344]
  python -m conformance prepare 4.0.7 3.0.2     # resolve Apache Pulsar releases' jars into the cache
  python -m conformance record RESULTS.jsonl... # keep Apache Pulsar's answers in spec/observed/
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
from conformance.scheduler import DEFAULT_JOBS
from conformance.targets.registry import known_names, pulsar_version_targets


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m conformance", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    run_cmd = commands.add_parser("run", help="run cases against one or more targets")
    run_cmd.add_argument("--target", action="append", default=[], metavar="NAME",
                         help=f"repeatable; one of: {', '.join(known_names())}")
    run_cmd.add_argument("--pulsar-versions", metavar="V1,V2,...",
                         help="comma-separated Apache Pulsar releases; adds one pulsar-standalone:<version> "
                              "target per release (its Maven jars, run in a JVM)")
    run_cmd.add_argument("--pip", action="append", default=[], metavar="N", help="only this PIP (repeatable), e.g. 344")
    run_cmd.add_argument("-k", dest="keyword", metavar="EXPR", help="pytest -k expression over item names")
    run_cmd.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    run_cmd.add_argument("--timeout", type=float, default=10.0, help="bound of every wait, seconds (default 10)")
    run_cmd.add_argument("--run-id", help="identifier of this run (default: UTC time + random)")
    run_cmd.add_argument("--jobs", type=int, default=DEFAULT_JOBS, metavar="N",
                         help=f"cases run at once per broker instance (default {DEFAULT_JOBS}); 1 runs one case "
                              "at a time on one broker")
    run_cmd.add_argument("--java-client-version", metavar="V",
                         help="org.apache.pulsar:pulsar-client release the java-client driver runs (default 4.0.13)")
    run_cmd.add_argument("--java-admin-version", metavar="V",
                         help="org.apache.pulsar:pulsar-client-admin release the java-admin driver runs (default 4.0.13)")

    cases_cmd = commands.add_parser("cases", help="list case ids with grade and sources")
    cases_cmd.add_argument("--pip", action="append", default=[], metavar="N")

    record_cmd = commands.add_parser("record", help="keep what Apache Pulsar releases answered in spec/observed/")
    record_cmd.add_argument("results", nargs="+", type=Path, metavar="RESULTS.jsonl",
                            help="result files of runs against Apache Pulsar releases")

    prepare_cmd = commands.add_parser("prepare", help="resolve Apache Pulsar releases' jars into the cache now")
    prepare_cmd.add_argument("versions", nargs="+", metavar="VERSION", help="e.g. 4.0.7 3.0.2")
    from conformance.power_commands import add_commands  # fuzz, diff, quality
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


def prepare(versions: list[str]) -> int:
    """Resolve each release's broker jars (targets/maven.py), so a later run starts at once."""
    from conformance.errors import TargetError
    from conformance.targets import maven

    code = v.EXIT_OK
    for version in versions:
        try:
            classpath = maven.resolve(version)
        except (TargetError, UsageError) as exc:
            print(f"conformance prepare: {version}: {exc}", file=sys.stderr)
            code = v.EXIT_HARNESS
            continue
        how = f"resolved in {classpath.resolved_s:.0f} s" if classpath.resolved_s else "cached"
        print(f"conformance prepare: Apache Pulsar {version}: {len(classpath.jars)} jars ({how}): {classpath.file}")
    return code


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
    if args.command == "record":
        from conformance.record import main as record_main
        return record_main(args.results)
    if args.command == "prepare":
        return prepare(args.versions)
    if args.command in ("fuzz", "diff", "quality"):
        from conformance.power_commands import run_command
        return run_command(args)
    if args.timeout <= 0:
        print("conformance: error: --timeout must be positive", file=sys.stderr)
        return v.EXIT_HARNESS
    if args.jobs < 1:
        print("conformance: error: --jobs must be 1 or more", file=sys.stderr)
        return v.EXIT_HARNESS
    targets = list(args.target)
    if args.pulsar_versions is not None:
        try:
            targets += pulsar_version_targets(args.pulsar_versions)
        except UsageError as exc:
            print(f"conformance: error: {exc}", file=sys.stderr)
            return v.EXIT_HARNESS
    return run(targets, pips=_pips(args.pip), keyword=args.keyword, out_dir=args.out,
               run_id=args.run_id, timeout=args.timeout, java_client_version=args.java_client_version,
               java_admin_version=args.java_admin_version, jobs=args.jobs)


if __name__ == "__main__":
    sys.exit(main())
