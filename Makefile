# One entry point for every check; CI calls `make test` too.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: setup test lint demo bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

lint: setup
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/lint-imports

test: lint
	$(BIN)/pytest -q

demo: setup
	$(BIN)/adjudge check --criteria examples/criteria.json examples/report.md
	$(BIN)/adjudge check --criteria examples/criteria-short.json examples/refusal.txt || true

bench: setup
	$(BIN)/python benchmarks/autocheck.py
	$(BIN)/python benchmarks/receipts.py
	$(BIN)/python benchmarks/calls.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
