"""conformance/verdicts.py: comparison, first mismatch, grading into exit codes."""

from conformance import verdicts as v
from tests.conformance.helpers import Step
from model import ops
from model.outcomes import Partitions, RestError, ServerError


def _steps():
    return (
        Step(ops.CreatePartitionedTopic("persistent://t/n/a", 3), "setup", Partitions(3)),
        Step(ops.GetPartitionedMetadata("persistent://t/n/a", "binary", False), "action", Partitions(3)),
        Step(ops.GetPartitionedMetadata("persistent://t/n/b", "rest", False), "observe", RestError(404, "x")),
    )


def test_every_step_equal_is_passed_with_last_step_recorded():
    steps = _steps()
    verdict = v.judge(steps, [Partitions(3), Partitions(3), RestError(404, "x")])
    assert verdict.verdict == v.PASSED
    assert verdict.expected == RestError(404, "x") and verdict.actual == RestError(404, "x")
    assert verdict.failing_step is None


def test_first_mismatch_is_recorded_with_index_op_expected_actual():
    steps = _steps()
    verdict = v.judge(steps, [Partitions(3), ServerError("TopicNotFound", ""), RestError(500, "y")])
    assert verdict.verdict == v.FAILED
    assert verdict.failing_step == 1
    assert verdict.op == steps[1].op
    assert verdict.expected == Partitions(3)
    assert verdict.actual == ServerError("TopicNotFound", "")
    assert "action step 1" in verdict.reason


def test_compare_is_plain_equality_of_outcome_values():
    assert v.compare(ServerError("TopicNotFound", ""), ServerError("TopicNotFound", ""))
    assert not v.compare(ServerError("TopicNotFound", ""), ServerError("TopicNotFound", "Topic not found"))


def test_broken_keeps_the_traceback():
    try:
        raise KeyError("oops")
    except KeyError as exc:
        verdict = v.broken(exc)
    assert verdict.verdict == v.BROKEN
    assert "KeyError" in verdict.traceback and "harness error" in verdict.reason


def test_exit_codes_follow_precedence():
    assert v.exit_code([v.PASSED, v.UNSUPPORTED]) == v.EXIT_OK
    assert v.exit_code([v.PASSED, v.FAILED, v.INDEFINITE]) == v.EXIT_FAILED
    assert v.exit_code([v.PASSED, v.INDEFINITE]) == v.EXIT_INDEFINITE
    assert v.exit_code([v.PASSED, v.FAILED, v.BROKEN]) == v.EXIT_HARNESS
    assert v.exit_code([v.PASSED, v.FAILED, v.TARGET_ERROR]) == v.EXIT_HARNESS  # a target that is down
    assert v.exit_code([v.TARGET_ERROR]) == v.EXIT_HARNESS
    assert v.TARGET_ERROR not in v.EXECUTED and v.target_error("gone").verdict == v.TARGET_ERROR


def test_unsupported_is_never_counted_as_passed():
    # Nothing executed: every case unsupported is a harness error, not a green run.
    assert v.exit_code([v.UNSUPPORTED, v.UNSUPPORTED]) == v.EXIT_HARNESS
    assert v.exit_code([]) == v.EXIT_HARNESS
    counts = v.summarize([v.UNSUPPORTED, v.PASSED])
    assert counts[v.PASSED] == 1 and counts[v.UNSUPPORTED] == 1
