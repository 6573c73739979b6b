import pytest

from tests.retrieval.conftest import needs_bm25s
from tool_selection.errors import ToolSelectionError
from tool_selection.retrieval import (
    RETRIEVERS,
    BM25Retriever,
    DenseRetriever,
    HNSWDenseRetriever,
    HNSWHybridRetriever,
    HybridRetriever,
    MultiVectorDenseRetriever,
    MultiVectorHybridRetriever,
    get_retriever,
)


@needs_bm25s
def test_retrievers_by_name():
    assert dict(RETRIEVERS.items()) == {"bm25": BM25Retriever, "dense": DenseRetriever, "hybrid": HybridRetriever,
                                        "dense-hnsw": HNSWDenseRetriever, "hybrid-hnsw": HNSWHybridRetriever,
                                        "dense-multi": MultiVectorDenseRetriever,
                                        "hybrid-multi": MultiVectorHybridRetriever}
    retriever = get_retriever("bm25", k1=1.2)
    assert isinstance(retriever, BM25Retriever) and retriever.k1 == 1.2


def test_dense_by_name_takes_its_options(hashing_encoder, tmp_path):
    retriever = get_retriever("dense", encoder=hashing_encoder, cache_dir=tmp_path)
    assert isinstance(retriever, DenseRetriever) and retriever.cache_dir == tmp_path


def test_an_unknown_name_lists_the_known_ones():
    with pytest.raises(ToolSelectionError) as error:
        get_retriever("splade")
    assert str(error.value) == ("Unknown retriever 'splade'; choose one of: bm25, dense, hybrid, dense-hnsw, "
                                "hybrid-hnsw, dense-multi, hybrid-multi.")
