#!/usr/bin/env bash
# The selection-strategy measurements behind the README's strategy tables, one evaluation at a time (llama.cpp
# must run alone). Every run is resumable: run this again after an interruption.
#   evals/benchmarks/measure_strategies.sh MODEL_NAME [PHASE...]    (MODEL_NAME: qwen2.5-coder-0.5b or -1.5b)
# then: python -m evals.benchmarks.strategy_report
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

for phase in $PHASES; do
  case $phase in
    bfcl-native)  # whole categories; the gate open (scores recorded), so these rows are also plain native
      for cat in multiple irrelevance; do
        run gate+native "bfcl_$cat" "bfcl:$cat" --split all --strategy gate+native --gate-model "$GATE" \
            --gate-threshold=-inf
      done ;;
    bfcl-native-sample)  # as bfcl-native on a fixed seeded sample of 120 per category (the 1.5B model: whole is slow)
      for cat in multiple irrelevance; do
        run gate+native "bfcl_$cat" "bfcl:$cat" --split all --sample 120 --strategy gate+native --gate-model "$GATE" \
            --gate-threshold=-inf
      done ;;
    bfcl-json-cot)  # the former default, slower: a fixed seeded sample of 120 per category
      for cat in multiple irrelevance; do
        run json-cot "bfcl_$cat" "bfcl:$cat" --split all --sample 120 --strategy json-cot
      done ;;
    bfcl-variants)
      for strategy in native-cot json text:tags text:fenced text:call; do
        for cat in multiple irrelevance; do
          run "$strategy" "bfcl_$cat" "bfcl:$cat" --split all --sample 120 --strategy "$strategy"
        done
      done ;;
    domains)  # the five domain suites' whole test splits, native then json-cot (about three times slower)
      for suite in treasure_hunt events ecommerce finance language; do
        run native "$suite" "$suite" --split test --strategy native
      done
      for suite in treasure_hunt events ecommerce finance language; do
        run json-cot "$suite" "$suite" --split test --strategy json-cot
      done ;;
    domains-native)  # native alone on the domain suites' whole test splits (the 1.5B model: json-cot is slow)
      for suite in treasure_hunt events ecommerce finance language; do
        run native "$suite" "$suite" --split test --strategy native
      done ;;
    domains-cot)  # native-cot on the domain suites' whole test splits (pairs with the native rows)
      for suite in treasure_hunt events ecommerce finance language; do
        run native-cot "$suite" "$suite" --split test --strategy native-cot
      done ;;
    domains-strict)  # native-strict on the domain suites' whole test splits (pairs with the native rows)
      for suite in treasure_hunt events ecommerce finance language; do
        run native-strict "$suite" "$suite" --split test --strategy native-strict
      done ;;
    bfcl-strict)  # native-strict on the whole categories (pairs with bfcl-native)
      for cat in multiple irrelevance; do
        run native-strict "bfcl_$cat" "bfcl:$cat" --split all --strategy native-strict
      done ;;
    bfcl-strict-sample)  # as bfcl-strict on bfcl-native-sample's cases (the 1.5B model)
      for cat in multiple irrelevance; do
        run native-strict "bfcl_$cat" "bfcl:$cat" --split all --sample 120 --strategy native-strict
      done ;;
    bfcl-cot-strict)  # native-cot-strict on the seeded samples (pairs with native-cot and the sampled native rows)
      for cat in multiple irrelevance; do
        run native-cot-strict "bfcl_$cat" "bfcl:$cat" --split all --sample 120 --strategy native-cot-strict
      done ;;
    domains-gate)  # dev and test with the gate open, to choose its threshold on dev
      for suite in treasure_hunt events ecommerce finance language; do
        for split in dev test; do
          run gate+native "$suite-$split" "$suite" --split "$split" --strategy gate+native --gate-model "$GATE" \
              --gate-threshold=-inf
        done
      done ;;
    *) echo "unknown phase $phase" ;;
  esac
done
echo "$(date +%T) done"
