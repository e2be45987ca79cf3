"""The SameOwnerEverywhere relation (PIP-35, spec/pip35.md), shared by the wire and REST drivers.

Every answer a driver collected for a topic (a batch entry, a single lookup, the owner's own
confirmation, on every broker) must name the same owner; failed answers must fail the same way:
the same ServerError name on the binary API, the same HTTP status on REST (a REST batch entry's
ServerError name counts as the status a single REST lookup gives for it,
``model.batch_lookup.HTTP_STATUS_OF_ERROR``). Pure: no I/O.
"""

from __future__ import annotations

from model.batch_lookup import HTTP_STATUS_OF_ERROR, Answer
from model.outcomes import Agreement


def observe(seen: dict, topic: str, where: str, answer: Answer) -> None:
    """Record that ``where`` (e.g. "batch at pulsar://h:p") answered ``answer`` for ``topic``."""
    seen.setdefault(topic, []).append((where, answer))


def key(answer: Answer, rest: bool):
    if answer.owner is not None:
        return "owner", answer.owner
    if rest:
        return "failed", answer.status if answer.status is not None else HTTP_STATUS_OF_ERROR.get(answer.error, answer.error)
    return "failed", answer.error


def show(answer: Answer) -> str:
    return f"owner {answer.owner}" if answer.owner is not None else answer.describe()


def same_everywhere(seen: dict, rest: bool) -> Agreement:
    """Agreement(True) when every topic's answers agree; else one detail line per topic."""
    detail = []
    for topic, answers in seen.items():
        if len({key(a, rest) for _, a in answers}) > 1:
            detail.append(f"{topic}: " + "; ".join(f"{where}: {show(a)}" for where, a in answers))
    return Agreement(not detail, tuple(detail))
