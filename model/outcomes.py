"""Outcomes: what an operation answered, as plain values (never exceptions).

The model computes an Outcome for every operation; drivers turn what a live target answered into
the same values, so ``expected == actual`` is the whole comparison. Each outcome serialises to a
JSON object with a ``kind`` key; result records store that JSON.

Per-API shapes (facts §1.2, §1.3, §1.4, §7):
- ``Partitions(n)``        REST 200 ``{"partitions": n}`` / binary Success with ``partitions = n``
- ``PartitionList(names)`` the official client's ``get_topic_partitions``
- ``TopicList(names)``     listings, compared as sets (order is not specified by Pulsar)
- ``Done()``               an admin call that succeeded (2xx, no body that matters)
- ``RestError(status, reason)``  REST error: HTTP status and the ``{"reason": ...}`` text
- ``ServerError(error, message)`` binary ``Failed``/``ERROR`` with the ServerError name and message
- ``ClientError(exception)``      the official client raised ``pulsar.<exception>``
- ``LookupAnswer(response, authoritative)`` binary LOOKUP or REST lookup; the broker URL itself
  is normalised away by drivers (a single-broker target always answers itself)
- ``FeatureFlag(name, advertised)`` what CONNECTED's FeatureFlags say about one flag
- ``Delivered(payloads)``  what a consumer received, in order
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Partitions:
    partitions: int


@dataclass(frozen=True)
class PartitionList:
    topics: tuple[str, ...]


@dataclass(frozen=True)
class TopicList:
    topics: frozenset[str]

    def to_json(self) -> dict:
        return {"kind": "TopicList", "topics": sorted(self.topics)}


@dataclass(frozen=True)
class Done:
    pass


@dataclass(frozen=True)
class RestError:
    status: int
    reason: str


@dataclass(frozen=True)
class ServerError:
    error: str  # ServerError enum name, e.g. "TopicNotFound"
    message: str


@dataclass(frozen=True)
class ClientError:
    exception: str  # class name in pulsar.exceptions, e.g. "TopicNotFound"


@dataclass(frozen=True)
class LookupAnswer:
    response: str  # "Connect" | "Redirect"
    authoritative: bool


@dataclass(frozen=True)
class FeatureFlag:
    name: str  # FeatureFlags field name, as in the real proto
    advertised: bool


@dataclass(frozen=True)
class Delivered:
    payloads: tuple[str, ...]


Outcome = (Partitions | PartitionList | TopicList | Done | RestError | ServerError | ClientError | LookupAnswer
           | FeatureFlag | Delivered)

OUTCOME_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (Partitions, PartitionList, TopicList, Done, RestError, ServerError, ClientError, LookupAnswer,
                FeatureFlag, Delivered)
}


def outcome_to_json(outcome) -> dict:
    if hasattr(outcome, "to_json"):
        return outcome.to_json()
    data = asdict(outcome)
    return {"kind": type(outcome).__name__, **{k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}}


def outcome_from_json(data: dict):
    data = dict(data)
    cls = OUTCOME_TYPES[data.pop("kind")]
    if cls is TopicList:
        return TopicList(frozenset(data["topics"]))
    if cls in (PartitionList, Delivered):
        key = "topics" if cls is PartitionList else "payloads"
        return cls(tuple(data[key]))
    return cls(**data)
