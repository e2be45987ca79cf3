"""--broker-config: testing a broker the harness did not start and cannot configure (targets/url.py,
declared config)."""

from __future__ import annotations

import io
import json

import pytest

from conformance.__main__ import main
from conformance.errors import Unsupported, UsageError
from conformance.reasons import kind_of
from conformance.runner import run
from conformance.targets.pulsar_lite import PulsarLiteTarget
from conformance.targets.url import UrlTarget, parse_broker_config


def test_broker_config_is_read_from_files_and_pairs_and_a_typo_is_an_error(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("# what my broker runs with\nallowAutoTopicCreationType=partitioned\n\n"
                    "defaultNumPartitions = 4\nbrokerServicePort=6650\n")
    assert parse_broker_config([str(conf), "defaultNumPartitions=3", "allowAutoTopicCreation=False"]) == {
        "allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": "3", "brokerServicePort": "6650",
        "allowAutoTopicCreation": "false"}
    with pytest.raises(UsageError, match="defaultNumPartitions='three'"):
        parse_broker_config(["defaultNumPartitions=three"])
    with pytest.raises(UsageError, match="neither key=value nor a readable file"):
        parse_broker_config([str(tmp_path / "missing.conf")])
    bad = tmp_path / "bad.conf"
    bad.write_text("allowAutoTopicCreation\n")
    with pytest.raises(UsageError, match="bad.conf:1: .* is not key=value"):
        parse_broker_config([str(bad)])


def test_a_broker_without_admin_api_runs_the_cases_whose_config_is_its_own():
    target = UrlTarget("pulsar://127.0.0.1:6650", declared={"allowAutoTopicCreationType": "partitioned",
                                                            "defaultNumPartitions": "3"})
    target.has_admin = False
    target.configure({"allowAutoTopicCreation": "true", "allowAutoTopicCreationType": "partitioned",
                      "defaultNumPartitions": "3", "maxNumPartitionsPerPartitionedTopic": "0"})
    with pytest.raises(Unsupported, match=r"runs with allowAutoTopicCreationType=partitioned, "
                                          r"defaultNumPartitions=3 .* allowAutoTopicCreationType=non-partitioned, "
                                          r"defaultNumPartitions=1") as raised:
        target.configure({"allowAutoTopicCreationType": "non-partitioned", "defaultNumPartitions": "1"})
    assert raised.value.kind == "config-differs"
    plain = UrlTarget("pulsar://127.0.0.1:6650")
    plain.has_admin = False
    plain.configure({"allowAutoTopicCreation": "true", "enablePersistentTopics": "True"})  # Pulsar's defaults
    with pytest.raises(Unsupported, match="allowAutoTopicCreation=true .* allowAutoTopicCreation=false"):
        plain.configure({"allowAutoTopicCreation": "false"})


def test_broker_config_without_a_url_target_is_a_usage_error(capsys):
    assert main(["run", "--target", "reference", "--broker-config", "defaultNumPartitions=3",
                 "--out", "/tmp/unused"]) == 2
    assert "give it with --target url:" in capsys.readouterr().out


def test_pulsar_lite_started_on_its_own_is_tested_through_its_url(tmp_path):
    broker = PulsarLiteTarget(log_dir=tmp_path / "broker", start_timeout=20, timeout=5)
    broker.start()  # as an implementer would run it: the harness below only has its pulsar:// URL
    try:
        out = io.StringIO()
        code = run([f"url:{broker.service_url}"], keyword="pip344-seed-new or pip344-matrix-008",
                   out_dir=tmp_path / "run", timeout=5, stream=out, broker_config={"maxMessageSize": "5242880"})
        summary = out.getvalue()
    finally:
        broker.stop()
    records = [json.loads(line) for path in (tmp_path / "run" / "results").glob("*.jsonl")
               for line in path.read_text().splitlines()]
    verdicts = {r["case_id"]: (r["verdict"], kind_of(r["reason"])) for r in records}
    # a topic the case needs is made by a PRODUCER (auto-creation on, non-partitioned: Pulsar's defaults)
    assert verdicts["pip344-seed-new-001-param-true[binary]"] == ("passed", None)
    assert verdicts["pip344-seed-new-001-param-true[rest]"] == ("unsupported", "no-admin-api")
    # a partitioned topic can be made only through the admin API
    assert verdicts["pip344-seed-new-002-param-true[binary]"] == ("unsupported", "no-admin-api")
    # rows that turn auto-creation off, or make it partitioned, need a config the broker does not run with
    assert sum(1 for verdict in verdicts.values() if verdict == ("unsupported", "config-differs")) == 6
    # a missing namespace needs no setup at all: the broker's answer is judged
    assert verdicts["pip344-matrix-008-param-true[binary]"][0] == "failed"
    assert code == 1
    line = next(text for text in summary.splitlines() if text.strip().startswith("url-127.0.0.1-"))
    assert "admin API no" in line and "config differs from the broker's: " in line and "needs the admin API: " in line


def test_serving_namespaces_nobody_created_is_detected_not_declared():
    from pulsar_codec import events, pulsar_api_pb2 as pb
    from tests.conformance.helpers import SILENCE, FakePulsarServer, claiming

    def refusing(event):
        if isinstance(event, events.Lookup):
            return [events.LookupResponse(request_id=event.request_id, response=pb.CommandLookupTopicResponse.Failed,
                                          error=pb.TopicNotFound, message="Namespace not found")]
        return SILENCE

    for handler, implicit in ((claiming(lambda e: SILENCE), True), (refusing, False)):
        server = FakePulsarServer(handler)
        try:
            target = UrlTarget(server.url, timeout=2)
            target.start()
            assert (target.has_admin, target.implicit_namespaces) == (False, implicit)
            lookups = [e.topic for e in server.received if isinstance(e, events.Lookup)]
            assert len(lookups) == 1 and lookups[0].startswith("persistent://probe-")
        finally:
            server.close()


def test_an_implementers_known_divergences_are_counted_apart(tmp_path):
    known = tmp_path / "my-broker.yaml"
    known.write_text(
        "schema: 1\ntarget: my-broker\ntitle: \"a broker under development\"\ndivergences:\n"
        "  - id: missing-namespace-served\n    cases: [pip344-matrix-008-param-true]\n    releases: \"*\"\n"
        "    kind: unimplemented\n    summary: \"namespaces are not checked yet\"\n    evidence: [\"seen in CI\"]\n",
        encoding="utf-8")
    broker = PulsarLiteTarget(log_dir=tmp_path / "broker", start_timeout=20, timeout=5)
    broker.start()
    try:
        out = io.StringIO()
        code = run([f"url:{broker.service_url}"], keyword="pip344-matrix-008-param-true", out_dir=tmp_path / "run",
                   timeout=5, stream=out, known_divergences=known)
    finally:
        broker.stop()
    records = [json.loads(line) for path in (tmp_path / "run" / "results").glob("*.jsonl")
               for line in path.read_text().splitlines()]
    failed = [r for r in records if r["verdict"] == "failed"]
    assert failed and all(r["known_divergence"] == "missing-namespace-served" for r in failed)
    assert code == 0, out.getvalue()  # the only failures are listed ones


def test_known_divergences_need_a_url_target_and_an_existing_file(tmp_path, capsys):
    assert main(["run", "--target", "reference", "--known-divergences", str(tmp_path / "x.yaml"),
                 "--out", str(tmp_path / "o")]) == 2
    assert "--known-divergences is for a broker given by --target url:" in capsys.readouterr().out
    assert main(["run", "--target", "url:pulsar://127.0.0.1:1", "--known-divergences", str(tmp_path / "x.yaml"),
                 "--out", str(tmp_path / "o")]) == 2
    assert "no such file" in capsys.readouterr().out
