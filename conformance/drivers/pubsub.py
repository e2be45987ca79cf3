"""What a PubSub (model/ops.py) observed, turned into the outcome values of model/outcomes.py.

Both the wire driver and the client driver collect the same raw facts — one receipt per send, in
send order, and per consumer the message indices it received, in arrival order — and this module
normalises them. It applies no spec rule: it only says what was seen, in the outcome's terms.

- ``receipt_kind``: a receipt's kind comes from its message id: on a non-persistent topic
  (0, 0) is ACCEPTED and (-1, -1) DROPPED (2^64-1 on the wire, -1 in the client; Pulsar's
  ServerCnx.handleSend), any other id is written "ledger:entry"; on a persistent topic (-1, -1)
  is DROPPED and any other id STORED. SEND_ERROR is "send-error:<ServerError>", a client
  exception "client-error:<class>".
- ``message_index``: a payload ``m<i>`` is message i; anything else counts as index -1, which no
  model outcome contains, so a foreign payload is always visible as a mismatch.
- ``summarise``: ``in_order`` is true when every consumer received strictly increasing indices.
- ``settled`` ends a collection on evidence rather than on a quiet period, from the topic's
  stats: a subscription has everything when it holds as many messages as its msgOutCounter says
  the broker sent; a non-persistent topic sends as it accepts, so that is all, while a persistent
  topic's dispatcher reads stored messages later, so there it is all only once the counter
  reaches the subscription's msgBacklog (the driver does not acknowledge) or no consumer has a
  permit left.
- ``quiet_period``: without those counters a collection ends after a quiet period: the period a
  quiet machine needs, or ``QUIET_ROUND_TRIPS`` times the barrier's round trip when the broker
  answers it slower than that, never longer than the step's bound.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Optional

import httpx

from conformance.security import NO_CREDENTIALS, Credentials, https_verify
from model import ops
from pulsar_naming.names import TopicName
from model.outcomes import ACCEPTED, DROPPED, STORED, PubSubBounds, PubSubResult, payload_ranges, run_length

# A quiet period is at least this many times the barrier's own round trip: on a busy machine the
# broker is as slow to dispatch as to answer the barrier, so the wait grows with the load it measures.
QUIET_ROUND_TRIPS = 20

U64_MINUS_ONE = 2**64 - 1
NO_ID = (-1, U64_MINUS_ONE)


def receipt_kind(topic: str, ledger_id: int, entry_id: int) -> str:
    """The receipt kind of a send whose message id is (``ledger_id``, ``entry_id``) on ``topic``."""
    if ledger_id in NO_ID and entry_id in NO_ID:
        return DROPPED
    if TopicName.parse(topic).persistent:
        return STORED
    return ACCEPTED if (ledger_id, entry_id) == (0, 0) else f"{ledger_id}:{entry_id}"


def message_index(payload: bytes) -> int:
    """The index i of a payload ``m<i>``; -1, which no model outcome contains, for any other."""
    text = payload.decode("ascii", errors="replace")
    return int(text[1:]) if text.startswith("m") and text[1:].isdigit() else -1


def summarise(op: ops.PubSub, receipts: Sequence[str], received: Mapping[str, Sequence[Sequence[int]]]):
    """``received``: subscription -> one list of indices per consumer, in arrival order."""
    in_order = all(list(c) == sorted(set(c)) for consumers in received.values() for c in consumers)
    if op.view == "bounds":
        accepted = [i for i, kind in enumerate(receipts) if kind in (ACCEPTED, STORED) and i >= op.sends_before]
        errors = sum(1 for kind in receipts if kind.startswith(("send-error", "client-error")))
        delivered_accepted = in_order and all(
            sorted(i for c in consumers for i in c) == accepted for consumers in received.values())
        return PubSubBounds(
            send_errors=errors,
            pip2_ids_only=all(kind in (ACCEPTED, DROPPED) for kind in receipts),
            first_accepted=bool(receipts) and receipts[0] in (ACCEPTED, STORED),
            delivered_accepted=delivered_accepted)
    delivered = tuple((name, payload_ranges(i for c in received[name] for i in c)) for name in sorted(received))
    return PubSubResult(run_length(receipts), delivered, in_order)


def quiet_period(least_s: float, round_trip_s: float, bound_s: float) -> float:
    """How long no message may come before a collection without the broker's counters ends."""
    return min(bound_s, max(least_s, QUIET_ROUND_TRIPS * round_trip_s))


def settled(admin_url: Optional[str], topic: str, held: Mapping[str, int], timeout: float,
            credentials: Credentials = NO_CREDENTIALS, partitioned: bool = False) -> Optional[bool]:
    """Whether every subscription holds all the broker sent it and the broker will send
    nothing more; None when there is no admin API or its stats do not say."""
    if not admin_url:
        return None
    name = TopicName.parse(topic)
    path = f"{name.domain}/{name.tenant}/{name.namespace}/{name.encoded_local_name}"
    headers = {"Authorization": f"Bearer {credentials.token.reveal()}"} if credentials.token else None
    verify = https_verify(credentials.trust_certs)
    try:
        stats = "partitioned-stats" if partitioned else "stats"  # a partitioned topic's sum over its partitions
        response = httpx.get(f"{admin_url.rstrip('/')}/admin/v2/{path}/{stats}", timeout=timeout, headers=headers,
                             verify=verify)
        body = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    subscriptions = body.get("subscriptions") if isinstance(body, dict) else None
    if not isinstance(subscriptions, dict):
        return None
    for subscription, count in held.items():
        stats = subscriptions.get(subscription)
        sent = stats.get("msgOutCounter") if isinstance(stats, dict) else None
        if not isinstance(sent, int):
            return None
        if count < sent:
            return False  # on the way
        if name.persistent:
            backlog = stats.get("msgBacklog")
            consumers = stats.get("consumers")
            if not isinstance(backlog, int) or not isinstance(consumers, list):
                return None
            permits = [c.get("availablePermits") for c in consumers if isinstance(c, dict)]
            if not all(isinstance(p, int) for p in permits):
                return None
            if sent < backlog and any(p > 0 for p in permits):
                return False  # stored messages a consumer still has permits for
    return True
