"""ServerCnx: the commands of one binary connection, answered; events in, events out, no bytes.

``ServerCnx`` is named after Pulsar's class that does the same job. Each ``handle_<Event>``
method takes one decoded command and answers by calling ``self.send``.
Decisions about topics and namespaces belong to ``BrokerCore`` (core.py); this module only
translates between commands and core calls, and drives producers and consumers on live topics.

- a failure answers the request that caused it (ERROR, SEND_ERROR or a Failed response) and the
  connection goes on; only framing errors close it (BrokerProtocol).
- field 6 (``handle_PartitionedMetadata``): PARTITIONED_METADATA honours field 6 exactly: absent
  means true (proto default), and "autoCreateIfNotExist = cmd.metadata_auto_creation_enabled &&
  isAllowAutoTopicCreation" (Pulsar's ServerCnx.handlePartitionMetadataRequest) is decided by core
  from the flag we pass.
- feature flag 5 (``handle_Connect``): CONNECTED always advertises
  FeatureFlags.supports_get_partitioned_metadata_without_auto_creation (flag 5), as Pulsar's
  Commands.newConnectedCommand does.
- PIP-2 publish side (``_send_non_persistent``; Pulsar's ServerCnx#handleSend): a SEND to a
  non-persistent topic "if nonPersistentPendingMessages > maxNonPersistentPendingMessages
  (strictly greater)" is dropped: SEND_RECEIPT with ledgerId = entryId = -1 written as uint64,
  and the publisher's drop rate counts it. Otherwise it is in flight until its receipt (0, 0) is
  written. The receipt is written by ``defer``, i.e. after every frame of the current read has
  been handled, as Pulsar completes publishes off the I/O thread: so SENDs that arrive in one
  read overlap, and sends awaited one by one never do.
- credentials (``handle_Connect``, ``_refused``, security.py): with ``authenticationEnabled``,
  CONNECT carries credentials (``auth_method_name`` ``token``, ``auth_data`` the JWT);
  credentials that authenticate nobody get ERROR(request_id -1, AuthenticationError, "Failed to
  authenticate") and the connection is closed (ServerCnx#authenticationFailed @ v4.0.7). With
  ``authorizationEnabled``, PARTITIONED_METADATA, LOOKUP, BATCH_LOOKUP, PRODUCER, SUBSCRIBE and
  GET_TOPICS_OF_NAMESPACE are refused for a role that may not act on the tenant, with
  ServerCnx's words for each command (security.binary_refusal).
- bad input Pulsar closes the connection on (ServerCnx / Consumer#flowPermits / LightProto): a
  SEND for a producer that is not registered, a FLOW with permits <= 0 (uint32 values >= 2^31 are
  negative Java ints), and a SUBSCRIBE that does not parse. The reference broker first writes an
  ERROR (or SEND_ERROR) naming the problem, then closes. Other unparseable commands get an answer
  and the connection goes on, as for any other failure, a leniency Pulsar does not have. So do a
  second CONNECT (ServerCnx#handleConnect's "checkArgument(state == State.Start)") and a
  GET_TOPICS_OF_NAMESPACE whose namespace does not parse (handleGetTopicsOfNamespace calls
  NamespaceName.get before anything else): both throw out of the handler, and
  ServerCnx#exceptionCaught closes the connection.
- producers (``handle_Producer``): a PRODUCER is registered on the connection only once it
  succeeded; a PRODUCER whose id names a producer already created answers ProducerSuccess with
  that producer's name (handleProducer: "Producer with the same id is already created").
- topic patterns (``handle_GetTopicsOfNamespace``): GET_TOPICS_OF_NAMESPACE filters by
  ``topics_pattern`` in a worker thread (``run_off_loop``, topic_patterns.py), so a large
  namespace never holds up other connections; its answer is written when the filtering is done.
"""

from __future__ import annotations

import itertools
import logging
from typing import Callable, Optional

from pulsar_naming.names import InvalidName, NamespaceName, TopicName
from pulsar_codec import events as ev
from pulsar_codec import pulsar_api_pb2 as pb

from . import lookup_service, topic_patterns
from .errors import BrokerError
from .security import CONNECT_REFUSED, AuthenticationFailed, binary_refusal
from .topics import Consumer, NonPersistentTopic, PersistentTopic, TopicRegistry

log = logging.getLogger("reference_broker.commands")

U64_MINUS_ONE = 2**64 - 1
INT32_LIMIT = 2**31  # uint32 permits at or above this are negative Java ints (bad input)
_connection_ids = itertools.count(1)
_producer_names = itertools.count(0)


def _server_error(name: str) -> int:
    return pb.ServerError.Value(name)


def _as_sent(send) -> tuple[bytes, bytes, Optional[int]]:
    """A SEND's metadata bytes, payload and checksum as the producer wrote them, which a MESSAGE
    forwards (``Connection.message``). A SEND built in this process, never encoded, has no bytes
    as sent and no checksum: its metadata is serialized here."""
    metadata = send.metadata_bytes if send.metadata_bytes is not None else send.metadata.SerializeToString()
    return metadata, send.payload, send.checksum


class ServerCnx:
    def __init__(self, broker, send: Callable[[ev.Event], None], remote: str = "?", *,
                 send_message: Callable[[int, int, int, int, int, bytes, bytes, Optional[int]], None]):
        self.broker = broker
        self.core = broker.core
        self.topics: TopicRegistry = broker.topics
        self.send = send
        # MESSAGE(consumer_id, ledger_id, entry_id, partition, redelivery_count, metadata, payload, checksum)
        # of a stored entry, forwarded as the producer wrote it (Connection.message).
        self.send_message = send_message
        self.remote = remote
        self.id = next(_connection_ids)
        self.producers: dict[int, tuple[TopicName, object]] = {}
        self.consumers: dict[int, tuple[object, Consumer]] = {}
        # Set by BrokerProtocol before any command arrives; consumers keep the function itself.
        self.writable: Callable[[], bool] = lambda: True
        # Set by BrokerProtocol: run a callable after the current read / close the socket.
        self.defer: Callable[[Callable[[], None]], object] = lambda fn: fn()
        self.close_connection: Callable[[], None] = lambda: None
        # Set by BrokerProtocol: run_off_loop(work, done) calls done(work()) on the loop, or
        # done(exception); never after the connection closed (topic patterns).
        self.run_off_loop: Callable[[Callable[[], object], Callable[[object], None]], None] = \
            lambda work, done: done(work())
        self.connected = False
        self.client_version = ""
        self.role: Optional[str] = None  # credentials: who authenticated on this connection
        self.non_persistent_pending = 0  # PIP-2 publish side: nonPersistentPendingMessages
        self._non_persistent_done: list[tuple] = []  # receipts waiting for the end of the read
        # Not dynamic (Pulsar's ServiceConfiguration), so read once per connection, as ServerCnx's constructor does.
        self._non_persistent_limit = self.core.config.get("maxConcurrentNonPersistentMessagePerConnection")
        # Not dynamic either: read once per connection, as the connection's frame limit is (BrokerProtocol).
        self._max_message_size = self.core.config.get("maxMessageSize")

    # -- handshake and keep-alive -----------------------------------------------------------

    def handle_Connect(self, event: ev.Connect, negotiated: int) -> None:
        if self.connected:  # a second CONNECT: Pulsar closes the connection
            log.info("closing %s: a second CONNECT", self.remote)
            self._error(U64_MINUS_ONE, "NotAllowedError", "CONNECT on a connection that is already connected; "
                        "closing the connection as Pulsar does (open a new connection instead)")
            return self.close_connection()
        self.connected = True
        self.client_version = event.client_version
        security = self.broker.security
        if security.authentication:  # credentials
            method = event.auth_method_name if event.has("auth_method_name") else None
            try:
                self.role = security.authenticate_connect(method, event.auth_data if event.has("auth_data") else b"")
            except AuthenticationFailed as exc:
                log.warning("[%s] Failed to authenticate on connect: %s", self.remote, exc)
                self.send(ev.Error(request_id=U64_MINUS_ONE, error=_server_error("AuthenticationError"),
                                   message=CONNECT_REFUSED))
                return self.close_connection()
        self.send(ev.Connected(
            server_version=self.broker.server_version,
            protocol_version=negotiated,
            max_message_size=self._max_message_size,
            feature_flags={"supports_get_partitioned_metadata_without_auto_creation": True,
                           "supports_batch_lookup": True},  # PIP-35 (ours): FeatureFlags field 10
        ))

    def handle_Ping(self, event) -> None:
        self.send(ev.Pong())

    def handle_Pong(self, event) -> None:
        pass  # BrokerProtocol notes that something arrived (keep-alive)

    # -- lookups ----------------------------------------------------------------------------

    def handle_PartitionedMetadata(self, event) -> None:
        # An absent field 6 means its proto default, true.
        auto_create = event.metadata_auto_creation_enabled if event.has("metadata_auto_creation_enabled") else True
        refused = self._refused("PartitionedMetadata", event.topic)
        if refused:
            return self._partitioned_metadata_failed(event.request_id, *refused)
        try:
            partitions = self.core.get_partitioned_metadata(event.topic, auto_create=auto_create)
        except InvalidName as exc:
            return self._partitioned_metadata_failed(event.request_id, "InvalidTopicName", str(exc))
        except BrokerError as exc:
            return self._partitioned_metadata_failed(event.request_id, exc.server_error, exc.binary_message)
        self.send(ev.PartitionedMetadataResponse(
            request_id=event.request_id, partitions=partitions,
            response=pb.CommandPartitionedTopicMetadataResponse.Success))

    def _partitioned_metadata_failed(self, request_id: int, error: str, message: str) -> None:
        self.send(ev.PartitionedMetadataResponse(request_id=request_id, error=_server_error(error), message=message,
                                                 response=pb.CommandPartitionedTopicMetadataResponse.Failed))

    def handle_Lookup(self, event) -> None:
        refused = self._refused("Lookup", event.topic)
        if refused:
            return self.send(ev.LookupResponse(request_id=event.request_id, error=_server_error(refused[0]),
                                               message=refused[1],
                                               response=pb.CommandLookupTopicResponse.Failed))
        lookup_service.handle_lookup(self, event)  # PIP-35 cluster: Connect from the owner, else Redirect

    def handle_BatchLookup(self, event) -> None:
        # Ours (PIP-35 is tentative): the batch is refused whole, with LOOKUP's words, if any name in
        # it is a topic the role may not look up.
        refused = next(filter(None, (self._refused("Lookup", name) for name in event.topics)), None)
        if refused:
            return self._error(event.request_id, *refused)
        lookup_service.handle_batch_lookup(self, event)  # PIP-35 batch lookup (ours)

    def handle_GetTopicsOfNamespace(self, event) -> None:
        refused = self._refused("GetTopicsOfNamespace", event.namespace, namespace=True)
        if refused:
            return self._error(event.request_id, *refused)
        try:
            namespace = NamespaceName.parse(event.namespace)
        except InvalidName as exc:  # bad input Pulsar closes the connection on
            log.info("closing %s: GET_TOPICS_OF_NAMESPACE of an invalid namespace: %s", self.remote, exc)
            self._error(event.request_id, "InvalidTopicName", f"{exc}; closing the connection as Pulsar does")
            return self.close_connection()
        try:
            domains = {0: ("persistent",), 1: ("non-persistent",), 2: ("persistent", "non-persistent")}[event.mode]
            topics = self.core.topics_of_namespace(namespace, domains)  # mode PERSISTENT: no namespace check
        except BrokerError as exc:
            return self._error(event.request_id, exc.server_error, exc.binary_message or exc.reason)
        pattern = event.topics_pattern if event.has("topics_pattern") else None
        config = self.core.config
        if not topic_patterns.evaluated(pattern, config.get("subscriptionPatternMaxLength"),
                                        config.get("enableBrokerSideSubscriptionPatternEvaluation")):
            if pattern is not None:
                log.info("%s: topics_pattern of %d characters is longer than subscriptionPatternMaxLength=%d; "
                         "answering every topic", self.remote, len(pattern), config.get("subscriptionPatternMaxLength"))
            return self._topics_of_namespace_answer(event.request_id, topics, filtered=False)

        def done(result) -> None:
            if isinstance(result, topic_patterns.PatternError):
                return self._error(event.request_id, "MetadataError", str(result))
            if isinstance(result, BaseException):
                raise result
            self._topics_of_namespace_answer(event.request_id, result, filtered=True)
        self.run_off_loop(lambda: topic_patterns.filter_topics(topics, pattern), done)  # off the event loop

    def _topics_of_namespace_answer(self, request_id: int, topics: list[str], filtered: bool) -> None:
        self.send(ev.GetTopicsOfNamespaceResponse(request_id=request_id, topics=topics, filtered=filtered,
                                                  changed=True))

    # -- producers --------------------------------------------------------------------------

    def handle_Producer(self, event) -> None:
        refused = self._refused("Producer", event.topic)  # authorisation before anything else, as in Pulsar
        if refused:
            return self._error(event.request_id, *refused)
        try:
            topic = TopicName.parse(event.topic)
            existing = self.producers.get(event.producer_id)
            if existing is not None:  # "Producer with the same id is already created"
                name = existing[1].producers.get((self.id, event.producer_id), "")
                return self._producer_success(event.request_id, name)
            self.core.ensure_topic_for_attach(topic, command="PRODUCER")
        except InvalidName as exc:
            return self._error(event.request_id, "InvalidTopicName", str(exc))
        except BrokerError as exc:
            return self._error(event.request_id, exc.server_error, exc.binary_message or exc.reason)
        live = self.topics.get_or_load(topic)
        refusal = self.topics.policy.producer_refusal(live) \
            if self.topics.policy is not None and isinstance(live, PersistentTopic) else None
        if refusal is not None:  # backlog quota (``StoragePolicy.producer_refusal``)
            return self._error(event.request_id, *refusal)
        name = event.producer_name if event.has("producer_name") and event.producer_name else \
            f"{self.broker.cluster_name}-{self.id}-{next(_producer_names)}"
        live.add_producer((self.id, event.producer_id), name, address=self.remote, client_version=self.client_version)
        self.producers[event.producer_id] = (topic, live)  # registered only once it succeeded
        self._producer_success(event.request_id, name)

    def _producer_success(self, request_id: int, name: str) -> None:
        # Pulsar always sets schema_version, empty for a topic without a schema:
        # ".setSchemaVersion(schemaVersion.bytes())" (Commands#newProducerSuccessCommand @ v4.0.8), and
        # the Java client reads it unconditionally (ClientCnx#handleProducerSuccess @ v4.0.8): without it
        # the client drops the answer and its producer never becomes ready.
        self.send(ev.ProducerSuccess(request_id=request_id, producer_name=name, last_sequence_id=-1,
                                     schema_version=b""))

    def handle_Send(self, event) -> None:
        registered = self.producers.get(event.producer_id)
        if registered is None:
            # Bad input: "Received message, but the producer is not ready : {}. Closing the connection."
            self._send_error(event, "NotAllowedError",
                             f"Producer {event.producer_id} is not registered on this connection; "
                             "closing the connection as Pulsar does (create the producer first)")
            return self.close_connection()
        if event.checksum_valid is False:
            return self._send_error(event, "ChecksumError", "Checksum failed on the message")
        metadata, payload, checksum = _as_sent(event)
        if len(payload) > self._max_message_size:
            return self._send_error(event, "NotAllowedError", "Exceed maximum message size")
        topic, live = registered
        if isinstance(live, NonPersistentTopic):
            return self._send_non_persistent(event, metadata, payload, checksum, live)
        ledger_id, entry_id = live.publish(metadata, payload, event.num_messages, checksum=checksum)
        self._send_receipt(event.producer_id, event.sequence_id, event.highest_sequence_id, ledger_id, entry_id)

    def _send_error(self, send, error: str, message: str) -> None:
        self.send(ev.SendError(producer_id=send.producer_id, sequence_id=send.sequence_id,
                               error=_server_error(error), message=message))

    def _send_receipt(self, producer_id: int, sequence_id: int, highest_sequence_id: int,
                      ledger_id: int, entry_id: int) -> None:
        self.send(ev.SendReceipt(producer_id=producer_id, sequence_id=sequence_id,
                                 highest_sequence_id=highest_sequence_id,
                                 message_id={"ledgerId": ledger_id, "entryId": entry_id}))

    def _send_non_persistent(self, send, metadata: bytes, payload: bytes, checksum: Optional[int],
                             live: NonPersistentTopic) -> None:
        """PIP-2 publish side: dropped past the pending limit, else in flight until its receipt.
        Receipts are queued and all written by one deferred completion per read."""
        key = (self.id, send.producer_id)
        if self.non_persistent_pending > self._non_persistent_limit:
            live.record_publish_drop(key, send.num_messages)
            done = (send.producer_id, send.sequence_id, send.highest_sequence_id, U64_MINUS_ONE, False)
        else:
            self.non_persistent_pending += 1
            ledger_id, _ = live.publish(metadata, payload, send.num_messages, key, checksum=checksum)
            done = (send.producer_id, send.sequence_id, send.highest_sequence_id, ledger_id, True)
        self._non_persistent_done.append(done)
        if len(self._non_persistent_done) == 1:
            self.defer(self._complete_non_persistent)

    def _complete_non_persistent(self) -> None:
        """completedSendOperation for every SEND of the read: no longer in flight, receipt written."""
        done, self._non_persistent_done = self._non_persistent_done, []
        for producer_id, sequence_id, highest, ledger_id, accepted in done:
            if accepted:
                self.non_persistent_pending -= 1
            entry_id = 0 if accepted else U64_MINUS_ONE
            self._send_receipt(producer_id, sequence_id, highest, ledger_id, entry_id)

    def handle_CloseProducer(self, event) -> None:
        registered = self.producers.pop(event.producer_id, None)
        if registered is not None:
            registered[1].remove_producer((self.id, event.producer_id))
        self.send(ev.Success(request_id=event.request_id))

    # -- consumers --------------------------------------------------------------------------

    def handle_Subscribe(self, event) -> None:
        if event.consumer_id in self.consumers:
            return self._error(event.request_id, "ConsumerBusy", f"Consumer id {event.consumer_id} is already in use")
        refused = self._refused("Subscribe", event.topic)
        if refused:
            return self._error(event.request_id, *refused)
        try:
            topic = TopicName.parse(event.topic)
            self.core.ensure_topic_for_attach(topic, create=event.force_topic_creation)
        except InvalidName as exc:
            return self._error(event.request_id, "InvalidTopicName", str(exc))
        except BrokerError as exc:
            return self._error(event.request_id, exc.server_error, exc.binary_message or exc.reason)
        live = self.topics.get_or_load(topic)
        existing = live.subscriptions.get(event.subscription)
        if existing is not None and existing.sub_type != event.subType:
            return self._error(event.request_id, "ConsumerBusy",
                               "Subscription is of different type")
        subscription = live.subscription(event.subscription, event.subType,
                                         event.initialPosition == pb.CommandSubscribe.Earliest)
        consumer = Consumer(event.consumer_id, event.consumer_name or f"consumer-{event.consumer_id}",
                            deliver=self._deliverer(topic, live.ledger_id), writable=self.writable)
        refused = subscription.add_consumer(consumer)
        if refused:
            return self._error(event.request_id, "ConsumerBusy", refused)
        self.consumers[event.consumer_id] = (subscription, consumer)
        self.send(ev.Success(request_id=event.request_id))

    def _deliverer(self, topic: TopicName, ledger_id: int):
        partition = topic.partition_index

        def deliver(consumer: Consumer, entry_id: int, entry, redelivery_count: int) -> None:
            self.send_message(consumer.consumer_id, ledger_id, entry_id, partition, redelivery_count,
                              entry.metadata, entry.payload, entry.checksum)  # forwarded as stored
        return deliver

    def handle_Flow(self, event) -> None:
        registered = self.consumers.get(event.consumer_id)
        if registered is None:
            return  # Pulsar ignores FLOW for an unknown consumer; there is no request id to answer
        if event.messagePermits == 0 or event.messagePermits >= INT32_LIMIT:
            # Bad input: Consumer#flowPermits "checkArgument(additionalNumberOfMessages > 0)"
            permits = event.messagePermits - 2**32 if event.messagePermits >= INT32_LIMIT else 0
            self._error(U64_MINUS_ONE, "UnknownError",
                        f"FLOW for consumer {event.consumer_id} with {permits} permits: permits must be > 0; "
                        "closing the connection as Pulsar does")
            return self.close_connection()
        subscription, consumer = registered
        consumer.permits += event.messagePermits
        subscription.dispatch()

    def handle_Ack(self, event) -> None:
        registered = self.consumers.get(event.consumer_id)
        error: Optional[str] = None
        if registered is None:
            error = f"Consumer {event.consumer_id} not found"
        else:
            subscription, consumer = registered
            for message_id in event.message_id:
                subscription.ack(consumer, message_id.entryId, event.ack_type == pb.CommandAck.Cumulative)
        if event.has("request_id"):
            response = dict(consumer_id=event.consumer_id, request_id=event.request_id)
            if error:
                response.update(error=_server_error("ConsumerNotFound"), message=error)
            self.send(ev.AckResponse(**response))

    def handle_RedeliverUnacknowledgedMessages(self, event) -> None:
        registered = self.consumers.get(event.consumer_id)
        if registered is not None:
            subscription, consumer = registered
            subscription.redeliver_unacked(consumer, [m.entryId for m in event.message_ids])

    def handle_Unsubscribe(self, event) -> None:
        registered = self.consumers.get(event.consumer_id)
        if registered is None:
            return self._error(event.request_id, "ConsumerNotFound", f"Consumer {event.consumer_id} not found")
        subscription, consumer = registered
        if len(subscription.consumers) > 1 and not event.force:
            return self._error(event.request_id, "MetadataError", "Subscription has other connected consumers")
        del self.consumers[event.consumer_id]
        subscription.consumers.clear()
        # non-persistent: keeps its out counters; persistent: frees what only it needed
        subscription.topic.remove_subscription(subscription.name)
        self.send(ev.Success(request_id=event.request_id))

    def handle_CloseConsumer(self, event) -> None:
        registered = self.consumers.pop(event.consumer_id, None)
        if registered is not None:
            registered[0].remove_consumer(registered[1])
        self.send(ev.Success(request_id=event.request_id))

    def handle_ConsumerStats(self, event) -> None:
        registered = self.consumers.get(event.consumer_id)
        if registered is None:
            return self.send(ev.ConsumerStatsResponse(
                request_id=event.request_id, error_code=_server_error("ConsumerNotFound"),
                error_message=f"Consumer {event.consumer_id} not found"))
        subscription, consumer = registered
        self.send(ev.ConsumerStatsResponse(
            request_id=event.request_id, consumerName=consumer.name, availablePermits=max(consumer.permits, 0),
            unackedMessages=len(consumer.unacked), msgBacklog=subscription.backlog(),
            type=pb.CommandSubscribe.SubType.Name(subscription.sub_type)))

    def handle_GetLastMessageId(self, event) -> None:
        registered = self.consumers.get(event.consumer_id)
        if registered is None:
            return self._error(event.request_id, "ConsumerNotFound", f"Consumer {event.consumer_id} not found")
        subscription, _ = registered
        topic = subscription.topic
        if isinstance(topic, NonPersistentTopic):
            # Pulsar's ServerCnx.handleSend: "Not supported on non-persistent topics: getLastMessageId" [I: the error code]
            return self._error(event.request_id, "NotAllowedError",
                               "GetLastMessageId is not supported on non-persistent topics")
        last = topic.last_entry_id()
        # An empty topic answers entryId -1 (written as uint64), as Pulsar answers for no entries.
        self.send(ev.GetLastMessageIdResponse(
            request_id=event.request_id,
            last_message_id={"ledgerId": topic.ledger_id, "entryId": last if last >= 0 else U64_MINUS_ONE,
                             "partition": topic.partition_index}))

    def handle_Seek(self, event) -> None:
        self._error(event.request_id, "NotAllowedError", "SEEK is not supported by the reference broker")

    def handle_GetSchema(self, event) -> None:
        self.send(ev.GetSchemaResponse(request_id=event.request_id, error_code=_server_error("TopicNotFound"),
                                       error_message="No schema stored for this topic"))

    def handle_GetOrCreateSchema(self, event) -> None:
        self.send(ev.GetOrCreateSchemaResponse(request_id=event.request_id, schema_version=b""))

    # -- errors and teardown ----------------------------------------------------------------

    def handle_invalid(self, invalid: ev.InvalidCommand) -> None:
        request_id = invalid.request_id if invalid.request_id is not None else U64_MINUS_ONE
        if invalid.raw_type == pb.BaseCommand.SUBSCRIBE:
            # Bad input: LightProto "Some required fields are missing" (an unknown subType is dropped
            # as unknown, leaving the required field unset); Pulsar closes the connection.
            self._error(request_id, "UnknownError", f"{invalid.reason}; closing the connection as Pulsar does")
            return self.close_connection()
        self._error(request_id, "UnknownError", invalid.reason)

    def handle_unexpected(self, event: ev.Event) -> None:
        """A command a client should never send to a broker (e.g. CONNECTED, MESSAGE)."""
        request_id = event.request_id if "request_id" in event.pb.DESCRIPTOR.fields_by_name else U64_MINUS_ONE
        self._error(request_id, "UnknownError", f"Unexpected command {event.type_name} from a client")

    def _refused(self, command: str, name: str, namespace: bool = False) -> Optional[tuple[str, str]]:
        """Credentials: (ServerError, message) when this connection's role may not run ``command`` on the
        topic (or ``namespace``) ``name``; None when it may, or the name does not parse (the
        command's own check answers that)."""
        security = self.broker.security
        if not security.authorization:
            return None
        try:
            parsed = NamespaceName.parse(name) if namespace else TopicName.parse(name).namespace_name
        except InvalidName:
            return None
        return binary_refusal(security, self.role, command, parsed.tenant, str(parsed))

    def _error(self, request_id: int, error: str, message: str) -> None:
        self.send(ev.Error(request_id=request_id, error=_server_error(error), message=message))

    def close_topic_users(self, topic_name: str, consumers: bool = True) -> int:
        """Close this connection's producers (and consumers, unless ``consumers`` is false) on
        ``topic_name``, telling the client with CLOSE_PRODUCER / CLOSE_CONSUMER (request_id -1, as
        Pulsar's broker-initiated closes), so it looks the topic up again. Returns how many were closed."""
        closed = 0
        for producer_id, (topic, live) in list(self.producers.items()):
            if str(topic) == topic_name:
                del self.producers[producer_id]
                live.remove_producer((self.id, producer_id))
                self.send(ev.CloseProducer(producer_id=producer_id, request_id=U64_MINUS_ONE))
                closed += 1
        for consumer_id, (subscription, consumer) in list(self.consumers.items()) if consumers else ():
            if subscription.topic.name == topic_name:
                del self.consumers[consumer_id]
                subscription.remove_consumer(consumer)
                self.send(ev.CloseConsumer(consumer_id=consumer_id, request_id=U64_MINUS_ONE))
                closed += 1
        return closed

    def close_subscription_consumers(self, topic_name: str, subscription_name: str) -> int:
        """Close this connection's consumers of one subscription, telling the client with CLOSE_CONSUMER
        (request_id -1), as a subscription deleted through the admin API does (its dispatcher's close
        disconnects them, Pulsar's Dispatcher#close). Returns how many were closed."""
        closed = 0
        for consumer_id, (subscription, consumer) in list(self.consumers.items()):
            if subscription.topic.name == topic_name and subscription.name == subscription_name:
                del self.consumers[consumer_id]
                subscription.remove_consumer(consumer)
                self.send(ev.CloseConsumer(consumer_id=consumer_id, request_id=U64_MINUS_ONE))
                closed += 1
        return closed

    def connection_lost(self) -> None:
        for producer_id, (topic, live) in list(self.producers.items()):
            live.remove_producer((self.id, producer_id))
        for subscription, consumer in self.consumers.values():
            subscription.remove_consumer(consumer)
        self.producers.clear()
        self.consumers.clear()
