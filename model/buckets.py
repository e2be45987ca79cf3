"""PIP-157 topic bucketing in the model: the ``numberOfTopicBuckets`` namespace policy and where a
topic's managed ledger lives. Pure, like the rest of ``model/``.

PIP-157 was never merged upstream (PIP-157's pip/pip-157.md), so every answer here that the proposal does not
fix is OUR decision, recorded with its reasons in docs/pip157-decisions.md; the letters below are
that page's sections. The rules are written from that page, independently of the reference
broker (which the model never imports: the broker may import the model's value helpers, never
its decisions, and the model imports nothing of the broker).

- the count, decision (f) (``count_from_body``): ``numberOfTopicBuckets`` is given only in the
  namespace-create Policies body. Absent or JSON ``null`` means 1 ("The default value, 1 means no
  bucketing", pip/pip-157.md) and nothing is stored; an explicit 1 is stored and behaves as
  absent. Allowed: a JSON integer from 1 to 1024 (``true`` is not an integer). Anything else
  answers 412 ``Invalid numberOfTopicBuckets <value as JSON>: must be an integer from 1 to 1024``
  and the namespace is not created.
- fixed at creation, decision (e): "Users will not be able to change the number of buckets after
  the namespace is created" (pip/pip-157.md). ``POST`` and ``DELETE
  /admin/v2/namespaces/{t}/{ns}/numberOfTopicBuckets`` always answer 412 ``numberOfTopicBuckets
  can only be set when the namespace is created`` (even with the current value) and change
  nothing; a missing namespace answers 404 "Namespace does not exist" first. ``GET`` answers the
  count (1 when not set).
- the path, decisions (a)-(d) (``ledger_path``): a persistent topic's managed ledger is
  ``/managed-ledgers/{tenant}/{ns}/persistent/{encodedLocalName}`` when the count is 1 (today's
  path, Pulsar's TopicResources/NamespaceResources) and ``.../persistent/$k/{encodedLocalName}``
  otherwise, with ``k = pulsar_naming.hashing.bucket_of(decoded local name, n)``: the local name
  partition suffix included, Java ``String.hashCode`` over UTF-16 code units, the mathematical
  ``abs`` (so ``abs(Integer.MIN_VALUE)`` is 2^31, never a negative bucket). Non-persistent topics
  and partitioned metadata are never stored under ``/managed-ledgers`` (Pulsar's
  TopicResources/NamespaceResources).
- transparent: bucketing is transparent (pip/pip-157.md: "Namespaces created with this feature
  activated can be used just as others"): listing, existence, creation limits and deletion answer
  exactly as in an unbucketed namespace, so no other handler reads the count.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional, Union

from model import texts
from pulsar_naming.hashing import bucket_of
from pulsar_naming.names import PERSISTENT, NamespaceName, TopicName
from model.ops import GetNumberOfTopicBuckets, ReadTopicLayout, RemoveNumberOfTopicBuckets, SetNumberOfTopicBuckets
from model.outcomes import LedgerPaths, RestError, TopicBuckets
from model.state import State, parse_namespace, parse_topic

POLICY_KEY = "numberOfTopicBuckets"
NO_BUCKETS = 1       # decision (f): "The default value, 1 means no bucketing"
MAX_BUCKETS = 1024   # decision (f): bounds the per-bucket fan-out of listing
MANAGED_LEDGERS_ROOT = "/managed-ledgers"
BUCKET_PREFIX = "$"  # decision (d): the PIP's example names the folders $0, $1, $2 (PIP-157's pip/pip-157.md)

# decision (e), fixed at creation: our text; 412 like the other "value not acceptable here" refusals.
IMMUTABLE = RestError(412, "numberOfTopicBuckets can only be set when the namespace is created")


def invalid_count(value: Any) -> RestError:
    """Decision (f): the refusal of a bad count, the value written back as JSON (``"3"``, ``2.5``, ``true``)."""
    return RestError(412, f"Invalid {POLICY_KEY} {json.dumps(value)}: must be an integer from "
                          f"{NO_BUCKETS} to {MAX_BUCKETS}")


def is_valid_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and NO_BUCKETS <= value <= MAX_BUCKETS


def count_from_body(body: Mapping[str, Any]) -> Union[Optional[int], RestError]:
    """The count a namespace-create Policies body asks for: None (absent or null: 1, not stored),
    the count, or the 412 refusal (decision (f))."""
    value = body.get(POLICY_KEY)
    if value is None:
        return None
    return value if is_valid_count(value) else invalid_count(value)


def buckets_of(state: State, namespace: NamespaceName) -> int:
    """The namespace's count; 1 when not set (or when the namespace does not exist)."""
    stored = state.policies(namespace).numberOfTopicBuckets
    return NO_BUCKETS if stored is None else stored


def ledger_path(topic: TopicName, buckets: int) -> str:
    """Decisions (a)-(d): the managed-ledger path of a persistent topic in a namespace of ``buckets`` buckets."""
    if not topic.persistent:
        raise ValueError(f"{topic} is non-persistent; it has no managed ledger (Pulsar's TopicResources/NamespaceResources)")
    base = f"{MANAGED_LEDGERS_ROOT}/{topic.tenant}/{topic.namespace}/{PERSISTENT}"
    if buckets == NO_BUCKETS:
        return f"{base}/{topic.encoded_local_name}"
    # decision (a): the DECODED local name is hashed; the path holds the encoded one.
    return f"{base}/{BUCKET_PREFIX}{bucket_of(topic.local_name, buckets)}/{topic.encoded_local_name}"


# -- handlers (model.machine.HANDLERS) ---------------------------------------------------------------


def get_number_of_topic_buckets(state: State, op: GetNumberOfTopicBuckets):
    """GET /admin/v2/namespaces/{t}/{ns}/numberOfTopicBuckets (1 when not set)."""
    namespace = parse_namespace(op.namespace)
    if not state.namespace_exists(namespace):
        return state, texts.NAMESPACE_DOES_NOT_EXIST
    return state, TopicBuckets(buckets_of(state, namespace))


def set_number_of_topic_buckets(state: State, op: SetNumberOfTopicBuckets):
    """POST /admin/v2/namespaces/{t}/{ns}/numberOfTopicBuckets: always refused (decision (e))."""
    return _refuse_change(state, op.namespace)


def remove_number_of_topic_buckets(state: State, op: RemoveNumberOfTopicBuckets):
    """DELETE /admin/v2/namespaces/{t}/{ns}/numberOfTopicBuckets: always refused (decision (e))."""
    return _refuse_change(state, op.namespace)


def _refuse_change(state: State, namespace_text: str):
    namespace = parse_namespace(namespace_text)
    if not state.namespace_exists(namespace):
        return state, texts.NAMESPACE_DOES_NOT_EXIST
    return state, IMMUTABLE


def read_topic_layout(state: State, op: ReadTopicLayout):
    """Where the metadata store holds the topic's managed ledger (``ledger_path``): one path for an existing
    persistent topic or partition, none for an absent or non-persistent one."""
    topic = parse_topic(op.topic)
    if not topic.persistent or not state.topic_exists(topic):
        return state, LedgerPaths(())
    return state, LedgerPaths((ledger_path(topic, buckets_of(state, topic.namespace_name)),))
