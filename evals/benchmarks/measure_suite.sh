#!/usr/bin/env bash
# The README's per-suite figures for the local pair, in one go: the stuck-detection benchmark (which also
# evaluates each model alone on dev and test, uncached, so its baselines are the zero-shot rows), then the 0.5B
# selector optimized with bootstrap and random search, the 1.5B model as teacher, each scored on test.
#
#   evals/benchmarks/measure_suite.sh SUITE [LIMIT]
#
# LIMIT caps every split (first N cases; BFCL categories interleave, so bfcl:multiple+irrelevance stays balanced).
# Logs go to runs/measure/SUITE/*.log; results to runs/, programs/ and MLflow as usual.
set -euo pipefail
suite=${1:?usage: measure_suite.sh SUITE [LIMIT]}
limit=${2:-}
small=local:qwen2.5-coder-0.5b
large=local:qwen2.5-coder-1.5b
bin=${VENV:-.venv}/bin
slug=${suite//[^A-Za-z0-9]/-}
logs=runs/measure/$slug
mkdir -p "$logs"

bench_limit=() optimize_limits=()
if [[ -n $limit ]]; then
    bench_limit=(--limit "$limit")
    optimize_limits=(--train-limit $((2 * limit)) --dev-limit "$limit" --test-limit "$limit")
fi

"$bin"/toolsel bench stuck --suite "$suite" --pair "$small,$large" \
    --detectors heuristic,validation,confidence,confidence_min,combined --no-cache "${bench_limit[@]}" \
    --out "runs/stuck_bench/$slug" 2>"$logs/bench.err" | tee "$logs/bench.log"

for optimizer in bootstrap random-search; do
    budget=$([[ $optimizer == bootstrap ]] && echo medium || echo light)
    "$bin"/toolsel optimize --suite "$suite" --model "$small" --teacher "$large" --optimizer "$optimizer" \
        --budget "$budget" "${optimize_limits[@]}" --out "programs/$slug-$optimizer" \
        2>"$logs/$optimizer.err" | tee "$logs/$optimizer.log"
done
