"""The language tool set's shipped data (read-only) and the look-ups built from it.

``lexicon.json`` (English <-> es, fr, de, it, pt words and phrases), ``stopwords.json`` (per language),
``dictionary.json`` (English definitions, synonyms, antonyms) and ``words.json`` (common English words, most
frequent first, for spelling).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

import numpy as np

from tool_sets.language.text import ELIDING_LANGUAGES, inflections, letter_counts, tokens

__all__ = ["DATA_FILES", "LanguageData", "load_data", "phrase_key"]

DATA_FILES = ("lexicon.json", "stopwords.json", "dictionary.json", "words.json")

Key = tuple[str, ...]


def _json(name: str) -> Any:
    return json.loads(resources.files(__package__).joinpath(name).read_text(encoding="utf-8"))


def phrase_key(text: str, language: str) -> Key:
    """The lowercase word tokens of ``text`` as the translator matches them."""
    elide = language in ELIDING_LANGUAGES
    return tuple(t.lower().replace("’", "'") for kind, t in tokens(text, elide) if kind == "word")


def _forms(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


@dataclass(frozen=True)
class LanguageData:
    """Everything the tools read, with indexes built once."""

    languages: Mapping[str, str]  # code -> English name, English first
    entries: Mapping[str, Mapping[str, list[str]]]  # English key -> language -> forms (first is produced)
    phrase_index: Mapping[str, Mapping[Key, str]]  # language -> token key -> English key
    longest_phrase: int
    stopwords: Mapping[str, frozenset[str]]
    lexicon_words: Mapping[str, frozenset[str]]  # language -> every word token of its lexicon forms
    dictionary: Mapping[str, Mapping[str, Any]]
    word_rank: Mapping[str, int]  # English spelling vocabulary: base word -> frequency rank (0 = most common)
    known_words: Mapping[str, str]  # the vocabulary and its regular inflections -> base word
    known_forms: tuple[tuple[str, str], ...]  # the same (word, base) pairs, shortest words first
    known_lengths: np.ndarray  # the length of each of those words, row for row
    known_letters: np.ndarray  # their letter counts (``text.letter_counts``), row for row

    def codes(self) -> list[str]:
        return list(self.languages)

    def render(self, key: str, language: str) -> str:
        """The text an entry produces in ``language`` (English: its key, with "I" capitalised)."""
        if language == "en":
            return " ".join("I" if w == "i" else w for w in key.split(" "))
        return self.entries[key][language][0]


@cache
def load_data() -> LanguageData:
    """The shipped data (cached; treat as read-only)."""
    lexicon, stopwords, dictionary, words = (_json(name) for name in DATA_FILES)
    languages = dict(lexicon["languages"])
    entries = {key: {lang: _forms(v) for lang, v in value.items()} for key, value in lexicon["entries"].items()}

    index: dict[str, dict[Key, str]] = {code: {} for code in languages}
    primary: dict[str, set[Key]] = {code: set() for code in languages}
    for key, translations in entries.items():
        index["en"].setdefault(phrase_key(key, "en"), key)
        for lang, forms in translations.items():
            for n, form in enumerate(forms):
                token_key = phrase_key(form, lang)
                # a form that is some entry's main translation beats one that is only a variant elsewhere
                if token_key not in index[lang] or (n == 0 and token_key not in primary[lang]):
                    index[lang][token_key] = key
                if n == 0:
                    primary[lang].add(token_key)
    longest = max(len(k) for lang in index.values() for k in lang)
    lexicon_words = {lang: frozenset(w for k in keys for w in k) for lang, keys in index.items()}

    words_list = list(words["words"])
    for headword, entry in dictionary["words"].items():
        words_list += [headword, *entry["synonyms"], *entry["antonyms"]]
    words_list += [w for k in index["en"] for w in k] + list(stopwords["en"])
    word_rank: dict[str, int] = {}
    for word in words_list:
        for part in word.lower().split("-"):
            word_rank.setdefault(part, len(word_rank))
    known = {word: word for word in word_rank}
    for word in word_rank:
        if len(word) > 1 and word not in stopwords["en"]:
            for form in sorted(inflections(word)):
                known.setdefault(form, word)
    forms = tuple(sorted(known.items(), key=lambda pair: len(pair[0])))
    lengths, letters = np.array([len(form) for form, _ in forms]), letter_counts([form for form, _ in forms])
    lengths.setflags(write=False)
    letters.setflags(write=False)

    frozen = MappingProxyType
    return LanguageData(
        languages=frozen(languages),
        entries=frozen({k: frozen(v) for k, v in entries.items()}),
        phrase_index=frozen({k: frozen(v) for k, v in index.items()}),
        longest_phrase=longest,
        stopwords=frozen({code: frozenset(stopwords[code]) for code in languages}),
        lexicon_words=frozen(lexicon_words),
        dictionary=frozen(dictionary["words"]),
        word_rank=frozen(word_rank),
        known_words=frozen(known),
        known_forms=forms,
        known_lengths=lengths,
        known_letters=letters,
    )
