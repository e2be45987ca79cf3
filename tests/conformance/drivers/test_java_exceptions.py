"""conformance/drivers/java_exceptions.py: a Java exception is an outcome, a timeout or a driver bug."""

import pytest

from conformance.drivers.external import Raised
from conformance.drivers.java_exceptions import JavaDriverBug, is_api_exception, java_name, outcome_of
from conformance.errors import Indefinite
from model.java_client import JAVA_ADMIN_EXCEPTIONS, JAVA_CLIENT_EXCEPTIONS
from model.outcomes import ClientError

API = "org.apache.pulsar.client.api.PulsarClientException"
ADMIN = "org.apache.pulsar.client.admin.PulsarAdminException"


@pytest.mark.parametrize("binary_name, outcome", [
    (f"{API}$NotFoundException", "PulsarClientException.NotFoundException"),
    (f"{API}$TopicDoesNotExistException", "PulsarClientException.TopicDoesNotExistException"),
    (f"{API}$FeatureNotSupportedException", "PulsarClientException.FeatureNotSupportedException"),
    (f"{API}$BrokerMetadataException", "PulsarClientException.BrokerMetadataException"),
    (API, "PulsarClientException"),
    (f"{ADMIN}$NotFoundException", "PulsarAdminException.NotFoundException"),
    (f"{ADMIN}$PreconditionFailedException", "PulsarAdminException.PreconditionFailedException"),
])
def test_client_and_admin_exceptions_are_outcomes_named_as_java_source_names_them(binary_name, outcome):
    assert outcome_of(Raised(binary_name, "why"), "call") == ClientError(outcome)


def test_every_exception_the_model_expects_is_one_the_mapping_produces():
    expected = set(JAVA_CLIENT_EXCEPTIONS.values()) | set(JAVA_ADMIN_EXCEPTIONS.values())
    for name in expected:
        outer, _, inner = name.partition(".")
        package = "client.api" if outer == "PulsarClientException" else "client.admin"
        binary = f"org.apache.pulsar.{package}.{outer}" + (f"${inner}" if inner else "")
        assert outcome_of(Raised(binary, None), "call") == ClientError(name)


@pytest.mark.parametrize("binary_name", ["java.util.concurrent.TimeoutException", f"{API}$TimeoutException",
                                         f"{ADMIN}$TimeoutException"])
def test_timeouts_are_indefinite(binary_name):
    with pytest.raises(Indefinite, match="TimeoutException"):
        outcome_of(Raised(binary_name, None), "getPartitionsForTopic(t, false)")


@pytest.mark.parametrize("binary_name", ["java.lang.NullPointerException", "java.lang.IllegalStateException",
                                         "org.apache.pulsar.client.api.PulsarClientExceptionX",
                                         "com.example.PulsarClientException$NotFoundException"])
def test_anything_else_is_a_driver_bug_naming_the_class(binary_name):
    with pytest.raises(JavaDriverBug, match=binary_name.replace("$", r"\$")):
        outcome_of(Raised(binary_name, "boom", ("java.io.IOException",)), "call")
    assert not is_api_exception(binary_name)


def test_java_name():
    assert java_name("a.b.Outer$Inner$Deeper") == "Outer.Inner.Deeper"
    assert java_name("Plain") == "Plain"
