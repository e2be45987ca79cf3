"""``python -m conformance``: run the conformance suite against brokers, or list its cases.

  python -m conformance run --target reference --target pulsar-lite \\
      [--target pulsar-standalone[:VERSION]] [--pulsar-versions 3.0.2,4.0.7,4.2.4] \\
      [--target pulsar-container[:TAG]] \\
      [--target url:pulsar://H:P,http://H:Q] [--broker-config FILE|KEY=VALUE ...] \\
      [--pip 344] [-k EXPR] [-x] [--out reports/out] [--repeat N [--cpu-hogs K]] \\
      [--secure] [--tls] [--auth-token-file FILE | --auth-token JWT] [--tls-trust-certs PEM]
  python -m conformance cases [--pip 344]
  python -m conformance prepare 4.0.7 3.0.2     # resolve Apache Pulsar releases' jars into the cache
  python -m conformance record RESULTS.jsonl... # keep Apache Pulsar's answers in spec/observed/
  python -m conformance report [--results DIR ...] [--master local[2]|spark://HOST:7077] [--out DIR]

Exit codes of ``run``: 0 no failures; 1 failures; 2 harness or target error (broken case,
bad arguments, a target that could not start or stopped serving, nothing executed on any
target); 3 only indefinite results besides passes. A target that could not start has its cases
reported target-error and is named first in the summary.
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
    run_cmd.add_argument("--broker-config", action="append", default=[], metavar="FILE|KEY=VALUE",
                         help="repeatable; what the broker of a url: target runs with: a broker.conf-style file of "
                              "key=value lines, or one key=value; keys not given run with Pulsar's defaults. "
                              "Without an admin API, cases needing another config are unsupported "
                              "(docs/testing-your-broker.md)")
    run_cmd.add_argument("--known-divergences", type=Path, metavar="FILE",
                         help="your broker's known divergences (spec/divergences/'s format; its target: is the "
                              "file's name), applied to the url: targets: listed failures are counted apart")
    run_cmd.add_argument("--pip", action="append", default=[], metavar="N", help="only this PIP (repeatable), e.g. 344")
    run_cmd.add_argument("-k", dest="keyword", metavar="EXPR", help="pytest -k expression over item names")
    run_cmd.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    run_cmd.add_argument("--timeout", type=float, default=10.0, help="bound of every wait, seconds (default 10)")
    run_cmd.add_argument("--run-id", help="identifier of this run (default: UTC time + random)")
    run_cmd.add_argument("-x", "--exitfirst", action="store_true",
                         help="stop at the first failed case: cases not yet started are reported unsupported "
                              "(a mutation test asks whether anything fails, not everything that does)")
    run_cmd.add_argument("--jobs", type=int, default=DEFAULT_JOBS, metavar="N",
                         help=f"cases run at once per broker instance (default {DEFAULT_JOBS}); 1 runs one case "
                              "at a time on one broker")
    run_cmd.add_argument("--repeat", type=int, default=1, metavar="N",
                         help="the flake hunter (conformance/flakes.py): make the run N times, each in a process of "
                              "its own writing OUT/repeat-<i>/, and list every case whose verdict differed in "
                              "OUT/flakes.md; exit 1 when one did")
    run_cmd.add_argument("--cpu-hogs", type=int, default=0, metavar="K",
                         help="with --repeat: K busy loops beside the runs, as on a shared CI runner")
    run_cmd.add_argument("--java-client-version", metavar="V",
                         help="org.apache.pulsar:pulsar-client release the java-client driver runs (default 4.0.13)")
    run_cmd.add_argument("--java-admin-version", metavar="V",
                         help="org.apache.pulsar:pulsar-client-admin release the java-admin driver runs (default 4.0.13)")
    run_cmd.add_argument("--go-client-version", metavar="V",
                         help="github.com/apache/pulsar-client-go release the go-client and go-admin drivers run "
                              "(default 0.21.0)")
    run_cmd.add_argument("--rust-client-version", metavar="V",
                         help="pulsar crate release the rust-client and rust-admin drivers run (default 6.9.1)")
    secured = run_cmd.add_argument_group(
        "security", "token authentication and TLS (conformance/security.py); a token is never printed")
    token = secured.add_mutually_exclusive_group()
    token.add_argument("--auth-token", metavar="JWT",
                       help="the token every driver presents (a url: target's super-user); prefer --auth-token-file")
    token.add_argument("--auth-token-file", type=Path, metavar="FILE", help="a file holding that token")
    secured.add_argument("--tls-trust-certs", type=Path, metavar="PEM",
                         help="the CA trusted for pulsar+ssl:// and https:// URLs (default: the system's, or the "
                              "run's own CA with --tls)")
    secured.add_argument("--secure", action="store_true",
                         help="start the targets the harness launches with token authentication and authorization "
                              "for every case, a key and tokens made for this run; the harness is a super-user")
    secured.add_argument("--tls", action="store_true",
                         help="start the targets the harness launches with TLS listeners (a CA and certificate made "
                              "for this run) and use only pulsar+ssl:// and https://")

    cases_cmd = commands.add_parser("cases", help="list case ids with grade and sources")
    cases_cmd.add_argument("--pip", action="append", default=[], metavar="N")

    record_cmd = commands.add_parser("record", help="keep what Apache Pulsar releases answered in spec/observed/")
    record_cmd.add_argument("results", nargs="+", type=Path, metavar="RESULTS.jsonl",
                            help="result files of runs against Apache Pulsar releases")

    prepare_cmd = commands.add_parser(
        "prepare", help="resolve Apache Pulsar releases' jars into the cache now and write their class-data archives")
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
    """Resolve each release's broker jars (targets/maven.py) and write its class-data archive
    (targets/class_data.py), so a later run starts at once and every start is cheap."""
    from conformance.errors import TargetError
    from conformance.targets import maven, standalone

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
        try:
            archive, written = standalone.prepare_start_ups(version)
        except TargetError as exc:
            print(f"conformance prepare: {version}: its standalone did not start: {exc}", file=sys.stderr)
            code = v.EXIT_HARNESS
            continue
        print(f"conformance prepare: Apache Pulsar {version}: class-data archive "
              f"({'written now' if written else 'cached'}): {archive}")
    return code


def report(argv: list[str]) -> int:
    """``report ...``: the reports package (``python -m reports``), run as its own program. The
    harness never imports the reports package (data flows one way: results -> reports), it only
    hands it the arguments."""
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
    if args.repeat < 1 or args.cpu_hogs < 0:
        print("conformance: error: --repeat must be 1 or more and --cpu-hogs 0 or more", file=sys.stderr)
        return v.EXIT_HARNESS
    if args.repeat > 1 or args.cpu_hogs:
        from conformance.flakes import hunt
        return hunt(argv[1:], repeat=args.repeat, hogs=args.cpu_hogs, out=args.out)
    targets = list(args.target)
    if args.pulsar_versions is not None:
        try:
            targets += pulsar_version_targets(args.pulsar_versions)
        except UsageError as exc:
            print(f"conformance: error: {exc}", file=sys.stderr)
            return v.EXIT_HARNESS
    try:
        security = run_security(args)
    except ValueError as exc:
        print(f"conformance: error: {exc}", file=sys.stderr)
        return v.EXIT_HARNESS
    try:
        from conformance.targets.url import parse_broker_config
        declared = parse_broker_config(args.broker_config)
    except UsageError as exc:
        print(f"conformance: error: {exc}", file=sys.stderr)
        return v.EXIT_HARNESS
    return run(targets, pips=_pips(args.pip), keyword=args.keyword, out_dir=args.out,
               run_id=args.run_id, timeout=args.timeout, java_client_version=args.java_client_version,
               java_admin_version=args.java_admin_version, go_client_version=args.go_client_version,
               rust_client_version=args.rust_client_version, jobs=args.jobs,
               security=security, broker_config=declared, known_divergences=args.known_divergences,
               stop_at_failure=args.exitfirst)


def run_security(args: argparse.Namespace):
    """The run's security settings from the options (conformance/security.py)."""
    from conformance.security import RunSecurity, Secret, read_token

    token = Secret(args.auth_token) if args.auth_token else read_token(args.auth_token_file) \
        if args.auth_token_file else None
    trust = args.tls_trust_certs
    if trust is not None and not trust.is_file():
        raise ValueError(f"--tls-trust-certs {trust}: no such file (a PEM file of the CA to trust)")
    return RunSecurity(token=token, trust_certs=str(trust) if trust else None, secure=args.secure, tls=args.tls)


if __name__ == "__main__":
    sys.exit(main())
