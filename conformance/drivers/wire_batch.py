"""PIP-35 operations of the wire driver: BATCH_LOOKUP and its metamorphic relations, exact frames.

A part of ``WireDriver`` (wire.py), given the driver as its ``link``: its connection, request ids,
transcript, bounded waits, and connections of their own to the target's other brokers.
Wire form (spec/pip35.md): ``CommandBatchLookupTopic`` is BaseCommand type 45 (field 45),
``CommandBatchLookupTopicResponse`` type 46; events ``BatchLookup`` / ``BatchLookupResponse`` of
pulsar_codec/events.py.

Connections (``WireBatch._link``):

- Decision C12: before any BATCH_LOOKUP the CONNECTED of that connection must set FeatureFlags
  field 10 ``supports_batch_lookup`` (``advertises``); otherwise ``Unsupported`` with REASON and
  nothing is sent (type 45 would make a broker without the feature fail the frame).
- Connections to other brokers are opened for the operation only (CONNECT, CONNECTED with the
  flag), recorded in the same transcript, and closed afterwards (``_close_peers``).

Operations:

- ``BatchLookup`` (decision C9): the batch goes to the target's service URL; Redirect entries are
  followed ONCE, with one ``authoritative=true`` batch per owner named by ``brokerServiceUrl``;
  the outcome holds each entry's final answer (BatchLookupResult, ``_entry``), URLs normalised
  away. A whole-request refusal (``error`` set) is ``ServerError(name, message)``.
- ``BatchEqualsSingles``: one batch and one LOOKUP per entry on the same connection; each side
  names an owner (Connect's or Redirect's ``brokerServiceUrl``; a Redirect without
  ``authoritative=true`` names none, decision B6) or an error and message;
  ``model.batch_lookup.agreement`` decides, so the model's predicted Agreement compares.
- ``SameOwnerEverywhere``: the same on EVERY broker of the target (``cluster_urls``, set by the
  harness from the target; the service URL alone for a one-broker target); then every named
  owner is asked once more, authoritative, and must Connect naming itself (``_confirm``). Every
  answer for a topic must name the same owner (or, failed, the same error).
"""

from __future__ import annotations

from conformance.drivers.batch_relations import observe, same_everywhere
from conformance.errors import ProtocolViolation, Unsupported
from model import ops
from model.batch_lookup import FLAG, FLAG_FIELD, Answer, agreement
from model.outcomes import BatchLookupResult, ServerError
from pulsar_codec import events
from pulsar_codec import pulsar_api_pb2 as pb

REASON = f"target does not advertise {FLAG} (FeatureFlags field {FLAG_FIELD})"
LOOKUP = pb.CommandLookupTopicResponse


def advertises(connected) -> bool:
    flags = connected.feature_flags if connected.has("feature_flags") else None
    return bool(flags is not None and getattr(flags, FLAG))


class _Link:
    """One handshaken connection to one broker: the driver's own, or a peer opened for one op."""

    def __init__(self, url: str, sock, connected, own: bool):
        self.url, self.sock, self.connected, self.own = url, sock, connected, own


class WireBatch:
    """``batch_lookup``, ``batch_equals_singles``, ``same_owner_everywhere`` for WireDriver (``link``;
    its ``cluster_urls``: every broker's service URL, for SameOwnerEverywhere; None = this one only)."""

    OPS = (ops.BatchLookup, ops.BatchEqualsSingles, ops.SameOwnerEverywhere)

    def __init__(self, link):
        self.link = link
        self._batch_links: dict = {}

    # -- connections: the flag checked first, peers for one operation only ---------------------

    def _link(self, url: str) -> _Link:
        links = self._batch_links
        if url in links:
            return links[url]
        if url == self.link.service_url:
            answer = self.link.handshake()
            if isinstance(answer, ServerError):
                raise ProtocolViolation(f"CONNECT to {url} refused: {answer}")
            link = _Link(url, self.link.socket, answer, own=True)
        else:
            link = self._open_peer(url)
        links[url] = link
        if not advertises(link.connected):
            raise Unsupported("feature-not-advertised", f"{REASON} ({url})")
        return link

    def _open_peer(self, url: str) -> _Link:
        sock, connected = self.link.open_peer(url)
        if sock is None:
            raise ProtocolViolation(f"CONNECT to {url} refused: {connected}")
        return _Link(url, sock, connected, own=False)

    def _close_peers(self) -> None:
        for link in self._batch_links.values():
            if not link.own:
                link.sock.close()
        self._batch_links = {}

    def _exchange(self, link: _Link, event, request_id: int, answers: tuple, what: str):
        return self.link.exchange(link.sock, event, request_id, answers, what,
                                  f"answer to {what} (request_id={request_id}) from {link.url}")

    # -- requests ------------------------------------------------------------------------------

    def _batch(self, link: _Link, topics, authoritative: bool = False):
        """BATCH_LOOKUP -> the list of entries, or ServerError for a whole-request refusal."""
        request_id = self.link.next_id()
        fields = {"topics": list(topics), "request_id": request_id}
        if authoritative:
            fields["authoritative"] = True
        got = self._exchange(link, events.BatchLookup(**fields), request_id, (events.BatchLookupResponse,),
                             "BATCH_LOOKUP")
        if isinstance(got, events.Error) or got.has("error"):
            if not isinstance(got, events.Error) and len(got.entries):
                raise ProtocolViolation(f"BATCH_LOOKUP_RESPONSE with an error AND {len(got.entries)} entries "
                                        "(error is for a refused request, which has none)")
            return self.link.server_error(got)
        entries = list(got.entries)
        for entry in entries:
            if not entry.HasField("response"):
                raise ProtocolViolation(f"BATCH_LOOKUP_RESPONSE entry without a response: {entry}")
            if entry.response in (LOOKUP.Connect, LOOKUP.Redirect) and not entry.brokerServiceUrl:
                raise ProtocolViolation(f"BATCH_LOOKUP_RESPONSE {LOOKUP.LookupType.Name(entry.response)} entry "
                                        f"without brokerServiceUrl: {entry}")
        return entries

    def _single(self, link: _Link, topic: str, authoritative: bool = False) -> Answer:
        """One LOOKUP as an Answer: the owner it names, or its error and message."""
        request_id = self.link.next_id()
        fields = {"topic": topic, "request_id": request_id}
        if authoritative:
            fields["authoritative"] = True
        got = self._exchange(link, events.Lookup(**fields), request_id, (events.LookupResponse,), "LOOKUP")
        if isinstance(got, events.LookupResponse) and got.has("response") and got.response in (
                LOOKUP.Connect, LOOKUP.Redirect):
            if not got.brokerServiceUrl:
                raise ProtocolViolation(f"LOOKUP_RESPONSE {LOOKUP.LookupType.Name(got.response)} without "
                                        f"brokerServiceUrl: {got!r}")
            return _owner_answer(got.response, got.brokerServiceUrl, got.authoritative)
        error = self.link.server_error(got)
        return Answer(error=error.error, message=error.message)

    # -- operations ----------------------------------------------------------------------------

    def batch_lookup(self, op: ops.BatchLookup):
        try:
            main = self._link(self.link.service_url)
            first = self._batch(main, op.topics)
            if isinstance(first, ServerError):
                return first
            followed: dict[str, object] = {}
            owners: dict[str, list[str]] = {}
            for entry in first:
                if entry.response == LOOKUP.Redirect:
                    owners.setdefault(entry.brokerServiceUrl, []).append(entry.topic)
            for owner, topics in owners.items():
                answer = self._batch(self._link(owner), topics, authoritative=True)
                if isinstance(answer, ServerError):
                    raise ProtocolViolation(f"the follow-up batch to {owner} was refused as a whole: {answer}")
                by_topic = {e.topic: e for e in answer}
                missing = [t for t in topics if t not in by_topic]
                if missing:
                    raise ProtocolViolation(f"the follow-up batch to {owner} has no entry for {missing}")
                followed.update(by_topic)
            return BatchLookupResult(tuple(_entry(e, followed.get(e.topic) if e.response == LOOKUP.Redirect else None)
                                           for e in first))
        finally:
            self._close_peers()

    def batch_equals_singles(self, op: ops.BatchEqualsSingles):
        try:
            main = self._link(self.link.service_url)
            first = self._batch(main, op.topics)
            if isinstance(first, ServerError):
                return first
            return agreement([(e.topic, _answer(e), self._single(main, e.topic)) for e in first])
        finally:
            self._close_peers()

    def same_owner_everywhere(self, op: ops.SameOwnerEverywhere):
        try:
            urls = list(self.link.cluster_urls or [self.link.service_url])
            seen: dict[str, list] = {}
            for url in urls:
                link = self._link(url)
                first = self._batch(link, op.topics)
                if isinstance(first, ServerError):
                    return first
                for entry in first:
                    observe(seen, entry.topic, f"batch at {url}", _answer(entry))
                    observe(seen, entry.topic, f"LOOKUP at {url}", self._single(link, entry.topic))
            self._confirm(seen)
            return same_everywhere(seen, rest=False)
        finally:
            self._close_peers()

    def _confirm(self, seen: dict) -> None:
        """Each owner named anywhere, asked authoritatively for its topics, must Connect naming itself."""
        owners: dict[str, list[str]] = {}
        for topic, answers in seen.items():
            for owner in sorted({a.owner for _, a in answers if a.owner is not None}):
                owners.setdefault(owner, []).append(topic)
        for owner, topics in owners.items():
            answer = self._batch(self._link(owner), topics, authoritative=True)
            if isinstance(answer, ServerError):
                for topic in topics:
                    observe(seen, topic, f"the owner {owner}", Answer(error=answer.error, message=answer.message))
                continue
            for entry in answer:
                confirmed = _answer(entry)
                if entry.response != LOOKUP.Connect:
                    confirmed = Answer(error=f"{LOOKUP.LookupType.Name(entry.response)} from the owner itself "
                                             f"({entry.brokerServiceUrl or entry.error})")
                observe(seen, entry.topic, f"authoritative batch at {owner}", confirmed)


def _owner_answer(response: int, url: str, authoritative: bool) -> Answer:
    """Connect or Redirect as the owner it names. A Redirect must be authoritative (decision B6: the
    owner is known for certain, so a client's follow-up must not be redirected again); one that is
    not names no owner here, so every relation over it disagrees and says why."""
    if response == LOOKUP.Redirect and not authoritative:
        return Answer(error="Redirect without authoritative=true (pip35-decisions B6)", message=url)
    return Answer(owner=url)


def _answer(entry) -> Answer:
    """A batch entry as an Answer: the owner it names, or its error and message."""
    if entry.response in (LOOKUP.Connect, LOOKUP.Redirect):
        return _owner_answer(entry.response, entry.brokerServiceUrl, entry.authoritative)
    name = pb.ServerError.Name(entry.error) if entry.HasField("error") else "UnknownError"
    return Answer(error=name, message=entry.message if entry.HasField("message") else "")


def _entry(first, followed) -> tuple:
    """(topic, requested, response, authoritative, error): the entry's final answer, after at most
    one Redirect followed."""
    requested = first.requested if first.HasField("requested") else None
    entry = followed if followed is not None else first
    if entry.response in (LOOKUP.Connect, LOOKUP.Redirect):
        return first.topic, requested, LOOKUP.LookupType.Name(entry.response), bool(entry.authoritative), None
    name = pb.ServerError.Name(entry.error) if entry.HasField("error") else "UnknownError"
    return first.topic, requested, "Failed", None, name
