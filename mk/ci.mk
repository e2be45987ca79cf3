# Linting the GitHub Actions action (action.yml) and the example workflows (examples/ci/) with
# actionlint, a Go module built here into the cache, which runs shellcheck (Debian's package) on every
# `run:` script. Included from the Makefile after its variables; `make test` needs both
# (tests/test_ci_files.py), `make lint-ci` runs only that test.

# The including Makefile keeps its own default goal (saved here, restored at the end).
CI_SAVED_GOAL := $(.DEFAULT_GOAL)

CI_CACHE := $(or $(PULSAR_CONFORMANCE_CACHE),$(HOME)/.cache/pulsar-conformance)
# tests/test_ci_files.py reads the version here and finds the binary where it is installed below.
ACTIONLINT_VERSION := 1.7.12
ACTIONLINT := $(CI_CACHE)/go/actionlint-v$(ACTIONLINT_VERSION)/actionlint
CI_TEST_NEEDS := actionlint system-shellcheck

.PHONY: actionlint system-shellcheck lint-ci

actionlint: $(ACTIONLINT)

# Go's module and build caches are the project's (conformance/drivers/native_build.py uses the same),
# so nothing lands in ~/go; the machine's own Go builds it, no other toolchain is fetched.
$(ACTIONLINT):
	@command -v go >/dev/null 2>&1 || { echo "actionlint: building it needs the go command (Go 1.22 or newer)"; exit 1; }
	GOBIN=$(dir $@) GOPATH=$(CI_CACHE)/go GOMODCACHE=$(CI_CACHE)/go/mod GOCACHE=$(CI_CACHE)/go/build \
	  GOTOOLCHAIN=local go install github.com/rhysd/actionlint/cmd/actionlint@v$(ACTIONLINT_VERSION)

system-shellcheck:
	@command -v shellcheck >/dev/null 2>&1 || { apt-get update -qq && $(APT_INSTALL) shellcheck; }

lint-ci: install $(CI_TEST_NEEDS)
	$(PY) -m pytest tests/test_ci_files.py -q -p no:cacheprovider

.DEFAULT_GOAL := $(CI_SAVED_GOAL)
