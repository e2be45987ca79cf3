"""PIP-35 batch lookup, as the model answers it (TENTATIVE: PIP-35 was never implemented upstream).

The spec is spec/pip35.md and the decisions are docs/pip35-decisions.md (cited as C1..C12 below).
The model is one broker, so every topic it can serve is owned by "self": what it predicts is
what a batch lookup resolves to after a client followed the Redirect entries once (C9), which
is the same on every broker of a cluster.

``resolve`` keeps the decisions:

- too big (C3): the whole request is refused only when it is too big: more than
  ``maxBatchLookupTopics`` names (duplicates count), or more than that many distinct entries
  after partition expansion. Binary: ServerError TooManyRequests; REST: 413 (C11). Both carry the
  message of ``too_big_message``. (The third refusal, an answer larger than maxMessageSize, and
  the lookup permit are not modelled: no row reaches them.)
- entries (C2, C4, C7): an empty batch answers no entries; otherwise one entry per distinct topic
  in order of first appearance; a name with partitioned metadata (K > 0) becomes its K
  partitions in index order; a partition name is looked up as itself; ``requested`` is the
  client's spelling when it is not the canonical name of the topic or of its partitioned base.
- invalid names (C5): a name that does not parse is a Failed ``InvalidTopicName`` entry under the
  name as written, with the parser's message: for a name Pulsar's TopicName refuses, a single
  LOOKUP's "Invalid topic name: <its message>" (model/refused_names.py).
- every other entry (C6, ``single_lookup``): it answers what a single lookup of it through the
  same API answers (model/nonpersistent.py then model/lookups.py). Binary: LOOKUP's answer,
  Connect and authoritative with no existence check (Pulsar's TopicLookupBase.lookupTopicAsync),
  TopicNotFound for a missing namespace. REST (C11): the single REST lookup's answer, so a
  persistent topic that does not exist and may not be auto-created fails as the single lookup's
  404 does (Pulsar's TopicLookupBase.internalLookupTopicAsync); a failed REST entry names the
  ServerError of the single lookup's HTTP status (ERROR_OF_HTTP_STATUS).

Metamorphic relations: ``BatchEqualsSingles`` compares each entry with the single lookup of the
same topic through the same API; ``compare`` below is the one comparison the model and the
drivers both use. Since every entry is its single lookup's answer (C6), the two agree on every
entry, on both APIs. ``SameOwnerEverywhere`` holds on one broker by construction: the model
states agreement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from model import nonpersistent
from model.errors import ModelUsageError
from pulsar_naming.names import InvalidName, TopicName
from model.ops import BatchEqualsSingles, BatchLookup, Lookup, SameOwnerEverywhere
from model.outcomes import Agreement, BatchLookupResult, LookupAnswer, RestError, ServerError
from model.refused_names import refusal
from model.state import State

FLAG = "supports_batch_lookup"   # FeatureFlags field 10 in CONNECTED (C1, C12)
FLAG_FIELD = 10
LIMIT_KEY = "maxBatchLookupTopics"
REST_TOO_BIG = 413               # C11: "too big -> 413 with the limit in the reason"
SELF = "self"                    # the model's one broker, as an owner

# The HTTP status a REST single lookup gives for the failure a batch entry names (BrokerError's
# http_status in the reference broker; Pulsar's RestException codes for the same refusals).
HTTP_STATUS_OF_ERROR = {"TopicNotFound": 404, "ServiceNotReady": 503, "InvalidTopicName": 412,
                        "MetadataError": 500, "NotAllowedError": 412, "TooManyRequests": 503,
                        "AuthorizationError": 401}
# The other way, for the statuses a single REST lookup of a valid name can answer (C6).
ERROR_OF_HTTP_STATUS = {404: "TopicNotFound", 503: "ServiceNotReady", 500: "MetadataError",
                        401: "AuthorizationError"}


def too_big_message(count: int, limit: int, what: str) -> str:
    """C3's message; ``what`` is "names" or "topics after partition expansion"."""
    return (f"Batch lookup of {count} {what} exceeds {LIMIT_KEY}={limit}; "
            f"split it into batches of at most {limit} topics")


@dataclass(frozen=True)
class Entry:
    topic: str                 # canonical full name, or the name as written when invalid
    requested: Optional[str]   # the client's spelling when it is not canonical (C4)
    answer: object             # LookupAnswer("Connect", True) or ServerError


def resolve(state: State, names, api: str) -> tuple[Optional[str], list[Entry]]:
    """(refusal message, []) for a request that is too big (C3), else (None, entries)."""
    limit = state.config.maxBatchLookupTopics
    names = list(names)
    if len(names) > limit:
        return too_big_message(len(names), limit, "names"), []
    order: dict[str, Optional[str]] = {}   # entry topic -> requested; None value = valid name
    invalid: dict[str, str] = {}           # raw name -> parser message
    for raw in names:
        if raw in order:
            continue
        why = refusal(raw, state.release)
        if why is not None:  # Pulsar's TopicName, with a single LOOKUP's words (model/refused_names.py)
            order[raw] = None
            invalid[raw] = f"Invalid topic name: {why}"
            continue
        try:
            topic = TopicName.parse(raw)
        except InvalidName as exc:
            order[raw] = None
            invalid[raw] = str(exc)
            continue
        name = str(topic)
        spelling = None if raw == name else raw
        partitions = 0 if topic.is_partition else state.partition_count(topic)
        members = [str(topic.partition(i)) for i in range(partitions)] if partitions > 0 else [name]
        for member in members:
            order.setdefault(member, spelling)
    if len(order) > limit:
        return too_big_message(len(order), limit, "topics after partition expansion"), []
    entries = []
    for topic, requested in order.items():
        if topic in invalid:
            entries.append(Entry(topic, None, ServerError("InvalidTopicName", invalid[topic])))
        else:
            entries.append(Entry(topic, requested, entry_answer(single_lookup(state, topic, api))))
    return None, entries


def single_lookup(state: State, topic: str, api: str):
    """What one LOOKUP (binary) or REST GET /lookup/v2/topic answers for ``topic`` (C6)."""
    _, outcome = nonpersistent.lookup(state, Lookup(topic, api))
    return outcome


def entry_answer(single):
    """A single lookup's answer as a batch entry holds it: a LookupAnswer, or the ServerError (C6)."""
    if isinstance(single, RestError):
        error = ERROR_OF_HTTP_STATUS.get(single.status)
        if error is None:
            raise ModelUsageError(f"a REST lookup answered HTTP {single.status}, which no batch entry can name")
        return ServerError(error, single.reason)
    return single


def _refusal(api: str, message: str):
    return RestError(REST_TOO_BIG, message) if api == "rest" else ServerError("TooManyRequests", message)


def _check_api(op) -> None:
    if op.api not in ("binary", "rest"):
        raise ModelUsageError(f"{type(op).__name__}(api={op.api!r}): batch lookup is binary (BATCH_LOOKUP) or "
                              "rest (POST /lookup/v2/topics); the official client has no such call")


def entry_tuple(entry: Entry) -> tuple:
    """An Entry as BatchLookupResult holds it: (topic, requested, response, authoritative, error)."""
    if isinstance(entry.answer, LookupAnswer):
        return entry.topic, entry.requested, entry.answer.response, entry.answer.authoritative, None
    return entry.topic, entry.requested, "Failed", None, entry.answer.error


def batch_lookup(state: State, op: BatchLookup):
    _check_api(op)
    refusal, entries = resolve(state, op.topics, op.api)
    if refusal is not None:
        return state, _refusal(op.api, refusal)
    rows = [entry_tuple(e) for e in entries]
    return state, BatchLookupResult(tuple(sorted(rows, key=lambda r: r[0]) if op.api == "rest" else rows))


# -- metamorphic relations (BatchEqualsSingles, SameOwnerEverywhere) ----------------------------------


@dataclass(frozen=True)
class Answer:
    """One side's normalised answer for one topic: its owner's URL, or how it failed."""
    owner: Optional[str] = None     # broker service URL of the owner (the model: SELF)
    error: Optional[str] = None     # ServerError name (binary answers, REST batch entries)
    status: Optional[int] = None    # HTTP status of a failed REST single lookup
    message: Optional[str] = None   # binary message / REST reason

    def describe(self) -> str:
        if self.owner is not None:
            return "Connect"
        if self.status is not None:
            return f"HTTP {self.status}"
        return f"Failed {self.error}"


def compare(batch: Answer, single: Answer) -> Optional[str]:
    """None when the batch entry and the single lookup agree, else what differs (one line).

    Found on both sides: the same owner. Failed on both: binary, the same error and message; a
    REST single lookup, the HTTP status of the batch entry's error (HTTP_STATUS_OF_ERROR)."""
    if batch.owner is not None and single.owner is not None:
        return None if batch.owner == single.owner else f"batch owner {batch.owner}, single owner {single.owner}"
    if batch.owner is None and single.owner is None:
        if single.status is not None:
            if HTTP_STATUS_OF_ERROR.get(batch.error) == single.status:
                return None
        elif (batch.error, batch.message) == (single.error, single.message):
            return None
        else:
            return (f"batch Failed {batch.error} {batch.message!r}, "
                    f"single Failed {single.error} {single.message!r}")
    return f"batch {batch.describe()}, single {single.describe()}"


def agreement(pairs) -> Agreement:
    """``pairs``: (topic, batch Answer, single Answer) in entry order."""
    detail = tuple(f"{topic}: {why}" for topic, batch, single in pairs
                   if (why := compare(batch, single)) is not None)
    return Agreement(not detail, detail)


def model_answer(outcome) -> Answer:
    """The model's outcome of one lookup as an Answer (the one broker is SELF)."""
    if isinstance(outcome, LookupAnswer):
        return Answer(owner=SELF)
    if isinstance(outcome, ServerError):
        return Answer(error=outcome.error, message=outcome.message)
    if isinstance(outcome, RestError):
        return Answer(status=outcome.status, message=outcome.reason)
    raise ModelUsageError(f"no Answer for {outcome!r}")


def rest_comparable(topic: str) -> bool:
    """A REST single lookup needs a parsable name to build its path; invalid names are compared
    on the binary API only (``BatchEqualsSingles``)."""
    try:
        TopicName.parse(topic)
    except InvalidName:
        return False
    return True


def batch_equals_singles(state: State, op: BatchEqualsSingles):
    _check_api(op)
    refusal, entries = resolve(state, op.topics, op.api)
    if refusal is not None:
        return state, _refusal(op.api, refusal)
    pairs = []
    for entry in entries:
        if op.api == "rest" and not rest_comparable(entry.topic):
            continue
        if isinstance(entry.answer, ServerError) and entry.answer.error == "InvalidTopicName":
            single = entry.answer  # a single LOOKUP of an invalid name fails with the same parser
        else:
            single = single_lookup(state, entry.topic, op.api)
        pairs.append((entry.topic, model_answer(entry.answer), model_answer(single)))
    return state, agreement(pairs)


def same_owner_everywhere(state: State, op: SameOwnerEverywhere):
    _check_api(op)
    refusal, _ = resolve(state, op.topics, op.api)
    if refusal is not None:
        return state, _refusal(op.api, refusal)
    return state, Agreement(True)
