#!/usr/bin/env bash
# The measured conversations of docs/results/conversations.md: the shipped discussion (TURNS turns, default 5) and
# debate (one round) with the embedded models, kept under results/conversations/. The debate resumes from its state
# file when run again; the discussion starts over (its transcript keeps the turns a stopped run finished).
#   evals/benchmarks/measure_conversations.sh [TURNS]
# then: python -m evals.benchmarks.conversations_report --results results/conversations \
#           --write docs/results/conversations.md
# Both run at once, one llama.cpp thread each (TOOLSEL_N_THREADS; a second thread per model only waits on the
# first when the cores are shared); NICE (default 0) lowers their priority.
set -uo pipefail
cd "$(dirname "$0")/../.."
TURNS=${1:-5}
OUT=${OUT:-results/conversations}
PYTHON=${PYTHON:-.venv/bin/python}
export TOOLSEL_N_THREADS=${TOOLSEL_N_THREADS:-1} PYTHONUNBUFFERED=1
mkdir -p "$OUT"
echo "$(date +%T) debate and discussion ($TURNS turns)"
nice -n "${NICE:-0}" "$PYTHON" -m tool_selection.conversations debate run examples/debate.json --rounds 1 --verbose \
    --no-cache --no-mlflow --state "$OUT/debate-state.json" > "$OUT/debate.log" 2>&1 &
nice -n "${NICE:-0}" "$PYTHON" -m tool_selection.conversations discuss run examples/discussion.yaml --turns "$TURNS" \
    --verbose --no-cache --no-mlflow --out "$OUT/discussion.json" > "$OUT/discussion.log" 2>&1 &
wait
echo "$(date +%T) done"
