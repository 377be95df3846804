# Entry points: `make demo` (the main job), `make test` and `make paper` (rebuild paper/;
# FULL=1 also reruns the coverage study, which must reproduce paper/coverage/ exactly).
# Each creates .venv and installs the package with its dev extras on first use; make test
# adds the inspect extra (Inspect AI, whose mock model writes the logs of the Inspect
# reader's tests) and the spark extra and a Java runtime for the Spark tests, the latter
# unless WINRATE_SKIP_SPARK=1 (the one way to skip them: a printed note, and each Spark
# test skips with that reason).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SHARED_DATA := $(abspath ../shared/data)
comma := ,
ifeq ($(origin WINRATE_DATA), undefined)
ifneq ($(wildcard $(SHARED_DATA)),)
export WINRATE_DATA := $(SHARED_DATA)
endif
endif

SKIP_SPARK := $(filter 1,$(WINRATE_SKIP_SPARK))
ifeq ($(SKIP_SPARK),1)
export WINRATE_SKIP_SPARK
endif
JAVA_PACKAGE := openjdk-17-jre-headless

.PHONY: demo test test-latest lock lint bench paper clean browser java pdf-tools

# Every install takes the exact versions the suite passed with from constraints.txt (pip -c:
# a pin applies only to what is installed), so a fresh clone gets the tested environment;
# pyproject.toml keeps the ranges users install from. `make lock` rewrites the file from
# .venv after a passing make test; `make test-latest` runs the suite on the newest releases.
CONSTRAINTS := constraints.txt
PIP_PINNED := $(BIN)/python -m pip install --quiet -c $(CONSTRAINTS)

$(BIN)/.installed: pyproject.toml $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(PIP_PINNED) pip
	$(PIP_PINNED) -e '.[dev]'
	touch $@

# PySpark (the spark extra, a large download) on top of dev, for the Spark tests only: its
# own stamp, so that make demo stays on dev; a changed pyproject.toml redoes both.
$(BIN)/.installed-spark: $(BIN)/.installed
	@echo "installing the spark extra (PySpark, about 400 MB) for the Spark tests"
	$(PIP_PINNED) -e '.[dev,spark]'
	touch $@

# Inspect AI (the inspect extra) on top of dev, for the tests that run a tiny Inspect task
# with its mock model and read the logs through inspect_ai's own reader; its own stamp, so
# that make demo stays on dev.
$(BIN)/.installed-inspect: $(BIN)/.installed
	$(PIP_PINNED) -e '.[dev,inspect]'
	touch $@

# numba compiles a kernel at its first call and caches it beside its module; compiling a
# leaderboard's kernels took minutes under load at a user's first run. scripts/warm_kernels.py
# compiles them here (each estimator, serial and threaded, one- and two-way clustering),
# again whenever winrate's code changes (numba's cache is keyed to each module's source).
$(BIN)/.kernels-cached: $(BIN)/.installed $(shell find winrate -name '*.py')
	$(BIN)/python scripts/warm_kernels.py
	touch $@

demo: $(BIN)/.kernels-cached
	$(BIN)/winrate demo

# Two pytest workers on two cores: BLAS threads would spin against the other worker
# (winrate's matrices are K x K; the CLI sets the same defaults in winrate/cli.py).
# loadfile: each test module runs on one worker, so its module-scoped fixtures (real
# datasets, the coverage study) are built once.
PYTEST := OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE python -m pytest -q -n 2 \
	--dist loadfile -p no:cacheprovider

test: $(BIN)/.installed $(BIN)/.installed-inspect $(if $(SKIP_SPARK),,$(BIN)/.installed-spark) \
		browser java
	$(BIN)/ruff check winrate scripts tests
	PATH=$(abspath $(BIN)):$$PATH $(PYTEST)

# Not in CI: the suite against the newest releases that pyproject.toml admits, in a venv of
# its own (.venv-latest, rebuilt each time); WINRATE_LATEST=1 tells the test that checks
# the environment against constraints.txt to skip.
LATEST := .venv-latest
test-latest: browser java
	rm -rf $(LATEST)
	$(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip install --quiet --upgrade pip
	$(LATEST)/bin/python -m pip install --quiet --upgrade -e '.[dev,inspect$(if $(SKIP_SPARK),,$(comma)spark)]'
	$(LATEST)/bin/python -m pip list --format=freeze | grep -iE \
		'^(numpy|scipy|pandas|numba|matplotlib|duckdb|pyarrow|pyspark|inspect.ai|jsonschema)=='
	WINRATE_LATEST=1 PATH=$(abspath $(LATEST))/bin:$$PATH $(PYTEST)

# constraints.txt from .venv, after a passing make test (the pins of every installed
# distribution but winrate, and pip's own).
lock: $(BIN)/.installed
	{ printf '%s\n' "# The exact versions make test and make paper passed with," \
		"# $$($(BIN)/python --version), $$(uname -sm): make installs from this file (pip -c)." \
		"# Regenerate with make lock after a passing make test; make test-latest tries the" \
		"# newest releases that pyproject.toml admits."; \
	  $(BIN)/python -m pip freeze --all --exclude-editable | grep -v '^setuptools=='; \
	} > $(CONSTRAINTS)
	touch $(BIN)/.installed  # the venv is what the file now says: no reinstall
	[ ! -f $(BIN)/.installed-spark ] || touch $(BIN)/.installed-spark
	[ ! -f $(BIN)/.installed-inspect ] || touch $(BIN)/.installed-inspect

# The web page's browser tests (tests/test_html_browser.py) run in Debian's chromium with
# chromium-driver: installed here (quietly) when missing and running as root with apt-get;
# otherwise those tests skip with a reason naming what is missing.
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing chromium and chromium-driver (apt-get) for the browser tests"; \
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				chromium chromium-driver; } >/dev/null 2>&1 || \
				echo "could not install chromium and chromium-driver: browser tests skip"; \
		else \
			echo "chromium or chromium-driver missing (not root): browser tests skip"; \
		fi; \
	fi

# make paper's PDF: pandoc (Markdown -> HTML) and chromium (print-to-PDF), Debian packages
# installed here (quietly) when missing and running as root with apt-get; otherwise the
# build says which is missing and skips only the PDF (paper/paper.md is the artefact).
pdf-tools:
	@if ! command -v pandoc >/dev/null || ! command -v chromium >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing pandoc and chromium (apt-get) for the paper's PDF"; \
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				--no-install-recommends pandoc chromium; } >/dev/null 2>&1 || \
				echo "could not install pandoc and chromium: the paper's PDF is skipped"; \
		else \
			echo "pandoc or chromium missing (not root): the paper's PDF is skipped"; \
		fi; \
	fi

# The Spark tests run a local Spark session, which needs Java 17 or later: Debian's
# openjdk-17-jre-headless, installed here (quietly) when no java is found (on the path or
# under JAVA_HOME, as PySpark looks) and running as root with apt-get; otherwise make test
# stops with an error naming the package. WINRATE_SKIP_SPARK=1 skips the Spark tests instead.
java:
ifeq ($(SKIP_SPARK),1)
	@echo "WINRATE_SKIP_SPARK=1: the Spark tests skip (neither PySpark nor Java is needed)"
else
	@if ! [ -x "$${JAVA_HOME:-/nonexistent}/bin/java" ] && ! command -v java >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing $(JAVA_PACKAGE) (apt-get) for the Spark tests"; \
			mkdir -p /usr/share/man/man1; \
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				--no-install-recommends $(JAVA_PACKAGE); } >/dev/null 2>&1 || { \
				echo "could not install $(JAVA_PACKAGE) (apt-get) for the Spark tests;" \
					"install it, or set WINRATE_SKIP_SPARK=1 to skip them" >&2; exit 1; }; \
		else \
			echo "java missing: the Spark tests need Debian's $(JAVA_PACKAGE) (or any" \
				"Java 17+ runtime); install it, or set WINRATE_SKIP_SPARK=1 to skip them" >&2; \
			exit 1; \
		fi; \
	fi
endif

lint: $(BIN)/.installed
	$(BIN)/ruff check winrate scripts tests

bench: $(BIN)/.installed
	$(BIN)/python scripts/bench.py

paper: $(BIN)/.installed pdf-tools
	$(BIN)/python scripts/paper/build.py $(if $(FULL),--full)
	$(BIN)/python scripts/doc_examples.py

clean:
	rm -rf $(VENV) build *.egg-info
