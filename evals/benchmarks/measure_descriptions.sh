#!/usr/bin/env bash
# Tool descriptions as what is optimized (issue #31): per domain suite, GEPA rewrites the tool descriptions the 0.5B
# model is shown, the 1.5B model proposing them (train to reflect on, dev to select, test never read); then the
# selector with the rewritten descriptions and the same selector with the original ones are scored on test, and
# compared case by case (toolsel eval compare: each metric's paired difference with its interval).
#
#   evals/benchmarks/measure_descriptions.sh [SUITE...]        (default: the five domain suites)
#
# Environment: BUDGET (default light: the metric calls 'toolsel optimize --optimizer gepa' gets), MAX_METRIC_CALLS
# (a cap in metric calls instead of the budget), DEV_LIMIT (GEPA selects on the first N dev cases), STRATEGY (default
# native-strict, what auto picks for a local model), LIMIT (only the first N cases of every split: a smoke run),
# STUDENT and TEACHER (model specs), OUT (default runs/descriptions), KEEP (default results/optimize/descriptions),
# DRY_RUN=1 (print the commands only). Both test runs score the selection alone (--relevance none), uncached so
# that their latency and tokens compare too. Resumable: GEPA resumes from OUT/SUITE/program/optimizer_log and the
# evaluations from their run directories. Per suite: OUT/SUITE/{program,test-original,test-optimized,*.log} and
# compare.txt; the kept rows, compiled selectors and comparisons go to KEEP.
set -uo pipefail
cd "$(dirname "$0")/../.."
SUITES=${*:-treasure_hunt events ecommerce finance language}
STUDENT=${STUDENT:-local:qwen2.5-coder-0.5b}
TEACHER=${TEACHER:-local:qwen2.5-coder-1.5b}
BUDGET=${BUDGET:-light}
STRATEGY=${STRATEGY:-native-strict}
OUT=${OUT:-runs/descriptions}
KEEP=${KEEP:-results/optimize/descriptions}
BIN=${VENV:-.venv}/bin

run() {  # run LOG COMMAND...: COMMAND with its output in LOG (printed only, under DRY_RUN=1)
  local log=$1; shift
  echo "$(date +%T) $*"
  [[ ${DRY_RUN:-0} == 1 ]] && return 0
  "$@" > "$log" 2>&1 || { echo "  failed: see $log"; return 1; }
}

optimize_limits=() eval_limit=()
if [[ -n ${LIMIT:-} ]]; then
  optimize_limits=(--train-limit "$LIMIT" --dev-limit "$LIMIT")
  eval_limit=(--limit "$LIMIT")
elif [[ -n ${DEV_LIMIT:-} ]]; then
  optimize_limits=(--dev-limit "$DEV_LIMIT")
fi
[[ -n ${MAX_METRIC_CALLS:-} ]] && optimize_limits+=(--max-metric-calls "$MAX_METRIC_CALLS")
test_run=(--split test --relevance none --no-cache --no-mlflow "${eval_limit[@]}")

for suite in $SUITES; do
  dir=$OUT/$suite
  [[ ${DRY_RUN:-0} == 1 ]] || mkdir -p "$dir"
  run "$dir/optimize.log" "$BIN/toolsel" optimize --suite "$suite" --target descriptions --model "$STUDENT" \
      --teacher "$TEACHER" --strategy "$STRATEGY" --budget "$BUDGET" "${optimize_limits[@]}" --no-test --no-mlflow \
      --out "$dir/program" || continue
  run "$dir/test-optimized.log" "$BIN/toolsel" eval --suite "$suite" --model "$STUDENT" --program "$dir/program" \
      "${test_run[@]}" --run-dir "$dir/test-optimized" || continue
  run "$dir/test-original.log" "$BIN/toolsel" eval --suite "$suite" --model "$STUDENT" --strategy "$STRATEGY" \
      "${test_run[@]}" --run-dir "$dir/test-original" || continue
  run "$dir/compare.txt" "$BIN/toolsel" eval compare "$dir/test-original" "$dir/test-optimized" || continue
  [[ ${DRY_RUN:-0} == 1 ]] || cat "$dir/compare.txt"
done

run "$OUT/keep.log" "$BIN/python" -m evals.benchmarks.keep_results "$OUT" "$KEEP"
for suite in $SUITES; do  # the comparison and GEPA's log of its steps go with the kept rows
  [[ -f $OUT/$suite/compare.txt ]] && cp "$OUT/$suite/compare.txt" "$KEEP/$suite/compare.txt"
  log=$OUT/$suite/program/optimizer_log/run_log.json
  [[ -f $log ]] && mkdir -p "$KEEP/$suite/program/optimizer_log" && cp "$log" "$KEEP/$suite/program/optimizer_log/"
done
echo "$(date +%T) done"
