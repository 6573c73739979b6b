#!/usr/bin/env bash
# The README's per-suite figures for the local pair, in one go: the stuck-detection benchmark (which also
# evaluates each model alone on dev and test, uncached, so its baselines are the zero-shot rows), then the 0.5B
# selector optimized by each optimizer, the 1.5B model as teacher, each scored on test.
#
#   [STRATEGY=native] [DETECTORS=...] [OPTIMIZERS="random-search mipro"] evals/benchmarks/measure_suite.sh SUITE [LIMIT]
#
# STRATEGY: the selection strategy of every run (default json-cot, the earlier tables). DETECTORS: the stuck
# detectors (default all but consistency, which triples the primary's cost). OPTIMIZERS: default "bootstrap
# random-search" (bootstrap at budget medium, the others light); "none" skips optimization, and STUCK=0 skips
# the stuck benchmark. LIMIT caps every split (first N cases; BFCL categories interleave, so
# bfcl:multiple+irrelevance stays balanced). Logs go to runs/measure/SUITE[-STRATEGY]/*.log; results to runs/,
# programs/ and MLflow as usual.
set -euo pipefail
suite=${1:?usage: measure_suite.sh SUITE [LIMIT]}
limit=${2:-}
strategy=${STRATEGY:-json-cot}
detectors=${DETECTORS:-heuristic,validation,confidence,confidence_min,combined}
optimizers=${OPTIMIZERS:-bootstrap random-search}
small=local:qwen2.5-coder-0.5b
large=local:qwen2.5-coder-1.5b
bin=${VENV:-.venv}/bin
slug=${suite//[^A-Za-z0-9]/-}
[[ $strategy == json-cot ]] || slug=$slug-${strategy//[^A-Za-z0-9]/-}
logs=runs/measure/$slug
mkdir -p "$logs"

bench_limit=() optimize_limits=()
if [[ -n $limit ]]; then
    bench_limit=(--limit "$limit")
    optimize_limits=(--train-limit $((2 * limit)) --dev-limit "$limit" --test-limit "$limit")
fi

if [[ ${STUCK:-1} != 0 ]]; then
    "$bin"/toolsel bench stuck --suite "$suite" --pair "$small,$large" --strategy "$strategy" \
        --detectors "$detectors" --no-cache "${bench_limit[@]}" \
        --run-dir "runs/stuck_bench/$slug" 2>"$logs/bench.err" | tee "$logs/bench.log"
fi

[[ $optimizers == none ]] && exit 0
for optimizer in $optimizers; do
    budget=$([[ $optimizer == bootstrap ]] && echo medium || echo light)
    "$bin"/toolsel optimize --suite "$suite" --model "$small" --teacher "$large" --optimizer "$optimizer" \
        --strategy "$strategy" --budget "$budget" "${optimize_limits[@]}" --out "programs/$slug-$optimizer" \
        2>"$logs/$optimizer.err" | tee "$logs/$optimizer.log"
done
