"""Events: one class per Pulsar command, named after the proto message (Pulsar's vocabulary exactly).

``PartitionedMetadata`` is ``CommandPartitionedTopicMetadata``, ``LookupResponse`` is
``CommandLookupTopicResponse``, ``BatchLookup`` is our PIP-35 ``CommandBatchLookupTopic`` and so on: the table ``_COMMANDS`` below maps each BaseCommand type
to its event name and BaseCommand field. An event wraps the protobuf sub-message; fields are read
as attributes (``event.topic``) and presence is asked with ``event.has("field")``, which matters
for proto2 fields such as ``metadata_auto_creation_enabled`` whose absence means "default true".

SEND and MESSAGE also carry ``metadata`` (MessageMetadata, or its bytes when a broker forwards
an entry as stored) and ``payload``; a received one also the bytes of its metadata as sent
(``metadata_bytes``), the checksum it carried (``checksum``, None when none) and whether it matched
(``checksum_valid``, None when it carried none).

``InvalidCommand`` is what a well-delimited but unusable frame becomes (see errors.py).

A received string field always reads as ``str``. Protobuf keeps the raw bytes of a proto2 string
that is not valid UTF-8; Pulsar's LightProto reads every string with ``ByteBuf.toString(index,
len, UTF_8)`` (LightProtoCodec#readString @ v4.0.7), which decodes malformed input to U+FFFD, so
the attribute is decoded the same way here (``Event.__getattr__``).
"""

from __future__ import annotations

from typing import Optional

from google.protobuf import text_format

from . import pulsar_api_pb2 as pb

T = pb.BaseCommand

# type -> (event class name, BaseCommand field name)
_COMMANDS: dict[int, tuple[str, str]] = {
    T.CONNECT: ("Connect", "connect"),
    T.CONNECTED: ("Connected", "connected"),
    T.SUBSCRIBE: ("Subscribe", "subscribe"),
    T.PRODUCER: ("Producer", "producer"),
    T.SEND: ("Send", "send"),
    T.SEND_RECEIPT: ("SendReceipt", "send_receipt"),
    T.SEND_ERROR: ("SendError", "send_error"),
    T.MESSAGE: ("Message", "message"),
    T.ACK: ("Ack", "ack"),
    T.FLOW: ("Flow", "flow"),
    T.UNSUBSCRIBE: ("Unsubscribe", "unsubscribe"),
    T.SUCCESS: ("Success", "success"),
    T.ERROR: ("Error", "error"),
    T.CLOSE_PRODUCER: ("CloseProducer", "close_producer"),
    T.CLOSE_CONSUMER: ("CloseConsumer", "close_consumer"),
    T.PRODUCER_SUCCESS: ("ProducerSuccess", "producer_success"),
    T.PING: ("Ping", "ping"),
    T.PONG: ("Pong", "pong"),
    T.REDELIVER_UNACKNOWLEDGED_MESSAGES: ("RedeliverUnacknowledgedMessages", "redeliverUnacknowledgedMessages"),
    T.PARTITIONED_METADATA: ("PartitionedMetadata", "partitionMetadata"),
    T.PARTITIONED_METADATA_RESPONSE: ("PartitionedMetadataResponse", "partitionMetadataResponse"),
    T.LOOKUP: ("Lookup", "lookupTopic"),
    T.LOOKUP_RESPONSE: ("LookupResponse", "lookupTopicResponse"),
    T.CONSUMER_STATS: ("ConsumerStats", "consumerStats"),
    T.CONSUMER_STATS_RESPONSE: ("ConsumerStatsResponse", "consumerStatsResponse"),
    T.REACHED_END_OF_TOPIC: ("ReachedEndOfTopic", "reachedEndOfTopic"),
    T.SEEK: ("Seek", "seek"),
    T.GET_LAST_MESSAGE_ID: ("GetLastMessageId", "getLastMessageId"),
    T.GET_LAST_MESSAGE_ID_RESPONSE: ("GetLastMessageIdResponse", "getLastMessageIdResponse"),
    T.ACTIVE_CONSUMER_CHANGE: ("ActiveConsumerChange", "active_consumer_change"),
    T.GET_TOPICS_OF_NAMESPACE: ("GetTopicsOfNamespace", "getTopicsOfNamespace"),
    T.GET_TOPICS_OF_NAMESPACE_RESPONSE: ("GetTopicsOfNamespaceResponse", "getTopicsOfNamespaceResponse"),
    T.GET_SCHEMA: ("GetSchema", "getSchema"),
    T.GET_SCHEMA_RESPONSE: ("GetSchemaResponse", "getSchemaResponse"),
    T.AUTH_CHALLENGE: ("AuthChallenge", "authChallenge"),
    T.AUTH_RESPONSE: ("AuthResponse", "authResponse"),
    T.ACK_RESPONSE: ("AckResponse", "ackResponse"),
    T.GET_OR_CREATE_SCHEMA: ("GetOrCreateSchema", "getOrCreateSchema"),
    T.GET_OR_CREATE_SCHEMA_RESPONSE: ("GetOrCreateSchemaResponse", "getOrCreateSchemaResponse"),
    # PIP-35, ours and TENTATIVE (docs/pip35-decisions.md): 45/46, not the PIP's 23/24 (apache/pulsar#4153).
    T.BATCH_LOOKUP: ("BatchLookup", "batchLookupTopic"),
    T.BATCH_LOOKUP_RESPONSE: ("BatchLookupResponse", "batchLookupTopicResponse"),
}


class Event:
    """A command; subclasses fix TYPE and FIELD."""

    TYPE: int = -1
    FIELD: str = ""
    MESSAGE: type = type(None)  # the protobuf class of FIELD, set per subclass below
    STRINGS: frozenset = frozenset()  # MESSAGE's string fields, always read as str
    REPEATED: frozenset = frozenset()  # ... of which these are repeated
    __slots__ = ("pb", "metadata", "payload", "checksum_valid", "checksum", "metadata_bytes")

    def __init__(self, _pb=None, *, metadata: Optional[pb.MessageMetadata] = None,
                 payload: Optional[bytes] = None, checksum_valid: Optional[bool] = None,
                 checksum: Optional[int] = None, metadata_bytes: Optional[bytes] = None, **fields):
        self.pb = _pb if _pb is not None else self.MESSAGE(**fields)
        self.metadata = metadata
        self.payload = payload
        self.checksum_valid = checksum_valid
        self.checksum = checksum
        self.metadata_bytes = metadata_bytes

    def __getattr__(self, name):
        # Anything Event itself does not define is the protobuf message's: its fields, ``HasField``...
        value = getattr(object.__getattribute__(self, "pb"), name)
        if name in type(self).STRINGS:  # malformed UTF-8 reads as U+FFFD, as LightProto does
            if type(value) is bytes:
                return value.decode("utf-8", "replace")
            if name in type(self).REPEATED and any(type(item) is bytes for item in value):
                return [item.decode("utf-8", "replace") if type(item) is bytes else item for item in value]
        return value

    def has(self, field: str) -> bool:
        return self.pb.HasField(field)

    @property
    def type_name(self) -> str:
        return pb.BaseCommand.Type.Name(self.TYPE)

    def to_command(self) -> pb.BaseCommand:
        command = pb.BaseCommand(type=self.TYPE)
        getattr(command, self.FIELD).CopyFrom(self.pb)
        return command

    def __eq__(self, other):
        return (type(self) is type(other) and self.pb == other.pb and self.metadata == other.metadata
                and self.payload == other.payload)

    def __repr__(self) -> str:
        text = text_format.MessageToString(self.pb, as_one_line=True)
        extra = f", payload={len(self.payload)}B" if self.payload is not None else ""
        return f"{type(self).__name__}({text}{extra})"


class InvalidCommand:
    """A frame we could delimit but not use; ``request_id`` when it could be read."""

    __slots__ = ("reason", "raw_type", "request_id")

    def __init__(self, reason: str, raw_type: Optional[int] = None, request_id: Optional[int] = None):
        self.reason, self.raw_type, self.request_id = reason, raw_type, request_id

    def __repr__(self) -> str:
        return f"InvalidCommand({self.reason!r}, raw_type={self.raw_type}, request_id={self.request_id})"


EVENT_CLASSES: dict[int, type[Event]] = {}
for _type, (_name, _field) in _COMMANDS.items():
    _message = type(getattr(pb.BaseCommand(), _field))
    _strings = [f for f in _message.DESCRIPTOR.fields if f.type == f.TYPE_STRING]
    EVENT_CLASSES[_type] = type(_name, (Event,), {
        "TYPE": _type, "FIELD": _field, "__slots__": (), "MESSAGE": _message,
        "STRINGS": frozenset(f.name for f in _strings),
        "REPEATED": frozenset(f.name for f in _strings if f.is_repeated)})

# The classes by name; each is made from the table above.
Connect = EVENT_CLASSES[T.CONNECT]
Connected = EVENT_CLASSES[T.CONNECTED]
Subscribe = EVENT_CLASSES[T.SUBSCRIBE]
Producer = EVENT_CLASSES[T.PRODUCER]
Send = EVENT_CLASSES[T.SEND]
SendReceipt = EVENT_CLASSES[T.SEND_RECEIPT]
SendError = EVENT_CLASSES[T.SEND_ERROR]
Message = EVENT_CLASSES[T.MESSAGE]
Ack = EVENT_CLASSES[T.ACK]
Flow = EVENT_CLASSES[T.FLOW]
Unsubscribe = EVENT_CLASSES[T.UNSUBSCRIBE]
Success = EVENT_CLASSES[T.SUCCESS]
Error = EVENT_CLASSES[T.ERROR]
CloseProducer = EVENT_CLASSES[T.CLOSE_PRODUCER]
CloseConsumer = EVENT_CLASSES[T.CLOSE_CONSUMER]
ProducerSuccess = EVENT_CLASSES[T.PRODUCER_SUCCESS]
Ping = EVENT_CLASSES[T.PING]
Pong = EVENT_CLASSES[T.PONG]
RedeliverUnacknowledgedMessages = EVENT_CLASSES[T.REDELIVER_UNACKNOWLEDGED_MESSAGES]
PartitionedMetadata = EVENT_CLASSES[T.PARTITIONED_METADATA]
PartitionedMetadataResponse = EVENT_CLASSES[T.PARTITIONED_METADATA_RESPONSE]
Lookup = EVENT_CLASSES[T.LOOKUP]
LookupResponse = EVENT_CLASSES[T.LOOKUP_RESPONSE]
ConsumerStats = EVENT_CLASSES[T.CONSUMER_STATS]
ConsumerStatsResponse = EVENT_CLASSES[T.CONSUMER_STATS_RESPONSE]
ReachedEndOfTopic = EVENT_CLASSES[T.REACHED_END_OF_TOPIC]
Seek = EVENT_CLASSES[T.SEEK]
GetLastMessageId = EVENT_CLASSES[T.GET_LAST_MESSAGE_ID]
GetLastMessageIdResponse = EVENT_CLASSES[T.GET_LAST_MESSAGE_ID_RESPONSE]
ActiveConsumerChange = EVENT_CLASSES[T.ACTIVE_CONSUMER_CHANGE]
GetTopicsOfNamespace = EVENT_CLASSES[T.GET_TOPICS_OF_NAMESPACE]
GetTopicsOfNamespaceResponse = EVENT_CLASSES[T.GET_TOPICS_OF_NAMESPACE_RESPONSE]
GetSchema = EVENT_CLASSES[T.GET_SCHEMA]
GetSchemaResponse = EVENT_CLASSES[T.GET_SCHEMA_RESPONSE]
AuthChallenge = EVENT_CLASSES[T.AUTH_CHALLENGE]
AuthResponse = EVENT_CLASSES[T.AUTH_RESPONSE]
AckResponse = EVENT_CLASSES[T.ACK_RESPONSE]
GetOrCreateSchema = EVENT_CLASSES[T.GET_OR_CREATE_SCHEMA]
GetOrCreateSchemaResponse = EVENT_CLASSES[T.GET_OR_CREATE_SCHEMA_RESPONSE]
BatchLookup = EVENT_CLASSES[T.BATCH_LOOKUP]
BatchLookupResponse = EVENT_CLASSES[T.BATCH_LOOKUP_RESPONSE]


def from_command(command: pb.BaseCommand, **extra) -> Event:
    cls = EVENT_CLASSES[command.type]
    return cls(getattr(command, cls.FIELD), **extra)
