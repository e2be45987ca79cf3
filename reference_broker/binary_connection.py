"""BrokerProtocol: one binary-protocol connection, from the socket's bytes to ServerCnx and back.

Only this module and server.py see transports. ``BrokerProtocol`` (an asyncio protocol, one per
accepted connection) feeds the bytes it reads to the sans-IO ``pulsar_codec.Connection``, hands
each event to ``ServerCnx`` (commands.py) and writes the frames of what ServerCnx answers.

- bad input (``BrokerProtocol._guarded``): a framing error gets an ERROR frame with the codec's
  hint and the connection is closed; any other exception while handling one command answers that
  command's request with UnknownError and is logged in one line (the traceback only at DEBUG): a
  broker never crashes on input, and no client can fill its log with tracebacks.
- keep-alive (``BrokerProtocol._keepalive_tick``), as in Pulsar (PulsarHandler): every
  ``keepAliveIntervalSeconds`` the broker looks at whether anything arrived since it last looked,
  as Java's PulsarHandler checks once per interval. A connection from which nothing arrived for a
  whole interval gets a PING; if nothing arrives in the next interval either, it is closed. So a
  silent peer is pinged after one to two intervals and closed one interval later. A connection
  still without a completed handshake at a tick is closed, as
  PulsarHandler#handleKeepAliveTimeout does ("Pulsar Handshake was not completed within timeout,
  closing connection"); one whose reading is paused (backpressure) is not closed for a missing
  answer to its PING, as Pulsar skips that check while auto-read is off.
- answer order (``BrokerProtocol._defer``): each answer is written when it is made, in the order
  the commands came; the completions ServerCnx defers (the receipts of non-persistent SENDs) run
  once every frame of the read that carried their SENDs is handled. Work ServerCnx hands to a
  worker thread (``run_off_loop``) answers when it is done, possibly after later commands'
  answers.
- backpressure (``BrokerProtocol._update_reading``), as Netty's channel writability with Pulsar's
  ``pulsarChannelPauseReceivingRequestsIfUnwritable``: once the answers waiting to be sent pass
  ``pulsarChannelWriteBufferHighWaterMark`` bytes, no further command is handled and the socket
  is not read; both resume when they fall below ``pulsarChannelWriteBufferLowWaterMark``. Frames
  already read wait in the codec. Reading also pauses while ``MAX_OFF_LOOP_PER_CONNECTION``
  answers are being computed off the loop. So what one connection makes the broker hold is
  bounded whatever its client does.
- connection limits (``BrokerProtocol.connection_made``, limits.py): ``brokerMaxConnections``
  and ``brokerMaxConnectionsPerIp`` (> 0) bound the connections, as ServerCnx#channelActive with
  ConnectionController does: one past a limit gets ERROR NotAllowedError "Reached the maximum
  number of connections" (or "... on address<peer>") and is closed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Optional

from pulsar_codec import CLOSED, NEED_DATA, Connection, RemoteProtocolError, Role, State, max_frame_size
from pulsar_codec import events as ev
from pulsar_codec import pulsar_api_pb2 as pb

from .commands import U64_MINUS_ONE, ServerCnx

if TYPE_CHECKING:
    from .server import BrokerServer

log = logging.getLogger("reference_broker.binary_connection")

# Client commands and their handler names on ServerCnx; anything else from a client is unexpected.
_HANDLERS = {
    cls: f"handle_{cls.__name__}"
    for cls in (ev.Ping, ev.Pong, ev.PartitionedMetadata, ev.Lookup, ev.GetTopicsOfNamespace, ev.Producer,
                ev.Send, ev.CloseProducer, ev.Subscribe, ev.Flow, ev.Ack, ev.RedeliverUnacknowledgedMessages,
                ev.Unsubscribe, ev.CloseConsumer, ev.ConsumerStats, ev.GetLastMessageId, ev.Seek,
                ev.GetSchema, ev.GetOrCreateSchema, ev.BatchLookup)
}


# Backpressure: a client's requests whose answers are computed in worker threads at one time.
MAX_OFF_LOOP_PER_CONNECTION = 4


class BrokerProtocol(asyncio.Protocol):
    def __init__(self, broker: "BrokerServer"):
        self.broker = broker
        self.transport: Optional[asyncio.Transport] = None  # set by connection_made, before anything else
        self.conn = Connection(Role.SERVER, max_frame_size=max_frame_size(broker.core.config.get("maxMessageSize")))
        self.cnx: Optional[ServerCnx] = None
        self.paused = False  # backpressure: the answers waiting to be sent are past the high water mark
        self._pause_reading_when_paused = broker.core.config.get("pulsarChannelPauseReceivingRequestsIfUnwritable")
        self._reading_paused = False
        self._off_loop = 0  # answers being computed in worker threads (backpressure)
        self._reading = False  # inside data_received: deferred completions wait for its end (``_defer``)
        self._deferred: list = []
        self._keepalive: Optional[asyncio.TimerHandle] = None
        self._received = False  # keep-alive: something arrived since the keep-alive last looked
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
        self.cnx.run_off_loop = self._run_off_loop
        config = self.broker.core.config
        transport.set_write_buffer_limits(high=config.get("pulsarChannelWriteBufferHighWaterMark"),
                                          low=config.get("pulsarChannelWriteBufferLowWaterMark"))
        refusal = self.broker.connection_limits.admit(self, *(peer[:2] if peer else (None,)))
        if refusal is not None:  # past brokerMaxConnections or brokerMaxConnectionsPerIp
            log.info("refusing a connection from %s: %s", self.cnx.remote, refusal)
            transport.write(self.conn.send(ev.Error(request_id=U64_MINUS_ONE, error=pb.NotAllowedError,
                                                    message=refusal)))
            transport.close()
            return
        self.broker.connections.add(self)
        self._schedule_keepalive()

    def data_received(self, data: bytes) -> None:
        self._received = True
        self.conn.receive_data(data)
        self._process()

    def _process(self) -> None:
        self._reading = True
        try:
            self._drain_events()
            self._run_deferred()  # the read's SENDs are no longer in flight
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
        self.broker.connection_limits.release(self)
        if self.cnx:
            self.cnx.connection_lost()

    def pause_writing(self) -> None:
        self.paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self.paused = False
        if self.cnx:
            for subscription, _ in list(self.cnx.consumers.values()):
                subscription.dispatch()
        self._update_reading()

    # -- backpressure -----------------------------------------------------------------------

    def _may_handle(self) -> bool:
        return not (self.paused and self._pause_reading_when_paused) and self._off_loop < MAX_OFF_LOOP_PER_CONNECTION

    def _update_reading(self) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        if self._may_handle():
            if self._reading_paused:
                self._reading_paused = False
                self.transport.resume_reading()
                if not self._reading:  # frames read before the pause wait in the codec
                    self._process()
        elif not self._reading_paused:
            self._reading_paused = True
            self.transport.pause_reading()

    def _run_off_loop(self, work, done) -> None:
        """``done(work())`` on the loop once a worker thread ran ``work`` (``done(exc)`` if it
        raised); nothing once the connection is closed."""
        future = asyncio.get_running_loop().run_in_executor(self.broker.executor, work)
        self._off_loop += 1
        self._update_reading()

        def finished(future) -> None:
            self._off_loop -= 1
            try:  # retrieved even when nobody is left to answer, so asyncio logs nothing
                result = future.result()
            except Exception as exc:  # noqa: BLE001 - handed to ``done``, which answers it
                result = exc
            if self.transport.is_closing():
                return
            self._guarded("an answer computed off the loop", U64_MINUS_ONE, lambda: done(result))
            self._update_reading()
        future.add_done_callback(finished)

    # -- events -----------------------------------------------------------------------------

    def _drain_events(self) -> None:
        while not self.transport.is_closing() and self._may_handle():
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
        if isinstance(event, ev.InvalidCommand):
            handler = lambda: cnx.handle_invalid(event)  # noqa: E731
        elif isinstance(event, ev.Connect):
            handler = lambda: cnx.handle_Connect(event, self.conn.protocol_version)  # noqa: E731
        elif type(event) in _HANDLERS:
            handler = lambda: getattr(cnx, _HANDLERS[type(event)])(event)  # noqa: E731
        else:
            handler = lambda: cnx.handle_unexpected(event)  # noqa: E731
        self._guarded(type(event).__name__, getattr(getattr(event, "pb", None), "request_id", U64_MINUS_ONE),
                      handler)

    def _guarded(self, command: str, request_id: int, handler) -> None:
        """One bad command never takes the broker down, nor floods its log."""
        try:
            handler()
        except Exception as exc:  # noqa: BLE001
            log.warning("%s: internal error handling %s: %s: %s", self.cnx.remote, command, type(exc).__name__, exc)
            log.debug("internal error handling %s", command, exc_info=True)
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
        """Run ``completion`` once every frame of the current read is handled."""
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
        """Keep-alive, once per interval: PING a connection idle for a whole interval, close it after
        another one without an answer, and close one whose handshake is not complete."""
        if self.transport.is_closing():
            return
        if self.conn.state is State.AWAITING_CONNECT:
            log.info("closing %s: handshake not completed within keepAliveIntervalSeconds=%s", self.cnx.remote,
                     interval)
            self.transport.close()
            return
        if self._received or self._reading_paused:  # not idle, or not reading a PING's answer (backpressure)
            self._received = self._ping_outstanding = False
        elif self._ping_outstanding:
            log.info("closing %s: no answer to keep-alive PING", self.cnx.remote)
            self.transport.close()
            return
        elif self.conn.protocol_version is not None:
            self.write(ev.Ping())
            self._ping_outstanding = True
        self._keepalive = asyncio.get_running_loop().call_later(interval, self._keepalive_tick, interval)
