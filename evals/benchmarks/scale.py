"""Scale: selection over registries of 10 to 2,000+ tools, with and without retrieval in front of the selector.

    toolsel bench scale [--model local:qwen2.5-coder-0.5b] [--strategy auto] [--cases 60] [--k 5]
                        [--sizes 10 100 1000 all] [--retriever hybrid] [--rerank 20] [--groups 5]
                        [--relevance none]
    toolsel bench scale --retrieval-only [--cases 300]     # no model: every retriever's Recall@k and MRR
    toolsel bench scale ... --examples                      # also with train requests in the tools' documents
    toolsel bench scale ... --catalogs 1                    # also showing only the best-ranked catalog's tools
    toolsel bench scale ... --show-catalogs                 # also each shown tool's catalog in its description
    toolsel bench scale ... --fusion convex                 # hybrid retrievers fused by weighted scores, not ranks
    toolsel bench scale ... --fusion convex-catalog         # and each tool raised by its catalog's best two
    toolsel bench scale --write-examples FILE --sizes 1000 --cases 300   # the model writes requests for every tool
    toolsel bench scale ... --written FILE                  # also with those written requests in the documents
    toolsel bench scale ... --catalogs 1 --catalog-margin 0.25  # routed only where the best catalog leads by 0.25
    toolsel bench scale ... --catalogs 1 --catalog-others 2     # routed, with the other catalogs' two best beside
    toolsel bench scale ... --split dev                     # the cases drawn from the dev splits, to choose a setting

A fixed sample of cases (domain suites' test splits and BFCL ``multiple``, seeded; ``--split dev``: their dev
splits) is scored:

- with only each case's own tool set (the reference);
- over registries of each size (``evals.scale_registry.registry_of_size``: the catalog of domain tools plus every
  BFCL function doc, always holding the tools the cases need), with the selector seeing the top-``k`` retrieved
  tools; and without retrieval where the whole listing still fits the model's context.

Per row: Recall@k of the retrieval, accuracy with its 95% interval, prompt tokens and seconds per case; the plot
draws accuracy and prompt tokens against registry size. The prompt stays the same size whatever the registry
when retrieval is on, which is the point.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from evals.evaluation import evaluate
from evals.metrics import bootstrap_ci
from evals.scale_registry import DOMAIN_TOOL_SETS, catalog_examples, parse_size, registry_of_size
from evals.stats import compare_paired
from evals.suite import Suite, load_suite
from evals.tool_examples import refuse_scored
from tool_selection.defaults import DEFAULT_MODEL, DEFAULT_STRATEGY
from tool_selection.retrieval import FUSIONS, SCORE_FUSIONS
from tool_selection.retrieval.examples import ToolExamples
from tool_selection.retrieval.intent import QUERIES, IntentRetriever
from tool_selection.run_config import RunConfig
from tool_selection.spec import RetrievalSpec, SelectorSpec

__all__ = ["main", "run_scale"]

OUT = Path("runs") / "scale"
ONLY = {"examples": ("--examples", "examples", "the row with the train examples"),
        "routed": ("--catalogs", "catalogs", "the rows routed by catalog"),
        "shown": ("--show-catalogs", "show_catalogs", "the row showing each tool's catalog"),
        "written": ("--written", "written", "the rows with written examples")}
"""What ``--only`` keeps beside the own tool set: the flag whose rows they are (and its argument's name), and what
they are."""
SPLITS = ("test", "dev")
RETRIEVER_CHOICES = ["bm25", "dense", "hybrid", "dense-hnsw", "hybrid-hnsw", "dense-multi", "hybrid-multi"]


def sample_cases(n: int, seed: int = 0, split: str = "test") -> Suite:
    """``n`` single-turn cases needing tools, spread evenly over the ``split`` splits (test, or dev to choose a
    setting) of the domain suites and BFCL ``multiple``."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    sources = [load_suite(name).split(split) for name in (*DOMAIN_TOOL_SETS, "bfcl:multiple")]
    share = max(1, n // len(sources))
    cases = []
    for source in sources:
        needing = Suite(source.name, [c for c in source.cases if c.expected_calls and len(c.messages or []) <= 1])
        cases.extend(needing.sample(share, seed).cases)
    return Suite(f"scale{'' if split == 'test' else '-' + split}~{len(cases)}@{seed}", cases)


class _Variant(NamedTuple):
    """One retrieval row's setting: its label, the retriever, its fusion (None: its own), the example requests
    indexed with each tool, the catalogs it routes to, what it reads besides the request (None: the request
    alone) and the lead the catalogs need to be routed to (None: always)."""

    label: str
    retriever: str
    fusion: str | None = None
    examples: Mapping[str, Sequence[str]] | None = None
    catalogs: int | None = None
    query: str | None = None
    margin: float | None = None


def retrieval_table(suite: Suite, *, sizes: list[int | None] = (10, 100, 1000, None), ks: list[int] = (1, 3, 5, 10),
                    retrievers: list[str] = ("bm25", "dense", "hybrid"), fusions: Sequence[str] = ("rrf",),
                    seed: int = 0,
                    examples: ToolExamples | None = None, catalogs: int | None = None,
                    written: ToolExamples | None = None,
                    intents: Mapping[str, Sequence[str]] | None = None,
                    catalog_margin: float | None = None) -> pd.DataFrame:
    """Retrieval alone, no model: Recall@k and MRR of each retriever over registries of each size, for the cases
    of ``suite`` (each registry holds every tool the cases need); with ``examples``, each retriever again with
    them in its tools' documents (``<retriever>+examples``); with ``written`` (requests a model wrote for every tool,
    ``write_catalog_examples``), each with those (``+written``) and, with ``examples`` too, with both
    (``+examples+written``); with ``intents`` (request -> the actions a model read in it, ``write_intents``), each
    again reading the request through them (``, intent``: the actions alone; ``, request+intent``: both, the
    rankings fused); each hybrid retriever once per fusion in ``fusions`` (``hybrid``, ``hybrid/convex``); with
    ``catalogs``, each again keeping only the tools of the N catalogs whose best tool ranks highest (``<retriever>,
    best N catalogs``), and with ``catalog_margin`` each fused by score again routing only where those catalogs lead
    the next by that much (``, lead >= M``). Per row also its cost: seconds to fit (embeddings come from the disk
    cache when a run before made them), milliseconds per request (mean and 95th percentile), and the index's memory
    where the retriever's index is a matrix or a faiss index."""
    from tool_selection.retrieval import (
        clear_index_cache,
        get_retriever,
        mean_score,
        recall_at_k,
        reciprocal_rank,
        retrieve_by_catalog,
    )

    required = sorted({c.tool_name for case in suite for c in case.expected_calls})
    if examples is not None:
        refuse_scored(examples, suite, "the train splits")
    bases = [_Variant(name, name) for name in retrievers if "rrf" in fusions or not _fuses(name)]
    bases += [_Variant(f"{name}/{fusion}", name, fusion) for name in retrievers if _fuses(name)
              for fusion in fusions if fusion != "rrf"]
    variants = list(bases)
    if examples is not None:
        variants += [v._replace(label=f"{v.label}+examples", examples=examples.requests) for v in bases]
    if written is not None:
        refuse_scored(written, suite, "the written examples")
        variants += [v._replace(label=f"{v.label}+written", examples=written.requests) for v in bases]
        if examples is not None:
            variants += [v._replace(label=f"{v.label}+examples+written", examples=examples.combined(written).requests)
                         for v in bases]
    if intents is not None:
        variants += [v._replace(label=f"{v.label}, {query}", query=query) for v in variants for query in QUERIES]
    if catalogs is not None:
        routed = [v._replace(label=f"{v.label}, best {_catalogs(catalogs)}", catalogs=catalogs) for v in variants]
        variants += routed
        if catalog_margin is not None:
            variants += [v._replace(label=f"{v.label}, lead >= {catalog_margin:g}", margin=catalog_margin)
                         for v in routed if v.fusion in SCORE_FUSIONS]
    rows = []
    for size in sizes:
        if size is not None and size < len(required):
            continue  # a registry this small cannot hold the tools these cases need
        registry = registry_of_size(size, required, seed)
        if written is not None:
            written.check_catalog(registry)
        for label, name, fusion, with_examples, routed, query, margin in variants:
            print(f"retrieval: {len(registry):,} tools, {label} ...", file=sys.stderr, flush=True)
            clear_index_cache()
            retriever = get_retriever(name, **({} if fusion is None else {"fusion": fusion}))
            if query is not None:
                retriever = IntentRetriever(retriever, lambda request: intents.get(request, ()), query)
            started = time.perf_counter()
            retriever.fit(registry, with_examples)
            fit_s = time.perf_counter() - started
            ranked, latencies = {}, []
            for case in suite:
                started = time.perf_counter()
                ranked[case.id] = (retriever.retrieve(case.prompt, k=max(ks)) if routed is None else
                                   retrieve_by_catalog(retriever, registry, case.prompt, routed, max(ks), margin))
                latencies.append(1000 * (time.perf_counter() - started))
            row = {"registry_tools": len(registry), "retriever": label, "cases": len(suite)}
            expected = {case.id: {c.tool_name for c in case.expected_calls} for case in suite}
            for k in ks:
                row[f"recall@{k}"] = mean_score(recall_at_k(expected[case.id], ranked[case.id], k) for case in suite)
            row["mrr"] = mean_score(reciprocal_rank(expected[case.id], ranked[case.id]) for case in suite)
            row.update(fit_s=fit_s, query_ms=float(np.mean(latencies)),
                       query_ms_p95=float(np.percentile(latencies, 95)), index_mb=_index_megabytes(retriever))
            rows.append(row)
    return pd.DataFrame(rows)


def _fuses(name: str) -> bool:
    """Whether the named retriever fuses rankings in a way ``--fusion`` can change (a hybrid scoring every tool)."""
    from tool_selection.retrieval import RETRIEVERS, HybridRetriever

    kind = RETRIEVERS.get(name)
    return issubclass(kind, HybridRetriever) and kind.scores_every_tool


def write_intents(path: Path, model: str, suite: Suite) -> dict[str, tuple[str, ...]]:
    """The actions ``model`` reads in each request of ``suite`` (``tool_selection.retrieval.intent``), kept in
    ``path`` with the model, the rewriter's version and the seconds, saved every 20 requests and when the run ends
    however it ends, and resumed where ``path`` holds some from the same model and version."""
    from tqdm.auto import tqdm

    from tool_selection.lm import get_lm
    from tool_selection.retrieval.intent import INTENT_VERSION, MAX_TOKENS, IntentRewriter

    writer = {"version": INTENT_VERSION, "model": model}
    kept = json.loads(path.read_text()) if path.exists() else {"writer": writer, "intents": {}, "seconds": 0.0}
    if kept.get("writer") != writer:
        raise SystemExit(f"{path} holds intents read by {kept.get('writer')}, not by {writer}: give another "
                         "--intents FILE, or remove it.")
    lm = get_lm(model, constrained=True, max_tokens=MAX_TOKENS, cache=False)  # the file is the cache: honest seconds
    rewriter = IntentRewriter(lm, known=kept["intents"], remember=None)  # every one is written to the file

    def save() -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"writer": writer, "seconds": round(kept["seconds"] + rewriter.seconds, 1),
                                    "intents": {r: list(v) for r, v in sorted(rewriter.seen.items())}}, indent=1))

    todo = [case.prompt for case in suite if case.prompt not in rewriter.seen]
    try:
        for done, request in enumerate(tqdm(todo, desc="reading intents", unit="request"), start=1):
            rewriter(request)
            if done % 20 == 0:
                save()
    finally:  # a run stopped by an error or by hand keeps every request it finished
        save()
    return {case.prompt: rewriter.seen[case.prompt] for case in suite}


def write_catalog_examples(path: Path, model: str, suite: Suite, sizes: list[int | None], seed: int = 0) -> None:
    """Requests ``model`` writes for every tool of each size's registry (those the scale rows use for ``suite``),
    into one file at ``path``, resumed where it holds some already (``tool_selection.retrieval.written``)."""
    from tool_selection.registry import ToolRegistry
    from tool_selection.retrieval.written import write_examples_shown

    required = sorted({c.tool_name for case in suite for c in case.expected_calls})
    tools = {tool.NAME: tool for size in sizes for tool in registry_of_size(size, required, seed).tools()}
    write_examples_shown(ToolRegistry("scale-catalog", tools.values()), model, path)


def _index_megabytes(retriever) -> float:
    """Memory of the dense indexes behind ``retriever`` (an embedding matrix, a faiss index); NaN for none."""
    retriever = getattr(retriever, "retriever", retriever)  # an IntentRetriever reads another's index
    parts = getattr(retriever, "retrievers", (retriever,))
    sizes = []
    for part in parts:
        index = getattr(part, "_index", None)
        if hasattr(index, "nbytes"):  # an embedding matrix, or multi-vector's with its owners
            sizes.append(index.nbytes)
        elif type(index).__module__.startswith("faiss"):
            import faiss

            sizes.append(faiss.serialize_index(index).nbytes)
    return sum(sizes) / 2**20 if sizes else float("nan")


def _row(label: str, size: int | None, retrieve: int | None, result, reference=None) -> dict:
    frame = result.results
    accuracy, low, high = bootstrap_ci(frame["full_match"])
    recall = frame["retrieval_recall"].mean() if "retrieval_recall" in frame else float("nan")
    row = {"setting": label, "registry_tools": size, "retrieve_k": retrieve, "cases": len(frame),
           "recall_at_k": recall, "accuracy": accuracy, "accuracy_low": low, "accuracy_high": high,
           "prompt_tokens": frame["input_tokens"].mean(), "seconds": frame["latency_s"].mean(),
           "errors": frame["error"].mean()}
    if reference is not None:  # paired with the own-tool-set row on the same cases
        paired = compare_paired(reference.results, frame, {"accuracy": "full_match"})
        if not paired.empty:
            first = paired.iloc[0]
            row.update({"vs_own": first["difference"], "vs_own_low": first["ci_low"],
                        "vs_own_high": first["ci_high"], "vs_own_p": first["p_value"]})
    return row


def run_scale(model: str, *, strategy: str = DEFAULT_STRATEGY, cases: int = 60, k: int | Sequence[int] = 5,
              retriever: str = "hybrid",
              sizes: list[int | None] = (10, 100, 1000, None), context_tools: int = 40, seed: int = 0,
              rerank: int | None = None, groups: int | None = None, relevance: str = "auto",
              examples: bool = False, catalogs: int | None = None, written: Path | None = None,
              show_catalogs: bool = False, fusion: str | None = None, only: Sequence[str] | None = None,
              catalog_margin: float | None = None, catalog_others: int | None = None, split: str = "test",
              out: Path = OUT) -> pd.DataFrame:
    """The benchmark's table (also written to ``out``); see the module docstring. ``examples``: each retrieval row
    again with the train splits' requests in the tools' documents (``catalog_examples``, kept in ``out``);
    ``catalogs``: each again showing only the tools of the N catalogs whose best tool ranks highest (with the
    examples, where they are on); ``written``: a file of requests a model wrote for every tool
    (``--write-examples``), a row with them and, with ``examples``, one with both; ``show_catalogs``: the unrouted
    row (with the train examples, where on) again with each shown tool's catalog leading its description;
    ``fusion``: how every row's hybrid retriever fuses its rankings (None: its own, reciprocal rank); ``only``
    (kinds of ``ONLY``): the own tool set and those rows alone (the others measured in an earlier run; a larger
    model's run then takes a fraction of the time); ``split``: the splits the cases are drawn from (dev, to choose a
    setting before it is measured on test)."""
    suite = sample_cases(cases, seed, split)
    required = sorted({c.tool_name for case in suite for c in case.expected_calls})
    listed = SelectorSpec.build(strategy=strategy, relevance=relevance)
    run = RunConfig(mlflow=False, progress=True, cache=False)

    def measured(selector: SelectorSpec, folder: str, tools=None):
        return evaluate(suite, model, selector=selector, run=run.replace(run_dir=out / folder), split=split, tools=tools)

    examples_file = catalog_examples("train").save(out / "examples-train.json") if examples else None
    rows_of = RetrievalRows(listed, retriever, examples_file, _written_indexes(written, examples_file, out),
                            catalogs=catalogs, rerank=rerank, groups=groups, show_catalogs=show_catalogs,
                            fusion=fusion, only=only, catalog_margin=catalog_margin, catalog_others=catalog_others)
    own = measured(listed, "own")
    rows = [_row("own tool set", None, None, own)]
    for size in sizes:
        registry = registry_of_size(size, required, seed)
        label = f"{len(registry)} tools"
        if len(registry) <= context_tools and rows_of.only is None:  # the whole listing fits the context
            rows.append(_row(f"{label}, all listed", len(registry), None,
                             measured(listed, f"{len(registry)}-all", registry), own))
        for depth in [k] if isinstance(k, int) else list(k):
            for what, folder, selector in rows_of.settings(depth):
                rows.append(_row(f"{label}, top {depth} {what}", len(registry), depth,
                                 measured(selector, f"{len(registry)}-top{depth}{folder}", registry), own))
    table = pd.DataFrame(rows)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "scale.csv", index=False)
    (out / "cases.json").write_text(json.dumps([c.id for c in suite]))
    _plot(table, out / "scale.png")
    return table


@dataclass(frozen=True)
class RetrievalRows:
    """The retrieval settings a scale run measures at each depth: plain, with the train examples, with written
    examples, routed to the best catalogs, with the catalogs shown, re-ranked, in groups; ``only`` (kinds of
    ``ONLY``) keeps those alone."""

    listed: SelectorSpec
    retriever: str
    examples_file: Path | None
    indexes: dict[str, Path]
    catalogs: int | None = None
    rerank: int | None = None
    groups: int | None = None
    show_catalogs: bool = False
    fusion: str | None = None
    only: Sequence[str] | None = None
    catalog_margin: float | None = None
    catalog_others: int | None = None

    def settings(self, depth: int) -> list[tuple[str, str, SelectorSpec]]:
        """(what the row's label adds, its folder's suffix, the selector) for each row at ``depth``."""
        train = None if self.examples_file is None else str(self.examples_file)
        name = self.retriever if self.fusion is None else f"{self.retriever}/{self.fusion}"

        def spec(**setting) -> RetrievalSpec:
            return RetrievalSpec(k=depth, retriever=self.retriever, fusion=self.fusion, **setting)

        found: list[tuple[str, str, RetrievalSpec, str | None]] = []  # ..., the rows' kind for ``only``
        found.append((f"({name})", "", spec(), None))
        if train is not None:
            found.append((f"({name}, train examples)", "-examples", spec(examples=train), "examples"))
        found += [(f"({name}, {what})", f"-{path.stem}", spec(examples=str(path)), "written")
                  for what, path in self.indexes.items()]
        if self.show_catalogs:  # the unrouted row (with the train examples where on), each tool's catalog shown
            what = f"{name}{', train examples' if train else ''}, catalogs shown"
            found.append((f"({what})", f"{'-examples' if train else ''}-shown",
                          spec(examples=train, show_catalogs=True), "shown"))
        if self.catalogs is not None:
            what = f"{name}{', train examples' if train else ''}, best {_catalogs(self.catalogs)}"
            lead = "" if self.catalog_margin is None else f"-lead{self.catalog_margin:g}"
            what += "" if self.catalog_margin is None else f" where it leads by {self.catalog_margin:g}"
            lead += "" if self.catalog_others is None else f"-others{self.catalog_others}"
            what += "" if self.catalog_others is None else f", {self.catalog_others} of the others' best beside"
            found.append((f"({what})", f"{'-examples' if train else ''}-catalogs{self.catalogs}{lead}",
                          spec(catalogs=self.catalogs, catalog_margin=self.catalog_margin,
                               catalog_others=self.catalog_others, examples=train), "routed"))
        if self.rerank is not None and self.rerank > depth:
            found.append((f"of {self.rerank} re-ranked", f"-of{self.rerank}", spec(rerank=self.rerank), None))
        if self.groups is not None and self.groups < depth:
            found.append((f"in groups of {self.groups}", f"-groups{self.groups}", spec(groups=self.groups), None))
        return [(what, folder, self.listed.model_copy(update={"retrieval": spec}))
                for what, folder, spec, kind in found if self.only is None or kind in self.only]


def _written_indexes(written: Path | None, train: Path | None, out: Path) -> dict[str, Path]:
    """The examples files of the written rows, by what they hold: the written requests, and with the train
    splits' too (saved beside the run) where those are on."""
    if written is None:
        return {}
    indexes = {"written examples": Path(written)}
    if train is not None:
        both = ToolExamples.load(train).combined(ToolExamples.load(written))
        indexes["train + written examples"] = both.save(out / "examples-train+written.json")
    return indexes


def _catalogs(n: int) -> str:
    return "catalog" if n == 1 else f"{n} catalogs"


def _plot(table: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if table["registry_tools"].dropna().nunique() == 1:  # one size: a bar per setting reads better than a curve
        _plot_settings(table, path, plt)
        return
    own = table[table["setting"] == "own tool set"].iloc[0]
    lines = settings_across_sizes(table)
    height = 4 + 0.2 * (len(lines) + 1)  # room below for the legend, a line per setting and the own tool set
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, height))
    for index, (label, rows) in enumerate(lines.items()):
        color, marker = f"C{index}", "^" if label.endswith("re-ranked") else "o"
        left.errorbar(rows["registry_tools"], rows["accuracy"], color=color, marker=marker, capsize=3, label=label,
                      yerr=[rows["accuracy"] - rows["accuracy_low"], rows["accuracy_high"] - rows["accuracy"]])
        left.plot(rows["registry_tools"], rows["recall_at_k"], color=color, marker=marker, linestyle="--")
        right.plot(rows["registry_tools"], rows["prompt_tokens"], color=color, marker=marker)
    left.axhline(own["accuracy"], color="gray", linestyle=":", label="own tool set")
    left.set_ylabel("accuracy (solid, 95% CI), Recall@k (dashed)")
    left.set_ylim(0, 1)
    listed = table[table["setting"].str.endswith("all listed")]
    if len(listed):
        right.plot(listed["registry_tools"], listed["prompt_tokens"], marker="x", color="black", linestyle="none",
                   label="all listed")
        right.legend(fontsize="small")
    right.axhline(own["prompt_tokens"], color="gray", linestyle=":")
    right.set_ylabel("prompt tokens per case")
    for axis in (left, right):
        axis.set_xscale("log")
        axis.set_xlabel("tools in the registry")
    fig.legend(*left.get_legend_handles_labels(), loc="lower center", fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.17 * (len(lines) + 1) / height, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def settings_across_sizes(table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The retrieval rows of ``table`` by setting (each label without its registry's size, ``top 5 (hybrid)``), in
    the order first met: one line of the figure per setting across the sizes."""
    retrieved = table[table["retrieve_k"].notna()]
    setting = retrieved["setting"].str.split(", ", n=1).str[1]
    return {label: retrieved[setting == label] for label in dict.fromkeys(setting)}


def _plot_settings(table: pd.DataFrame, path: Path, plt) -> None:
    """Accuracy (with its interval) and recall, and prompt tokens, one bar each per setting."""
    labels = [label.replace(", ", "\n", 1) for label in table["setting"]]
    positions = range(len(table))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.bar([x - 0.2 for x in positions], table["accuracy"], width=0.4, label="accuracy",
             yerr=[table["accuracy"] - table["accuracy_low"], table["accuracy_high"] - table["accuracy"]], capsize=3)
    left.bar([x + 0.2 for x in positions], table["recall_at_k"].fillna(0), width=0.4, label="recall@k")
    left.set_ylabel("share of cases")
    left.set_ylim(0, 1)
    right.bar(list(positions), table["prompt_tokens"], width=0.5, color="tab:gray")
    right.set_ylabel("prompt tokens per case")
    for axis in (left, right):
        axis.set_xticks(list(positions), labels, fontsize="small")
    left.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="toolsel bench scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=DEFAULT_MODEL, help="Model spec.")
    parser.add_argument("--strategy", default=DEFAULT_STRATEGY,
                        help=f"Selection strategy (default: {DEFAULT_STRATEGY}, as toolsel eval).")
    parser.add_argument("--cases", type=int, default=60, help="Cases in the sample (default: 60).")
    parser.add_argument("--k", type=int, nargs="+", default=[5],
                        help="Tools the selector sees with retrieval, one row per value (default: 5).")
    parser.add_argument("--retriever", default="hybrid", choices=RETRIEVER_CHOICES)
    parser.add_argument("--retrievers", nargs="+", default=["bm25", "dense", "hybrid"], choices=RETRIEVER_CHOICES,
                        help="With --retrieval-only: the retrievers compared (default: bm25 dense hybrid; dense-hnsw "
                             "and hybrid-hnsw search an approximate index).")
    parser.add_argument("--fusion", nargs="+", default=["rrf"], choices=list(FUSIONS),
                        help="How hybrid retrievers fuse their rankings: rrf (reciprocal rank, the default), convex "
                             "(weighted min-max normalised scores) or convex-catalog (convex, each tool raised by its "
                             "catalog's two best); with --retrieval-only, each hybrid retriever once per fusion given, "
                             "else one fusion for every row.")
    parser.add_argument("--rerank", type=int, metavar="N",
                        help="Also a row per size where the model re-ranks the retriever's top N before the top --k "
                             "are kept (for each k below N).")
    parser.add_argument("--groups", type=int, metavar="G",
                        help="Also a row per size and --k where the top K are decided in groups of G by rank, then "
                             "once among the tools the groups chose (divide and conquer).")
    parser.add_argument("--relevance", default="auto",
                        help="Relevance stage for every row (auto, none or a model file; default: auto).")
    parser.add_argument("--sizes", nargs="+", default=["10", "100", "1000", "all"],
                        help="Registry sizes, spaces or commas between them: a number or 'all' (the 2,098 tools of the "
                             "domain sets and BFCL); past 'all', web-API operations fill the registry (downloaded "
                             "once: python -m evals.openapi_catalog).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--split", default="test", choices=SPLITS,
                        help="The splits the cases are drawn from (default: test; dev to choose a setting).")
    parser.add_argument("--out", default=str(OUT), help=f"Output directory (default: {OUT}).")
    parser.add_argument("--markdown", action="store_true",
                        help="Print the kept table in --out (scale.csv; with --retrieval-only retrieval.csv) as the "
                             "results page's markdown and redraw its "
                             "scale.png; no model.")
    parser.add_argument("--examples", action="store_true",
                        help="Also every retrieval row with the train splits' requests added to the tools' documents "
                             "(example requests per tool; no scored request is among them).")
    parser.add_argument("--catalogs", type=int, metavar="N",
                        help="Also every retrieval row showing only the tools of the N catalogs (tool sets; each "
                             "tool's category) whose best tool ranks highest: the catalog first, then the tool.")
    parser.add_argument("--catalog-margin", type=float, metavar="M",
                        help="With --catalogs and a fusion by score (convex, convex-catalog): route only where the "
                             "best catalogs' best tool scores at least M above the next catalog's, else show the top "
                             "--k of every catalog (--retrieve-catalog-margin); with --retrieval-only, rows beside the "
                             "routed ones.")
    parser.add_argument("--catalog-others", type=int, metavar="N",
                        help="With --catalogs, end to end: N of the --k shown are the other catalogs' best tools "
                             "(--retrieve-catalog-others).")
    parser.add_argument("--only", nargs="+", choices=list(ONLY), metavar="KIND",
                        help="Only the own tool set and these rows (one kind or several): " + "; ".join(
                            f"{kind}, {what} (needs {flag})" for kind, (flag, _, what) in ONLY.items()) + ".")
    parser.add_argument("--routed-only", dest="only", action="store_const", const=["routed"],
                        help="--only routed.")
    parser.add_argument("--show-catalogs", action="store_true",
                        help="Also the unrouted retrieval row (with --examples, the one with them) with each shown "
                             "tool's catalog leading its description ([ecommerce] ...).")
    parser.add_argument("--shown-only", dest="only", action="store_const", const=["shown"], help="--only shown.")
    parser.add_argument("--write-examples", metavar="FILE",
                        help="No scoring: --model writes three requests for every tool of each --sizes registry into "
                             "FILE (resumed where FILE holds some already), for --written.")
    parser.add_argument("--written", metavar="FILE",
                        help="Also every retrieval row with the requests --write-examples wrote in the tools' "
                             "documents (and, with --examples, with both).")
    parser.add_argument("--written-only", dest="only", action="store_const", const=["written"],
                        help="--only written.")
    parser.add_argument("--intents", metavar="FILE",
                        help="With --retrieval-only: also every retriever reading the actions --model reads in each "
                             "request (alone, and with the request, the rankings fused), kept in FILE (written where "
                             "missing, resumed where FILE holds some already).")
    parser.add_argument("--retrieval-only", action="store_true",
                        help="No model: Recall@1/3/5/10 and MRR of every retriever at every size, over --cases cases.")


def retrieval_markdown(table: pd.DataFrame) -> str:
    """The retrieval-alone table as the results page shows it: recall, MRR and, where the run measured them, the
    seconds to fit, milliseconds per request (mean, 95th percentile) and the dense index's memory."""
    timed = "query_ms" in table
    head = "| tools | retriever | Recall@1 | Recall@5 | Recall@10 | MRR |"
    lines = [head + (" fit s | ms/request (p95) | index MB |" if timed else ""),
             "|---" * (6 + 3 * timed) + "|"]
    for row in table.to_dict("records"):
        line = (f"| {row['registry_tools']:,} | {row['retriever']} | {row['recall@1']:.3f} | {row['recall@5']:.3f} | "
                f"{row['recall@10']:.3f} | {row['mrr']:.3f} |")
        if timed:
            memory = "-" if pd.isna(row["index_mb"]) else f"{row['index_mb']:.1f}"
            line += f" {row['fit_s']:.2f} | {row['query_ms']:.1f} ({row['query_ms_p95']:.1f}) | {memory} |"
        lines.append(line)
    return "\n".join(lines)


def markdown_table(table: pd.DataFrame) -> str:
    """The end-to-end table as the results page shows it: accuracy and recall in percent, the paired change
    against the own tool set in points with its interval and McNemar's p."""
    lines = ["| tools the selector chooses from | cases | Recall@k | accuracy % [95% CI] | paired vs own tool set, "
             "points [95% CI], p | prompt tokens | s/case |", "|---|---|---|---|---|---|---|"]
    for row in table.to_dict("records"):
        recall = "-" if pd.isna(row["recall_at_k"]) else f"{row['recall_at_k']:.3f}"
        paired = "-"
        if not pd.isna(row.get("vs_own", float("nan"))):
            p_value = row["vs_own_p"]
            p_text = "p<0.001" if p_value < 0.001 else f"p={p_value:.3f}" if p_value < 0.01 else f"p={p_value:.2f}"
            paired = (f"{100 * row['vs_own']:+.1f} [{100 * row['vs_own_low']:+.1f}, {100 * row['vs_own_high']:+.1f}], "
                      f"{p_text}")
        lines.append(f"| {row['setting']} | {row['cases']} | {recall} | {100 * row['accuracy']:.1f} "
                     f"[{100 * row['accuracy_low']:.1f}, {100 * row['accuracy_high']:.1f}] | {paired} | "
                     f"{row['prompt_tokens']:,.0f} | {row['seconds']:.1f} |")
    return "\n".join(lines)


def _sizes(values: list[str]) -> list[int | None]:
    """``--sizes`` with spaces or commas between the sizes."""
    sizes = []
    for text in (text for value in values for text in value.split(",") if text):
        try:
            sizes.append(parse_size(text))
        except ValueError:
            raise SystemExit(f"--sizes: {text!r} is not a number of tools or 'all'") from None
    return sizes


def run_from_args(args: argparse.Namespace) -> int:
    if args.markdown and args.retrieval_only:
        print(retrieval_markdown(pd.read_csv(Path(args.out) / "retrieval.csv")))
        return 0
    if args.markdown:
        table = pd.read_csv(Path(args.out) / "scale.csv")
        _plot(table, Path(args.out) / "scale.png")  # redrawn from the kept table
        print(markdown_table(table))
        return 0
    sizes = _sizes(args.sizes)
    if args.catalog_margin is not None and (args.catalogs is None or not set(args.fusion) & set(SCORE_FUSIONS)):
        raise SystemExit(f"--catalog-margin {args.catalog_margin:g} decides when --catalogs routes, by scores fused on "
                         "one scale: give --catalogs N and --fusion convex or convex-catalog too.")
    if args.catalog_others is not None and (args.catalogs is None or args.retrieval_only):
        raise SystemExit(f"--catalog-others {args.catalog_others} shows the other catalogs' best beside the routed "
                         "tools, end to end: give --catalogs N too, without --retrieval-only.")
    for kind in args.only or ():
        flag, dest, what = ONLY[kind]
        if not getattr(args, dest):
            raise SystemExit(f"--only {kind} keeps {what}: give {flag} too.")
    if args.write_examples:
        write_catalog_examples(Path(args.write_examples), args.model, sample_cases(args.cases, args.seed, args.split),
                               sizes, args.seed)
        return 0
    written = ToolExamples.load(args.written) if args.written else None
    if args.intents and not args.retrieval_only:
        raise SystemExit("--intents adds retrieval rows: give --retrieval-only too (end to end: toolsel eval "
                         "--retrieve K --retrieve-query intent).")
    if args.retrieval_only:
        if args.fusion != ["rrf"] and not any(map(_fuses, args.retrievers)):
            raise SystemExit(f"--fusion {' '.join(args.fusion)} fuses hybrid retrievers' scores, and --retrievers "
                             f"lists none that scores every tool: add hybrid or hybrid-multi.")
        suite = sample_cases(args.cases, args.seed, args.split)
        intents = write_intents(Path(args.intents), args.model, suite) if args.intents else None
        table = retrieval_table(suite, sizes=sizes, seed=args.seed, retrievers=args.retrievers, fusions=args.fusion,
                                examples=catalog_examples("train") if args.examples else None, catalogs=args.catalogs,
                                written=written, intents=intents, catalog_margin=args.catalog_margin)
        Path(args.out).mkdir(parents=True, exist_ok=True)
        table.to_csv(Path(args.out) / "retrieval.csv", index=False)
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print(f"\ntable: {Path(args.out) / 'retrieval.csv'}")
        return 0
    if len(args.fusion) > 1:
        raise SystemExit(f"--fusion {' '.join(args.fusion)}: one fusion for every row of a scored run (several, "
                         "with --retrieval-only).")
    if args.fusion != ["rrf"] and not _fuses(args.retriever):
        raise SystemExit(f"--fusion {args.fusion[0]} fuses a hybrid retriever's scores, and --retriever "
                         f"{args.retriever} is not one that scores every tool: use hybrid or hybrid-multi.")
    table = run_scale(args.model, strategy=args.strategy, cases=args.cases, k=args.k, retriever=args.retriever,
                      sizes=sizes, seed=args.seed, rerank=args.rerank, groups=args.groups, relevance=args.relevance,
                      examples=args.examples, catalogs=args.catalogs, written=args.written and Path(args.written),
                      show_catalogs=args.show_catalogs, fusion=None if args.fusion == ["rrf"] else args.fusion[0],
                      only=args.only, catalog_margin=args.catalog_margin, catalog_others=args.catalog_others,
                      split=args.split, out=Path(args.out))
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"\ntable and plot: {Path(args.out) / 'scale.csv'}, {Path(args.out) / 'scale.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
