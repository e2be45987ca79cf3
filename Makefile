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
TARGETS ?= --target reference --target reference-zk --target pulsar-lite

APT_INSTALL := DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends
ZOOKEEPER_JAR := /usr/share/java/zookeeper.jar

.PHONY: install proto system-zookeeper test conformance cases quality bench clean

include mk/reports.mk

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

test: install system-zookeeper $(REPORTS_TEST_NEEDS)
	$(PY) -m pytest tests -q -p no:cacheprovider

# Runs every spec case against the reference broker (in memory and on ZooKeeper) and pulsar-lite and
# writes reports/.
# Exit code 1 means the run found divergences (reported, not hidden); 2 and 3 are harness trouble.
# It ends with the reports stage: the Spark job over every run so far and the single-file Allure HTML.
conformance: install $(if $(findstring reference-zk,$(TARGETS)),system-zookeeper) system-java node_modules
	$(PY) -m conformance run $(TARGETS) --out $(REPORTS); code=$$?; \
	  if [ $$code -gt 1 ]; then exit $$code; fi; \
	  if [ $$code -eq 1 ]; then echo "conformance: divergences found; see $(REPORTS)/"; fi
	$(MAKE) --no-print-directory report

cases: install
	$(PY) -m conformance cases

# Mutation check: the suite against each deliberately broken reference broker (mutation/variants.py,
# started by python -m mutation.launch); prints the score and the survivors, writes
# $(REPORTS)/quality.json.
quality: install system-zookeeper
	$(PY) -m conformance quality --out $(REPORTS)

# The PIPs' own performance goals: PIP-157 listing on a real ZooKeeper, PIP-35 batch against
# sequential lookups.
bench: install system-zookeeper
	$(PY) bench/bucketing.py
	$(PY) bench/batch_lookup.py

clean: clean-report
	rm -rf $(VENV) $(PROTO_OUT) $(REPORTS)/results $(REPORTS)/allure-results $(REPORTS)/junit.xml
