# peerwatch — the two commands a person needs are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PORT   ?= 8000

.PHONY: demo test lint typecheck unit bench install clean

$(STAMP): pyproject.toml
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

typecheck: $(STAMP)
	$(BIN)/mypy app probes

unit: $(STAMP)
	$(BIN)/pytest -q

## make bench: benchmarks that print ratios against a stated reference.
bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
