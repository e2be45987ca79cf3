"""conformance/drivers/wire.py through a fake of Apache Pulsar's proxy: lookups on the lookup
connection, producers and consumers on a connection whose CONNECT names the broker.

The fake keeps what the proxy does apart per connection (ProxyConnection at v4.0.8): a connection
whose CONNECT has no ``proxy_to_broker_url`` answers lookups only, with ``proxy_through_service_url``,
and is closed on anything else; one whose CONNECT names a broker stands for that broker.
"""

import pytest

from conformance.drivers.wire import WireDriver, proxied_broker
from conformance.errors import Indefinite
from model import ops
from model.outcomes import Done, Partitions
from pulsar_codec import events
from pulsar_codec import pulsar_api_pb2 as pb
from tests.conformance.helpers import CLOSE, FakePulsarServer

T = "persistent://public/c1/t"
BROKER = "pulsar://127.0.0.1:6650"
LOOKUP = pb.CommandLookupTopicResponse


class FakeProxy(FakePulsarServer):
    """Each accepted connection is recorded as (proxy_to_broker_url or None, events received)."""

    def __init__(self, refuse_attach: bool = False):
        self.refuse_attach = refuse_attach
        self.connections: list[tuple[list, list]] = []  # ([proxy_to_broker_url], received events)
        super().__init__(handler=None)

    def _new_connection(self):
        state: tuple[list, list] = ([None], [])
        self.connections.append(state)
        return state

    def _answer(self, conn, event, state):
        target, received = state
        received.append(event)
        if isinstance(event, events.Connect):
            target[0] = event.proxy_to_broker_url if event.has("proxy_to_broker_url") else None
            if target[0] is not None and self.refuse_attach:
                return [events.Error(request_id=0, error=pb.ServiceNotReady, message="Target broker isn't available.")]
            return [events.Connected(server_version="Fake Proxy" if target[0] is None else "Fake Broker",
                                     protocol_version=21)]
        if target[0] is None:  # the lookup connection
            if isinstance(event, events.Lookup):
                return [events.LookupResponse(request_id=event.request_id, response=LOOKUP.Connect,
                                              brokerServiceUrl=BROKER, brokerServiceUrlTls=BROKER,
                                              authoritative=True, proxy_through_service_url=True)]
            if isinstance(event, events.PartitionedMetadata):
                return [events.PartitionedMetadataResponse(
                    request_id=event.request_id, partitions=0,
                    response=pb.CommandPartitionedTopicMetadataResponse.Success)]
            return CLOSE  # as the proxy closes a lookup connection on a PRODUCER
        if isinstance(event, events.Producer):
            return [events.ProducerSuccess(request_id=event.request_id, producer_name="p")]
        if isinstance(event, (events.CloseProducer, events.Subscribe, events.CloseConsumer)):
            return [events.Success(request_id=event.request_id)]
        if isinstance(event, events.Ping):
            return [events.Pong()]
        return []

    def kinds(self, index: int) -> list[str]:
        return [type(e).__name__ for e in self.connections[index][1]]


@pytest.fixture
def proxy():
    server = FakeProxy()
    driver = WireDriver(server.url, timeout=2.0)
    yield server, driver
    driver.close()
    server.close()


def test_a_producer_attaches_on_a_connection_naming_the_broker_and_lookups_stay_on_the_lookup_one(proxy):
    server, driver = proxy
    assert driver.perform(ops.CreateNonPartitionedTopic(T)) == Done()
    assert [target[0] for target, _ in server.connections] == [None, "127.0.0.1:6650"]
    assert server.kinds(0) == ["Connect", "Lookup"]
    assert server.kinds(1) == ["Connect", "Producer", "CloseProducer"]
    # the next operation's request goes where a client sends it: the lookup connection
    assert driver.perform(ops.GetPartitionedMetadata(T, "binary", False)) == Partitions(0)
    assert server.kinds(0) == ["Connect", "Lookup", "PartitionedMetadata"]


def test_one_connection_per_broker_is_kept_until_the_case_ends(proxy):
    server, driver = proxy
    driver.perform(ops.CreateNonPartitionedTopic(T))
    driver.perform(ops.CreateNonPartitionedTopic(T + "2"))
    assert len(server.connections) == 2 and server.kinds(1).count("Producer") == 2
    driver.reset()  # a new case: new connections
    driver.perform(ops.CreateNonPartitionedTopic(T))
    assert [target[0] for target, _ in server.connections] == [None, "127.0.0.1:6650", None, "127.0.0.1:6650"]


def test_a_refused_attach_connection_is_no_answer_and_is_not_kept():
    server = FakeProxy(refuse_attach=True)
    driver = WireDriver(server.url, timeout=2.0)
    try:
        with pytest.raises(Indefinite, match="refused a connection to 127.0.0.1:6650"):
            driver.perform(ops.CreateNonPartitionedTopic(T))
        # the lookup connection is the current one again
        assert driver.perform(ops.GetPartitionedMetadata(T, "binary", None)) == Partitions(0)
        assert server.kinds(0) == ["Connect", "Lookup", "PartitionedMetadata"]
    finally:
        driver.close()
        server.close()


def test_only_a_connect_answer_through_a_proxy_names_a_broker():
    through = events.LookupResponse(request_id=1, response=LOOKUP.Connect, brokerServiceUrl=BROKER,
                                    brokerServiceUrlTls="pulsar+ssl://127.0.0.1:6651", proxy_through_service_url=True)
    assert proxied_broker(through, tls=False) == BROKER
    assert proxied_broker(through, tls=True) == "pulsar+ssl://127.0.0.1:6651"
    direct = events.LookupResponse(request_id=1, response=LOOKUP.Connect, brokerServiceUrl=BROKER)
    assert proxied_broker(direct, tls=False) is None
    failed = events.LookupResponse(request_id=1, response=LOOKUP.Failed, error=pb.TopicNotFound,
                                   proxy_through_service_url=True)
    assert proxied_broker(failed, tls=False) is None
