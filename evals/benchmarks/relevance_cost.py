"""What the relevance stage costs: seconds per case and per correct decision, with and without it, on one machine.

    python -m evals.benchmarks.relevance_cost [--model local:qwen2.5-coder-0.5b] [--relevance auto|FILE]
                                              [--suites bfcl:multiple,bfcl:irrelevance] [--sample 20] [--seed 0]

The same selector (the default strategy, greedy, uncached) answers each sampled case twice, once alone and once
with the relevance stage, in alternating order (ABBA...), so both configurations see the same load; the stage's
own one-time set-up (the embedding model) happens on a warm-up case outside the timings. Printed: seconds per case
and per correct decision for each, the ratio (target: at most 1.30), the stage's own seconds (its signals), and
how often the two answered alike where the stage kept the calls (the log-probabilities it asks for should not
change a greedy answer). Run it alone: llama.cpp's threads spin, and another process on a core slows them
10-20x.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd

from tool_selection.defaults import DEFAULT_MAX_TOKENS, DEFAULT_MODEL

__all__ = ["main"]


def _cases(suites: list[str], sample: int, seed: int) -> list:
    from evals.suite import load_suite

    return [case for name in suites for case in load_suite(name).sample(sample, seed=seed)]


def _answer(selector, lm, case) -> dict:
    import dspy

    from evals.metrics import score_case
    from evals.suite import registry_for

    registry = registry_for(case)
    start = time.perf_counter()
    with dspy.context(lm=lm):
        prediction = selector(request=case.prompt, tools=registry)
    seconds = time.perf_counter() - start
    extras = dict(getattr(prediction, "row_extras", None) or {})
    return {"seconds": seconds, "correct": score_case(case, prediction.decision)["full_match"],
            "stage_seconds": extras.get("relevance_seconds", 0.0),
            "overruled": extras.get("relevance_overruled", 0.0),
            "calls": json.dumps([c.model_dump() for c in prediction.decision.tool_calls], default=str)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="relevance_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--relevance", default="auto", help="auto (the model shipped for --model) or a file.")
    parser.add_argument("--suites", default="bfcl:multiple,bfcl:irrelevance")
    parser.add_argument("--sample", type=int, default=20, help="Cases per suite (default: 20).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/relevance_cost", help="Folder for the per-case timings (CSV).")
    args = parser.parse_args(argv)

    from tool_selection.errors import ToolSelectionError
    from tool_selection.lm import get_lm, prepare_lm
    from tool_selection.relevance import RelevanceStage, resolve_relevance
    from tool_selection.selector import MultiToolSelector

    model = resolve_relevance(args.relevance, args.model)
    if model is None:
        raise ToolSelectionError(f"No relevance model ships for {args.model}: give --relevance FILE.")
    lm = get_lm(args.model, temperature=0.0, max_tokens=DEFAULT_MAX_TOKENS, cache=False, constrained=True)
    prepare_lm(lm)
    selectors = {"alone": MultiToolSelector(), "with relevance": MultiToolSelector(relevance=RelevanceStage(model))}
    for selector in selectors.values():
        selector.pin_strategy(lm)
    cases = _cases([s.strip() for s in args.suites.split(",")], args.sample, args.seed)
    for selector in selectors.values():  # loads the engine's and the stage's models outside the timings
        _answer(selector, lm, cases[0])
    rows = []
    for index, case in enumerate(cases):
        order = list(selectors) if index % 2 == 0 else list(reversed(selectors))
        for name in order:
            rows.append({"case": case.id, "config": name, **_answer(selectors[name], lm, case)})
        print(f"\r{index + 1}/{len(cases)} cases", end="", flush=True)
    print()
    table = pd.DataFrame(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "relevance_cost.csv", index=False)

    summary = table.groupby("config", sort=False).agg(
        cases=("case", "size"), seconds_per_case=("seconds", "mean"), stage_seconds=("stage_seconds", "mean"),
        accuracy=("correct", "mean"), correct=("correct", "sum"), total_seconds=("seconds", "sum"))
    summary["seconds_per_correct"] = summary["total_seconds"] / summary["correct"]
    base = summary.loc["alone", "seconds_per_case"]
    summary["ratio"] = summary["seconds_per_case"] / base
    calls = table.pivot(index="case", columns="config", values="calls")
    kept = table[table["config"] == "with relevance"].set_index("case")["overruled"] == 0
    alike = float((calls["alone"] == calls["with relevance"])[kept].mean())
    print(f"{args.model}, relevance model {model.fingerprint}, {len(cases)} cases of {args.suites} "
          f"(sample {args.sample} per suite, seed {args.seed})")
    print(summary[["cases", "seconds_per_case", "ratio", "stage_seconds", "accuracy", "seconds_per_correct"]]
          .round(3).to_string())
    print(f"answers alike where the stage kept the calls: {100 * alike:.1f}%")
    print(f"per-case timings: {out / 'relevance_cost.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
