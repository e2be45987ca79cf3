"""BrokerServer: sockets, the asyncio protocol per connection, keep-alive and the admin HTTP server.

Only this module sees transports. ``BrokerProtocol`` turns bytes into events with the sans-IO
``Connection`` and hands them to ``ServerCnx`` (service.py); events it answers are encoded and
written here.

Rule 1: both listeners bind 127.0.0.1 by default; port 0 picks an ephemeral port and the bound
        addresses are reported back (``broker_url``, ``web_url``).
Rule 2: a framing error gets an ERROR frame with the codec's hint and the connection is closed;
        any other exception while handling one command answers that command's request with
        UnknownError and is logged — a broker never crashes on input.
Rule 3: keep-alive as in Pulsar (pulsar-wire.md §2.5 item 5): every ``keepAliveIntervalSeconds``
        the broker looks at whether anything arrived since it last looked, as Java's
        PulsarHandler checks once per interval. A connection from which nothing arrived for a
        whole interval gets a PING; if nothing arrives in the next interval either, it is
        closed. So a silent peer is pinged after one to two intervals and closed one interval
        later, and a read costs one flag, not a clock reading.
Rule 4: the admin REST API runs on uvicorn in the same event loop; shutdown stops accepting,
        closes connections and waits for the HTTP server, each wait bounded.
Rule 5: each answer is written when it is made, in the order the commands came; the completions
        ServerCnx defers (the receipts of non-persistent SENDs) run once every frame of the read
        that carried their SENDs is handled.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Optional

from model.names import TopicName
from pulsar_codec import CLOSED, NEED_DATA, Connection, RemoteProtocolError, Role, max_frame_size
from pulsar_codec import events as ev
from pulsar_codec import pulsar_api_pb2 as pb

from . import __version__
from .errors import BrokerError
from .service import U64_MINUS_ONE, ServerCnx
from .topics import TopicRegistry

log = logging.getLogger("reference_broker.server")

# Client commands and their handler names on ServerCnx; anything else from a client is unexpected.
_HANDLERS = {
    cls: f"handle_{cls.__name__}"
    for cls in (ev.Ping, ev.Pong, ev.PartitionedMetadata, ev.Lookup, ev.GetTopicsOfNamespace, ev.Producer,
                ev.Send, ev.CloseProducer, ev.Subscribe, ev.Flow, ev.Ack, ev.RedeliverUnacknowledgedMessages,
                ev.Unsubscribe, ev.CloseConsumer, ev.ConsumerStats, ev.GetLastMessageId, ev.Seek,
                ev.GetSchema, ev.GetOrCreateSchema, ev.BatchLookup)
}


class BrokerProtocol(asyncio.Protocol):
    def __init__(self, broker: "BrokerServer"):
        self.broker = broker
        self.transport: Optional[asyncio.Transport] = None  # set by connection_made, before anything else
        self.conn = Connection(Role.SERVER, max_frame_size=max_frame_size(broker.core.config.get("maxMessageSize")))
        self.cnx: Optional[ServerCnx] = None
        self.paused = False
        self._reading = False  # inside data_received: deferred completions wait for its end (Rule 5)
        self._deferred: list = []
        self._keepalive: Optional[asyncio.TimerHandle] = None
        self._received = False  # Rule 3: something arrived since the keep-alive last looked
        self._ping_outstanding = False

    # -- transport callbacks ----------------------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.cnx = ServerCnx(self.broker, self.write, remote=f"{peer[0]}:{peer[1]}" if peer else "?",
                             send_message=self.write_message)
        self.cnx.writable = lambda: not self.paused
        self.cnx.defer = self._defer
        self.cnx.close_connection = self._close_after_writes
        self.broker.connections.add(self)
        self._schedule_keepalive()

    def data_received(self, data: bytes) -> None:
        self._received = True
        self._reading = True
        try:
            self.conn.receive_data(data)
            self._drain_events()
            self._run_deferred()  # Rule 5: the read's SENDs are no longer in flight
        finally:
            self._reading = False

    def eof_received(self):
        self.conn.receive_data(b"")
        self._drain_events()
        return False

    def connection_lost(self, exc) -> None:
        if self._keepalive:
            self._keepalive.cancel()
        self.broker.connections.discard(self)
        if self.cnx:
            self.cnx.connection_lost()

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if self.cnx:
            for subscription, _ in list(self.cnx.consumers.values()):
                subscription.dispatch()

    # -- events -----------------------------------------------------------------------------

    def _drain_events(self) -> None:
        while not self.transport.is_closing():
            try:
                event = self.conn.next_event()
            except RemoteProtocolError as exc:
                log.info("closing %s: %s", self.cnx.remote, exc)
                self._send_error_and_close(exc)
                return
            if event is NEED_DATA:
                return
            if event is CLOSED:
                self.transport.close()
                return
            self._dispatch(event)

    def _dispatch(self, event) -> None:
        cnx = self.cnx
        try:
            if isinstance(event, ev.InvalidCommand):
                cnx.handle_invalid(event)
            elif isinstance(event, ev.Connect):
                cnx.handle_Connect(event, self.conn.protocol_version)
            elif type(event) in _HANDLERS:
                getattr(cnx, _HANDLERS[type(event)])(event)
            else:
                cnx.handle_unexpected(event)
        except Exception as exc:  # Rule 2: one bad command never takes the broker down
            command = type(event).__name__
            log.exception("error handling %s", command)
            request_id = getattr(getattr(event, "pb", None), "request_id", U64_MINUS_ONE)
            self.cnx.send(ev.Error(request_id=request_id, error=pb.UnknownError,
                                   message=f"Internal error handling {command}: {exc}"))

    def _close_after_writes(self) -> None:
        """Close once what is written is sent (asyncio's close flushes); no frame is read after."""
        if not self.transport.is_closing():
            log.info("closing %s after a command Pulsar closes the connection for", self.cnx.remote)
            self.transport.close()

    def write(self, event: ev.Event) -> None:
        if not self.transport.is_closing():
            self.transport.write(self.conn.send(event))

    def write_message(self, consumer_id: int, ledger_id: int, entry_id: int, partition: int,
                      redelivery_count: int, metadata: bytes, payload: bytes, checksum: Optional[int]) -> None:
        """The MESSAGE of a stored entry, as the producer wrote it (Connection.message)."""
        if not self.transport.is_closing():
            self.transport.write(self.conn.message(consumer_id, ledger_id, entry_id, partition, redelivery_count,
                                                   metadata, payload, checksum))

    def _defer(self, completion) -> None:
        """Rule 5: run ``completion`` once every frame of the current read is handled."""
        if self._reading:
            self._deferred.append(completion)
        else:
            asyncio.get_running_loop().call_soon(completion)

    def _run_deferred(self) -> None:
        while self._deferred:
            batch, self._deferred = self._deferred, []
            for completion in batch:
                completion()

    def _send_error_and_close(self, exc: RemoteProtocolError) -> None:
        error = pb.ServerError.Value(exc.server_error)
        self.transport.write(self.conn.send(ev.Error(request_id=U64_MINUS_ONE, error=error, message=str(exc))))
        self.transport.close()

    # -- keep-alive -------------------------------------------------------------------------

    def _schedule_keepalive(self) -> None:
        interval = self.broker.core.config.get("keepAliveIntervalSeconds")
        if interval and interval > 0:
            self._keepalive = asyncio.get_running_loop().call_later(interval, self._keepalive_tick, interval)

    def _keepalive_tick(self, interval: float) -> None:
        """Rule 3: once per interval."""
        if self.transport.is_closing():
            return
        if self._received:  # not idle, and a PING sent before is answered (anything counts)
            self._received = self._ping_outstanding = False
        elif self._ping_outstanding:
            log.info("closing %s: no answer to keep-alive PING", self.cnx.remote)
            self.transport.close()
            return
        elif self.conn.protocol_version is not None:
            self.write(ev.Ping())
            self._ping_outstanding = True
        self._keepalive = asyncio.get_running_loop().call_later(interval, self._keepalive_tick, interval)


class BrokerServer:
    """One reference broker: binary protocol listener + admin REST, sharing a BrokerCore."""

    def __init__(self, core, *, host: str = "127.0.0.1", broker_port: int = 0, web_port: int = 0):
        self.core = core
        self.host, self.broker_port, self.web_port = host, broker_port, web_port
        self.topics = TopicRegistry()
        # A topic deleted through the admin API is unloaded here too.
        core.topic_deleted_listeners.append(lambda topic: self.topics.unload(str(topic)))
        core.cluster.after_new_session.append(self.unload_topics_owned_elsewhere)  # cluster.py Rule 7
        self.connections: set[BrokerProtocol] = set()
        self.cluster_name = core.config.get("clusterName")
        self.server_version = f"Pulsar Server{__version__}"
        self._server: Optional[asyncio.AbstractServer] = None
        self._web_server = None
        self._web_task: Optional[asyncio.Task] = None
        self._inactive_check: Optional[asyncio.TimerHandle] = None
        self.broker_url = self.web_url = ""

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: BrokerProtocol(self), self.host, self.broker_port)
        port = self._server.sockets[0].getsockname()[1]
        self.broker_url = f"pulsar://{self.host}:{port}"
        web_socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        web_socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        web_socket.bind((self.host, self.web_port))
        web_socket.listen(128)
        web_socket.setblocking(False)
        self.web_url = f"http://{self.host}:{web_socket.getsockname()[1]}"
        self.core.set_service_urls(broker_url=self.broker_url, web_url=self.web_url)
        await self._start_web(web_socket)
        self._schedule_inactive_check()

    def unload_topics_owned_elsewhere(self) -> list[str]:
        """cluster.py Rule 7: topics loaded here whose bundle another broker owns now are unloaded,
        their producers and consumers closed so the clients look them up again."""
        unloaded = []
        for name in self.topics.names():
            topic = TopicName.parse(name)
            try:
                owner = self.core.cluster.owner_of(self.core.cluster.bundle_of(topic))
            except BrokerError as exc:
                log.warning("cannot tell who owns %s now: %s", name, exc)
                continue
            if self.core.cluster.is_self(owner):
                continue
            for protocol in list(self.connections):
                if protocol.cnx is not None:
                    protocol.cnx.close_topic_users(name)
            self.topics.unload(name)
            if not topic.persistent:
                self.core.mark_non_persistent_inactive(topic)
            unloaded.append(name)
            log.warning("unloaded %s: its bundle is owned by %s now", name, owner.broker_id)
        return unloaded

    def _schedule_inactive_check(self) -> None:
        every = self.core.config.get("brokerDeleteInactiveTopicsFrequencySeconds")
        self._inactive_check = asyncio.get_running_loop().call_later(every, self._check_inactive_topics, every)

    def _check_inactive_topics(self, every: float) -> None:
        """topics/registry.py Rule 2: a non-persistent topic unused for a whole period is unloaded."""
        try:
            if self.core.config.get("brokerDeleteInactiveTopicsEnabled"):
                for name in self.topics.collect_inactive(max_idle=every):
                    self.core.mark_non_persistent_inactive(name)
                    log.info("unloaded inactive non-persistent topic %s", name)
        except Exception:  # noqa: BLE001 - a failed check must not stop later ones
            log.exception("inactive topic check failed")
        self._schedule_inactive_check()

    async def _start_web(self, web_socket: socket.socket) -> None:
        import uvicorn

        from .admin.app import build_app

        app = build_app(self.core, broker_service_url=self.broker_url, web_service_url=self.web_url,
                        topics=self.topics)
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        self._web_server = uvicorn.Server(config)
        self._web_server.install_signal_handlers = lambda: None  # the CLI owns signals
        self._web_task = asyncio.create_task(self._web_server.serve(sockets=[web_socket]))
        deadline = time.monotonic() + 10
        while not self._web_server.started:
            if self._web_task.done():
                self._web_task.result()  # raises the start-up error
            if time.monotonic() > deadline:
                raise RuntimeError("admin HTTP server did not start within 10 s")
            await asyncio.sleep(0.01)

    async def stop(self, timeout: float = 5.0) -> None:
        if self._inactive_check is not None:
            self._inactive_check.cancel()
        if self._server is not None:
            self._server.close()
        for protocol in list(self.connections):
            if protocol.transport:
                protocol.transport.close()
        if self._web_server is not None:
            self._web_server.should_exit = True
            try:
                await asyncio.wait_for(asyncio.shield(self._web_task), timeout)
            except (asyncio.TimeoutError, Exception):
                self._web_task.cancel()
        if self._server is not None:
            try:
                await asyncio.wait_for(self._server.wait_closed(), timeout)
            except asyncio.TimeoutError:
                log.warning("listener did not close within %.1f s", timeout)
        self.core.close()
