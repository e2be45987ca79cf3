# Two entry points a fresh clone can run: `make conformance` and `make test`.
# Everything they need is installed here, into .venv, when missing.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PROTO_SRC := reference_broker/protocol/pulsar_api.proto
PROTO_OUT := reference_broker/protocol/pulsar_api_pb2.py
REPORTS ?= reports/out
TARGETS ?= --target reference --target pulsar-lite

APT_INSTALL := DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends
ZOOKEEPER_JAR := /usr/share/java/zookeeper.jar

.PHONY: install proto system-zookeeper test conformance cases bench clean

install: $(STAMP) $(PROTO_OUT)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The codec's protobuf module is generated from our own .proto with grpcio-tools, never committed.
$(PROTO_OUT): $(PROTO_SRC) $(STAMP)
	$(PY) -m grpc_tools.protoc -Ireference_broker/protocol --python_out=reference_broker/protocol $(PROTO_SRC)

proto: $(PROTO_OUT)

# A real ZooKeeper (Debian's package) for the zk: metadata store tests and bench/bucketing.py.
system-zookeeper:
	@test -f $(ZOOKEEPER_JAR) || { apt-get update -qq && $(APT_INSTALL) zookeeper; }

test: install system-zookeeper
	$(PY) -m pytest tests -q -p no:cacheprovider

# Runs every spec case against the embedded reference broker and pulsar-lite and writes reports/.
# Exit code 1 means the run found divergences (reported, not hidden); 2 and 3 are harness trouble.
conformance: install
	$(PY) -m conformance run $(TARGETS) --out $(REPORTS); code=$$?; \
	  if [ $$code -eq 1 ]; then echo "conformance: divergences found; see $(REPORTS)/"; exit 0; fi; exit $$code

cases: install
	$(PY) -m conformance cases

bench: install system-zookeeper
	$(PY) bench/lookup.py
	$(PY) bench/bucketing.py

clean:
	rm -rf $(VENV) $(PROTO_OUT) $(REPORTS)/results $(REPORTS)/allure-results $(REPORTS)/junit.xml
