import pytest

from model.errors import ModelUsageError
from model.machine import HANDLERS, apply, initial_state, run
from model.ops import OPERATION_TYPES, CreateNamespace, GetPartitionedMetadata
from model.outcomes import Done, Partitions

from tests.model.helpers import NS, name


def test_every_operation_has_a_handler():
    assert set(HANDLERS) == set(OPERATION_TYPES.values())


def test_unknown_operation_is_a_usage_error():
    class Unknown:
        pass

    with pytest.raises(ModelUsageError, match="HANDLERS"):
        apply(initial_state(), Unknown())


def test_unknown_era_is_a_usage_error():
    with pytest.raises(ModelUsageError, match="pip344, pre-pip344"):
        initial_state(era="3.0.5")


def test_initial_state_takes_broker_config_and_era():
    state = initial_state({"defaultNumPartitions": "7"}, era="pre-pip344")
    assert state.config.defaultNumPartitions == 7 and state.era == "pre-pip344"


def test_apply_is_pure():
    state = initial_state({"allowAutoTopicCreationType": "partitioned"})
    ops = [CreateNamespace(NS), GetPartitionedMetadata(name("t"), "rest", True)]
    first = run(state, ops)
    assert run(state, ops) == first
    assert state == initial_state({"allowAutoTopicCreationType": "partitioned"})
    assert first[1] == (Done(), Partitions(1))
