"""In-process engine vs llama-server with 1, 2, 4 and 8 parallel slots: decisions per second on one machine.

    python -m evals.benchmarks.served [--model local:qwen2.5-coder-0.5b] [--suite bfcl:multiple --sample 24]
                                      [--parallel 1,2,4,8] [--ray] [--out runs/served]

Every configuration runs the same cases with the native strategy, greedy and uncached, through the same harness
(``evaluate``): in-process with one case at a time (the baseline), then through a server started for it with N
slots and N cases in flight (``--threads N``). Model loading and server start are outside the timings. Printed
per configuration: wall seconds, decisions per second and its ratio to the baseline, mean seconds per request,
accuracy, and how many decisions equal the baseline's (greedy answers should match; batched matrix products may
round differently, and the server renders the chat template with its own engine). ``--ray`` adds, for each N, the
same cases fanned out over N Ray workers (a local Ray instance) against a server of its own (a server that has
seen the cases answers them from its prompt cache, several times faster on a CPU). Writes ``served.csv`` and a
plot (``served.png``) under ``--out``. Run it alone: llama.cpp's threads spin.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from tool_selection.defaults import DEFAULT_MODEL

__all__ = ["main"]


def _run(label: str, lm, args: argparse.Namespace, threads: int, run_root: Path, ray: str | None = None) -> dict:
    from evals.evaluation import evaluate
    from tool_selection.run_config import RunConfig
    from tool_selection.spec import SelectorSpec

    start = time.perf_counter()
    result = evaluate(args.suite, lm, split=args.split, selector=SelectorSpec.build(strategy=args.strategy),
                      run=RunConfig(sample=args.sample, seed=args.seed, threads=threads, cache=False, mlflow=False,
                                    max_tokens=args.max_tokens, run_dir=run_root / label, fresh=True, ray=ray))
    wall = time.perf_counter() - start
    table = result.results
    return {"config": label, "threads": threads, "cases": len(table), "wall_s": wall,
            "decisions_per_s": len(table) / wall, "request_s": table["latency_s"].mean(),
            "accuracy": table["full_match"].mean(), "parse_failures": int(table["parse_error"].notna().sum()),
            "errors": int(table["error"].sum()), "output_tokens": table["output_tokens"].mean(),
            "_answers": dict(zip(table["id"], table["predicted"], strict=True))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="served", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--suite", default="bfcl:multiple")
    parser.add_argument("--split", default=None)
    parser.add_argument("--sample", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--strategy", default="native")
    parser.add_argument("--parallel", default="1,2,4,8", help="Comma-separated slot counts (default: 1,2,4,8).")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--ray", action="store_true", help="Also fan the cases out over N Ray workers per server.")
    parser.add_argument("--out", default="runs/served")
    args = parser.parse_args(argv)

    from tool_selection.lm import ModelServer, get_lm, prepare_lm

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    lm = get_lm(args.model, cache=False, max_tokens=args.max_tokens, constrained=True)
    prepare_lm(lm)
    rows.append(_run("in-process", lm, args, 1, out))
    for parallel in (int(p) for p in args.parallel.split(",")):
        with ModelServer(args.model, parallel=parallel) as server:
            served = server.lm(cache=False, max_tokens=args.max_tokens)
            rows.append(_run(f"served x{parallel}", served, args, parallel, out))
        if args.ray:  # a fresh server, so no prompt is in its cache already; workers take its address as a spec
            with ModelServer(args.model, parallel=parallel) as server:
                rows.append(_run(f"ray {parallel} workers, served x{parallel}", server.model_spec, args, parallel,
                                 out, ray="local"))

    baseline = rows[0]
    for row in rows:
        row["speedup"] = row["decisions_per_s"] / baseline["decisions_per_s"]
        row["same_as_in_process"] = sum(row["_answers"][k] == v for k, v in baseline["_answers"].items())
    table = pd.DataFrame([{k: v for k, v in row.items() if not k.startswith("_")} for row in rows])
    table.to_csv(out / "served.csv", index=False)
    print(f"\n{args.model}, {args.suite} ({args.sample} cases, seed {args.seed}), strategy {args.strategy}, greedy")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    _plot(table, out / "served.png", args)
    print(f"\n{out / 'served.csv'}, {out / 'served.png'}")
    return 0


def _plot(table: pd.DataFrame, path: Path, args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, left = plt.subplots(figsize=(6.5, 4))
    left.bar(table["config"], table["decisions_per_s"], color="tab:blue")
    left.set_ylabel("decisions per second")
    right = left.twinx()
    right.plot(table["config"], table["request_s"], color="tab:red", marker="o")
    right.set_ylabel("seconds per request", color="tab:red")
    left.set_title(f"{args.model.removeprefix('local:')}: in-process vs llama-server slots")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
