# Entry points: `make demo` (the main job), `make test` and `make paper` (rebuild paper/;
# FULL=1 also reruns the coverage study, which must reproduce paper/coverage/ exactly).
# Each creates .venv and installs the package with its dev extras on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SHARED_DATA := $(abspath ../shared/data)
ifeq ($(origin WINRATE_DATA), undefined)
ifneq ($(wildcard $(SHARED_DATA)),)
export WINRATE_DATA := $(SHARED_DATA)
endif
endif

.PHONY: demo test lint bench paper clean browser

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/winrate demo

# Two pytest workers on two cores: BLAS threads would spin against the other worker
# (winrate's matrices are K x K; the CLI sets the same defaults in winrate/cli.py).
# loadfile: each test module runs on one worker, so its module-scoped fixtures (real
# datasets, the coverage study) are built once.
test: $(BIN)/.installed browser
	$(BIN)/ruff check winrate scripts tests
	OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE $(BIN)/python -m pytest -q -n 2 \
		--dist loadfile -p no:cacheprovider

# The web page's browser tests (tests/test_html_page.py) run in Debian's chromium with
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

lint: $(BIN)/.installed
	$(BIN)/ruff check winrate scripts tests

bench: $(BIN)/.installed
	$(BIN)/python scripts/bench.py

paper: $(BIN)/.installed
	$(BIN)/python scripts/paper/build.py $(if $(FULL),--full)
	$(BIN)/python scripts/doc_examples.py

clean:
	rm -rf $(VENV) build *.egg-info
