"""conformance/drivers/client.py: the official client against a fake codec server."""

import pytest

from conformance.drivers.client import ClientDriver
from conformance.errors import Indefinite, Unsupported
from model import ops
from model.outcomes import ClientError, PartitionList
from pulsar_codec import events
from pulsar_codec import pulsar_api_pb2 as pb
from tests.conformance.helpers import SILENCE, FakePulsarServer

PMR = pb.CommandPartitionedTopicMetadataResponse


def _handler(event):
    if isinstance(event, events.PartitionedMetadata):
        if event.topic.endswith("/missing"):
            return [events.PartitionedMetadataResponse(request_id=event.request_id, response=PMR.Failed,
                                                       error=pb.TopicNotFound, message="")]
        if event.topic.endswith("/silent"):
            return SILENCE
        return [events.PartitionedMetadataResponse(request_id=event.request_id, response=PMR.Success, partitions=2)]
    return SILENCE


@pytest.fixture
def server():
    server = FakePulsarServer(_handler)
    yield server
    server.close()


def test_partitions_and_exceptions_become_values(server):
    driver = ClientDriver(server.url, None, timeout=5)
    topic = "persistent://public/c1/x"
    assert driver.perform(ops.GetPartitionsForTopic(topic)) == PartitionList((f"{topic}-partition-0", f"{topic}-partition-1"))
    assert driver.perform(ops.GetPartitionsForTopic("persistent://public/c1/missing")) == ClientError("TopicNotFound")
    sent = [e for e in server.received if isinstance(e, events.PartitionedMetadata)]
    # The C++ client has not implemented PIP-344 (apache/pulsar-client-cpp#496): it never sends field 6.
    assert not any(e.has("metadata_auto_creation_enabled") for e in sent)


@pytest.mark.slow
def test_client_timeout_is_indefinite(server):
    driver = ClientDriver(server.url, None, timeout=2)
    with pytest.raises(Indefinite):
        driver.perform(ops.GetPartitionsForTopic("persistent://public/c1/silent"))


def test_http_transport_needs_an_http_url_and_other_ops_are_unsupported(server):
    driver = ClientDriver(server.url, None)
    with pytest.raises(Unsupported, match="no http service URL"):
        driver.perform(ops.GetPartitionsForTopic("persistent://public/c1/x", "http"))
    with pytest.raises(Unsupported):
        driver.perform(ops.Lookup("persistent://public/c1/x"))
