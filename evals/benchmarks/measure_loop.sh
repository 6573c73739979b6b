#!/usr/bin/env bash
# A loop suite's test tasks through the loop, one variant of how turns run at a time (llama.cpp must run alone for
# its timings): the default, finish (every step a call, the turn ended by finish(answer)), trajectories (the
# train tasks solved, shown first as earlier turns), both, text (the solved tasks told as examples in the system
# prompt), or cascade (both, with stuck steps escalated to SECONDARY). Resumable: a run keeps its finished tasks.
#
#   [LIMIT=20] evals/benchmarks/measure_loop.sh MODEL_NAME [VARIANT...]
#   VARIANT: default finish trajectories both text cascade
#
# SUITE (default multistep; bfcl:multi_turn_base runs BFCL's fixed sample: --split all --sample SAMPLE --seed 0,
# SAMPLE default 20), SECONDARY (default local:qwen2.5-coder-1.5b) and ESCALATION (delegate or guide, default
# delegate) for the cascade. Rows go to OUT/MODEL_NAME-VARIANT (default OUT: runs/loop/multistep, or
# runs/loop/bfcl_multi_turn); DRY_RUN=1 prints the commands only. Then
#   python -m evals.benchmarks.loop_report --paired default=OUT/M-default finish=OUT/M-finish ...
set -uo pipefail
cd "$(dirname "$0")/../.."
MODEL=${1:-qwen2.5-coder-0.5b}; shift || true
VARIANTS=${*:-finish trajectories both}
SUITE=${SUITE:-multistep}
SECONDARY=${SECONDARY:-local:qwen2.5-coder-1.5b}
ESCALATION=${ESCALATION:-delegate}
BIN=${VENV:-.venv}/bin
tasks=(--split test) limit=()
if [[ $SUITE == bfcl:* ]]; then
  OUT=${OUT:-runs/loop/bfcl_multi_turn}
  tasks=(--split all --sample "${SAMPLE:-20}" --seed 0)
else
  OUT=${OUT:-runs/loop/$SUITE}
fi
TRAJECTORIES=$OUT/trajectories
[[ -n ${LIMIT:-} ]] && limit=(--limit "$LIMIT")

run() {  # run LOG COMMAND...: COMMAND with its output in LOG (printed only, under DRY_RUN=1)
  local log=$1; shift
  echo "$(date +%T) $*"
  [[ ${DRY_RUN:-0} == 1 ]] && return 0
  mkdir -p "$OUT"
  "$@" > "$log" 2>&1 || { echo "  failed: see $log"; return 1; }
}

run "$OUT/trajectories.log" "$BIN/toolsel" optimize --suite "$SUITE" --out "$TRAJECTORIES" || exit 1
for variant in $VARIANTS; do
  case $variant in
    default) options=() ;;
    finish) options=(--finish tool) ;;
    trajectories) options=(--trajectories "$TRAJECTORIES") ;;
    both) options=(--finish tool --trajectories "$TRAJECTORIES") ;;
    text) options=(--trajectories "$TRAJECTORIES" --trajectories-as text) ;;
    cascade) options=(--finish tool --trajectories "$TRAJECTORIES" --secondary "$SECONDARY"
                      --escalation "$ESCALATION") ;;
    *) echo "unknown variant $variant: default, finish, trajectories, both, text or cascade"; exit 2 ;;
  esac
  name=$MODEL-$variant
  [[ $variant == cascade ]] && name=$MODEL-cascade-$ESCALATION-${SECONDARY#local:}
  run "$OUT/$name.log" "$BIN/toolsel" eval loop --suite "$SUITE" "${tasks[@]}" --no-cache \
      --model "local:$MODEL" "${limit[@]}" "${options[@]}" --run-dir "$OUT/$name"
done
echo "$(date +%T) done"
