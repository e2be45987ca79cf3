"""What a PIP-157 row's ``stated`` means (spec/README.md, "stated"), for ``conformance.cases``.

Written from the README's definitions, independently of the model's rules (model/buckets.py), so
that ``stated_disagreements`` catches a model that drifts from what PIP-157 and
docs/pip157-decisions.md say:

- ``buckets: N``  the last ``TopicBuckets`` answer among the action and the observations is N;
- ``layout: {local name: k | null}``  each named topic's ``ReadTopicLayout`` observation finds its
  managed ledger at exactly one path, inside the folder ``$k`` right under the domain (k), or
  directly under the domain (null: no bucket folder);
- ``listed: N``  the action's listing names N topics.
"""

from __future__ import annotations

from pulsar_naming.names import TopicName
from model.ops import ReadTopicLayout
from model.outcomes import LedgerPaths, TopicBuckets, TopicList

PIP157_STATED = ("buckets", "layout", "listed")


def bucket_folder(outcome):
    """``/managed-ledgers/t/ns/persistent/$k/x`` -> k; ``.../persistent/x`` -> None; anything else
    (no path, several paths) is returned as it is, so it never equals a stated value."""
    if not isinstance(outcome, LedgerPaths) or len(outcome.paths) != 1:
        return outcome
    parts = outcome.paths[0].split("/")  # "", "managed-ledgers", tenant, ns, domain, [$k,] name
    if len(parts) == 6:
        return None
    if len(parts) == 7 and parts[5].startswith("$") and parts[5][1:].isdigit():
        return int(parts[5][1:])
    return outcome


def pip157_stated_value(key: str, value, bound):
    """The value of ``key`` the bound case's expectations give, to compare with the stated one."""
    action = bound.action.expected
    if key == "buckets":
        found = [o for o in (action, *(s.expected for s in bound.observations)) if isinstance(o, TopicBuckets)]
        return found[-1].buckets if found else action
    if key == "listed":
        return len(action.topics) if isinstance(action, TopicList) else action
    if key == "layout":
        got = {}
        for step in bound.observations:
            if isinstance(step.op, ReadTopicLayout):
                got[TopicName.parse(step.op.topic).local_name] = bucket_folder(step.expected)
        return tuple((name, got.get(name, "not observed")) for name, _ in value)
    raise KeyError(key)
