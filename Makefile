SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_DIR ?= .chromasync-demo
# The benchmark's peers (LangChain, LlamaIndex) get their own environment.
BENCH_VENV ?= .venv-bench
BENCH_ARGS ?=

.PHONY: lock test-latest variants install demo serve test test-unit test-all check lint typecheck docs clean bench bench-install chroma-mcp js-peer

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

# requirements.lock: the whole resolution (every package of every extra, exact versions) that
# every environment here installs from; pyproject.toml keeps ranges. `make lock` refreshes it
# with uv for Python 3.11 on x86_64 Linux, torch pinned to the CPU build on this disk
# (TORCH_WHEELS: a folder holding it; pip, not uv, installs it: uv would fetch CUDA builds).
LOCK := requirements.lock
TORCH_PIN ?= torch==2.13.0
TORCH_WHEELS ?= /opt/wheels
UV_COMPILE = uv pip compile --quiet --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
	--index-strategy unsafe-best-match $(if $(wildcard $(TORCH_WHEELS)),--find-links $(TORCH_WHEELS)) \
	--no-header --annotation-style line
EXTRAS := serve,nats,dev,local-weights,langchain,llamaindex

install: $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c $(LOCK) -e '.[$(EXTRAS)]'
	@# An editable install compiles nothing; byte-compile as pip does for a regular install
	@# (compiling the fast path's modules would cost an unchanged re-run a fifth of its time).
	$(BIN)/python -m compileall -q src/chromasync

demo: install
	$(BIN)/chromasync ingest examples/notes --data-dir $(DEMO_DIR)
	$(BIN)/chromasync search "how do I calibrate the grinder" --data-dir $(DEMO_DIR) --k 3

serve: demo
	$(BIN)/chromasync serve --data-dir $(DEMO_DIR) --watch

# The fast suite CI runs: everything but `slow` (markers in pyproject; `-m "not server"` or
# `-m "not model"` narrow it further).
# -W ignore::ResourceWarning: only the interpreter's shutdown noise about sockets left to the
# garbage collector; inside tests pytest's `error` filter still applies.
# Two pytest-xdist workers: much of the suite waits on subprocesses and servers, so two
# cores run it in about half the time (7.3 against 13.6 minutes, 2026-12-02); every test
# has its own tmp_path, data dir and loopback ports. TEST_WORKERS=0 runs it in one process.
# Then the `timing` tests (doubling tests, which time their own CPU time) run alone, in one
# process: a worker beside them slows one size and not the other (tests/doubling.py).
TEST_WORKERS ?= 2
test: install chroma-mcp variants js-peer
	$(BIN)/python -W ignore::ResourceWarning -m pytest -q -m "not slow and not timing" -n $(TEST_WORKERS) --durations=20
	$(BIN)/python -W ignore::ResourceWarning -m pytest -q -m "timing and not slow" -n 0

# Every install a user can get, each in its own environment from the lock, the package as a
# wheel (tests/integration/test_install_variants.py runs them): no extras, then each extra
# alone. uv installs them (seconds, one shared cache): none needs torch.
VARIANTS ?= plain serve nats langchain llamaindex
variants: install
	@for v in $(VARIANTS); do \
	  extra=$$([ $$v = plain ] || echo "[$$v]"); \
	  { [ -x .venv-variants/$$v/bin/python ] || $(BIN)/uv venv -q -p $(BIN)/python .venv-variants/$$v; } && \
	  $(BIN)/uv pip install -q -p .venv-variants/$$v/bin/python -c $(LOCK) \
	    --reinstall-package chromasync ".$$extra" || exit 1; \
	done

# tests/unit only: the pure stages, no `chroma run` server and no model weights.
test-unit: install
	$(BIN)/python -W ignore::ResourceWarning -m pytest -q tests/unit

test-all: install
	$(BIN)/python -W ignore::ResourceWarning -m pytest -q

lint: install
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/ruff format --check src tests benchmarks tools

typecheck: install
	$(BIN)/mypy

check: lint typecheck test

# docs/cli.md from every command's --help (tests/unit/test_docs.py fails when it is stale).
# The generator fixes the width itself; COLUMNS is pinned too, so nothing depends on the
# terminal that runs it.
docs: install
	COLUMNS=80 $(BIN)/python tools/gen_cli_docs.py

# The real chroma-mcp from PyPI in its own environment (its `mcp` pin needs pydantic<2.14),
# beside this project's chromadb: tests/integration/test_peers.py drives it. Without an
# index to install from, the tests that need it skip and say why.
CHROMA_MCP_VENV ?= .venv-chroma-mcp
chroma-mcp:
	@test -x $(CHROMA_MCP_VENV)/bin/chroma-mcp || { \
	  $(PYTHON) -m venv $(CHROMA_MCP_VENV) && \
	  $(CHROMA_MCP_VENV)/bin/python -m pip install --quiet -r chroma-mcp.lock; \
	} || echo "could not install chroma-mcp; tests/integration/test_peers.py will skip it" >&2

# The JavaScript chromadb client (tests/js: chromadb, @chroma-core/default-embed, exact
# versions from its lock) that tests/integration/test_js_peer.py drives, in tests/js/node_modules
# (435 MB, under 30 s). ONNXRUNTIME_NODE_INSTALL_CUDA=skip: onnxruntime-node's postinstall
# otherwise downloads CUDA libraries from GitHub on any Linux x64 machine, and fails offline.
# Without npm or the registry the test skips (in CI, where node is present, it fails).
JS_PEER := tests/js/node_modules/.package-lock.json
js-peer: $(JS_PEER)
$(JS_PEER): tests/js/package.json tests/js/package-lock.json
	@command -v npm >/dev/null || { echo "npm not found; tests/integration/test_js_peer.py will skip" >&2; exit 0; }; \
	ONNXRUNTIME_NODE_INSTALL_CUDA=skip npm ci --prefix tests/js --no-audit --no-fund --loglevel=error || \
	  echo "could not install tests/js; tests/integration/test_js_peer.py will skip it" >&2

$(BENCH_VENV)/bin/python:
	$(PYTHON) -m venv $(BENCH_VENV) || python3 -m venv $(BENCH_VENV)

bench-install: $(BENCH_VENV)/bin/python
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -c $(LOCK) -e '.[bench,local-weights]'

# chromasync against LangChain, LlamaIndex and a naive script; results in benchmarks/out/.
bench: bench-install
	nice $(BENCH_VENV)/bin/python benchmarks/compare.py $(BENCH_ARGS)

# Refresh both locks from the registry (uv resolves in seconds; installs stay with pip).
# chroma-mcp gets its own environment and lock (its `mcp` pin needs pydantic<2.14), with
# this project's chromadb.
lock:
	command -v uv >/dev/null || $(PYTHON) -m pip install --quiet uv
	echo '$(TORCH_PIN)' > .torch-pin.txt
	$(UV_COMPILE) pyproject.toml --all-extras -c .torch-pin.txt -o $(LOCK)
	grep '^chromadb==' $(LOCK) | cut -d' ' -f1 | \
	  { cat; echo chroma-mcp; echo 'pydantic<2.14'; } | $(UV_COMPILE) - -o chroma-mcp.lock
	rm -f .torch-pin.txt

# The suite against whatever the registry serves today (no lock, only the torch on disk):
# drift is seen the day it happens (docs/peers.md says what it found). Not part of CI.
LATEST_VENV ?= .venv-latest
test-latest:
	rm -rf $(LATEST_VENV) && $(PYTHON) -m venv $(LATEST_VENV)
	$(LATEST_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LATEST_VENV)/bin/python -m pip install --quiet '$(TORCH_PIN)' -e '.[$(EXTRAS)]'
	$(LATEST_VENV)/bin/python -m pip list --format freeze > $(LATEST_VENV)/resolved.txt
	diff <(grep -v '^#' $(LOCK) | cut -d' ' -f1 | tr 'A-Z_' 'a-z-' | sort) \
	  <(tr 'A-Z_' 'a-z-' < $(LATEST_VENV)/resolved.txt | grep -v '^-e\|^chromasync' | sort) || true
	$(LATEST_VENV)/bin/python -W ignore::ResourceWarning -m pytest -q -m "not slow" -n $(TEST_WORKERS)

clean:
	rm -rf tests/js/node_modules $(VENV) $(BENCH_VENV) $(CHROMA_MCP_VENV) $(LATEST_VENV) .venv-variants $(DEMO_DIR) .pytest_cache .mypy_cache .ruff_cache
