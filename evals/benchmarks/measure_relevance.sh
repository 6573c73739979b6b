#!/usr/bin/env bash
# The relevance measurements: each suite's every split under the default strategy, with every cheap relevance
# signal recorded per case (the selection's decision unchanged), one evaluation at a time (llama.cpp must run
# alone for its timings). Resumable: run it again after an interruption.
#   [SPLIT=test] evals/benchmarks/measure_relevance.sh MODEL_NAME [SUITE...]    (MODEL_NAME: qwen2.5-coder-0.5b or -1.5b)
# then: toolsel bench relevance results/relevance/MODEL_NAME/*
set -uo pipefail
cd "$(dirname "$0")/../.."
MODEL=${1:-qwen2.5-coder-0.5b}; shift || true
SUITES=${*:-bfcl:multiple bfcl:irrelevance treasure_hunt events ecommerce finance language}
OUT=${OUT:-results/relevance/$MODEL}
SIGNALS=${SIGNALS:-cheap}
SPLIT=${SPLIT:-all}  # test: only the split a relevance model fitted elsewhere is reported on
BIN=.venv/bin
mkdir -p "$OUT"
for suite in $SUITES; do
  label=${suite//:/_}
  echo "$(date +%T) $MODEL $suite"
  "$BIN/toolsel" eval --suite "$suite" --model "local:$MODEL" --split "$SPLIT" --relevance none --relevance-signals "$SIGNALS" \
      --no-mlflow --run-dir "$OUT/$label" > "$OUT/$label.log" 2>&1 || echo "  failed: see $OUT/$label.log"
done
echo "$(date +%T) done"
