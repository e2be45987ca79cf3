"""Wire driver: our own sans-IO codec in CLIENT role over a real socket, exact frames.

Unlike the official client, this driver sends exactly the frame the case describes: field 6 of
PARTITIONED_METADATA is present only when the op sets it, so "absent means default true"
(PulsarApi.proto's CommandPartitionedTopicMetadata) is tested as such.

- The handshake (``connect_event``, ``WireDriver.handshake``) is CONNECT(protocol_version 21,
  client_version "pulsar-conformance-wire", feature_flags
  supports_get_partitioned_metadata_without_auto_creation = true), the flags a PIP-344 Java
  client sends (Pulsar's ServerCnx.handlePartitionMetadataRequest), then we wait for CONNECTED.
- A response is matched by request_id (``await_answer``); PING is answered with PONG while
  waiting (``pass_over``; Pulsar's PulsarHandler); any other unsolicited frame is recorded and
  ignored.
- Binary ``Failed``/ERROR answers become ``ServerError(<ServerError name>, message)``
  (``_server_error``; Pulsar's ServerCnx.handlePartitionMetadataRequest: "Failed, error =
  TopicNotFound (11), message = ''"), the message with the request id and addresses of a relayed
  client error replaced (outcomes.normalise_message).
- Every frame, both ways, goes into the transcript with its exact bytes (``_Socket``). Received
  bytes are cut into frames here by the 4-byte totalSize prefix, so the hex shown is exactly
  what the target sent, not a re-encoding.
- No answer within the bound or a closed connection raises ``Indefinite``; bytes our codec
  rejects or an answer of the wrong type raise ``ProtocolViolation``. A connection that could
  not be made, or a CONNECT not answered in time, raises ``NoContact`` (``_connect``): the
  operation itself was never sent. ``drop_connection`` closes the connection and keeps the
  transcript, so a step performed again starts on a new one.
- PIP-2 ``PubSub`` (wire_pip2.py): a burst's SEND frames go out in ONE ``sendall``
  (``_Socket.send_many``), so the broker reads them before it can answer any; receipts are
  matched by sequence_id, MESSAGE frames by consumer_id. A PING/PONG round trip after the last
  step is the barrier: exact for a broker that dispatches on the connection's own thread (the
  reference broker writes every MESSAGE before it answers PING). Brokers that dispatch from
  other threads (Pulsar, pulsar-lite) may still be writing, so collection goes on until every
  subscription holds every accepted message, or, with an admin API, until each subscription
  holds as many as its msgOutCounter says the broker sent (positive evidence that nothing more
  is on the way), or else until ``DRAIN_IDLE_S`` pass with no frame.
- PIP-2 ``BadCommand`` (wire_pip2.py): after the bad frame, a PING; a PONG means the command was
  ignored (Done), ERROR/SEND_ERROR is the answer, and a closed connection is ConnectionClosed —
  but only after a fresh connection's handshake shows the broker still serves.
- Before a PRODUCER or SUBSCRIBE the driver sends a LOOKUP of the topic (``WireDriver.claim``), as
  every Pulsar client does: Apache Pulsar serves a topic only once a lookup made its broker own
  the topic's bundle, and otherwise answers ServiceNotReady "Namespace bundle ... not served by
  this instance. Please redo the lookup" (observed on 4.0.7). On a target of several brokers the
  lookup may answer Redirect to the owner: the driver follows it as clients do, on a connection
  to the broker named, and the operation goes there (``follow_lookup``). The lookups' answers are
  recorded in the transcript and not judged; what follows is. A Lookup operation is judged on
  where that arrives: on one broker, its own answer.
- Through Apache Pulsar's proxy the lookup connection serves lookups only (the proxy closes it on a
  PRODUCER or SUBSCRIBE: ProxyConnection in state ProxyLookupRequests handles lookups and metadata
  alone), and its LOOKUP_RESPONSE says ``proxy_through_service_url``. Then the driver attaches as
  Pulsar's Java client does (``attach_through_proxy``): on a new connection to the address the lookup
  went to, whose CONNECT carries ``proxy_to_broker_url`` = "host:port" of the answer's broker URL
  (BinaryProtoLookupService#findBroker: the broker as logical address, the service URL as physical
  one; PulsarChannelInitializer#initializeClientCnx and ClientCnx#setTargetBroker, apache/pulsar@v4.0.7:
  pulsar-client/src/main/java/org/apache/pulsar/client/impl/); the proxy then splices it to that broker
  (ProxyConnection#completeConnect at v4.0.8 and v3.0.0), so its CONNECTED is the broker's. One such
  connection per proxy and broker, kept until the case ends so what was attached stays attached (the
  Java client's ConnectionPool keys a connection by that pair); the operation's later requests, and the
  next operation's lookups, go on the lookup connection again. An operation that raised leaves its
  attach connection closed: what it holds is unknown, so a step performed again attaches anew.
- Security: the service URL may be ``pulsar+ssl://`` (TLS, checked against the credentials' CA);
  with a token, CONNECT carries ``auth_method_name`` "token" and the token as ``auth_data``, as
  Pulsar's clients send it. An ``ops.WithCredentials`` operation runs its inner operation on a
  connection of its own whose CONNECT carries that operation's credentials (``_as_other``: none,
  or a token minted for its role), so a refused CONNECT is its answer.
"""

from __future__ import annotations

import collections
import itertools
import socket
import ssl
import struct
import time
import urllib.parse
from typing import Optional

from conformance.drivers.base import DEFAULT_TIMEOUT
from conformance.errors import Indefinite, NoContact, ProtocolViolation, Unsupported
from conformance.security import NO_CREDENTIALS, Credentials
from conformance.transcript import Transcript
from model import ops
from conformance.drivers.wire_pip2 import WirePip2
from conformance.drivers.wire_batch import WireBatch
from conformance.drivers.wire_cluster import connect_elsewhere
from conformance.drivers.cluster_relations import WireCluster
from model.outcomes import Done, FeatureFlag, LookupAnswer, Partitions, ServerError, TopicList, normalise_message
from pulsar_codec import CLOSED, NEED_DATA, Connection, Role, events
from pulsar_codec import pulsar_api_pb2 as pb
from pulsar_codec.errors import ProtocolError

PROTOCOL_VERSION = 21
CLIENT_VERSION = "pulsar-conformance-wire"
FEATURE_FLAGS = {"supports_get_partitioned_metadata_without_auto_creation": True}
MAX_REDIRECTS = 3  # a cluster's Redirect names the owner; more than a few hops is a loop

_MODES = {"persistent": pb.CommandGetTopicsOfNamespace.PERSISTENT,
          "non-persistent": pb.CommandGetTopicsOfNamespace.NON_PERSISTENT,
          "all": pb.CommandGetTopicsOfNamespace.ALL}


def parse_service_url(url: str) -> tuple[str, int]:
    """``pulsar://host:port`` or ``pulsar+ssl://host:port`` -> (host, port)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("pulsar", "pulsar+ssl") or not parts.hostname or not parts.port:
        raise ValueError(f"expected a service URL like pulsar://127.0.0.1:6650 or pulsar+ssl://127.0.0.1:6651, "
                         f"got {url!r}")
    return parts.hostname, parts.port


def tls_context(trust_certs: Optional[str]) -> ssl.SSLContext:
    """A client TLS context trusting ``trust_certs`` (a PEM CA file), else the system's CAs."""
    return ssl.create_default_context(cafile=trust_certs) if trust_certs else ssl.create_default_context()


def connect_event(credentials: Credentials, proxy_to_broker_url: Optional[str] = None) -> events.Connect:
    """CONNECT with our version and feature flags, with the token as Pulsar's clients send it when
    there is one, and with the broker a proxy is to splice the connection to when one is named."""
    fields = dict(client_version=CLIENT_VERSION, protocol_version=PROTOCOL_VERSION, feature_flags=FEATURE_FLAGS)
    if credentials.token is not None:
        fields.update(auth_method_name="token", auth_data=credentials.token.reveal().encode())
    if proxy_to_broker_url is not None:
        fields.update(proxy_to_broker_url=proxy_to_broker_url)
    return events.Connect(**fields)


def proxied_broker(answer, tls: bool) -> Optional[str]:
    """The broker URL a LOOKUP_RESPONSE Connect names when it says ``proxy_through_service_url``
    (the answer of Apache Pulsar's proxy: LookupProxyHandler#performLookup), else None."""
    kind = pb.CommandLookupTopicResponse
    if not (isinstance(answer, events.LookupResponse) and answer.has("response") and answer.response == kind.Connect
            and answer.has("proxy_through_service_url") and answer.proxy_through_service_url):
        return None
    url = answer.brokerServiceUrlTls if tls and answer.has("brokerServiceUrlTls") else answer.brokerServiceUrl
    return url or None


class _Socket:
    """One TCP (or TLS) connection + codec + frame-exact transcript: each frame with the bytes
    that went over the socket."""

    def __init__(self, host: str, port: int, timeout: float, transcript: Transcript,
                 tls: Optional[ssl.SSLContext] = None):
        self.transcript = transcript
        self.timeout = timeout
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
            if tls is not None:
                self.sock = tls.wrap_socket(self.sock, server_hostname=host)
        except socket.timeout as exc:
            raise NoContact(f"connect to {host}:{port}: no answer within {timeout:g} s") from exc
        except ssl.SSLError as exc:
            raise NoContact(f"TLS handshake with {host}:{port} failed ({exc}); is --tls-trust-certs the CA "
                            "that signed the broker's certificate?") from exc
        except OSError as exc:
            raise NoContact(f"connect to {host}:{port} failed ({exc}); is the target running?") from exc
        self.conn = Connection(Role.CLIENT)
        self._raw = b""  # received bytes not yet cut into frames
        self._frames: collections.deque[bytes] = collections.deque()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, event) -> None:
        self.send_many([event])

    def send_many(self, events_) -> None:
        """Every frame in ONE sendall, so the broker reads them all before it answers any; each
        recorded in the transcript."""
        chunks = []
        for event in events_:
            data = self.conn.send(event)
            self.transcript.sent(repr(event), data)
            chunks.append(data)
        self.send_raw(b"".join(chunks), None)

    def send_raw(self, data: bytes, description: Optional[str]) -> None:
        if description is not None:
            self.transcript.sent(description, data)
        try:
            self.sock.sendall(data)
        except OSError as exc:
            raise Indefinite(f"sending {len(data)} bytes failed: {exc}") from exc

    def _feed(self, data: bytes) -> None:
        self.conn.receive_data(data)
        self._raw += data
        while len(self._raw) >= 4:
            total = struct.unpack(">I", self._raw[:4])[0]
            if len(self._raw) < 4 + total:
                break
            self._frames.append(self._raw[:4 + total])
            self._raw = self._raw[4 + total:]

    def next_event(self, deadline: float, waiting_for: str, closed_ok: bool = False, quiet_ok: bool = False):
        """The next received event; ``Indefinite`` at the deadline (None if ``quiet_ok``), and on
        close unless ``closed_ok`` (then CLOSED is returned)."""
        while True:
            try:
                event = self.conn.next_event()
            except ProtocolError as exc:
                self.transcript.received(f"undecodable bytes: {exc}", self._raw)
                raise ProtocolViolation(f"while waiting for {waiting_for}: the target sent bytes "
                                        f"our codec rejects: {exc}") from exc
            if event is CLOSED:
                self.transcript.note("connection closed by the target")
                if closed_ok:
                    return CLOSED
                raise Indefinite(f"the target closed the connection while we waited for {waiting_for}")
            if event is not NEED_DATA:
                raw = self._frames.popleft() if self._frames else b""
                self.transcript.received(repr(event), raw)
                return event
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if quiet_ok:
                    return None
                self._timeout(waiting_for)
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                if quiet_ok:
                    return None
                self._timeout(waiting_for)
            except OSError as exc:
                self.transcript.note(f"receive failed: {exc}")
                if closed_ok:
                    return CLOSED
                raise Indefinite(f"the connection failed while we waited for {waiting_for}: {exc}") from exc
            self._feed(data)

    def _timeout(self, waiting_for: str):
        self.transcript.note(f"no answer within {self.timeout:g} s")
        raise Indefinite(f"no {waiting_for} within {self.timeout:g} s")


class WireDriver:
    """Performs binary-protocol operations with exact frames; one connection per case.

    PIP-2's and PIP-35's operations are parts of their own (wire_pip2.py, wire_batch.py), each given
    this driver as its link: the connection, request ids, the transcript and bounded waits."""

    name = "wire"
    cluster_urls: Optional[list] = None  # every broker's service URL (wire_batch.py); None = this one only

    def __init__(self, service_url: str, *, timeout: float = DEFAULT_TIMEOUT, admin_url: Optional[str] = None,
                 credentials: Credentials = NO_CREDENTIALS):
        self.host, self.port = parse_service_url(service_url)
        self.service_url = service_url
        self.admin_url = admin_url  # when given, PubSub collection ends on the broker's own counters
        self.timeout = timeout
        self.credentials = credentials
        self._tls = tls_context(credentials.trust_certs) if service_url.startswith("pulsar+ssl://") else None
        self.transcript = Transcript("wire")
        self.connected: Optional[events.Connected] = None
        self._socket: Optional[_Socket] = None
        # Connections to other brokers of the target this case left by following a Redirect: kept
        # open until the case ends, so the producers and consumers on them stay attached, as a
        # client keeps its connection to each broker (``move_to``).
        self._left: list[_Socket] = []
        # Connections through a proxy (host, port) to the broker named "host:port"
        # (``attach_through_proxy``), kept until the case ends for the same reason; and the lookup
        # connection (with its CONNECTED) while an operation works on one of them.
        self._proxied: dict[tuple[str, int, str], tuple[_Socket, events.Connected]] = {}
        self._home: Optional[tuple[Optional[_Socket], Optional[events.Connected]]] = None
        self._ids = itertools.count(1)
        self.pip2 = WirePip2(self)
        self.batch = WireBatch(self)
        self.cluster = WireCluster(self)  # relations between a cluster's brokers (cluster_relations.py)

    # -- driver protocol ---------------------------------------------------------------------

    def can_perform(self, op) -> bool:
        if isinstance(op, ops.WithCredentials):  # performed on a connection of its own
            return self.can_perform(op.operation)
        if isinstance(op, (ops.GetPartitionedMetadata, ops.Lookup, ops.ListTopics, ops.PubSub, ops.BadCommand,
                           *WireBatch.OPS, *WireCluster.OPS)):
            return op.api == "binary"
        # PRODUCER + CLOSE_PRODUCER creates a non-partitioned topic on targets without REST.
        return isinstance(op, (ops.CreateNonPartitionedTopic, ops.Handshake))

    def reset(self) -> None:
        self.close()
        self.host, self.port = parse_service_url(self.service_url)  # a case that followed a Redirect moved
        self.transcript = Transcript("wire")

    def close(self) -> None:
        self._close_current()
        if self._home is not None and self._home[0] is not None:
            self._home[0].close()
        self._home = None
        for left in (*self._left, *(sock for sock, _ in self._proxied.values())):
            left.close()
        self._left.clear()
        self._proxied.clear()

    def _close_current(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        self.connected = None

    def drop_connection(self) -> None:
        """Close the connection and keep the transcript: a step performed again starts on a new one."""
        self._close_current()

    def perform(self, op):
        if not self.can_perform(op):
            raise Unsupported("no-driver", f"the wire driver cannot perform {type(op).__name__} "
                              f"with api={getattr(op, 'api', None)!r}; use the REST or client driver")
        if isinstance(op, ops.WithCredentials):
            return self._as_other(op)
        answer = self.handshake()
        if isinstance(answer, ServerError):
            return answer
        parts = {ops.PubSub: self.pip2.pub_sub, ops.BadCommand: self.pip2.bad_command,
                 ops.BatchLookup: self.batch.batch_lookup, ops.BatchEqualsSingles: self.batch.batch_equals_singles,
                 ops.SameOwnerEverywhere: self.batch.same_owner_everywhere,
                 ops.SameMetadataEverywhere: self.cluster.same_metadata_everywhere,
                 ops.LookupAtNonOwner: self.cluster.lookup_at_non_owner,
                 ops.PubSubAcrossBrokers: self.cluster.pub_sub_across_brokers}
        handler = parts.get(type(op)) or getattr(self, f"_do_{type(op).__name__}")
        try:
            answer = handler(op)
        except Exception:
            self._come_home(dropping=True)
            raise
        self._come_home(dropping=False)
        return answer

    def _as_other(self, op: "ops.WithCredentials"):
        """The inner operation on a connection of its own, with the operation's credentials."""
        other = WireDriver(self.service_url, timeout=self.timeout, credentials=self.credentials.of(op.role, op.token))
        other.transcript = self.transcript
        self.transcript.note(f"as {op.describe()}: a connection of its own")
        try:
            return other.perform(op.operation)
        finally:
            other.close()

    # -- handshake ---------------------------------------------------------------------------

    def handshake(self):
        """Connect and send CONNECT; returns CONNECTED, or ServerError if refused."""
        if self.connected is not None:
            return self.connected
        self._close_current()
        self._socket = _Socket(self.host, self.port, self.timeout, self.transcript, self._tls)
        answer = _connect(self._socket, self.timeout, "CONNECTED", self.credentials)
        if isinstance(answer, ServerError):
            self._close_current()
            return answer
        self.connected = answer
        return answer

    def open_peer(self, url: str):
        """A connection of its own to another broker of the target, handshaken as ours is, in
        the same transcript: (socket, CONNECTED), or (None, ServerError) when CONNECT is refused."""
        host, port = parse_service_url(url)
        self.transcript.note(f"connecting to {url} (another broker of the target)")
        tls = tls_context(self.credentials.trust_certs) if url.startswith("pulsar+ssl://") else None
        sock = _Socket(host, port, self.timeout, self.transcript, tls)
        answer = _connect(sock, self.timeout, f"CONNECTED from {url}", self.credentials)
        if isinstance(answer, ServerError):
            sock.close()
            return None, answer
        return sock, answer

    # -- what the parts use (wire_pip2.py, wire_batch.py) -----------------------------------------

    @property
    def socket(self) -> "_Socket":
        return self._socket

    def next_id(self) -> int:
        return next(self._ids)

    def unsolicited(self, event) -> None:
        pass_over(self._socket, event)

    def exchange(self, sock, event, request_id: int, answers: tuple[type, ...], what: str, waiting_for: str):
        """Send ``event`` on ``sock`` and return the first of ``answers`` (or ERROR) for ``request_id``."""
        sock.send(event)
        return await_answer(sock, request_id, answers, what, self.timeout, waiting_for)

    @staticmethod
    def server_error(event) -> ServerError:
        return _server_error(event)

    @staticmethod
    def request_id_of(event) -> Optional[int]:
        return _request_id_of(event)

    def _request(self, event, request_id: int, answers: tuple[type, ...], what: str):
        """Send ``event`` and return the first answer of ``answers`` (or ERROR) for request_id."""
        self._socket.send(event)
        return await_answer(self._socket, request_id, answers, what, self.timeout,
                            f"answer to {event.type_name} (request_id={request_id})")

    # -- one handler per operation -----------------------------------------------------------

    def _do_Handshake(self, op: ops.Handshake):
        flags = self.connected.feature_flags
        return FeatureFlag(op.feature, bool(getattr(flags, op.feature)))

    def _do_GetPartitionedMetadata(self, op: ops.GetPartitionedMetadata):
        request_id = next(self._ids)
        fields = {"topic": op.topic, "request_id": request_id}
        if op.auto_create is not None:
            # Omitted when None: absent field 6 means the proto default true (ops.py docstring).
            fields["metadata_auto_creation_enabled"] = op.auto_create
        got = self._request(events.PartitionedMetadata(**fields), request_id,
                            (events.PartitionedMetadataResponse, events.LookupResponse), "PARTITIONED_METADATA")
        if isinstance(got, events.Error):
            return _server_error(got)
        if isinstance(got, events.LookupResponse):
            # Apache Pulsar's proxy answers a refused PARTITIONED_METADATA with a failed LOOKUP_RESPONSE
            # (LookupProxyHandler#handlePartitionMetadataResponse: Commands.newLookupErrorResponse), which
            # Pulsar's clients take by its request id; anything but a refusal in that frame is no answer.
            if got.has("response") and got.response == pb.CommandLookupTopicResponse.Failed:
                self.transcript.note("the PARTITIONED_METADATA refusal came as a LOOKUP_RESPONSE frame")
                return _server_error(got)
            raise ProtocolViolation(f"PARTITIONED_METADATA answered with a LOOKUP_RESPONSE that is no refusal: {got!r}")
        failed = got.has("response") and got.response == pb.CommandPartitionedTopicMetadataResponse.Failed
        if failed or got.has("error"):
            return _server_error(got)
        if not got.has("partitions"):
            raise ProtocolViolation(f"PARTITIONED_METADATA_RESPONSE Success without partitions: {got!r}")
        return Partitions(got.partitions)

    def _do_Lookup(self, op: ops.Lookup):
        got = self.follow_lookup(op.topic, "LOOKUP")  # where a client's lookup arrives (claim)
        if isinstance(got, events.Error):
            return _server_error(got)
        kind = pb.CommandLookupTopicResponse
        if got.has("response") and got.response in (kind.Connect, kind.Redirect):
            # The broker URL is normalised away (outcomes.py): only the kind and the flag compare.
            return LookupAnswer(kind.LookupType.Name(got.response), bool(got.authoritative))
        if got.has("error") or (got.has("response") and got.response == kind.Failed):
            return _server_error(got)
        raise ProtocolViolation(f"LOOKUP_RESPONSE without a response type: {got!r}")

    def _do_ListTopics(self, op: ops.ListTopics):
        if op.domain not in _MODES:
            raise Unsupported("no-driver", f"GET_TOPICS_OF_NAMESPACE has no mode for domain {op.domain!r}")
        request_id = next(self._ids)
        got = self._request(events.GetTopicsOfNamespace(request_id=request_id, namespace=op.namespace,
                                                        mode=_MODES[op.domain]),
                            request_id, (events.GetTopicsOfNamespaceResponse,), "GET_TOPICS_OF_NAMESPACE")
        if isinstance(got, events.Error):
            return _server_error(got)
        return TopicList(frozenset(got.topics))

    def claim(self, topic: str) -> None:
        """A LOOKUP before PRODUCER or SUBSCRIBE, as Pulsar's clients send it (Apache Pulsar serves a
        topic only after one): a Redirect is followed to the broker that owns the topic, and the
        operation then goes there (``follow_lookup``); an answer through a proxy is attached to on
        a connection through the proxy that names the broker (``attach_through_proxy``). The
        answers are recorded, not judged."""
        got = self.follow_lookup(topic, "LOOKUP before PRODUCER or SUBSCRIBE")
        broker = proxied_broker(got, self._tls is not None)
        if broker is not None:
            self.attach_through_proxy(broker)

    def attach_through_proxy(self, broker_url: str) -> None:
        """Go on with the operation on the connection through the proxy to ``broker_url``, made on
        first use: to the address the lookup went to, its CONNECT carrying ``proxy_to_broker_url``
        in ClientCnx#setTargetBroker's form, "host:port" (wire.py's docstring). The operation's end
        comes back to the lookup connection (``_come_home``)."""
        host, port = parse_service_url(broker_url)
        target = f"{host}:{port}"
        key = (self.host, self.port, target)
        if key not in self._proxied:
            self.transcript.note(f"the lookup answered through a proxy: attaching on a connection to "
                                 f"{self.host}:{self.port} with proxy_to_broker_url={target}")
            sock = None
            try:
                sock = _Socket(self.host, self.port, self.timeout, self.transcript, self._tls)
                answer = _connect(sock, self.timeout, f"CONNECTED through the proxy to {target}", self.credentials,
                                  proxy_to_broker_url=target)
            except NoContact as exc:
                if sock is not None:
                    sock.close()
                # The operation was looked up already: no contact now is no answer, not a target never reached.
                raise Indefinite(f"the proxy took no connection to {target}: {exc.reason}") from None
            if isinstance(answer, ServerError):
                sock.close()
                # ProxyConnection#completeConnect answers ServiceNotReady where it cannot reach or
                # validate the broker, and the Java client connects again later: no answer yet.
                raise Indefinite(f"the proxy refused a connection to {target}: {answer!r}")
            self._proxied[key] = (sock, answer)
        if self._home is None:
            self._home = (self._socket, self.connected)
        self._socket, self.connected = self._proxied[key]

    def _come_home(self, dropping: bool) -> None:
        """Back to the lookup connection after an operation that attached through a proxy; with
        ``dropping``, the attach connection it worked on is closed and forgotten."""
        if self._home is None:
            return
        if dropping:
            for key, (sock, _) in list(self._proxied.items()):
                if sock is self._socket:
                    sock.close()
                    del self._proxied[key]
        self._socket, self.connected = self._home
        self._home = None

    def follow_lookup(self, topic: str, what: str):
        """LOOKUP ``topic`` as a client does: each Redirect (to another broker of the target) is
        followed on a connection to the broker it names, asking again with the answer's
        authoritative flag, at most ``MAX_REDIRECTS`` times; the connection stays with the last
        broker asked. Returns the last answer (a LookupResponse, or an Error)."""
        authoritative = False
        for hop in range(MAX_REDIRECTS + 1):
            request_id = next(self._ids)
            got = self._request(events.Lookup(topic=topic, request_id=request_id, authoritative=authoritative),
                                request_id, (events.LookupResponse,), what)
            redirect = pb.CommandLookupTopicResponse.Redirect
            if not (isinstance(got, events.LookupResponse) and got.has("response") and got.response == redirect):
                connect_elsewhere(self, got)
                return got
            owner = got.brokerServiceUrlTls if self._tls is not None and got.brokerServiceUrlTls else got.brokerServiceUrl
            if hop == MAX_REDIRECTS or not owner:
                return got
            authoritative = bool(got.authoritative)
            self.transcript.note(f"redirected to {owner}: asking there")
            self.move_to(owner)
        return got

    def move_to(self, url: str) -> None:
        """Go on with the case on a connection to ``url``, another broker of the target (a Redirect's
        owner); ``reset`` comes back to the service URL for the next case. The connection left keeps
        what the case attached through it."""
        if self._socket is not None:
            self._left.append(self._socket)
            self._socket = None
        self.connected = None
        self.host, self.port = parse_service_url(url)
        answer = self.handshake()
        if isinstance(answer, ServerError):
            raise ProtocolViolation(f"the broker a Redirect named ({url}) refused CONNECT: {answer!r}")

    def _do_CreateNonPartitionedTopic(self, op: ops.CreateNonPartitionedTopic):
        self.claim(op.topic)
        producer_id, request_id = next(self._ids), next(self._ids)
        got = self._request(events.Producer(topic=op.topic, producer_id=producer_id, request_id=request_id),
                            request_id, (events.ProducerSuccess,), "PRODUCER")
        if isinstance(got, events.Error):
            return _server_error(got)
        # producer_ready=false means "wait for a later PRODUCER_SUCCESS" (PulsarApi.proto).
        while got.has("producer_ready") and not got.producer_ready:
            got = self._request_followup(request_id)
            if isinstance(got, events.Error):
                return _server_error(got)
        close_id = next(self._ids)
        got = self._request(events.CloseProducer(producer_id=producer_id, request_id=close_id), close_id,
                            (events.Success,), "CLOSE_PRODUCER")
        if isinstance(got, events.Error):
            return _server_error(got)
        return Done()

    def _request_followup(self, request_id: int):
        deadline = time.monotonic() + self.timeout
        while True:
            got = self._socket.next_event(deadline, f"ready PRODUCER_SUCCESS (request_id={request_id})")
            if isinstance(got, (events.ProducerSuccess, events.Error)) and _request_id_of(got) == request_id:
                return got
            self.unsolicited(got)


def _connect(sock, timeout: float, waiting_for: str, credentials: Credentials,
             proxy_to_broker_url: Optional[str] = None):
    """CONNECT on a fresh socket: CONNECTED, or ServerError when the target refuses it. No
    answer to CONNECT is ``NoContact``: nothing of the operation was sent."""
    deadline = time.monotonic() + timeout
    try:
        sock.send(connect_event(credentials, proxy_to_broker_url))
        while True:
            event = sock.next_event(deadline, waiting_for)
            if isinstance(event, (events.Connected, events.Error)):
                break
            pass_over(sock, event)
    except NoContact:
        raise
    except Indefinite as exc:
        raise NoContact(f"no CONNECTED: {exc.reason}") from None
    if isinstance(event, events.Connected):
        return event
    return _server_error(event)


def await_answer(sock, request_id: int, answers: tuple[type, ...], what: str, timeout: float, waiting_for: str):
    """The first of ``answers`` (or ERROR) for ``request_id`` read from ``sock`` within ``timeout``;
    other frames are passed over, a PING answered; an answer of another kind is a ProtocolViolation."""
    deadline = time.monotonic() + timeout
    while True:
        got = sock.next_event(deadline, waiting_for)
        if _request_id_of(got) != request_id:
            pass_over(sock, got)
            continue
        if isinstance(got, (events.Error, *answers)):
            return got
        raise ProtocolViolation(f"{what}: expected {' or '.join(a.__name__ for a in answers)} "
                                f"for request_id={request_id}, got {got!r}")


def pass_over(sock, event) -> None:
    """A frame nobody waits for: a PING is answered (the broker would close an idle link), the rest dropped."""
    if isinstance(event, events.Ping):
        sock.send(events.Pong())


def _request_id_of(event) -> Optional[int]:
    if isinstance(event, events.InvalidCommand):
        return event.request_id
    if "request_id" in event.pb.DESCRIPTOR.fields_by_name and event.has("request_id"):
        return event.request_id
    return None


def _server_error(event) -> ServerError:
    """ERROR or a Failed response -> ServerError(name, message), the message normalised."""
    code = event.error if event.has("error") else pb.UnknownError
    try:
        name = pb.ServerError.Name(code)
    except ValueError:
        name = f"ServerError({code})"
    return ServerError(name, normalise_message(event.message) if event.has("message") else "")
