"""conformance/targets/url.py and registry.py: naming targets."""

import pytest

from conformance.errors import UsageError
from conformance.targets.pulsar_lite import PulsarLiteTarget
from conformance.targets.reference import ReferenceTarget
from conformance.targets.registry import make_target
from conformance.targets.url import UrlTarget, parse_url_spec


def test_url_specs():
    assert parse_url_spec("pulsar://h:6650,http://h:8080/") == ("pulsar://h:6650", "http://h:8080")
    assert parse_url_spec("pulsar://h:6650") == ("pulsar://h:6650", None)
    for bad in ("http://h:8080", "pulsar://h", "pulsar://h:1,ftp://x"):
        with pytest.raises(UsageError, match="url:pulsar://HOST:PORT"):
            parse_url_spec(bad)


def test_registry_builds_by_name_and_lists_names_on_error():
    assert isinstance(make_target("reference"), ReferenceTarget)
    assert isinstance(make_target("pulsar-lite"), PulsarLiteTarget)
    target = make_target("url:pulsar://127.0.0.1:6650,http://127.0.0.1:8080")
    assert isinstance(target, UrlTarget) and target.name == "url-127.0.0.1-6650"
    with pytest.raises(UsageError, match="unknown target 'pulsar'; known targets: reference, pulsar-lite, url:"):
        make_target("pulsar")


def test_url_target_that_is_not_there_cannot_start():
    from conformance.errors import TargetError
    target = make_target("url:pulsar://127.0.0.1:1", timeout=1)
    with pytest.raises(TargetError, match="no CONNECTED"):
        target.start()


def test_url_target_detects_and_puts_the_brokers_own_config_back():
    from conformance.errors import Unsupported
    from conformance.targets.base import ERA_PRE_PIP344
    from tests.conformance.helpers import SILENCE, FakeAdminServer, FakePulsarServer

    wire = FakePulsarServer(lambda e: SILENCE, flag5=False, server_version="Pulsar Server3.0.5")
    admin = FakeAdminServer({
        ("GET", "/admin/v2/brokers/version"): (200, '"3.0.5"'),
        ("GET", "/admin/v2/brokers/configuration/runtime"): (200, {"allowAutoTopicCreation": "false",
                                                                    "maxMessageSize": "5242880"}),
    })
    try:
        target = make_target(f"url:{wire.url},{admin.url}", timeout=2)
        target.start()
        assert target.version == "3.0.5" and target.versions["binary"] == "Pulsar Server3.0.5"
        assert target.era == ERA_PRE_PIP344 and target.has_admin
        target.configure({"allowAutoTopicCreation": "true"})
        with pytest.raises(Unsupported, match="maxMessageSize is not dynamic"):
            target.configure({"maxMessageSize": "1024"})
        target.configure({"maxMessageSize": "5242880"})  # already the broker's value: fine
        target.stop()
        posts = [path for method, path, _ in admin.requests if method == "POST"]
        assert posts == ["/admin/v2/brokers/configuration/allowAutoTopicCreation/true",
                         "/admin/v2/brokers/configuration/allowAutoTopicCreation/false"]  # its own value back
    finally:
        wire.close()
        admin.close()
