"""pulsar-proxy:P/B: the spec parser, the proxy's plan and configuration, the pair's version, the
configuration it refuses, Maven's other artifact, observations of a pair kept apart; then, slow, a
real proxy in front of a real standalone (both from the Maven cache) runs a few cases and leaves
nothing behind."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conformance.errors import TargetError, Unsupported, UsageError
from conformance.record import observed_path, record
from conformance.results import ResultRecord
from conformance.targets import maven, proxy, standalone
from conformance.targets.process import live_pids
from conformance.targets.proxy import PulsarProxyTarget, parse_pair, proxy_plan
from conformance.targets.registry import known_names, make_target
from spec.versions import Proxied, parse_release

# The proxy release Maven's repository serves nearest 4.0.7 (4.0.7's own pulsar-proxy is not served),
# and the broker the suite's observations are of.
PROXY_VERSION = os.environ.get("PULSAR_CONFORMANCE_PROXY_VERSION", "4.0.8")
BROKER_VERSION = standalone.DEFAULT_VERSION


# -- the target's name -------------------------------------------------------------------------------

def test_the_registry_builds_a_pair_named_for_both_releases():
    target = make_target("pulsar-proxy:4.0.8/4.0.7")
    assert isinstance(target, PulsarProxyTarget)
    assert (target.proxy_version, target.broker_version) == ("4.0.8", "4.0.7")
    assert target.name == "pulsar-proxy-4.0.8-on-4.0.7" and target.spec == "pulsar-proxy:4.0.8/4.0.7"
    assert target.broker.pulsar_version == "4.0.7" and target.broker.name == "pulsar-proxy-4.0.8-on-4.0.7-broker"
    assert "pulsar-proxy:PROXY_VERSION/BROKER_VERSION" in known_names()


@pytest.mark.parametrize("spec", ["pulsar-proxy", "pulsar-proxy:", "pulsar-proxy:4.0.8", "pulsar-proxy:4.0.8/",
                                  "pulsar-proxy:/4.0.7", "pulsar-proxy:4.0.8/4.0.7/3.0.2", "pulsar-proxy:4.0/4.0.7",
                                  "pulsar-proxy:4.0.8/latest"])
def test_a_malformed_pair_is_a_usage_error_that_shows_the_form(spec):
    with pytest.raises(UsageError, match=r"pulsar-proxy:"):
        make_target(spec)


def test_parse_pair_names_the_proxy_first():
    assert parse_pair("3.0.0/4.0.7") == ("3.0.0", "4.0.7")


# -- the proxy's launch ---------------------------------------------------------------------------------

def test_the_plan_runs_the_proxy_starter_with_bin_pulsars_options_and_its_own_config(tmp_path):
    plan = proxy_plan("4.0.8", java="/usr/bin/java", data_dir=tmp_path, service_port=1111, web_port=2222,
                      broker_service_url="pulsar://127.0.0.1:3333", broker_web_url="http://127.0.0.1:4444")
    argv = list(plan.argv)
    assert argv[0] == "/usr/bin/java" and f"@{tmp_path / 'proxy-classpath.args'}" in argv
    main = argv.index(proxy.MAIN_CLASS)
    assert proxy.MAIN_CLASS == "org.apache.pulsar.proxy.server.ProxyServiceStarter"
    assert argv[main + 1:] == ["-c", str(tmp_path / "proxy.conf")]
    assert "-Djava.net.preferIPv4Stack=true" in argv and f"-Djava.io.tmpdir={tmp_path / 'tmp'}" in argv
    assert not any("bookkeeper" in option for option in argv)
    assert (plan.service_url, plan.admin_url) == ("pulsar://127.0.0.1:1111", "http://127.0.0.1:2222")


def test_the_proxy_reaches_the_broker_by_url_on_loopback_without_a_metadata_store(tmp_path):
    config = proxy_plan("4.0.8", java="java", data_dir=tmp_path, service_port=1, web_port=2,
                        broker_service_url="pulsar://127.0.0.1:3", broker_web_url="http://127.0.0.1:4").config
    assert config["brokerServiceURL"] == "pulsar://127.0.0.1:3" and config["brokerWebServiceURL"] == "http://127.0.0.1:4"
    assert config["metadataStoreUrl"] == config["configurationMetadataStoreUrl"] == ""
    assert config["bindAddress"] == config["advertisedAddress"] == "127.0.0.1"
    assert (config["servicePort"], config["webServicePort"]) == ("1", "2")
    assert config["authenticationEnabled"] == "false"
    # a client's connection through the proxy goes to the broker's port, which is chosen per start
    assert config["brokerProxyAllowedTargetPorts"] == "*"


# -- what it detects and what it refuses -------------------------------------------------------------------

def test_the_version_joins_the_brokers_rest_answer_and_the_proxys_connected():
    target = PulsarProxyTarget("4.0.8", "3.0.2")
    target.versions.update(binary="Pulsar Server4.0.8", rest="3.0.2")
    assert target.version == "3.0.2 via proxy 4.0.8"
    assert parse_release(target.version) == Proxied((3, 0, 2), (4, 0, 8))


def test_without_the_rest_answer_the_broker_is_the_one_detected_directly():
    target = PulsarProxyTarget("3.0.0", "4.0.7")
    target.versions.update(binary="Pulsar Server3.0.0")
    target.broker.versions.update(rest="4.0.7")
    assert target.version == "4.0.7 via proxy 3.0.0"


def test_a_case_that_turns_authentication_on_is_unsupported_not_wrong():
    target = PulsarProxyTarget("4.0.8", "4.0.7")
    with pytest.raises(Unsupported, match="authenticationEnabled=true"):
        target._configure({"authenticationEnabled": "true", "superUserRoles": "admin"})


def test_describe_says_both_releases():
    info = PulsarProxyTarget("4.0.8", "3.0.2").describe()
    assert info["kind"] == "pulsar-proxy" and info["release"] == "3.0.2 via proxy 4.0.8"
    assert (info["proxy_release"], info["broker_release"]) == ("4.0.8", "3.0.2")
    assert "pulsar-proxy:4.0.8" in info["launch"] and "pulsar-broker:3.0.2" in info["launch"]


# -- Maven: the proxy's artifact beside the broker's ---------------------------------------------------------

def test_the_proxys_pom_asks_for_pulsar_proxy_under_the_releases_bom():
    pom = maven.pom_text("4.0.8", maven.PROXY_ARTIFACT)
    assert "<artifactId>pulsar-proxy</artifactId><version>4.0.8</version>" in pom
    assert "<artifactId>pulsar</artifactId><version>4.0.8</version>" in pom and "<scope>import</scope>" in pom
    assert maven.pom_text("4.0.7") == maven.pom_text("4.0.7", maven.BROKER_ARTIFACT)  # the broker's is unchanged
    assert "<artifactId>pulsar-broker</artifactId>" in maven.pom_text("4.0.7")


def test_a_cached_proxy_classpath_is_reused_and_not_taken_for_the_brokers(tmp_path):
    jars = [tmp_path / "pulsar-proxy-4.0.8.jar", tmp_path / "dep.jar"]
    for jar in jars:
        jar.write_text("")
    (tmp_path / "classpaths").mkdir()
    (tmp_path / "classpaths" / "pulsar-proxy-4.0.8.txt").write_text(os.pathsep.join(map(str, jars)))
    found = maven.resolve("4.0.8", cache=tmp_path, maven="/nonexistent/mvn", artifact=maven.PROXY_ARTIFACT)
    assert found.jars == tuple(jars) and found.artifact == "pulsar-proxy" and found.resolved_s == 0.0
    assert maven.read_classpath(tmp_path / "classpaths" / "pulsar-proxy-4.0.8.txt", "4.0.8") is None


def test_a_proxy_release_maven_lacks_is_named_as_the_proxys():
    output = "[ERROR] Could not find artifact org.apache.pulsar:pulsar-proxy:jar:4.0.7 in central"
    reason = maven.resolution_failure("4.0.7", output, maven.PROXY_ARTIFACT)
    assert reason.startswith("Apache Pulsar's pulsar-proxy 4.0.7 is not served by the Maven repository")


def _m2_jar(cache: Path, module: str, version: str) -> None:
    folder = cache / "m2" / "org" / "apache" / "pulsar" / module / version
    folder.mkdir(parents=True)
    (folder / f"{module}-{version}.jar").write_text("")


def test_a_pinned_module_is_declared_before_the_bom_and_named_in_the_classpath_file():
    pom = maven.pom_text("4.0.8", maven.PROXY_ARTIFACT, {"pulsar-opentelemetry": "4.0.7"})
    assert pom.index("<artifactId>pulsar-opentelemetry</artifactId><version>4.0.7</version>") < \
        pom.index("<scope>import</scope>")
    assert maven.classpath_name("4.0.8", maven.PROXY_ARTIFACT, {"pulsar-opentelemetry": "4.0.7",
                                                                "jetcd-core-shaded": "4.0.7"}) == \
        "pulsar-proxy-4.0.8+jetcd-core-shaded-4.0.7+pulsar-opentelemetry-4.0.7"
    assert maven.classpath_name("4.0.7") == "pulsar-broker-4.0.7"


def test_a_stand_in_is_the_newest_of_the_same_line_in_the_local_repository(tmp_path):
    for version in ("4.0.6", "4.0.7", "4.2.4", "3.3.5"):
        _m2_jar(tmp_path, "pulsar-opentelemetry", version)
    (tmp_path / "m2/org/apache/pulsar/pulsar-opentelemetry/4.0.9").mkdir()  # a failed download: no jar
    assert proxy.stand_ins("4.0.8", ["pulsar-opentelemetry", "jetcd-core-shaded"], tmp_path) == \
        {"pulsar-opentelemetry": "4.0.7"}


def test_a_leaf_module_maven_lacks_is_pinned_to_its_stand_in(tmp_path, monkeypatch):
    for module in proxy.LEAF_MODULES:
        _m2_jar(tmp_path, module, "4.0.7")
    asked = []

    def resolve(version, *, pins=None, **kwargs):
        asked.append(pins)
        if not pins:
            raise TargetError(maven.resolution_failure(
                version, "[ERROR] Could not find artifact org.apache.pulsar:jetcd-core-shaded:jar:4.0.8 in central",
                maven.PROXY_ARTIFACT))
        return "classpath"

    monkeypatch.setattr(maven, "resolve", resolve)
    assert proxy.resolve_proxy("4.0.8", cache=tmp_path) == (
        "classpath", {"jetcd-core-shaded": "4.0.7", "pulsar-opentelemetry": "4.0.7"})
    assert asked == [None, {"jetcd-core-shaded": "4.0.7", "pulsar-opentelemetry": "4.0.7"}]


def test_any_other_missing_module_is_maven_s_error(tmp_path, monkeypatch):
    def resolve(version, **kwargs):
        raise TargetError(maven.resolution_failure(
            version, "[ERROR] Could not find artifact org.apache.pulsar:pulsar-common:jar:4.0.8 in central",
            maven.PROXY_ARTIFACT))

    monkeypatch.setattr(maven, "resolve", resolve)
    with pytest.raises(TargetError, match="pulsar-common:jar:4.0.8"):
        proxy.resolve_proxy("4.0.8", cache=tmp_path)


def test_a_pinned_classpath_resolved_before_is_reused_without_maven(tmp_path):
    jars = [tmp_path / "pulsar-proxy-4.0.8.jar", tmp_path / "pulsar-opentelemetry-4.0.7.jar"]
    for jar in jars:
        jar.write_text("")
    (tmp_path / "classpaths").mkdir()
    name = "pulsar-proxy-4.0.8+pulsar-opentelemetry-4.0.7"
    (tmp_path / "classpaths" / f"{name}.txt").write_text(os.pathsep.join(map(str, jars)))
    found, pins = proxy.resolve_proxy("4.0.8", cache=tmp_path, maven_executable="/nonexistent/mvn")
    assert found.jars == tuple(jars) and pins == {"pulsar-opentelemetry": "4.0.7"}


# -- observations of a pair are kept apart -----------------------------------------------------------------

def _record(version: str, case_id: str) -> ResultRecord:
    return ResultRecord(schema_version=2, run_id="r", timestamp="2026-01-01T00:00:00Z", case_id=case_id,
                        row_id=case_id.split("[")[0], pip="344", table="t", grade="MUST", era="any", api="binary",
                        target="x", target_version=version, driver="wire", verdict="passed", reason="",
                        expected=None, actual={"kind": "Partitions"}, failing_step=None, duration_s=0.1, source=[],
                        namespace="public/c1")


def test_a_pairs_observations_go_to_a_file_of_their_own(tmp_path):
    assert observed_path("3.0.2 via proxy 4.0.8", tmp_path) == tmp_path / "pulsar-proxy-4.0.8-on-3.0.2.jsonl"
    assert observed_path("3.0.2", tmp_path) == tmp_path / "pulsar-3.0.2.jsonl"
    written = record([_record("3.0.2 via proxy 4.0.8", "a[binary]"), _record("3.0.2", "b[binary]")], tmp_path)
    assert sorted(Path(p).name for p in written) == ["pulsar-3.0.2.jsonl", "pulsar-proxy-4.0.8-on-3.0.2.jsonl"]
    line = json.loads((tmp_path / "pulsar-proxy-4.0.8-on-3.0.2.jsonl").read_text())
    assert line["release"] == "3.0.2 via proxy 4.0.8" and line["case_id"] == "a[binary]"
    assert parse_release(line["release"]) == Proxied((3, 0, 2), (4, 0, 8))


# -- Apache Pulsar's proxy in front of its standalone (from the Maven cache) --------------------------------

def _cached(artifact: str, version: str) -> bool:
    """A classpath of ``artifact`` ``version`` in the cache, with pins or without."""
    return any(maven.read_classpath(file, version, artifact) is not None
               for file in (maven.cache_dir() / "classpaths").glob(f"{artifact}-{version}*.txt"))


needs_both = pytest.mark.skipif(
    not (_cached(maven.PROXY_ARTIFACT, PROXY_VERSION) and _cached(maven.BROKER_ARTIFACT, BROKER_VERSION)),
    reason=f"Apache Pulsar's proxy {PROXY_VERSION} or broker {BROKER_VERSION} is not in the Maven cache; "
           f"`python -m conformance run --target pulsar-proxy:{PROXY_VERSION}/{BROKER_VERSION}` resolves both")


def _our_data_dirs() -> set:
    import tempfile
    return {p for p in Path(tempfile.gettempdir()).glob(f"{standalone.DATA_PREFIX}*")
            if (p / standalone.OWNER_FILE).is_file() and (p / standalone.OWNER_FILE).read_text() == str(os.getpid())}


@pytest.mark.slow
@needs_both
@pytest.mark.timeout(600)
def test_a_same_line_pair_runs_the_proxy_rows_and_leaves_nothing(tmp_path):
    from conformance.runner import run

    before, running = _our_data_dirs(), set(live_pids())
    out = tmp_path / "out"
    run([f"pulsar-proxy:{PROXY_VERSION}/{BROKER_VERSION}"], pips={"344"},
        keyword="pip344-proxy-flag-001 or pip344-proxy-field6-004 or pip344-proxy-field6-005 or pip344-proxy-rest "
                "or pip344-produce-006-base-name-creation-on-wire",  # a producer attached through the proxy
        out_dir=out, stream=open(os.devnull, "w"))
    records = [json.loads(line) for f in (out / "results").glob("*.jsonl") for line in f.read_text().splitlines()]
    verdicts = {r["case_id"]: r["verdict"] for r in records}
    assert len(verdicts) == 7 and all(v == "passed" for v in verdicts.values()), verdicts
    assert {r["target_version"] for r in records} == {f"{BROKER_VERSION} via proxy {PROXY_VERSION}"}
    env = (out / "allure-results" / "environment.properties").read_text()
    assert "proxy_start_s=" in env and "broker_start_s=" in env
    assert _our_data_dirs() == before and set(live_pids()) == running
