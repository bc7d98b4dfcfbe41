# peerwatch — the two commands a person needs are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PORT   ?= 8000
# make test's pytest workers (pytest-xdist). Much of the suite waits on real processes
# (servers, Slurm, Chromium, Alertmanager), so more workers than the 2 cores here still pay;
# tests that share an expensive fixture share a worker (tests/parallel.py). 0: serial.
TEST_WORKERS ?= 3

.PHONY: demo test lint typecheck unit bench install clean

# A $(VENV) made by a Python older than MIN_PYTHON (say `make PYTHON=python3.10` once) is
# rebuilt with $(PYTHON); if $(PYTHON) is too old as well, make names the one command to run.
MIN_PYTHON := 3.11
PY_OK := import sys; sys.exit(sys.version_info < tuple(map(int, "$(MIN_PYTHON)".split("."))))

$(STAMP): pyproject.toml setup.py
	@if [ -x $(BIN)/python ] && ! $(BIN)/python -c '$(PY_OK)' 2>/dev/null; then \
	  echo "make: $(VENV) has $$($(BIN)/python -V 2>&1), older than $(MIN_PYTHON): rebuilding it with $(PYTHON)"; \
	  rm -rf $(VENV); fi
	@if [ ! -x $(BIN)/python ] && ! $(PYTHON) -c '$(PY_OK)' 2>/dev/null; then \
	  echo "make: peerwatch needs Python >= $(MIN_PYTHON), and '$(PYTHON)'" \
	    "$$($(PYTHON) -V 2>/dev/null | sed 's/^/is /' | grep . || echo 'does not run')." \
	    "Run: make PYTHON=python$(MIN_PYTHON) (or any newer python3)"; exit 1; fi
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

## make demo: the server on SQLite plus a simulated fleet; prints the dashboard URL.
demo: $(STAMP)
	$(BIN)/peerwatch demo --port $(PORT)

## make test: lint, type checks and the whole suite (PostgreSQL, Chromium, promtool, Alertmanager).
test: $(STAMP) lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check app probes tests bench

# mypy cannot follow the editable install's package map (app/ -> peerwatch.app): it reads the
# folders through a tree of two links laid out as the wheel installs them, so every
# `peerwatch.*` import is checked against its module, never taken as Any. Not incremental:
# over the links a warm cache loses a package's submodules (`from peerwatch.app.ingest import
# rows` then fails in a second run that a cold one passes).
MYPY_SRC := .cache/mypy-src
typecheck: $(STAMP)
	mkdir -p $(MYPY_SRC)/peerwatch
	ln -sfn $(CURDIR)/app $(MYPY_SRC)/peerwatch/app
	ln -sfn $(CURDIR)/probes $(MYPY_SRC)/peerwatch/probes
	MYPYPATH=$(MYPY_SRC) $(BIN)/mypy --no-incremental -p peerwatch.app -p peerwatch.probes -p bench

unit: $(STAMP)
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=25

## make bench: benchmarks that print ratios against a stated reference.
bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
