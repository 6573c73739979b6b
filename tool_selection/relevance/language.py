"""Is a request written in another language than its tools' descriptions?

Signals that compare words (BM25) or embed with an English-only model (MiniLM) see nothing in common between a
Spanish or Chinese request and English descriptions, so a relevance model that weighs them refuses most such
requests (the relevance page's ``translated`` sections). The ``other_language`` signal says when that is the case,
so that a relevance model can read the request with signals that do not compare words instead
(``RelevanceModel.other_language``).

The language identifier is py3langid (a naive Bayes model over byte n-grams, in its package; NumPy only). The
catalog's language is the most likely language of its tools' documents; a request counts as written in another one
when the identifier gives the catalog's language a probability below ``OTHER_LANGUAGE_BELOW``. Most short or
terse requests get spread-out probabilities and stay with the catalog's language; of the 2,771 English requests of
the domain suites and BFCL, 17 are marked (0.6%: requests that quote text in another language, and a few terse
ones such as "inv" and "go nroth"), and 127 of the 128 Spanish and Chinese requests of the ``translated`` suite.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from typing import Any

from tool_selection.registry import ToolRegistry

__all__ = ["OTHER_LANGUAGE_BELOW", "catalog_language", "in_other_language", "language_probabilities"]

OTHER_LANGUAGE_BELOW = 0.01


@lru_cache(maxsize=1)
def _identifier() -> Any:
    if importlib.util.find_spec("py3langid") is None:
        from tool_selection.retrieval._extra import missing_extra_error

        raise missing_extra_error("the other_language relevance signal", "py3langid")
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def language_probabilities(text: str) -> dict[str, float]:
    """Each language's probability for ``text`` (ISO 639-1 codes; they sum to 1)."""
    return {language: float(p) for language, p in _identifier().rank(text)}


@lru_cache(maxsize=256)
def _language_of(text: str) -> str:
    return _identifier().classify(text)[0]


def catalog_language(registry: ToolRegistry) -> str:
    """The most likely language of the registry's tool documents (names, descriptions, parameters)."""
    from tool_selection.retrieval import tool_documents

    return _language_of("\n".join(tool_documents(registry).values()))


def in_other_language(request: str, registry: ToolRegistry) -> bool:
    """Whether ``request`` is confidently in a language other than its catalog's."""
    return language_probabilities(request).get(catalog_language(registry), 0.0) < OTHER_LANGUAGE_BELOW
