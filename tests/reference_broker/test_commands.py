"""Bad input to ServerCnx (commands.py: bad input Pulsar closes the connection on, producers registered
once they succeed; events.py: strings read as LightProto reads them): answered as Pulsar answers it,
never as an internal error, and logged without a traceback."""

import logging
import struct

import pytest

from pulsar_codec import events as ev
from pulsar_codec import pulsar_api_pb2 as pb
from reference_broker.topics.persistent import PersistentTopic

from .in_process import run

MARK = b"ZZ"
INVALID_UTF8 = b"\xff\xfe"


def with_invalid_utf8(command: pb.BaseCommand) -> bytes:
    """The frame of ``command`` with the bytes ``ZZ`` of one of its strings made invalid UTF-8."""
    body = command.SerializeToString()
    assert body.count(MARK) == 1
    body = body.replace(MARK, INVALID_UTF8)
    return struct.pack(">II", 4 + len(body), len(body)) + body


@pytest.fixture(autouse=True)
def no_tracebacks(caplog):
    caplog.set_level(logging.INFO, logger="reference_broker")
    yield
    assert [r for r in caplog.records if r.exc_info] == []
    assert not any("internal error" in r.getMessage() for r in caplog.records)


def test_a_second_connect_closes_the_connection():
    def test(core, client):
        [error] = client.exchange(client.conn.send(ev.Connect(client_version="again", protocol_version=21)))
        assert error.error == pb.NotAllowedError and "already connected" in error.message
        assert client.transport.closed
    run(test)


def test_invalid_utf8_in_a_batch_lookup_topic_is_decoded_as_pulsar_decodes_it():
    def test(core, client):
        command = pb.BaseCommand(type=pb.BaseCommand.BATCH_LOOKUP, batchLookupTopic=pb.CommandBatchLookupTopic(
            topics=["persistent://public/default/aZZ"], request_id=3))
        [answer] = client.exchange(with_invalid_utf8(command))
        [entry] = answer.entries
        assert entry.topic == "persistent://public/default/a\ufffd\ufffd"
        assert entry.response == pb.CommandLookupTopicResponse.Connect
    run(test)


def test_invalid_utf8_in_a_namespace_closes_the_connection_as_an_invalid_namespace_does():
    def test(core, client):
        command = pb.BaseCommand(type=pb.BaseCommand.GET_TOPICS_OF_NAMESPACE,
                                 getTopicsOfNamespace=pb.CommandGetTopicsOfNamespace(namespace="public/ZZ",
                                                                                     request_id=4))
        [error] = client.exchange(with_invalid_utf8(command))
        assert (error.request_id, error.error) == (4, pb.InvalidTopicName)
        assert "\ufffd" in error.message and client.transport.closed
    run(test)


def test_invalid_utf8_in_a_producer_name_creates_the_producer():
    def test(core, client):
        command = pb.BaseCommand(type=pb.BaseCommand.PRODUCER, producer=pb.CommandProducer(
            topic="persistent://public/default/p", producer_id=1, request_id=5, producer_name="pZZ"))
        [success] = client.exchange(with_invalid_utf8(command))
        assert isinstance(success, ev.ProducerSuccess) and success.producer_name == "p\ufffd\ufffd"
    run(test)


def producer(client, producer_id=1, request_id=6, name="p"):
    return client.exchange(client.conn.send(ev.Producer(topic="persistent://public/default/p",
                                                        producer_id=producer_id, request_id=request_id,
                                                        producer_name=name)))


def test_a_producer_that_failed_is_not_registered_so_a_retry_with_its_id_succeeds(monkeypatch, caplog):
    failures = []

    def add_once_failing(self, key, name, **info):
        if not failures:
            failures.append(key)
            raise RuntimeError("injected")
        self.producers[key] = name
    monkeypatch.setattr(PersistentTopic, "add_producer", add_once_failing)

    def test(core, client):
        [error] = producer(client)
        assert error.error == pb.UnknownError
        caplog.clear()  # the injected fault's one line
        [retry] = producer(client, request_id=7)
        assert isinstance(retry, ev.ProducerSuccess) and retry.producer_name == "p"
    run(test)


def test_a_producer_id_already_created_answers_its_success_again():
    def test(core, client):
        assert isinstance(producer(client)[0], ev.ProducerSuccess)
        [again] = producer(client, request_id=8, name="other")
        assert isinstance(again, ev.ProducerSuccess) and (again.request_id, again.producer_name) == (8, "p")
    run(test)
