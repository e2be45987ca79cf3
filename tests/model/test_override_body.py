"""model/override_body.py and the override's raw-body POST and GET (model/admin.py)."""

import pytest

from model import override_body
from model.config import AutoTopicCreationOverride
from model.errors import ModelUsageError
from model.machine import apply
from model.ops import GetAutoTopicCreation, GetPartitionedMetadata, SetAutoTopicCreation
from model.outcomes import Done, OverrideShown, Partitions, RestError

from tests.model.helpers import NS, answer, broker, name

IMPL = "`org.apache.pulsar.common.policies.data.impl.AutoTopicCreationOverrideImpl`"
NO_CREATOR = f"Cannot construct instance of {IMPL} (although at least one Creator exists): no "


@pytest.mark.parametrize("body, message", [
    ("[]", f"Cannot deserialize value of type {IMPL} from Array value (token `JsonToken.START_ARRAY`)"),
    ('"x"', NO_CREATOR + "String-argument constructor/factory method to deserialize from String value ('x')"),
    ('""', f'Cannot coerce empty String ("") to {IMPL} value (but could if coercion was enabled using `CoercionConfig`)'),
    ("7", NO_CREATOR + "int/Int-argument constructor/factory method to deserialize from Number value (7)"),
    ("true", NO_CREATOR + "boolean/Boolean-argument constructor/factory method to deserialize from boolean value (true)"),
    ('{"allowAutoTopicCreation": "on"}', 'Cannot deserialize value of type `boolean` from String "on": only '
                                         '"true"/"True"/"TRUE" or "false"/"False"/"FALSE" recognized'),
    ('{"defaultNumPartitions": false}',
     "Cannot deserialize value of type `java.lang.Integer` from Boolean value (token `JsonToken.VALUE_FALSE`)"),
    ('{"defaultNumPartitions": "two"}',
     'Cannot deserialize value of type `java.lang.Integer` from String "two": not a valid `java.lang.Integer` value'),
    ('{"defaultNumPartitions": 3000000000}', "Numeric value (3000000000) out of range of int (-2147483648 - 2147483647)"),
    ('{"defaultNumPartitions": "-2147483649"}', 'Cannot deserialize value of type `java.lang.Integer` from String '
     '"-2147483649": Overflow: numeric value (-2147483649) out of range of `java.lang.Integer` (-2147483648 -2147483647)'),
])
def test_bodies_jackson_refuses(body, message):
    assert override_body.bind(body) == RestError(400, message)


@pytest.mark.parametrize("body, bound", [
    ("null", None),
    ("{}", AutoTopicCreationOverride(False, None)),
    ('{"allowAutoTopicCreation": "False", "topicType": 5, "other": [1]}', AutoTopicCreationOverride(False, "5")),
    ('{"allowAutoTopicCreation": 1, "topicType": false}', AutoTopicCreationOverride(True, "false")),
    ('{"allowAutoTopicCreation": null, "defaultNumPartitions": -2.9}', AutoTopicCreationOverride(False, None, -2)),
    ('{"defaultNumPartitions": "-3"}', AutoTopicCreationOverride(False, None, -3)),
    ('{"defaultNumPartitions": 2147483647}', AutoTopicCreationOverride(False, None, 2147483647)),
    ('{"defaultNumPartitions": "-2147483648"}', AutoTopicCreationOverride(False, None, -2147483648)),
])
def test_bodies_jackson_binds(body, bound):
    assert override_body.bind(body) == bound


@pytest.mark.parametrize("body", ["{", "1.5", '{"allowAutoTopicCreation": 2}', '{"topicType": {}}',
                                  '{"defaultNumPartitions": " 2"}', '{"defaultNumPartitions": 3e9}'])
def test_bodies_outside_the_model_are_refused_not_guessed(body):
    with pytest.raises(ModelUsageError):
        override_body.bind(body)


def test_a_refused_body_answers_before_the_namespace_is_read():
    assert answer(broker(), SetAutoTopicCreation("public/gone", body="[]")).status == 400
    assert answer(broker(), SetAutoTopicCreation("public/gone", body="{}")) == RestError(404, "Namespace does not exist")


def test_a_null_body_removes_the_override():
    state = broker({"allowAutoTopicCreation": "false"},
                   override={"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 2})
    assert answer(state, GetPartitionedMetadata(name("t"), "rest", True)) == Partitions(2)
    state, outcome = apply(state, SetAutoTopicCreation(NS, body="null"))
    assert outcome == Done()
    assert answer(state, GetAutoTopicCreation(NS)) == OverrideShown("")
    assert answer(state, GetPartitionedMetadata(name("t"), "rest", True)).status == 404


def test_a_bound_override_is_validated_like_one_given_by_fields():
    assert answer(broker(), SetAutoTopicCreation(NS, body='{"allowAutoTopicCreation": true}')) == RestError(
        412, "Invalid configuration for autoTopicCreationOverride. the detail is Unknown topic type [null]")
    state, _ = apply(broker(), SetAutoTopicCreation(NS, body='{"allowAutoTopicCreation": true, "topicType": '
                                                              '"partitioned", "defaultNumPartitions": 2.5}'))
    assert answer(state, GetPartitionedMetadata(name("t"), "rest", True)) == Partitions(2)


def test_get_prints_the_stored_override_without_null_fields():
    assert answer(broker(), GetAutoTopicCreation(NS)) == OverrideShown("")
    state, _ = apply(broker(), SetAutoTopicCreation(NS, False, "non-partitioned"))
    assert answer(state, GetAutoTopicCreation(NS)) == OverrideShown(
        '{"allowAutoTopicCreation":false,"topicType":"non-partitioned"}')
    assert answer(state, GetAutoTopicCreation("public/gone")) == RestError(404, "Namespace does not exist")


@pytest.mark.parametrize("op", [SetAutoTopicCreation(NS, True, "partitioned", 2, body="{}"),
                                SetAutoTopicCreation(NS, True), SetAutoTopicCreation(NS)])
def test_body_and_fields_exclude_each_other(op):
    with pytest.raises(ModelUsageError):
        apply(broker(), op)
