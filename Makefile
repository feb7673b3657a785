# `make demo` and `make test` work on a fresh machine with only Python 3.11+: they create .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORE := $(VENV)/.core
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench bench-full clean

# the demo needs only the core dependencies (a third of the install time on a fresh machine)
$(CORE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(CORE)

# tests, lint and benchmarks need every cloud SDK and the dev tools
$(STAMP): $(CORE)
	$(BIN)/pip install --quiet -e '.[all,dev]'
	touch $(STAMP)

demo: $(CORE)
	$(BIN)/burster simulate --demo

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/pytest -n 2 --dist loadgroup

bench: $(STAMP)
	$(BIN)/python -m bench.plan --quick --json
	$(BIN)/python -m bench.sim --quick --json
	$(BIN)/python -m bench.bound --quick --json
	$(BIN)/python -m bench.store --quick --json

# every size each target names (a few minutes; full MIX1 needs ../shared/data): rerun after policy changes
bench-full: $(STAMP)
	$(BIN)/python -m bench.plan --json
	$(BIN)/python -m bench.sim --json
	$(BIN)/python -m bench.bound --json
	$(BIN)/python -m bench.store --json

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
