"""Coverage of the model by a generated run: which operations and which outcome kinds it exercised.

- An operation is counted by its type and the variant that changes how it is performed
  (``op_variant``: ``GetPartitionedMetadata[binary,auto_create=False]``, ``ListTopics[rest]``),
  an outcome by its kind and the code that distinguishes answers of that kind (``outcome_kind``:
  ``RestError:404``, ``ServerError:TopicNotFound``, ``ClientError:TopicNotFound``).
- ``Coverage`` counts per target and per side: what the model expected, what the target answered
  (only for steps it answered), and the step statuses (answered, unsupported, indefinite,
  skipped because the model does not settle the op, stand-in mismatches).
- The report names what was never exercised, out of every operation type and outcome kind the
  model defines (``model.ops.OPERATION_TYPES``, ``model.outcomes.OUTCOME_TYPES``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from model import ops as model_ops
from model import outcomes as model_outcomes


def op_variant(op) -> str:
    """The operation's type with the attributes that change how it is performed, e.g. ``ListTopics[rest]``."""
    name = type(op).__name__
    parts = []
    for attr in ("api", "transport", "auto_create", "domain", "command", "view"):
        if hasattr(op, attr):
            value = getattr(op, attr)
            if attr == "transport" and getattr(op, "api", "client") != "client":
                continue
            if attr == "domain" or attr == "command" or attr == "view":
                parts.append(str(value))
            else:
                parts.append(f"{attr}={value}" if attr == "auto_create" else str(value))
    topic = getattr(op, "topic", None)
    if isinstance(topic, str) and "://" in topic:
        parts.append(topic.split("://", 1)[0])
    return f"{name}[{','.join(parts)}]" if parts else name


def outcome_kind(outcome: Any) -> str:
    """The outcome's type with the code that tells its answers apart, e.g. ``RestError:404``."""
    if isinstance(outcome, dict):  # a recorded ProtocolViolation
        return str(outcome.get("kind", "?"))
    name = type(outcome).__name__
    if isinstance(outcome, model_outcomes.RestError):
        return f"{name}:{outcome.status}"
    if isinstance(outcome, model_outcomes.ServerError):
        return f"{name}:{outcome.error}"
    if isinstance(outcome, model_outcomes.ClientError):
        return f"{name}:{outcome.exception}"
    if isinstance(outcome, model_outcomes.LookupAnswer):
        return f"{name}:{outcome.response}"
    return name


class Coverage:
    """Counts for one target: operations, expected and actual outcome kinds, step statuses."""

    def __init__(self, target: str):
        self.target = target
        self.ops: Counter = Counter()
        self.expected: Counter = Counter()
        self.actual: Counter = Counter()
        self.statuses: Counter = Counter()

    def performed(self, op, expected, actual) -> None:
        self.ops[op_variant(op)] += 1
        self.expected[outcome_kind(expected)] += 1
        self.actual[outcome_kind(actual)] += 1
        self.statuses["answered"] += 1

    def status(self, name: str, op=None) -> None:
        self.statuses[name] += 1
        if op is not None:
            self.statuses[f"{name}:{type(op).__name__}"] += 1

    def op_types(self) -> set[str]:
        return {variant.split("[", 1)[0] for variant in self.ops}

    def outcome_types(self) -> set[str]:
        return {kind.split(":", 1)[0] for kind in self.expected}

    def missing_ops(self) -> list[str]:
        return sorted(set(model_ops.OPERATION_TYPES) - self.op_types())

    def missing_outcomes(self) -> list[str]:
        return sorted(set(model_outcomes.OUTCOME_TYPES) - self.outcome_types())

    def to_json(self) -> dict:
        return {
            "target": self.target,
            "operations": dict(sorted(self.ops.items())),
            "expected_outcomes": dict(sorted(self.expected.items())),
            "actual_outcomes": dict(sorted(self.actual.items())),
            "statuses": dict(sorted(self.statuses.items())),
            "operation_types_exercised": len(self.op_types()),
            "operation_types_total": len(model_ops.OPERATION_TYPES),
            "outcome_types_exercised": len(self.outcome_types()),
            "outcome_types_total": len(model_outcomes.OUTCOME_TYPES),
            "operations_never_exercised": self.missing_ops(),
            "outcomes_never_expected": self.missing_outcomes(),
        }

    def report_lines(self) -> list[str]:
        data = self.to_json()
        lines = [f"coverage on {self.target}: {data['operation_types_exercised']}/{data['operation_types_total']} "
                 f"operation types, {len(self.ops)} variants; {data['outcome_types_exercised']}/"
                 f"{data['outcome_types_total']} outcome types, {len(self.expected)} kinds expected"]
        lines.append("  operations: " + ", ".join(f"{k} {n}" for k, n in sorted(self.ops.items())))
        lines.append("  expected outcomes: " + ", ".join(f"{k} {n}" for k, n in sorted(self.expected.items())))
        lines.append("  steps: " + ", ".join(f"{k} {n}" for k, n in sorted(self.statuses.items()) if ":" not in k))
        if data["operations_never_exercised"]:
            lines.append("  never exercised: " + ", ".join(data["operations_never_exercised"]))
        if data["outcomes_never_expected"]:
            lines.append("  outcome types never expected: " + ", ".join(data["outcomes_never_expected"]))
        return lines
