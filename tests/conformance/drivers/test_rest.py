"""conformance/drivers/rest.py against a tiny fake admin app (httpx.MockTransport)."""

import json

import httpx
import pytest

from conformance.drivers.rest import RestDriver
from conformance.errors import Indefinite, NoContact, ProtocolViolation, Unsupported
from model import ops
from model.outcomes import Done, LookupAnswer, OverrideShown, Partitions, RestError, TopicList

T = "persistent://public/c1/my topic"


def _driver(app):
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return app(request)

    return RestDriver("http://broker:8080", transport=httpx.MockTransport(handler), timeout=2), seen


def test_partitioned_metadata_ok_and_query_parameter_only_when_set():
    driver, seen = _driver(lambda r: httpx.Response(200, json={"partitions": 3}))
    assert driver.perform(ops.GetPartitionedMetadata(T, "rest", None)) == Partitions(3)
    assert driver.perform(ops.GetPartitionedMetadata(T, "rest", False)) == Partitions(3)
    assert driver.perform(ops.GetPartitionedMetadata(T, "rest", True)) == Partitions(3)
    assert seen[0].url.raw_path == b"/admin/v2/persistent/public/c1/my%20topic/partitions"
    assert seen[1].url.params["checkAllowAutoCreation"] == "false"
    assert seen[2].url.params["checkAllowAutoCreation"] == "true"
    assert seen[0].method == "GET"


def test_errors_carry_status_and_pulsar_reason_or_raw_text():
    driver, _ = _driver(lambda r: httpx.Response(404, json={"reason": f"Topic {T} not found"}))
    assert driver.perform(ops.GetPartitionedMetadata(T, "rest", False)) == RestError(404, f"Topic {T} not found")
    driver, _ = _driver(lambda r: httpx.Response(500, text="<html>boom</html>"))
    assert driver.perform(ops.CreateNamespace("public/c1")) == RestError(500, "<html>boom</html>")


def test_an_unexpected_server_error_is_its_message_without_the_stack_trace():
    trace = ("\n --- An unexpected error occurred in the server ---\n\nMessage: Default number of partitions should "
             "be more than 0\n\nStacktrace:\n\njava.lang.IllegalArgumentException: Default number of partitions "
             "should be more than 0\n\tat com.google.common.base.Preconditions.checkArgument(Preconditions.java:143)\n")
    driver, _ = _driver(lambda r: httpx.Response(500, json={"reason": trace}))
    assert driver.perform(ops.GetPartitionedMetadata(T, "rest", True)) == RestError(
        500, "Default number of partitions should be more than 0")


def test_a_relayed_client_error_has_its_request_id_and_addresses_replaced():
    relayed = ('{"errorMsg":"Namespace not found","reqId":1343608233031677873, "remote":"127.0.0.1/127.0.0.1:47891", '
               '"local":"/127.0.0.1:48524"}')
    driver, _ = _driver(lambda r: httpx.Response(500, json={"reason": relayed}))
    assert driver.perform(ops.CreateNonPartitionedTopic(T)) == RestError(
        500, '{"errorMsg":"Namespace not found","reqId":<id>, "remote":"<address>", "local":"<address>"}')


def test_admin_calls_use_pulsar_paths_and_bodies():
    driver, seen = _driver(lambda r: httpx.Response(204) if r.url.path != "/admin/v2/clusters"
                           else httpx.Response(200, json=["standalone"]))
    assert driver.perform(ops.CreateTenant("t1")) == Done()
    assert driver.perform(ops.CreateNamespace("t1/n1")) == Done()
    assert driver.perform(ops.SetAutoTopicCreation("t1/n1", True, "partitioned", 4)) == Done()
    assert driver.perform(ops.RemoveAutoTopicCreation("t1/n1")) == Done()
    assert driver.perform(ops.CreatePartitionedTopic("persistent://t1/n1/p", 3)) == Done()
    assert driver.perform(ops.CreateNonPartitionedTopic("non-persistent://t1/n1/np")) == Done()
    assert driver.perform(ops.DeletePartitionedTopic("persistent://t1/n1/p")) == Done()
    assert driver.perform(ops.DeleteNamespace("t1/n1")) == Done()
    assert driver.perform(ops.DeleteTopic("persistent://t1/n1/p-partition-0")) == Done()
    assert driver.perform(ops.SetBrokerConfig("allowAutoTopicCreation", "false")) == Done()
    calls = [(r.method, r.url.path, r.content.decode()) for r in seen if r.url.path != "/admin/v2/clusters"]
    assert calls[0][:2] == ("PUT", "/admin/v2/tenants/t1")
    assert json.loads(calls[0][2]) == {"adminRoles": [], "allowedClusters": ["standalone"]}
    assert calls[1] == ("PUT", "/admin/v2/namespaces/t1/n1", "")
    assert calls[2][:2] == ("POST", "/admin/v2/namespaces/t1/n1/autoTopicCreation")
    assert json.loads(calls[2][2]) == {"allowAutoTopicCreation": True, "topicType": "partitioned",
                                       "defaultNumPartitions": 4}
    assert calls[3][:2] == ("DELETE", "/admin/v2/namespaces/t1/n1/autoTopicCreation")
    assert calls[4] == ("PUT", "/admin/v2/persistent/t1/n1/p/partitions", "3")
    assert calls[5][:2] == ("PUT", "/admin/v2/non-persistent/t1/n1/np")
    assert calls[6][:2] == ("DELETE", "/admin/v2/persistent/t1/n1/p/partitions")
    assert calls[7][:2] == ("DELETE", "/admin/v2/namespaces/t1/n1")
    assert calls[8][:2] == ("DELETE", "/admin/v2/persistent/t1/n1/p-partition-0")
    assert calls[9][:2] == ("POST", "/admin/v2/brokers/configuration/allowAutoTopicCreation/false")


def test_a_raw_override_body_is_sent_as_written():
    driver, seen = _driver(lambda r: httpx.Response(204))
    body = '{"topicType": true,  "allowAutoTopicCreation": false}'
    assert driver.perform(ops.SetAutoTopicCreation("t1/n1", body=body)) == Done()
    assert seen[0].content.decode() == body
    assert seen[0].headers["content-type"] == "application/json"


def test_a_binding_error_is_jacksons_message_without_its_location():
    message = "Cannot deserialize value of type `boolean` from String \"yes\": only \"true\" or \"false\" recognized"
    located = message + ('\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1, '
                         'column: 27] (through reference chain: Impl["allowAutoTopicCreation"])')
    driver, _ = _driver(lambda r: httpx.Response(400, text=located, headers={"content-type": "text/plain"}))
    assert driver.perform(ops.SetAutoTopicCreation("t1/n1", body='{"allowAutoTopicCreation": "yes"}')) == \
        RestError(400, message)


@pytest.mark.parametrize("answer,shown", [
    (httpx.Response(200, text=""), OverrideShown("")),  # Pulsar's answer when none is set
    (httpx.Response(204), OverrideShown("")),
    (httpx.Response(200, json={"topicType": "true", "allowAutoTopicCreation": False}),
     OverrideShown('{"allowAutoTopicCreation":false,"topicType":"true"}')),
    (httpx.Response(404, json={"reason": "Namespace does not exist"}), RestError(404, "Namespace does not exist")),
])
def test_the_override_is_read_back_as_canonical_json(answer, shown):
    driver, seen = _driver(lambda r: answer)
    assert driver.perform(ops.GetAutoTopicCreation("t1/n1")) == shown
    assert (seen[0].method, seen[0].url.path) == ("GET", "/admin/v2/namespaces/t1/n1/autoTopicCreation")


def test_an_override_that_is_not_an_object_is_a_protocol_violation():
    driver, _ = _driver(lambda r: httpx.Response(200, json=[1]))
    with pytest.raises(ProtocolViolation):
        driver.perform(ops.GetAutoTopicCreation("t1/n1"))


def test_listings_become_topic_sets():
    driver, seen = _driver(lambda r: httpx.Response(200, json=["persistent://a/b/x", "persistent://a/b/y"]))
    expected = TopicList(frozenset({"persistent://a/b/y", "persistent://a/b/x"}))
    assert driver.perform(ops.ListTopics("a/b")) == expected
    assert driver.perform(ops.ListPartitionedTopics("a/b", "non-persistent")) == expected
    assert [r.url.path for r in seen] == ["/admin/v2/persistent/a/b", "/admin/v2/non-persistent/a/b/partitioned"]


def test_lookup_answers_connect_or_redirect_without_following():
    driver, _ = _driver(lambda r: httpx.Response(200, json={"brokerUrl": "pulsar://x:6650"}))
    assert driver.perform(ops.Lookup(T, "rest")) == LookupAnswer("Connect", True)
    driver, seen = _driver(lambda r: httpx.Response(
        307, headers={"location": "http://other:8080/lookup/v2/topic/persistent/a/b/c?authoritative=true"}))
    assert driver.perform(ops.Lookup(T, "rest")) == LookupAnswer("Redirect", True)
    assert len(seen) == 1


def test_a_2xx_that_is_not_pulsar_json_is_a_protocol_violation():
    driver, _ = _driver(lambda r: httpx.Response(200, text="not json"))
    with pytest.raises(ProtocolViolation):
        driver.perform(ops.GetPartitionedMetadata(T, "rest", None))
    driver, _ = _driver(lambda r: httpx.Response(200, json={"partitons": 1}))
    with pytest.raises(ProtocolViolation):
        driver.perform(ops.GetPartitionedMetadata(T, "rest", None))


def test_timeouts_and_refusals_are_indefinite_not_failures():
    def slow(request):
        raise httpx.ReadTimeout("slow", request=request)

    driver, _ = _driver(slow)
    with pytest.raises(Indefinite, match="no answer"):
        driver.perform(ops.ListTopics("a/b"))

    def refused(request):
        raise httpx.ConnectError("refused", request=request)

    driver, _ = _driver(refused)
    with pytest.raises(NoContact, match="no connection to"):  # nothing reached the broker: asked again
        driver.perform(ops.ListTopics("a/b"))

    def reset(request):
        raise httpx.ReadError("Connection reset by peer", request=request)

    driver, _ = _driver(reset)
    with pytest.raises(Indefinite, match="not reachable") as raised:
        driver.perform(ops.ListTopics("a/b"))
    assert not isinstance(raised.value, NoContact), "sent on a connection that was made: it may have been read"


def test_binary_ops_are_unsupported_here():
    driver, _ = _driver(lambda r: httpx.Response(200))
    assert not driver.can_perform(ops.GetPartitionedMetadata(T, "binary", None))
    with pytest.raises(Unsupported):
        driver.perform(ops.Lookup(T, "binary"))
    with pytest.raises(Unsupported):
        driver.perform(ops.GetPartitionsForTopic(T))


def test_transcript_records_requests_and_answers():
    driver, _ = _driver(lambda r: httpx.Response(404, json={"reason": "Namespace not found"}))
    driver.perform(ops.ListTopics("a/b"))
    assert [e.direction for e in driver.transcript.entries] == [">>", "<<"]
    driver.reset()
    assert not driver.transcript
