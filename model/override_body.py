"""What Pulsar makes of the JSON text POSTed to ``/admin/v2/namespaces/{t}/{ns}/autoTopicCreation``.

Owns the binding of a raw body to the override, before any check of Pulsar's own runs. Pulsar
declares the body as ``AutoTopicCreationOverride`` (Namespaces#setAutoTopicCreation); Jersey reads
it with Pulsar's ObjectMapper, which maps that interface to ``AutoTopicCreationOverrideImpl``
("resolver.addMapping(AutoTopicCreationOverride.class, AutoTopicCreationOverrideImpl.class);",
ObjectMapperFactory#setAnnotationsModule) and ignores unknown properties
("mapper.configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);"). The same at
v3.0.7, v4.0.7 and v4.2.4.

``bind`` answers:

- before the resource method: the binding runs first, so a body it refuses answers 400 whatever
  the namespace; the reason is the first line of Jackson's message (Jersey's mapper answers 400
  text/plain with all of it; what follows "\\n at [Source" is a parser location, which the REST
  driver drops). Observed alike on 3.0.7, 4.0.7 and 4.2.4.
- null: a JSON ``null`` binds to null, which internalSetAutoTopicCreationAsync stores: the
  override is removed ("if (autoTopicCreationOverride != null) {" guards its validation).
- coercion: a field's JSON value is coerced to the field's Java type as Jackson does by default:
  ``private boolean allowAutoTopicCreation`` (absent or null: false; "true"/"True"/"TRUE",
  "false"/"False"/"FALSE"; 0 and 1), ``private String topicType`` (a scalar's text: true ->
  "true", 5 -> "5"), ``private Integer defaultNumPartitions`` (a float is cut toward zero, 2.5 ->
  2; a string of digits is its number; a boolean is refused). A count outside Java's int range is
  refused, with one text for a JSON number and another for a string of digits (both observed
  alike on 3.0.7, 4.0.7 and 4.2.4, whose texts differ in their spacing exactly as modelled).
- anything else: a body outside these cases (a parse error, a nested value, a float out of Java's
  int range...) is a ModelUsageError: the model does not guess Jackson's answer.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional, Union

from model.config import AutoTopicCreationOverride
from model.errors import ModelUsageError
from model.outcomes import RestError

OVERRIDE_CLASS = "org.apache.pulsar.common.policies.data.impl.AutoTopicCreationOverrideImpl"
_BOOLEAN_TEXTS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT_MIN, _INT_MAX = -2 ** 31, 2 ** 31 - 1
_DIGITS = re.compile(r"^-?[0-9]+\Z")
_WORD = re.compile(r"^[A-Za-z]+\Z")


class _Refused(Exception):
    """Jackson refused the body; ``message`` is its first line (the reason a 400 carries)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def bind(text: str) -> Union[AutoTopicCreationOverride, None, RestError]:
    """The override a body binds to, None for a JSON null (the override removed), or the 400 Jackson answers."""
    try:
        value = json.loads(text)
    except ValueError:
        raise ModelUsageError(f"autoTopicCreation body {text!r} is not JSON: Jackson's parse errors "
                              "are not modelled (model/override_body.py guesses no Jackson answer)") from None
    try:
        return _bind_value(value)
    except _Refused as refused:
        return RestError(400, refused.message)


def _bind_value(value: Any) -> Optional[AutoTopicCreationOverride]:
    if value is None:
        return None
    if isinstance(value, list):
        raise _Refused(f"Cannot deserialize value of type `{OVERRIDE_CLASS}` from Array value "
                       "(token `JsonToken.START_ARRAY`)")
    if isinstance(value, str):
        if not value:
            raise _Refused(f"Cannot coerce empty String (\"\") to `{OVERRIDE_CLASS}` value "
                           "(but could if coercion was enabled using `CoercionConfig`)")
        raise _Refused(_no_creator("String", f"String value ('{value}')"))
    if isinstance(value, bool):
        raise _Refused(_no_creator("boolean/Boolean", f"boolean value ({_java_text(value)})"))
    if isinstance(value, int):
        raise _Refused(_no_creator("int/Int", f"Number value ({value})"))
    if not isinstance(value, dict):
        raise ModelUsageError(f"autoTopicCreation body {value!r}: a float body is not modelled (model/override_body.py guesses no Jackson answer)")
    return AutoTopicCreationOverride(
        _allow(value.get("allowAutoTopicCreation")),
        _topic_type(value.get("topicType")),
        _count(value.get("defaultNumPartitions")))


def _no_creator(kind: str, what: str) -> str:
    return (f"Cannot construct instance of `{OVERRIDE_CLASS}` (although at least one Creator exists): "
            f"no {kind}-argument constructor/factory method to deserialize from {what}")


def _java_text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _allow(value: Any) -> bool:
    if value is None:
        return False  # a primitive boolean left at Java's default
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value in _BOOLEAN_TEXTS:
            return _BOOLEAN_TEXTS[value]
        raise _Refused(f"Cannot deserialize value of type `boolean` from String \"{value}\": "
                       "only \"true\"/\"True\"/\"TRUE\" or \"false\"/\"False\"/\"FALSE\" recognized")
    if isinstance(value, int) and value in (0, 1):
        return value == 1
    raise ModelUsageError(f"allowAutoTopicCreation={value!r}: only booleans, their texts, 0 and 1 are modelled")


def _topic_type(value: Any) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool) or isinstance(value, int):
        return _java_text(value)
    raise ModelUsageError(f"topicType={value!r}: only strings, booleans and integers are modelled")


def _count(value: Any) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool):
        token = "VALUE_TRUE" if value else "VALUE_FALSE"
        raise _Refused(f"Cannot deserialize value of type `java.lang.Integer` from Boolean value "
                       f"(token `JsonToken.{token}`)")
    if isinstance(value, str):
        if _DIGITS.match(value):
            return _in_int_range(int(value), value)
        if _WORD.match(value):
            raise _Refused(f"Cannot deserialize value of type `java.lang.Integer` from String \"{value}\": "
                           "not a valid `java.lang.Integer` value")
        raise ModelUsageError(f"defaultNumPartitions={value!r}: only digits or letters are modelled in a string")
    if isinstance(value, float):
        if not _INT_MIN <= int(value) <= _INT_MAX:
            raise ModelUsageError(f"defaultNumPartitions={value!r}: a float outside Java's int range is not modelled")
        return int(value)  # Python's int() cuts toward zero, as Java's (int) cast
    if isinstance(value, int):
        return _in_int_range(value)
    raise ModelUsageError(f"defaultNumPartitions={value!r}: only numbers, strings and booleans are modelled")


def _in_int_range(number: int, text: Optional[str] = None) -> int:
    if not _INT_MIN <= number <= _INT_MAX:
        if text is not None:
            raise _Refused(f"Cannot deserialize value of type `java.lang.Integer` from String \"{text}\": "
                           f"Overflow: numeric value ({text}) out of range of `java.lang.Integer` ({_INT_MIN} -{_INT_MAX})")
        raise _Refused(f"Numeric value ({number}) out of range of int ({_INT_MIN} - {_INT_MAX})")
    return number
