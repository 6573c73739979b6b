import hashlib
import re
from importlib.util import find_spec

import numpy as np
import pytest

from tests.lm.conftest import fresh_cache, make_lm  # noqa: F401  (the scripted local-engine LM fixtures, for test_rerank)
from tool_selection.errors import ToolSelectionError
from tool_selection.interop import from_openai
from tool_selection.retrieval import bundled_encoder, clear_index_cache

needs_bm25s = pytest.mark.skipif(
    find_spec("bm25s") is None or find_spec("Stemmer") is None,
    reason="BM25 needs the retrieval extra: pip install 'tool-selection[retrieval]'",
)


def function(name, description, **arguments):
    return {"name": name, "description": description,
            "parameters": {"type": "object", "required": list(arguments),
                           "properties": {arg: {"type": "string", "description": text} for arg, text in arguments.items()}}}


FUNCTIONS = [
    function("get_weather", "Current weather conditions and forecast for a city.", city="City name."),
    function("get_stock_price", "Latest trading price of a stock.", symbol="Ticker symbol, e.g. ACME."),
    function("translate_text", "Translate text into another language.", text="The text.",
             target_language="Language to translate into."),
    function("sendEmailMessage", "Deliver a message to a recipient's mailbox.", to="Recipient address.",
             subject="Subject line.", body="Message body."),
    function("book_flight", "Reserve seats on a flight between two airports.", origin="Departure airport.",
             destination="Arrival airport.", date="Travel date."),
]


@pytest.fixture
def small_registry():
    return from_openai(FUNCTIONS, name="small")


@pytest.fixture(autouse=True)
def fresh_index_cache():
    """Each test starts without in-memory indexes, so cache behaviour does not leak between tests."""
    clear_index_cache()
    yield
    clear_index_cache()


@pytest.fixture(scope="session")
def minilm():
    """The packaged all-MiniLM-L6-v2 encoder, loaded once per session."""
    try:
        return bundled_encoder()
    except ToolSelectionError as error:
        pytest.skip(f"dense retrieval's model package is not installed: {error}")


class HashingEncoder:
    """A deterministic stand-in encoder: hashed bag of words, unit length. Records every text it encodes."""

    model_id = "hashing-test/v1"

    def __init__(self, dimensions: int = 64):
        self.dimensions = dimensions
        self.encoded: list[str] = []

    def encode(self, texts):
        self.encoded += list(texts)
        vectors = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                vectors[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimensions] += 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)


@pytest.fixture
def hashing_encoder():
    return HashingEncoder()
