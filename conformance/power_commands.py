"""``python -m conformance fuzz | diff | quality``: generated sequences, differential runs, the mutation check.

  python -m conformance fuzz --target T [--target T2] [--examples N] [--seed S] [--budget SECONDS]
      [--shrink-budget SECONDS] [--steps K] [--timeout S] [--known SUBSTRING]... [--no-save] [--out DIR]
  python -m conformance diff --target A --target B [...] [--pip N] [-k EXPR] [--sequences N] [--seed S]
      [--no-cases] [--out DIR]
  python -m conformance quality [--mutants all|a,b] [--pip N] [--jobs J] [--goal 0.95] [--out DIR]
  python -m conformance quality --generated [--budget SECONDS] [--module PATH]... [--jobs J] [--goal 0.9]
      [--out DIR]

Targets are the run command's names, plus ``reference-mutant:NAME`` (conformance/mutation_check.py).
``quality --generated`` runs the generated-mutant check, ``python -m mutation.generated``, as its own
program: the harness imports nothing of the mutation package, it hands it the arguments.
Exit codes: 0 no divergence (fuzz), no disagreement (diff), score reached (quality); 1 otherwise;
2 harness trouble; 3 (fuzz) only indefinite steps besides agreement.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from conformance import verdicts as v
from conformance.errors import UsageError

COMMANDS = ("fuzz", "diff", "quality")
DEFAULT_OUT = Path("reports/out")
HAND_WRITTEN_JOBS = 3
HAND_WRITTEN_GOAL = 0.95


def add_commands(commands) -> None:
    """Register the subcommands on ``python -m conformance``'s subparsers."""
    fuzz = commands.add_parser("fuzz", help="generated operation sequences against targets, shrunk on failure")
    fuzz.add_argument("--target", action="append", default=[], metavar="NAME")
    fuzz.add_argument("--examples", type=int, default=100, help="sequences to generate (default 100)")
    fuzz.add_argument("--seed", type=int, default=None)
    fuzz.add_argument("--steps", type=int, default=10, help="most steps per sequence (default 10)")
    fuzz.add_argument("--budget", type=float, default=600.0, help="seconds of generation (default 600)")
    fuzz.add_argument("--shrink-budget", type=float, default=120.0, help="seconds of shrinking (default 120)")
    fuzz.add_argument("--timeout", type=float, default=5.0, help="bound of every wait, seconds (default 5)")
    fuzz.add_argument("--known", action="append", default=[], metavar="SUBSTRING",
                      help="a divergence whose signature contains this is counted as known, not saved")
    fuzz.add_argument("--no-save", action="store_true", help="do not write spec/generated/*.yaml")
    fuzz.add_argument("--save-dir", type=Path, default=None, help="where cases go (default spec/generated)")
    fuzz.add_argument("--out", type=Path, default=DEFAULT_OUT)

    diff = commands.add_parser("diff", help="the same cases and sequences on several targets, compared")
    diff.add_argument("--target", action="append", default=[], metavar="NAME")
    diff.add_argument("--pip", action="append", default=[], metavar="N")
    diff.add_argument("-k", dest="keyword", metavar="SUBSTRING", help="only cases whose id contains this")
    diff.add_argument("--sequences", type=int, default=50, help="generated sequences (default 50)")
    diff.add_argument("--steps", type=int, default=8)
    diff.add_argument("--seed", type=int, default=None)
    diff.add_argument("--no-cases", action="store_true", help="sequences only")
    diff.add_argument("--timeout", type=float, default=5.0)
    diff.add_argument("--out", type=Path, default=DEFAULT_OUT)

    quality = commands.add_parser("quality", help="mutation score: the suite against broken reference variants")
    quality.add_argument("--mutants", default="all", help="all, or comma-separated names")
    quality.add_argument("--pip", action="append", default=[], metavar="N")
    quality.add_argument("--jobs", type=int, default=None,
                         help=f"worker processes (default {HAND_WRITTEN_JOBS}; with --generated, its own default)")
    quality.add_argument("--timeout", type=float, default=5.0)
    quality.add_argument("--goal", type=float, default=None,
                         help=f"score to reach (default {HAND_WRITTEN_GOAL}; with --generated, its own default)")
    generated = quality.add_argument_group(
        "generated mutants", "cosmic-ray's mutants of the broker's decision code (python -m mutation.generated)")
    generated.add_argument("--generated", action="store_true",
                           help="test generated mutants instead of the hand-written variants")
    generated.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                           help="wall time for testing mutants whose stored result no longer holds")
    generated.add_argument("--module", action="append", default=[], metavar="PATH",
                           help="only this module of the scope (repeatable)")
    quality.add_argument("-k", dest="keyword", metavar="SUBSTRING", help="only cases whose id contains this")
    quality.add_argument("--out", type=Path, default=DEFAULT_OUT)


def _pips(values):
    return {p.lower().removeprefix("pip-").removeprefix("pip") for p in values} or None


def run_command(args) -> int:
    try:
        if args.command == "fuzz":
            return _fuzz(args)
        if args.command == "diff":
            return _diff(args)
        return _quality(args)
    except UsageError as exc:
        print(f"conformance: error: {exc}", file=sys.stderr)
        return v.EXIT_HARNESS


def _sessions(specs: list[str], timeout: float, out: Path):
    from conformance.execute import TargetSession
    from conformance.mutation_check import resolve_target

    if not specs:
        raise UsageError("no target given; use --target reference, --target pulsar-lite, ...")
    return [TargetSession(resolve_target(spec, timeout=timeout, log_dir=out / "logs")) for spec in specs]


def _fuzz(args) -> int:
    from conformance import generated
    from conformance.fuzz.run import fuzz

    if args.examples < 1 or args.budget <= 0:
        raise UsageError("--examples must be >= 1 and --budget positive")
    sessions = _sessions(args.target, args.timeout, args.out)
    codes = []
    args.out.mkdir(parents=True, exist_ok=True)
    for session in sessions:
        try:
            report = fuzz(session, examples=args.examples, seed=args.seed, steps=args.steps, budget_s=args.budget,
                          shrink_budget_s=args.shrink_budget, known=tuple(args.known),
                          save_dir=None if args.no_save else (args.save_dir or generated.GENERATED_DIR))
        finally:
            session.stop()
        print("\n".join(report.lines()), flush=True)
        cov = report.coverage
        print(f"coverage on {report.target}: {cov['operation_types_exercised']}/{cov['operation_types_total']} "
              f"operation types ({len(cov['operations'])} variants), {cov['outcome_types_exercised']}/"
              f"{cov['outcome_types_total']} outcome types ({len(cov['expected_outcomes'])} kinds)")
        print("  expected outcome kinds: " + ", ".join(f"{k} {n}" for k, n in cov["expected_outcomes"].items()))
        if cov["operations_never_exercised"]:
            print("  operations never exercised: " + ", ".join(cov["operations_never_exercised"]))
        path = args.out / f"fuzz-{report.target.replace(':', '_')}.json"
        path.write_text(json.dumps(report.to_json(), indent=1, sort_keys=True, default=str), encoding="utf-8")
        print(f"  report: {path}", flush=True)
        codes.append(report.exit_code)
    for code in (v.EXIT_HARNESS, v.EXIT_FAILED, v.EXIT_INDEFINITE):
        if code in codes:
            return code
    return v.EXIT_OK


def _diff(args) -> int:
    from conformance.suite import load_cases
    from conformance.diff import diff, write_report

    if len(args.target) < 2:
        raise UsageError("diff needs at least two --target")
    cases = [] if args.no_cases else [c for c in load_cases(_pips(args.pip))
                                      if not args.keyword or args.keyword in c.id]
    sessions = _sessions(args.target, args.timeout, args.out)
    try:
        report = diff(sessions, cases=cases, sequences=args.sequences, seed=args.seed, steps=args.steps)
    finally:
        for session in sessions:
            session.stop()
    print("\n".join(report.lines()))
    print(f"report: {write_report(report, args.out)}")
    if report.errors and not report.agreements and not report.disagreements:
        return v.EXIT_HARNESS
    return v.EXIT_FAILED if report.disagreements else v.EXIT_OK


def generated_argv(args) -> list[str]:
    """``quality --generated``'s options as ``python -m mutation.generated``'s command line."""
    argv = [sys.executable, "-m", "mutation.generated", "--out", str(args.out)]
    if args.budget is not None:
        argv += ["--budget", str(args.budget)]
    if args.jobs is not None:
        argv += ["--jobs", str(args.jobs)]
    if args.goal is not None:
        argv += ["--goal", str(args.goal)]
    for module in args.module:
        argv += ["--module", module]
    return argv


def _quality(args) -> int:
    if args.generated:
        import subprocess
        return subprocess.call(generated_argv(args))
    if args.budget is not None or args.module:
        raise UsageError("--budget and --module go with --generated")
    from conformance.mutation_check import UnknownVariant, chosen_variants, list_variants, quality

    variants = list_variants()
    names = list(variants) if args.mutants == "all" else [n.strip() for n in args.mutants.split(",") if n.strip()]
    try:
        chosen_variants(names, variants)
    except UnknownVariant as exc:
        raise UsageError(str(exc)) from None
    return quality(names, pips=_pips(args.pip), jobs=args.jobs or HAND_WRITTEN_JOBS, timeout=args.timeout,
                   out_dir=args.out, goal=HAND_WRITTEN_GOAL if args.goal is None else args.goal, keyword=args.keyword,
                   variants=variants)


def main(argv=None) -> int:  # pragma: no cover - ``python -m conformance`` is the entry point
    parser = argparse.ArgumentParser(prog="python -m conformance")
    add_commands(parser.add_subparsers(dest="command", required=True))
    return run_command(parser.parse_args(argv))
