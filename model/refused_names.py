"""Topic names Pulsar refuses, and the exact words it refuses them with, by release.

``pulsar_naming.names`` parses the names the model reasons about, and holds Pulsar's own parser
(``pulsar_refusal``); this module says which release parses how, and what each API answers: a
broker asks before anything else whether ``TopicName.get(name)`` throws. Both APIs ask it first
(ServerCnx#validateTopicName for PARTITIONED_METADATA and LOOKUP, AdminResource#validateTopicName
for the admin REST paths), so a refused name never reaches a namespace, a topic or the
auto-creation rules.

Which release refuses what (``refusal``):

- 4.2 and later parse with splitBySlash and refuse V1 names (``v1-topic-names-refused``);
  earlier releases read a 4-part name as a legacy v1 name (``pulsar_naming.names.pulsar_refusal``).
- a blank (whitespace only) local name is refused with "Topic local name must not be blank."
  from ``topic-local-name-blank-refused`` on; before, only an empty one, with "Invalid topic
  name: <name>", so " " is an ordinary name there.

What each API shows (``refused_answer``): binary ``ServerError("InvalidTopicName", "Invalid topic
name: " + message)`` (ServerCnx); REST ``412 "Topic name is not valid"`` (AdminResource), for a
name whose domain, tenant, namespace and local name are the path's segments.
"""

from __future__ import annotations

from typing import Optional

from model import releases
from pulsar_naming.names import pulsar_refusal
from model.outcomes import RestError, ServerError

REST_REFUSAL = "Topic name is not valid"


def refusal(name: str, release=releases.NEWEST) -> Optional[str]:
    """Pulsar's message refusing ``name`` as a topic name on ``release``, or None."""
    return pulsar_refusal(name, blank_refused=releases.has(release, "topic-local-name-blank-refused"),
                          v1_refused=releases.has(release, "v1-topic-names-refused"))


def refused_answer(name: str, api: str, release) -> Optional[object]:
    """What a PARTITIONED_METADATA / LOOKUP (binary) or an admin REST topic path (rest) answers
    for a refused name, or None when the name is accepted."""
    message = refusal(name, release)
    if message is None:
        return None
    return RestError(412, REST_REFUSAL) if api == "rest" else ServerError("InvalidTopicName",
                                                                           f"Invalid topic name: {message}")
