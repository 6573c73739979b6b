import numpy as np
import pytest

from tests.retrieval.conftest import FUNCTIONS, HashingEncoder, function
from tool_selection.interop import from_openai
from tool_selection.retrieval import DenseRetriever, clear_index_cache, content_hash, tool_documents


# ------------------------------------------------------------------------ the packaged model
@pytest.fixture(scope="module")
def fitted(minilm, tmp_path_factory):
    """A dense retriever over the small registry, fitted once for the module."""
    return DenseRetriever(minilm, cache_dir=tmp_path_factory.mktemp("cache")).fit(from_openai(FUNCTIONS))


@pytest.mark.parametrize(("request_text", "tool"), [
    ("Will it rain in Oslo tomorrow?", "get_weather"),
    ("How much is one share of ACME worth right now?", "get_stock_price"),
    ("Say 'good morning' in Japanese", "translate_text"),
    ("Mail Ana the minutes of today's meeting", "sendEmailMessage"),
    ("Get me on a plane from Lisbon to Rome on May 3", "book_flight"),
])
def test_the_packaged_model_ranks_the_obvious_tool_first(fitted, request_text, tool):
    assert fitted.retrieve(request_text, k=2)[0].name == tool


def test_embeddings_are_unit_length_and_independent_of_batching(minilm):
    texts = ["a short text", "a longer text about the weather in Oslo and the price of a stock", ""]
    together = minilm.encode(texts)
    alone = np.stack([minilm.encode([text])[0] for text in texts])
    assert together.shape == (3, 384) and together.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_similar_sentences_are_closer_than_unrelated_ones(minilm):
    weather, rain, stock = minilm.encode(["What is the weather today?", "Is it going to rain?",
                                          "Buy 10 shares of ACME."])
    assert weather @ rain > weather @ stock + 0.2


def test_asking_for_more_tools_than_exist_returns_them_all(fitted, small_registry):
    results = fitted.retrieve("weather", k=9)
    assert sorted(r.name for r in results) == small_registry.names()
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


# ------------------------------------------------------------------------ caching (stand-in encoder)
def test_embeddings_are_cached_on_disk_by_model_and_registry_hash(hashing_encoder, tmp_path, small_registry):
    retriever = DenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(small_registry)
    registry_hash = content_hash(tool_documents(small_registry))
    path = tmp_path / "embeddings" / "hashing-test_v1" / f"{registry_hash}.npy"
    assert retriever.embeddings_path(registry_hash) == path
    assert np.load(path).shape == (len(small_registry), hashing_encoder.dimensions)
    assert list(tmp_path.rglob("*.tmp")) == []


def test_a_second_fit_embeds_nothing(hashing_encoder, tmp_path, small_registry):
    retriever = DenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(small_registry)
    assert len(hashing_encoder.encoded) == len(small_registry)
    retriever.fit(small_registry)
    DenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(from_openai(FUNCTIONS, name="an equal copy"))
    assert len(hashing_encoder.encoded) == len(small_registry)


def test_a_new_process_reads_the_embeddings_from_disk(hashing_encoder, tmp_path, small_registry):
    expected = DenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(small_registry).retrieve("flight", k=5)
    clear_index_cache()  # as in a new process
    hashing_encoder.encoded.clear()
    retriever = DenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(small_registry)
    assert hashing_encoder.encoded == []
    assert retriever.retrieve("flight", k=5) == expected


def test_a_changed_registry_embeds_only_the_documents_not_seen_before(hashing_encoder, tmp_path, small_registry):
    retriever = DenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(small_registry)
    larger = from_openai([*FUNCTIONS, function("get_time", "Current local time in a city.", city="City name.")])
    hashing_encoder.encoded.clear()
    retriever.fit(larger)
    assert hashing_encoder.encoded == [tool_documents(larger)["get_time"]]
    assert retriever.retrieve("local time in a city", k=1)[0].name == "get_time"
    assert len(list((tmp_path / "embeddings").rglob("*.npy"))) == 2
    fresh = DenseRetriever(HashingEncoder(), cache_dir=tmp_path / "elsewhere", disk_cache=False).fit(larger)
    assert np.allclose(retriever._index, fresh._index)


def test_an_unreadable_document_store_is_embedded_around(hashing_encoder, tmp_path, small_registry):
    store = tmp_path / "embeddings" / "hashing-test_v1" / "documents.sqlite"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"not a database")
    with pytest.warns(RuntimeWarning, match="Could not keep document embeddings in "):
        retriever = DenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(small_registry)
    assert len(hashing_encoder.encoded) == len(small_registry)
    assert retriever.retrieve("flight", k=1)[0].name == "book_flight"


def test_an_unreadable_cache_file_is_recomputed(hashing_encoder, tmp_path, small_registry):
    retriever = DenseRetriever(hashing_encoder, cache_dir=tmp_path)
    path = retriever.embeddings_path(content_hash(tool_documents(small_registry)))
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a numpy file")
    retriever.fit(small_registry)
    assert len(hashing_encoder.encoded) == len(small_registry)
    assert np.load(path).shape[0] == len(small_registry)


def test_without_the_disk_cache_nothing_is_written(hashing_encoder, tmp_path, small_registry):
    DenseRetriever(hashing_encoder, cache_dir=tmp_path, disk_cache=False).fit(small_registry)
    assert list(tmp_path.iterdir()) == []


def test_embedding_many_tools_shows_progress(hashing_encoder, tmp_path, small_registry, monkeypatch, capsys):
    import tool_selection.retrieval._dense as dense

    DenseRetriever(hashing_encoder, cache_dir=tmp_path / "few").fit(small_registry)
    assert "embedding tools" not in capsys.readouterr().err
    monkeypatch.setattr(dense, "EMBEDDING_PROGRESS_FROM", len(small_registry))
    clear_index_cache()
    DenseRetriever(hashing_encoder, cache_dir=tmp_path / "many").fit(small_registry)
    assert "embedding tools: 100%|" in capsys.readouterr().err
