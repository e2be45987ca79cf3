# Reports stage: the Spark job over every run's results and the single-file Allure HTML report.
# Included from the Makefile after its variables (PY, STAMP, REPORTS). A fresh clone gets what it needs
# here: system packages with apt (CI runs as root with apt reachable), node packages with npm ci.

# The including Makefile keeps its own default goal (saved here, restored at the end).
REPORTS_SAVED_GOAL := $(.DEFAULT_GOAL)

NPM ?= npm
REPORTS_APT := DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends
ALLURE_CLI := node_modules/.bin/allure
SPARK_MASTER ?= local[2]

# What `make test` (tests/reports) and `make report` need on the machine besides .venv.
REPORTS_TEST_NEEDS := system-java system-chromium node_modules

.PHONY: system-java system-chromium system-node report clean-report

# PySpark 4 needs Java 17 or newer.
system-java:
	@if ! java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])'; then \
	  echo "installing openjdk-17-jre-headless (Spark needs Java 17+)"; \
	  apt-get update && $(REPORTS_APT) openjdk-17-jre-headless; \
	fi

# Headless Chromium for the report page tests (Debian's package: /usr/bin/chromium).
system-chromium:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  echo "installing chromium (headless page checks)"; \
	  apt-get update && $(REPORTS_APT) chromium; \
	fi

system-node:
	@if ! command -v $(NPM) >/dev/null 2>&1; then \
	  echo "installing nodejs and npm (Allure CLI)"; \
	  apt-get update && $(REPORTS_APT) nodejs npm; \
	fi

# The Allure 3 CLI, pinned in package.json / package-lock.json.
node_modules: package.json package-lock.json | system-node
	$(NPM) ci --no-audit --no-fund --loglevel=error
	touch node_modules

# The Spark job and the Allure HTML over $(REPORTS): dataset/, tables/, csv/, summary.html, summary.md,
# matrix.png, allure-report/index.html.
report: install system-java node_modules
	$(PY) -m reports --results $(REPORTS)/results --out $(REPORTS) --master '$(SPARK_MASTER)'

clean-report:
	rm -rf $(REPORTS)/dataset $(REPORTS)/tables $(REPORTS)/csv $(REPORTS)/allure-report \
	  $(REPORTS)/.allure-staging $(REPORTS)/summary.html $(REPORTS)/summary.md $(REPORTS)/matrix.png \
	  $(REPORTS)/report.json

.DEFAULT_GOAL := $(REPORTS_SAVED_GOAL)
