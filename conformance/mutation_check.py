"""Mutation check: does every rule of the reference broker have a case that fails when it is wrong?

``python -m conformance quality [--mutants all|a,b] [--pip 344] [--jobs 2]`` runs the suite against
each deliberately broken variant of the reference broker (mutation/variants.py) and reports the
mutation score: variants caught / total, and which survived. A survivor is a rule no case checks:
add the case. The variants are started and listed through their launcher's command line
(``python -m mutation.launch``), like any target the harness starts; nothing of the broker or of
the mutation package is imported here.

- Baseline first: the unbroken reference broker runs the selected cases first; only cases it
  passes are used to judge the variants, so a case that fails anyway cannot "catch" one.
- ``run_cases``: a variant runs only the cases of its PIP (the variant's ``pip``) on its own
  broker process (the launcher with ``--mutant NAME``) of the PIP's reference target
  (``BASE_TARGETS``), and is CAUGHT at the first case that fails; unsupported, indefinite and
  broken verdicts do not catch anything. A variant whose broker does not start is an ERROR (its
  snippet no longer matches the code, or it crashes the broker), reported apart and counted as
  not caught.
- Variants run in ``--jobs`` worker processes; every case wait is bounded by ``--timeout``. To
  reach a failing case early, each variant's cases are ordered by ``case_order`` (the case that
  caught it last time first, kept in ``<out>/quality-hints.json``, then its api's cases, tables
  interleaved); the order changes how long a run takes, never which cases may catch a variant.
- ``quality`` prints the report and writes it to ``<out>/quality.json``; the exit code is 0 when
  the score reaches ``--goal`` (default 0.95), 1 below it, 2 when the baseline itself could not
  run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import NamedTuple, Optional

from conformance import verdicts as v
from conformance.targets.base import Target
from conformance.targets.registry import make_target

MUTANT_PREFIX = "reference-mutant:"
DEFAULT_GOAL = 0.95
# The reference target each PIP's cases run on (white-box PIP-157 rows read a real ZooKeeper;
# PIP-35 owners and redirects need several brokers). Baseline and variants use the same one.
BASE_TARGETS = {"344": "reference", "2": "reference", "157": "reference-zk", "35": "reference-cluster"}


LAUNCHER = [sys.executable, "-m", "mutation.launch"]
LIST_TIMEOUT = 30.0


class Variant(NamedTuple):
    """One broken variant, as the launcher's ``--list`` describes it."""

    name: str
    pip: str  # the PIP whose cases must catch it
    api: str  # "rest", "binary" or "both"
    description: str


class UnknownVariant(ValueError):
    """A variant name the launcher does not list."""


def list_variants() -> dict[str, Variant]:
    """Every variant by name, read from ``python -m mutation.launch --list``."""
    try:
        listed = subprocess.run([*LAUNCHER, "--list"], capture_output=True, text=True, timeout=LIST_TIMEOUT,
                                check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise RuntimeError(f"cannot list the broker's variants with {' '.join(LAUNCHER)} --list: {exc}") from None
    variants = [Variant(**json.loads(line)) for line in listed.stdout.splitlines() if line.strip()]
    return {variant.name: variant for variant in variants}


def chosen_variants(names: list[str], known: dict[str, Variant]) -> list[Variant]:
    """The variants ``names`` names, in that order; UnknownVariant naming the known ones otherwise."""
    unknown = [name for name in names if name not in known]
    if unknown:
        raise UnknownVariant(f"unknown mutant {', '.join(map(repr, unknown))}; known: {', '.join(sorted(known))}")
    return [known[name] for name in names]


def mutant_target(name: str, base: str = "reference", **kwargs) -> Target:
    """The reference target ``base``, its broker started by the launcher with variant ``name``."""
    target = make_target(base, **kwargs)
    target.command = [*LAUNCHER, "--mutant", name]
    target.name = f"{MUTANT_PREFIX}{name}"
    return target


def resolve_target(spec: str, **kwargs) -> Target:
    """``reference-mutant:NAME`` or anything the registry knows."""
    if spec.startswith(MUTANT_PREFIX):
        return mutant_target(spec[len(MUTANT_PREFIX):], **kwargs)
    return make_target(spec, **kwargs)


_LOADED: dict = {}


def _cases_by_id(pips: Optional[set[str]]) -> dict:
    """Cases by id, loaded once per (worker) process and PIP selection."""
    from conformance.suite import load_cases
    key = tuple(sorted(pips)) if pips else None
    if key not in _LOADED:
        _LOADED[key] = {case.id: case for case in load_cases(pips)}
    return _LOADED[key]


def case_order(mutant, ids: list[str], cases: dict, hint: Optional[str] = None) -> list[str]:
    """The order that reaches a failing case early: the case that caught this variant last time
    first (``hint``), then the cases of the variant's api, then the rest; within each, one case of
    every table in turn, so a rule checked by one table only is reached early."""
    def api_matches(case) -> bool:
        if mutant.api == "both":
            return True
        return case.api == mutant.api or (mutant.api == "binary" and case.api.startswith("client"))

    def interleave(group: list[str]) -> list[str]:
        tables: dict[str, list[str]] = {}
        for i in group:
            tables.setdefault(cases[i].table, []).append(i)
        queues = list(tables.values())
        out = []
        while queues:
            for queue in queues:
                out.append(queue.pop(0))
            queues = [q for q in queues if q]
        return out

    first = [hint] if hint in ids else []
    rest = [i for i in ids if i not in first]
    return first + interleave([i for i in rest if api_matches(cases[i])]) + \
        interleave([i for i in rest if not api_matches(cases[i])])


HINTS_FILE = "quality-hints.json"


def previous_killers(out_dir: Path) -> dict[str, str]:
    """mutant -> the case that caught it last time, if any (a hint for the order, never a verdict)."""
    try:
        return dict(json.loads((Path(out_dir) / HINTS_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return {}


def _save_hints(out_dir: Path, results: list[dict]) -> None:
    hints = previous_killers(out_dir)
    hints.update({r["mutant"]: r["killer"] for r in results if r.get("killer")})
    (Path(out_dir) / HINTS_FILE).write_text(json.dumps(hints, indent=1, sort_keys=True), encoding="utf-8")


def run_cases(mutant: Optional[str], case_ids: list[str], *, timeout: float = 5.0, stop_at_failure: bool = True,
              log_dir: Optional[str] = None, pips: Optional[list[str]] = None, base: str = "reference") -> dict:
    """One broker (the reference, or the variant ``mutant``) over ``case_ids``; a variant is caught
    at its first failed case.

    Runs in a worker process: every argument and the answer are plain data."""
    from conformance.execute import TargetSession

    started = time.monotonic()
    cases = _cases_by_id(set(pips) if pips else None)
    kwargs = {"timeout": timeout, "log_dir": Path(log_dir) if log_dir else None}
    target = mutant_target(mutant, base, **kwargs) if mutant else make_target(base, **kwargs)
    session = TargetSession(target)
    result = {"mutant": mutant, "status": "survived", "killer": None, "reason": "", "cases_run": 0,
              "passed": [], "verdicts": {}}
    try:
        for case_id in case_ids:
            case = cases.get(case_id)
            if case is None:
                continue
            run = session.run_case(case)
            result["cases_run"] += 1
            verdict = run.verdict
            result["verdicts"][verdict.verdict] = result["verdicts"].get(verdict.verdict, 0) + 1
            if target.start_error:
                result.update(status="error", reason=f"broker did not start: {target.start_error.splitlines()[0]}")
                break
            if verdict.verdict == v.PASSED:
                result["passed"].append(case_id)
            elif verdict.verdict == v.FAILED and mutant:
                result.update(status="caught", killer=case_id, reason=verdict.reason[:300])
                if stop_at_failure:
                    break
    finally:
        session.stop()
    result["duration_s"] = round(time.monotonic() - started, 2)
    return result


def quality(mutant_names: list[str], *, pips: Optional[set[str]] = None, jobs: int = 2, timeout: float = 5.0,
            out_dir: Path = Path("reports/out"), goal: float = DEFAULT_GOAL, keyword: Optional[str] = None,
            stream=None, variants: Optional[dict[str, Variant]] = None) -> int:
    """``variants``: the launcher's list, when the caller has read it already."""
    def say(text: str) -> None:
        print(text, file=stream or sys.stdout, flush=True)

    started = time.monotonic()
    chosen = chosen_variants(mutant_names, variants if variants is not None else list_variants())
    if pips:
        chosen = [m for m in chosen if m.pip in pips]
    needed = sorted({m.pip for m in chosen})
    cases = _cases_by_id(set(needed))
    order = [i for i in cases if not keyword or keyword in i]
    hints = previous_killers(out_dir)
    log_dir = str(Path(out_dir) / "logs")
    say(f"quality: {len(chosen)} variants of the reference broker, cases of PIP {', '.join(needed)} "
        f"({len(order)} cases), {jobs} worker(s)")
    results = []
    context = get_context("spawn")
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=context) as pool:
        # The baseline: the unbroken broker, one PIP per worker task.
        parts = [pool.submit(run_cases, None, [i for i in order if cases[i].pip == pip], timeout=timeout,
                             stop_at_failure=False, log_dir=log_dir, pips=[pip],
                             base=BASE_TARGETS.get(pip, "reference")) for pip in needed]
        passing, verdicts = set(), {}
        for part in parts:
            answer = part.result()
            passing.update(answer["passed"])
            for name, count in answer["verdicts"].items():
                verdicts[name] = verdicts.get(name, 0) + count
        baseline = {"verdicts": verdicts}
        say(f"  baseline (unbroken reference): {len(passing)}/{len(order)} cases pass "
            f"({', '.join(f'{k} {n}' for k, n in sorted(verdicts.items()))}); only those judge the variants")
        if not passing:
            say("quality: error: the unbroken reference broker passes no case; nothing can judge the variants")
            return v.EXIT_HARNESS
        futures = {}
        for mutant in chosen:
            ids = case_order(mutant, [i for i in order if i in passing and cases[i].pip == mutant.pip], cases,
                             hints.get(mutant.name))
            futures[pool.submit(run_cases, mutant.name, ids, timeout=timeout, log_dir=log_dir,
                                pips=[mutant.pip], base=BASE_TARGETS.get(mutant.pip, "reference"))] = mutant
        for future in as_completed(futures):
            mutant = futures[future]
            try:
                result = future.result()
            except Exception as exc:  # noqa: BLE001 - a worker crash is reported for that variant
                result = {"mutant": mutant.name, "status": "error", "reason": f"{type(exc).__name__}: {exc}",
                          "killer": None, "cases_run": 0, "duration_s": 0}
            result.pop("passed", None)
            result.update(pip=mutant.pip, api=mutant.api, description=mutant.description)
            results.append(result)
            mark = {"caught": "caught  ", "survived": "SURVIVED", "error": "ERROR   "}[result["status"]]
            say(f"  {mark} {mutant.name} (PIP-{mutant.pip}, {mutant.api}) after {result['cases_run']} case(s), "
                f"{result['duration_s']} s" + (f": {result['killer']}" if result.get("killer") else
                                               f": {result['reason']}" if result["reason"] else ""))
    results.sort(key=lambda r: r["mutant"])
    caught = [r for r in results if r["status"] == "caught"]
    survivors = [r for r in results if r["status"] != "caught"]
    score = len(caught) / len(results) if results else 0.0
    per_pip = {}
    for r in results:
        entry = per_pip.setdefault(r["pip"], {"total": 0, "caught": 0})
        entry["total"] += 1
        entry["caught"] += r["status"] == "caught"
    report = {"score": round(score, 4), "caught": len(caught), "total": len(results), "goal": goal,
              "per_pip": per_pip, "survivors": [{k: r[k] for k in ("mutant", "pip", "api", "description", "status",
                                                                      "reason")} for r in survivors],
              "baseline": {"cases": len(order), "passing": len(passing), "verdicts": baseline["verdicts"]},
              "results": results, "duration_s": round(time.monotonic() - started, 1)}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "quality.json").write_text(json.dumps(report, indent=1, sort_keys=True), encoding="utf-8")
    _save_hints(out_dir, results)
    say(f"\nmutation score: {len(caught)}/{len(results)} = {score:.1%} (goal {goal:.0%}) in {report['duration_s']} s; "
        + ", ".join(f"PIP-{p} {e['caught']}/{e['total']}" for p, e in sorted(per_pip.items())))
    if survivors:
        say("survivors (each is a missing case):")
        for r in survivors:
            say(f"  - {r['mutant']} (PIP-{r['pip']}, {r['api']}, {r['status']}): {r['description']}")
    say(f"report: {out_dir / 'quality.json'}")
    return v.EXIT_OK if score >= goal else v.EXIT_FAILED
