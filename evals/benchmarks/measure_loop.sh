#!/usr/bin/env bash
# The multistep suite's test tasks through the loop, one variant of how turns run at a time (llama.cpp must run
# alone for its timings): the default, finish (every step a call, the turn ended by finish(answer)), trajectories
# (the train tasks' solved oracles shown first, as earlier turns), both, or text (the solved tasks told as
# examples in the system prompt). Resumable: a run keeps its finished tasks.
#
#   [LIMIT=20] evals/benchmarks/measure_loop.sh MODEL_NAME [VARIANT...]   (VARIANT: default finish trajectories both text)
#
# Rows go to OUT/MODEL_NAME-VARIANT (default OUT: runs/loop/multistep); DRY_RUN=1 prints the commands only. Then
#   python -m evals.benchmarks.loop_report --paired default=OUT/M-default finish=OUT/M-finish ...
set -uo pipefail
cd "$(dirname "$0")/../.."
MODEL=${1:-qwen2.5-coder-0.5b}; shift || true
VARIANTS=${*:-finish trajectories both}
OUT=${OUT:-runs/loop/multistep}
BIN=${VENV:-.venv}/bin
TRAJECTORIES=$OUT/trajectories
limit=(); [[ -n ${LIMIT:-} ]] && limit=(--limit "$LIMIT")

run() {  # run LOG COMMAND...: COMMAND with its output in LOG (printed only, under DRY_RUN=1)
  local log=$1; shift
  echo "$(date +%T) $*"
  [[ ${DRY_RUN:-0} == 1 ]] && return 0
  mkdir -p "$OUT"
  "$@" > "$log" 2>&1 || { echo "  failed: see $log"; return 1; }
}

run "$OUT/trajectories.log" "$BIN/toolsel" optimize --suite multistep --out "$TRAJECTORIES" || exit 1
for variant in $VARIANTS; do
  case $variant in
    default) options=() ;;
    finish) options=(--finish tool) ;;
    trajectories) options=(--trajectories "$TRAJECTORIES") ;;
    both) options=(--finish tool --trajectories "$TRAJECTORIES") ;;
    text) options=(--trajectories "$TRAJECTORIES" --trajectories-as text) ;;
    *) echo "unknown variant $variant: default, finish, trajectories, both or text"; exit 2 ;;
  esac
  run "$OUT/$MODEL-$variant.log" "$BIN/toolsel" eval loop --suite multistep --split test --no-cache \
      --model "local:$MODEL" "${limit[@]}" "${options[@]}" --run-dir "$OUT/$MODEL-$variant"
done
echo "$(date +%T) done"
