#!/usr/bin/env bash
# The selection-strategy measurements behind the README's strategy tables, one evaluation at a time (llama.cpp
# must run alone). Every run is resumable: run this again after an interruption.
#   evals/benchmarks/measure_strategies.sh MODEL_NAME [PHASE...]    (MODEL_NAME: qwen2.5-coder-0.5b or -1.5b)
# then: python -m evals.benchmarks.strategy_report
# New measurements: the same runs as sweeps, one table, paired comparisons and a figure at the end:
#   toolsel sweep evals/sweeps/strategies.yaml        (the domain phases)
#   toolsel sweep evals/sweeps/strategies-bfcl.yaml   (the BFCL phases, sampled; see the file for the gate)
# This script stays for the kept results/strategies rows, whose MODEL/STRATEGY/SUITE layout it writes.
set -uo pipefail
cd "$(dirname "$0")/../.."
MODEL=${1:-qwen2.5-coder-0.5b}; shift || true
PHASES=${*:-bfcl-native bfcl-json-cot domains bfcl-variants}
GATE=local:qwen2.5-coder-1.5b  # the relevance gate's model: the 0.5B model has no signal (see FINDINGS)
OUT=runs/strategies/$MODEL
BIN=.venv/bin

run() {  # run STRATEGY_DIR LABEL SUITE [toolsel eval options...]
  local name=${1//:/_} label=$2 suite=$3; shift 3  # text:call -> text_call (strategy_report reads it back)
  mkdir -p "$OUT/$name"
  echo "$(date +%T) $MODEL $name $label $*"
  "$BIN/toolsel" eval --suite "$suite" --model "local:$MODEL" --no-cache --no-mlflow \
      --run-dir "$OUT/$name/$label" "$@" > "$OUT/$name/$label.log" 2>&1 || echo "  failed: see $OUT/$name/$label.log"
}

domains() {  # domains STRATEGY: the five domain suites' whole test splits
  for suite in treasure_hunt events ecommerce finance language; do
    run "$1" "$suite" "$suite" --split test --strategy "$1"
  done
}

bfcl() {  # bfcl STRATEGY [toolsel eval options...]: both categories, whole unless the options say --sample
  local strategy=$1; shift
  for cat in multiple irrelevance; do
    run "$strategy" "bfcl_$cat" "bfcl:$cat" --split all "$@" --strategy "$strategy"
  done
}

GATE_OPEN=(--gate-model "$GATE" --gate-threshold=-inf)  # every gate score recorded, the selection unchanged

for phase in $PHASES; do
  case $phase in
    bfcl-native) bfcl gate+native "${GATE_OPEN[@]}" ;;  # whole categories; with the gate open these rows are also plain native
    bfcl-native-sample) bfcl gate+native --sample 120 "${GATE_OPEN[@]}" ;;  # a fixed seeded sample (the 1.5B model: whole is slow)
    bfcl-json-cot) bfcl json-cot --sample 120 ;;  # the former default, slower
    bfcl-variants)
      for strategy in native-cot json text:tags text:fenced text:call; do bfcl "$strategy" --sample 120; done ;;
    domains) domains native; domains json-cot ;;  # native, then json-cot (about three times slower)
    domains-native) domains native ;;  # native alone (the 1.5B model: json-cot is slow)
    domains-cot) domains native-cot ;;  # pairs with the native rows
    domains-strict) domains native-strict ;;  # pairs with the native rows
    bfcl-strict) bfcl native-strict ;;  # whole categories (pairs with bfcl-native)
    bfcl-strict-sample) bfcl native-strict --sample 120 ;;  # bfcl-native-sample's cases (the 1.5B model)
    bfcl-cot-strict) bfcl native-cot-strict --sample 120 ;;  # pairs with native-cot and the sampled native rows
    domains-gate)  # dev and test with the gate open, to choose its threshold on dev
      for suite in treasure_hunt events ecommerce finance language; do
        for split in dev test; do
          run gate+native "$suite-$split" "$suite" --split "$split" --strategy gate+native "${GATE_OPEN[@]}"
        done
      done ;;
    *) echo "unknown phase $phase" ;;
  esac
done
echo "$(date +%T) done"
