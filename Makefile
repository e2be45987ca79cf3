# Two entry points a fresh clone can run: `make conformance` and `make test`.
# Everything they need is installed here, into .venv, when missing.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PROTO_SRC := pulsar_codec/pulsar_api.proto
PROTO_OUT := pulsar_codec/pulsar_api_pb2.py
REPORTS ?= reports/out
# reference-zk is the reference broker on a real ZooKeeper whose znodes the harness reads (PIP-157
# white-box rows); it needs Debian's zookeeper, installed by system-zookeeper below.
# pulsar-standalone:V is Apache Pulsar V itself, run from its Maven jars (cached outside the repo).
PULSAR_VERSION ?= 4.0.7
TARGETS ?= --target reference --target reference-zk --target pulsar-lite --target pulsar-standalone:$(PULSAR_VERSION)

APT_INSTALL := DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends
ZOOKEEPER_JAR := /usr/share/java/zookeeper.jar

.PHONY: install proto system-zookeeper system-maven pulsar-jars java-drivers system-protoc native-drivers test conformance conformance-secure cases \
	quality bench fuzz clean docker docker-stop docker-clean

include mk/reports.mk
include mk/docker.mk
include mk/image.mk
include mk/ci.mk

install: $(STAMP) $(PROTO_OUT)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,reports]'
	touch $(STAMP)

# The codec's protobuf module is generated from our own .proto with grpcio-tools, never committed.
$(PROTO_OUT): $(PROTO_SRC) $(STAMP)
	$(PY) -m grpc_tools.protoc -Ipulsar_codec --python_out=pulsar_codec $(PROTO_SRC)

proto: $(PROTO_OUT)

# A real ZooKeeper (Debian's package) for the zk: metadata store tests, the reference-zk conformance
# target and bench/bucketing.py.
system-zookeeper:
	@test -f $(ZOOKEEPER_JAR) || { apt-get update -qq && $(APT_INSTALL) zookeeper; }

# Maven resolves Apache Pulsar's jars and builds the Java client drivers (clients/java), which need a
# JDK (Debian's packages). The jars, Maven's local repository, each release's classpath and the built
# drivers go to ~/.cache/pulsar-conformance (PULSAR_CONFORMANCE_CACHE), never into the repository.
system-maven: system-java
	@command -v javac >/dev/null 2>&1 || { apt-get update -qq && $(APT_INSTALL) openjdk-17-jdk-headless; }
	@command -v mvn >/dev/null 2>&1 || { apt-get update -qq && $(APT_INSTALL) maven; }

# Apache Pulsar $(PULSAR_VERSION)'s broker and its dependencies, resolved once, and its class-data
# archive, written once by a start and stop of its standalone (conformance/targets/class_data.py),
# for the tests and `make conformance`.
pulsar-jars: install system-maven
	$(PY) -m conformance prepare $(PULSAR_VERSION)

# A run builds the client versions it lacks; this builds the ones the tests use.
java-drivers: install system-maven
	$(PY) -m conformance.drivers.java_build --client 4.0.13 --client 3.0.5 --admin 4.0.13

# The Go client's and the Rust crate's drivers (clients/go, clients/rust), built into the same cache with
# the machine's go and cargo; the crate compiles Pulsar's protocol with protoc (Debian's protobuf-compiler).
system-protoc:
	@command -v protoc >/dev/null 2>&1 || { apt-get update -qq && $(APT_INSTALL) protobuf-compiler; }

native-drivers: install system-protoc
	@command -v go >/dev/null 2>&1 && command -v cargo >/dev/null 2>&1 || \
	  { echo "native-drivers: the Go and Rust drivers need go (1.25 or later) and cargo on PATH"; exit 2; }
	$(PY) -m conformance.drivers.native_build --go 0.21.0 --rust 6.9.1

test: install system-zookeeper java-drivers native-drivers pulsar-jars $(REPORTS_TEST_NEEDS) $(CI_TEST_NEEDS)
	$(PY) -m pytest tests -q -p no:cacheprovider

# Runs every spec case against the reference broker (in memory and on ZooKeeper), pulsar-lite and
# Apache Pulsar $(PULSAR_VERSION), then the reports stage (the Spark job over every run so far and the
# single-file Allure HTML), whatever the run found. It exits with the run's code (docs/runner-contract.md):
# 0 when every verdict was expected (known divergences are recorded in spec/divergences/), 1 when a
# case failed unexpectedly, 3 when one had no answer, 2 for a harness or target error; a report that
# cannot be written exits 2 too.
conformance: install $(if $(findstring reference-zk,$(TARGETS)),system-zookeeper) system-java java-drivers native-drivers \
		node_modules $(if $(findstring pulsar-standalone,$(TARGETS)),pulsar-jars)
	@$(PY) -m conformance run $(TARGETS) --out $(REPORTS); code=$$?; \
	  $(MAKE) --no-print-directory report || { echo "conformance: the report stage failed"; exit 2; }; \
	  if [ $$code -ne 0 ]; then echo "conformance: exit $$code: unexpected verdicts; see $(REPORTS)/summary.md"; fi; \
	  exit $$code

# The whole suite through TLS and tokens (conformance/security.py): the targets the harness starts
# run every case with token authentication, authorization and TLS listeners, with a key, tokens
# and certificates made for the run; the verdicts must be the plain run's. Too long for make test.
SECURE_TARGETS ?= --target reference
conformance-secure: install system-java java-drivers $(if $(findstring pulsar-standalone,$(SECURE_TARGETS)),pulsar-jars)
	$(PY) -m conformance run $(SECURE_TARGETS) --secure --tls --out $(REPORTS)/secure

cases: install
	$(PY) -m conformance cases

# Mutation check: the suite against each deliberately broken reference broker (mutation/variants.py,
# started by python -m mutation.launch); prints the score and the survivors, writes
# $(REPORTS)/quality.json. Then cosmic-ray's generated mutants of the broker's decision code
# (python -m mutation.generated, docs/mutation.md): results that still hold come from
# mutation/generated-results.jsonl, the rest are tested for at most MUTANT_BUDGET seconds; writes
# $(REPORTS)/quality-generated.json and fails on an untriaged survivor or a score under 90%.
MUTANT_BUDGET ?= 1800
quality: install system-zookeeper
	$(PY) -m conformance quality --out $(REPORTS)
	$(PY) -m conformance quality --generated --budget $(MUTANT_BUDGET) --out $(REPORTS)

# The PIPs' own performance goals: PIP-157 listing on a real ZooKeeper, PIP-35 batch against
# sequential lookups.
bench: install system-zookeeper java-drivers pulsar-jars
	$(PY) bench/bucketing.py
	$(PY) bench/batch_lookup.py
	$(PY) bench/client_protocol.py
	$(PY) bench/start_up.py --version $(PULSAR_VERSION)

# Long robustness runs, each bounded and stopping by itself: 1,000,000 mutated binary frames against
# the reference broker with another client served throughout (fuzz/binary_frames.py prints its
# figures), then the kill -9 durability loop of the SQLite and ZooKeeper metadata stores.
fuzz: install system-zookeeper
	$(PY) fuzz/binary_frames.py --frames 1000000
	DURABILITY_KILLS=25 $(PY) -m pytest tests/reference_broker/test_durability.py -q -s -p no:cacheprovider

clean: clean-report
	rm -rf $(VENV) $(PROTO_OUT) $(REPORTS)/results $(REPORTS)/allure-results $(REPORTS)/junit.xml
