"""Verdicts: what one case on one target came to. Pure: no I/O, no clocks.

- ``passed`` means every step's actual outcome == its expected outcome (``compare``:
  model.outcomes values compare with ``==``, so this is the whole comparison).
- ``failed`` is the first mismatch (``judge``); it records the step index, the op, expected and
  actual. Later steps are not run: they would start from a state the model did not predict.
- ``unsupported`` means one thing: the target was asked and lacks the capability (a step it
  cannot perform, a broker_config it cannot take, a feature or era it does not have), named by a
  conformance/reasons.py id (``kind``). ``indefinite`` means a bounded wait ended without an
  answer. Neither is ever counted as passed, nor as failed.
- ``broken`` is a harness error (an exception in our code), reported with its traceback; harness
  failures are never reported as spec failures.
- ``target-error`` is a finding about the target, not about a case: it could not start, stopped
  serving during the run, or could not be restarted with a case's configuration. Every case that
  target then cannot attempt gets it, with the reason; the console summary and the report pages
  show these targets first.

``exit_code``, in order of precedence: 2 if anything is broken or target-error, or nothing was
executed on any target (every case unsupported or none selected); 1 if anything failed that is
not a known divergence (conformance/divergences.py); 3 if anything is indefinite that is not a
known divergence (a request the target never answers); else 0. A run whose only failures are
known divergences exits 0 and says how many there were.
"""

from __future__ import annotations

import traceback as tb
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Optional

PASSED = "passed"
FAILED = "failed"
UNSUPPORTED = "unsupported"
INDEFINITE = "indefinite"
BROKEN = "broken"
TARGET_ERROR = "target-error"
VERDICTS = (PASSED, FAILED, UNSUPPORTED, INDEFINITE, BROKEN, TARGET_ERROR)

EXIT_OK, EXIT_FAILED, EXIT_HARNESS, EXIT_INDEFINITE = 0, 1, 2, 3

# Verdicts where the case's steps actually ran against the target (the zero-case guard).
EXECUTED = frozenset({PASSED, FAILED, INDEFINITE, BROKEN})


@dataclass(frozen=True)
class Verdict:
    verdict: str
    reason: str = ""
    failing_step: Optional[int] = None  # index into bound.steps where the case stopped
    op: object = None  # that step's op (the last step's for passed)
    expected: object = None  # that step's expected outcome
    actual: object = None  # the outcome observed, or a ProtocolViolation; None when none
    traceback: str = ""  # broken only
    kind: str = ""  # unsupported only: the conformance/reasons.py id


def compare(expected, actual) -> bool:
    """Whether ``actual`` is ``expected``: outcome values are compared with ``==``, nothing else."""
    return expected == actual


def passed(index: Optional[int] = None, step=None, actual=None) -> Verdict:
    return Verdict(PASSED, "", None, getattr(step, "op", None), getattr(step, "expected", None), actual)


def failed(index: int, step, actual, reason: str = "") -> Verdict:
    role = getattr(step, "role", "step")
    reason = reason or f"{role} step {index} ({type(step.op).__name__}): expected {step.expected!r}, got {actual!r}"
    return Verdict(FAILED, reason, index, step.op, step.expected, actual)


def unsupported(reason: str, index: Optional[int] = None, step=None, *, kind: str) -> Verdict:
    from conformance.reasons import check
    check(kind)
    return Verdict(UNSUPPORTED, reason, index, getattr(step, "op", None), getattr(step, "expected", None),
                   kind=kind)


def indefinite(reason: str, index: Optional[int] = None, step=None) -> Verdict:
    return Verdict(INDEFINITE, reason, index, getattr(step, "op", None), getattr(step, "expected", None))


def broken(exc: BaseException, index: Optional[int] = None, step=None) -> Verdict:
    text = "".join(tb.format_exception(type(exc), exc, exc.__traceback__))
    return Verdict(BROKEN, f"harness error: {type(exc).__name__}: {exc}", index,
                   getattr(step, "op", None), getattr(step, "expected", None), traceback=text)


def target_error(reason: str, index: Optional[int] = None, step=None) -> Verdict:
    return Verdict(TARGET_ERROR, reason, index, getattr(step, "op", None), getattr(step, "expected", None))


def judge(steps: Iterable, actuals: Iterable) -> Verdict:
    """Compare a finished list of steps with their actual outcomes: passed, or failed at the first
    mismatch."""
    last = (None, None, None)
    for index, (step, actual) in enumerate(zip(steps, actuals)):
        if not compare(step.expected, actual):
            return failed(index, step, actual)
        last = (index, step, actual)
    return passed(*last)


def summarize(verdicts: Iterable[str]) -> Counter:
    counts = Counter({name: 0 for name in VERDICTS})
    counts.update(verdicts)
    return counts


def exit_code(verdicts: Iterable[str], known_failures: int = 0, known_indefinite: int = 0) -> int:
    """The run's exit code from its verdicts, by precedence; ``known_failures`` of the ``failed``
    verdicts and ``known_indefinite`` of the ``indefinite`` ones are known divergences."""
    counts = summarize(verdicts)
    executed = sum(counts[name] for name in EXECUTED)
    if counts[BROKEN] or counts[TARGET_ERROR] or executed == 0:
        return EXIT_HARNESS
    if counts[FAILED] > known_failures:
        return EXIT_FAILED
    if counts[INDEFINITE] > known_indefinite:
        return EXIT_INDEFINITE
    return EXIT_OK
