"""drivers/native_errors.py: what the Go client's and the Rust crate's errors mean, as their drivers
report them (clients/go/values.go raisedOf, clients/rust/src/errors.rs)."""

import pytest

from conformance.drivers.external import Raised
from conformance.drivers.native_errors import NativeDriverBug, go_outcome_of, rust_outcome_of
from conformance.errors import Indefinite, NoContact
from model.outcomes import ClientError


@pytest.mark.parametrize("raised, outcome", [
    (Raised("*errors.fundamental", "TopicNotFound", ("*errors.fundamental",)), "TopicNotFound"),
    (Raised("*errors.fundamental", "server error: TopicNotFound: Topic does not exist", ()),
     "server error: TopicNotFound"),
    (Raised("*errors.fundamental", 'Code: 404, Reason: {"reason":"Topic not found"}', ()), "Code: 404"),
    (Raised("rest.Error", "code: 404 reason: Topic not found", ("rest.Error",)), "code: 404"),
    (Raised("*pulsar.Error", "failed to subscribe", ("*pulsar.Error", "pulsar.Result.InvalidTopicName")),
     "pulsar.InvalidTopicName"),
    (Raised("*errors.errorString", 'invalid topic name: persistent://public/ns/x-partition-y: strconv.Atoi: '
            'parsing "y": invalid syntax', ("*errors.withStack", "*strconv.NumError", "*errors.errorString")),
     "invalid topic name"),
    # a PARTITIONED_METADATA refused in a LOOKUP_RESPONSE frame, as Apache Pulsar's proxy answers it
    (Raised("*errors.errorString", "no partitioned metadata for topic{persistent://public/c1/t-partition-0} in "
            "lookup response", ("*errors.errorString",)), "no partitioned metadata in lookup response"),
])
def test_go_answers_are_outcomes(raised, outcome):
    assert go_outcome_of(raised, "lookup") == ClientError(outcome)


@pytest.mark.parametrize("raised, trouble", [
    (Raised("*net.OpError", "dial tcp 127.0.0.1:1: connect: connection refused", ("*net.OpError",)), NoContact),
    (Raised("*errors.errorString", "connection error", ()), NoContact),
    (Raised("main.timedOut", "TopicPartitions: no answer from the library within the request's timeout_ms", ()),
     Indefinite),
    (Raised("*errors.errorString", "request timed out", ()), Indefinite),
    (Raised("*errors.errorString", "something the library never says", ()), NativeDriverBug),
])
def test_go_trouble_is_no_answer(raised, trouble):
    with pytest.raises(trouble):
        go_outcome_of(raised, "lookup")


def test_rust_answers_name_the_variant_and_the_server_error():
    query = Raised("pulsar::error::ServiceDiscoveryError::Query", "service discovery error: Query(...)",
                   ("pulsar::error::Error::ServiceDiscovery", "pulsar::error::ServiceDiscoveryError::Query",
                    "ServerError::TopicNotFound"))
    assert rust_outcome_of(query, "lookup") == ClientError("ServiceDiscoveryError::Query(TopicNotFound)")
    refused = Raised("pulsar::error::ConnectionError::PulsarError", "Connection error: ...",
                     ("pulsar::error::Error::Connection", "pulsar::error::ConnectionError::PulsarError",
                      "ServerError::NotAllowedError"))
    assert rust_outcome_of(refused, "subscribe") == ClientError("ConnectionError::PulsarError(NotAllowedError)")


def test_rust_names_an_answer_frame_of_another_kind_by_its_type():
    # a PARTITIONED_METADATA refused in a LOOKUP_RESPONSE frame, as Apache Pulsar's proxy answers it
    unexpected = Raised("pulsar::error::ConnectionError::UnexpectedResponse",
                        "service discovery error: Connection error: Unexpected response from pulsar: BaseCommand { "
                        "r#type: LookupResponse, connect: None, lookup_topic_response: Some(CommandLookupTopicResponse "
                        "{ response: Some(Failed), error: Some(TopicNotFound) }) }",
                        ("pulsar::error::Error::ServiceDiscovery", "pulsar::error::ServiceDiscoveryError::Connection",
                         "pulsar::error::ConnectionError::UnexpectedResponse"))
    assert rust_outcome_of(unexpected, "lookup") == ClientError("ConnectionError::UnexpectedResponse(LookupResponse)")
    with pytest.raises(NativeDriverBug):  # no frame named: nothing the harness can call an answer
        rust_outcome_of(Raised(unexpected.cls, "Unexpected response from pulsar", unexpected.causes), "lookup")


@pytest.mark.parametrize("raised, trouble", [
    (Raised("pulsar::error::ConnectionError::Io", "Connection error: refused",
            ("pulsar::error::Error::Connection", "pulsar::error::ConnectionError::Io",
             "std::io::ErrorKind::ConnectionRefused")), NoContact),
    (Raised("tokio::time::error::Elapsed", "ProducerBuilder::build: no answer", ()), Indefinite),
    (Raised("pulsar::error::ConnectionError::Disconnected", "Connection error: Disconnected",
            ("pulsar::error::Error::Connection", "pulsar::error::ConnectionError::Disconnected")), Indefinite),
    (Raised("futures::stream::End", "the consumer's message stream ended", ()), Indefinite),
    (Raised("pulsar::error::Error::Custom", "error: topic not set", ("pulsar::error::Error::Custom",)), NativeDriverBug),
])
def test_rust_trouble_is_no_answer(raised, trouble):
    with pytest.raises(trouble):
        rust_outcome_of(raised, "lookup")
