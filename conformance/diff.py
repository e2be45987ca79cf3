"""Differential mode: the same cases and generated sequences on several targets, no fixed expectation.

``python -m conformance diff --target A --target B [...]`` performs every step of every selected
case, and of ``--sequences N`` generated sequences, on each target, records what each answered,
and compares the targets with one another. The model's answer is shown beside them (the
three-way view) but decides nothing here.

- Each target runs each case or sequence in its own fresh namespace (``run_on``); names are put
  back as placeholders (``{ns}``, ``{tenant}``, ``{missing-tenant}``) before comparing, so only
  behaviour is compared.
- ``normalise`` removes what may legitimately differ. Drivers already drop broker URLs (a
  LookupAnswer carries response and authoritative only), request ids (never part of an
  outcome) and message ids where the spec allows (receipt kinds, payload ranges); ``normalise``
  also drops any ``broker_url``/``request_id``/``message_id`` key a newer outcome may carry.
  Error texts are behaviour: they are compared.
- A step a target cannot perform (unsupported) or does not answer (indefinite) ends that
  target's run of the case or sequence (``run_on``); it is shown, and it is not a disagreement.
  ``compare`` groups the targets that answered a step by identical answers; more than one group
  is a disagreement, reported at the first step where it happens, with the model's answer.
- Generated sequences (``program_of_sequence``) use only the operations every target can perform
  (the intersection of their capabilities, fuzz/vocabulary.py ``rules_for``), drawn from
  ``--seed``, so the same command gives the same sequences.
"""

from __future__ import annotations

import json
import random
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from conformance import generated
from conformance.errors import Indefinite, TargetError, Unsupported
from conformance.execute import TargetSession, era_mismatch, new_namespace
from conformance.fuzz.steps import outcome_json
from conformance.fuzz.vocabulary import ERA, Names, capabilities, random_program
from conformance.executor import ANSWERED, Stepper
from model.errors import ModelUsageError
from model.machine import apply, initial_state

DROPPED_KEYS = ("broker_url", "brokerServiceUrl", "request_id", "message_id")
MODEL_UNSETTLED = {"status": "model-unsettled"}


def normalise(value: Any, names: dict[str, str]) -> Any:
    """``value`` without what may legitimately differ, its names put back as placeholders
    (``names``: concrete -> placeholder)."""
    if isinstance(value, dict):
        return {k: normalise(v, names) for k, v in value.items() if k not in DROPPED_KEYS}
    if isinstance(value, list):
        return [normalise(v, names) for v in value]
    return generated.fill(value, names)


@dataclass
class Program:
    """One case or sequence: ops with placeholders, each with its role and case api."""
    id: str
    kind: str                     # "case" | "sequence"
    broker_config: dict
    era: str
    steps: list                   # [(op_json_with_placeholders, role, case_api)]
    model: list = field(default_factory=list)      # model outcome JSON per step
    answers: dict = field(default_factory=dict)    # target -> list of {"status", "outcome", "reason"}


def _concrete(namespace: str) -> dict[str, str]:
    local = namespace.split("/", 1)[1]
    return {generated.NS: namespace, generated.TENANT: f"{local}-t", "{missing-tenant}": f"{local}-no-tenant"}


def program_of_case(case) -> Program:
    """A case bound to placeholder names (cases.py bind, then names put back)."""
    probe = "public/cdiffprobe"
    bound = case.bind(probe)
    reverse = {v: k for k, v in _concrete(probe).items()}
    reverse = dict(sorted(reverse.items(), key=lambda item: -len(item[0])))
    steps = [(generated.steps_json([s.op], reverse)[0], s.role, case.api) for s in bound.steps]
    return Program(case.id, "case", dict(case.broker_config), case.era, steps)


def program_of_sequence(index: int, rng: random.Random, caps: frozenset, length: int) -> Program:
    template = Names(generated.NS, generated.TENANT)
    ops = random_program(rng, caps, template, length)
    from conformance.generated import natural_route
    steps = []
    for op in ops:
        role, api = natural_route(op)
        steps.append((json.loads(json.dumps(generated.steps_json([op], {})[0])), role, api))
    baseline = initial_state({}, ERA).config.to_strings()
    return Program(f"sequence-{index:04d}", "sequence", dict(baseline), ERA, steps)


def model_answers(program: Program) -> list:
    from model.ops import op_from_json
    names = _concrete("public/cmodel0000")
    reverse = dict(sorted({v: k for k, v in names.items()}.items(), key=lambda item: -len(item[0])))
    state = initial_state(program.broker_config, program.era)
    answers = []
    for step, _, _ in program.steps:
        try:
            state, outcome = apply(state, op_from_json(generated.fill(step, names)))
            answers.append(normalise(outcome_json(outcome), reverse))
        except ModelUsageError:
            answers.append(MODEL_UNSETTLED)
    return answers


def run_on(session: TargetSession, program: Program) -> list:
    """Every step of ``program`` on one target, up to the first it cannot perform or that goes
    unanswered; one record per step performed."""
    from model.ops import op_from_json
    target = session.target
    stepper = Stepper(session)
    reason = era_mismatch(program.era, target.era) if target.era else None
    if reason:
        return [{"status": "unsupported", "reason": reason}]
    namespace = new_namespace()
    names = _concrete(namespace)
    reverse = dict(sorted({v: k for k, v in names.items()}.items(), key=lambda item: -len(item[0])))
    try:
        stepper.begin(program.broker_config)
    except Unsupported as exc:
        return [{"status": "unsupported", "reason": exc.reason}]
    except (Indefinite, TargetError) as exc:
        return [{"status": "indefinite", "reason": str(getattr(exc, "reason", exc))}]
    records = []
    state = initial_state(program.broker_config, program.era)
    for step, role, case_api in program.steps:
        op = op_from_json(generated.fill(step, names))
        try:  # the ledger of implicit-namespace targets reads the expected answer of creations
            state, expected = apply(state, op)
        except ModelUsageError:
            expected = None
        result = stepper.perform(op, expected=expected, role=role, case_api=case_api)
        if result.status != ANSWERED and result.status != "violation":
            records.append({"status": result.status, "reason": normalise(result.reason, reverse)})
            break
        records.append({"status": "answered", "outcome": normalise(outcome_json(result.actual), reverse)})
    return records


@dataclass
class Disagreement:
    program: str
    kind: str
    step: int
    op: dict
    model: Any
    groups: list                  # [(answer, [targets])]
    not_answered: dict            # target -> status: reason

    def lines(self) -> list[str]:
        out = [f"- {self.program} step {self.step}: {json.dumps(self.op, sort_keys=True)}",
               f"    model: {json.dumps(self.model, sort_keys=True)}"]
        for answer, targets in self.groups:
            agrees = " (= model)" if answer == self.model else ""
            out.append(f"    {', '.join(targets)}: {json.dumps(answer, sort_keys=True)}{agrees}")
        for target, why in sorted(self.not_answered.items()):
            out.append(f"    {target}: {why}")
        return out


def compare(program: Program) -> Optional[Disagreement]:
    """The first step where the targets that answered it disagree, or None."""
    length = max((len(r) for r in program.answers.values()), default=0)
    for index in range(length):
        groups: dict[str, list] = {}
        answers: dict[str, Any] = {}
        not_answered = {}
        for target, records in program.answers.items():
            if index >= len(records):
                continue
            record = records[index]
            if record["status"] == "answered":
                key = json.dumps(record["outcome"], sort_keys=True)
                groups.setdefault(key, []).append(target)
                answers[key] = record["outcome"]
            else:
                not_answered[target] = f"{record['status']}: {record.get('reason', '')}"
        if len(groups) > 1:
            return Disagreement(program.id, program.kind, index, program.steps[index][0],
                                program.model[index] if index < len(program.model) else None,
                                [(answers[k], sorted(t)) for k, t in sorted(groups.items(), key=lambda kv: kv[1])],
                                not_answered)
    return None


@dataclass
class DiffReport:
    targets: list
    seed: int
    cases: int
    sequences: int
    disagreements: list
    agreements: int
    unanswered: int
    errors: dict

    def to_json(self) -> dict:
        return {"targets": self.targets, "seed": self.seed, "cases": self.cases, "sequences": self.sequences,
                "agreements": self.agreements, "unanswered_everywhere": self.unanswered, "errors": self.errors,
                "disagreements": [d.__dict__ for d in self.disagreements]}

    def lines(self) -> list[str]:
        out = [f"diff {' / '.join(self.targets)}: {self.cases} cases and {self.sequences} sequences (seed {self.seed}); "
               f"{self.agreements} agree, {len(self.disagreements)} disagree, "
               f"{self.unanswered} answered by fewer than two targets"]
        for target, error in sorted(self.errors.items()):
            out.append(f"  {target}: {error}")
        by_kind: dict[str, int] = {}
        for d in self.disagreements:
            shape = " | ".join(",".join(t) for _, t in d.groups)
            by_kind[shape] = by_kind.get(shape, 0) + 1
        for shape, count in sorted(by_kind.items(), key=lambda kv: -kv[1]):
            out.append(f"  groups {shape}: {count}")
        for d in self.disagreements:
            out.extend("  " + line for line in d.lines())
        return out


def diff(sessions: list[TargetSession], *, cases: list, sequences: int = 50, seed: Optional[int] = None,
         steps: int = 8, stream=None) -> DiffReport:
    seed = secrets.randbelow(2**31) if seed is None else seed
    errors = {}
    for session in sessions:
        session.start()
        if session.target.start_error:
            errors[session.target.name] = f"could not start: {session.target.start_error.splitlines()[0]}"
    live = [s for s in sessions if not s.target.start_error]
    programs = []
    for case in cases:
        try:
            programs.append(program_of_case(case))
        except Exception as exc:  # noqa: BLE001 - a case that does not bind is reported, not run
            errors[case.id] = f"cannot bind: {exc}"
    if live and sequences:
        caps = frozenset.intersection(*(capabilities(s.target) for s in live))
        rng = random.Random(seed)
        programs += [program_of_sequence(i, rng, caps, steps) for i in range(sequences)]
    disagreements, agreements, unanswered = [], 0, 0
    for program in programs:
        program.model = model_answers(program)
        for session in live:
            program.answers[session.target.name] = run_on(session, program)
        found = compare(program)
        answered = [t for t, r in program.answers.items() if r and r[0]["status"] == "answered"]
        if found is not None:
            disagreements.append(found)
            if stream is not None:
                print("\n".join(found.lines()), file=stream, flush=True)
        elif len(answered) >= 2:
            agreements += 1
        else:
            unanswered += 1
    return DiffReport([s.target.name for s in sessions], seed, sum(p.kind == "case" for p in programs),
                      sum(p.kind == "sequence" for p in programs), disagreements, agreements, unanswered, errors)


def write_report(report: DiffReport, out_dir: Path) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "diff.json"
    path.write_text(json.dumps(report.to_json(), indent=1, sort_keys=True, default=str), encoding="utf-8")
    return path
