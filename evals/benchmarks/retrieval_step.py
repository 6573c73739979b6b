"""The selector's retrieval step per request at 1,000 and 10,000 tools: the index kept while the tools are unchanged,
against fitting it again on every request (what the selector did before ``ToolRegistry.revision``), and with a new
``ToolSet`` of the same tools given with each request (a new registry each time, its tools compared with the fit's).

    python -m evals.benchmarks.retrieval_step [--sizes 1000 10000] [--cases 30] [--retriever hybrid-multi]
                                              [--fusion convex-catalog] [--catalogs 0 1] [--out DIR]

Each request goes through ``MultiToolSelector.shown_tools`` (fit, retrieve, route to catalogs, the shown registry),
no model runs. The registry is ``bench scale``'s (``registry_of_size``) with the train splits' requests in the tools'
documents; the embeddings come from the disk cache after a first run. A refit finds its index in the in-memory cache
by content, so the baseline pays what a refit costs with no index built: each tool's document rebuilt and hashed.
Prints milliseconds per request (mean, 95th percentile) for each, the refit's ratio to the kept index, and whether
all three showed the same tools for every request (exit 1 if not); ``--out`` keeps the rows. Run it alone: timings
on two cores move with anything else running.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

from evals.benchmarks.scale import sample_cases
from evals.scale_registry import catalog_examples, registry_of_size
from tool_selection.registry import ToolRegistry
from tool_selection.retrieval import FUSIONS
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import RetrievalSpec
from tool_selection.toolset import ToolSet

__all__ = ["MODES", "main", "step_milliseconds", "step_table"]


MODES = ("refit", "kept", "set")
"""How each request reaches the selector: ``refit``, the same registry with the index fitted again first (the selector
before it kept its index); ``kept``, the same registry; ``set``, a new ``ToolSet`` of the same tools."""


def step_milliseconds(selector: MultiToolSelector, registry: ToolRegistry, requests: list[str], *,
                      mode: str) -> tuple[list[float], list[tuple[str, ...]]]:
    """Milliseconds of the selector's retrieval step (``shown_tools``) for each request and the tools it showed, each
    request given ``registry`` as ``mode`` says (``MODES``)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    selector.shown_tools("warm up", registry)  # the first fit (embeddings from the disk cache)
    milliseconds, shown = [], []
    for request in requests:
        listing = ToolSet(name=registry.name, tools=registry.tools()) if mode == "set" else registry
        if mode == "refit":
            selector.refit_retrieval()  # what the selector did before ToolRegistry.revision
        started = time.perf_counter()
        ranked = selector.shown_tools(request, listing)
        milliseconds.append(1000 * (time.perf_counter() - started))
        shown.append(tuple(ranked))
    return milliseconds, shown


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def step_table(sizes: list[int], cases: int, retriever: str, fusion: str | None, catalogs: list[int]) -> pd.DataFrame:
    """One row per size and routing: milliseconds per request in each of ``MODES``, and refit's over kept."""
    suite = sample_cases(cases)
    requests = [case.prompt for case in suite]
    required = sorted({call.tool_name for case in suite for call in case.expected_calls})
    examples = catalog_examples("train").save(Path(tempfile.mkdtemp()) / "examples-train.json")
    rows = []
    for size in sizes:
        registry = registry_of_size(size, required)
        for routed in catalogs:
            spec = RetrievalSpec(k=5, retriever=retriever, fusion=fusion, examples=str(examples),
                                 catalogs=routed or None)
            measured = {mode: step_milliseconds(MultiToolSelector(retrieval=spec), registry, requests, mode=mode)
                        for mode in MODES}
            (refit, refit_shown), (kept, kept_shown), (per_set, set_shown) = (measured[mode] for mode in MODES)
            rows.append({"tools": len(registry), "routing": f"best {routed}" if routed else "none",
                         "refit_ms": statistics.mean(refit), "refit_p95_ms": _p95(refit),
                         "kept_ms": statistics.mean(kept), "kept_p95_ms": _p95(kept),
                         "set_ms": statistics.mean(per_set), "set_p95_ms": _p95(per_set),
                         "ratio": statistics.mean(refit) / statistics.mean(kept),
                         "same_tools_shown": refit_shown == kept_shown == set_shown})
            print(_markdown_row(rows[-1]), flush=True)
    return pd.DataFrame(rows)


def _markdown_row(row: dict) -> str:
    return (f"| {row['tools']:,} | {row['routing']} | {row['refit_ms']:.1f} ({row['refit_p95_ms']:.1f}) | "
            f"{row['kept_ms']:.1f} ({row['kept_p95_ms']:.1f}) | {row['set_ms']:.1f} ({row['set_p95_ms']:.1f}) | "
            f"{row['ratio']:.1f}x | "
            f"{'yes' if row['same_tools_shown'] else 'NO'} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--cases", type=int, default=30, help="requests (bench scale's seeded test cases)")
    parser.add_argument("--retriever", default="hybrid-multi")
    parser.add_argument("--fusion", default="convex-catalog", choices=("none", *FUSIONS),
                        help="how a hybrid retriever fuses its rankings; none for a retriever that does not fuse")
    parser.add_argument("--catalogs", type=int, nargs="*", default=[0, 1],
                        help="0: unrouted; N: the N best catalogs (--retrieve-catalogs)")
    parser.add_argument("--out", type=Path, help="a folder to keep the rows in (retrieval_step.csv)")
    args = parser.parse_args(argv)
    print("| tools | routing | refit every request, ms (p95) | index kept, ms (p95) | a ToolSet each request, ms (p95) "
          "| ratio (refit / kept) | same tools shown |")
    print("|---|---|---|---|---|---|---|")
    fusion = None if args.fusion == "none" else args.fusion
    table = step_table(args.sizes, args.cases, args.retriever, fusion, args.catalogs)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out / "retrieval_step.csv", index=False, float_format="%.2f")
    return 0 if table["same_tools_shown"].all() else 1


if __name__ == "__main__":
    raise SystemExit(main())
