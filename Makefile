# One entry point for every check; CI calls `make test` too.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: setup test lint demo demo-check serve bench bench-service clean

setup: $(VENV)/.installed

# The auto check's C extension is compiled by the install: rebuilt when its source changes.
$(VENV)/.installed: pyproject.toml setup.py src/adjudge/autocheck/_speedups.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

lint: setup
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/lint-imports

# Where a C compiler is found, the auto check's C extension must have been built (its tests
# compare it with its `re` twin); without one, the twins alone are tested.
HAVE_CC := $(if $(shell command -v cc gcc clang 2>/dev/null),1,0)

test: lint
	ADJUDGE_REQUIRE_SPEEDUPS=$(HAVE_CC) $(BIN)/pytest -q -n auto --dist worksteal

# The service with a demo marketplace on a fresh SQLite file: accounts, keys and tasks are printed.
demo: setup
	rm -f adjudge-demo.db adjudge-demo.db-wal adjudge-demo.db-shm
	$(BIN)/adjudge serve --demo --db sqlite:///adjudge-demo.db

# The service on ./adjudge.db (created on first start, with an admin key printed once).
serve: setup
	$(BIN)/adjudge serve

demo-check: setup
	$(BIN)/adjudge check --criteria examples/criteria.json examples/report.md
	$(BIN)/adjudge check --criteria examples/criteria-short.json examples/refusal.txt || true

bench: setup
	$(BIN)/python benchmarks/autocheck.py
	$(BIN)/python benchmarks/receipts.py
	$(BIN)/python benchmarks/calls.py

# Finalize throughput and latency over loopback (add ARGS="--db postgresql+psycopg://…").
bench-service: setup
	$(BIN)/python benchmarks/service.py $(ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build src/adjudge/autocheck/*.so
