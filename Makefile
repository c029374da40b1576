PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_DIR ?= .chromasync-demo

.PHONY: install demo serve test test-all check lint typecheck clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

install: $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[serve,dev]'

demo: install
	$(BIN)/chromasync ingest examples/notes --data-dir $(DEMO_DIR)
	$(BIN)/chromasync search "how do I calibrate the grinder" --data-dir $(DEMO_DIR) --k 3

serve: demo
	$(BIN)/chromasync serve --data-dir $(DEMO_DIR) --watch

test: install
	$(BIN)/python -m pytest -q -m "not slow"

test-all: install
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: install
	$(BIN)/mypy

check: lint typecheck test

clean:
	rm -rf $(VENV) $(DEMO_DIR) .pytest_cache .mypy_cache .ruff_cache
