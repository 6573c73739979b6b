"""Language-independent text helpers: tokens, sentences, syllables, edit distance and case styles."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

__all__ = [
    "CASE_STYLES", "ELIDING_LANGUAGES", "WORD", "bag_distances", "change_case", "edit_distance", "expand_contractions",
    "inflections", "letter_counts", "sentences", "syllables", "tokens", "words",
]

# A word: letters, optionally joined by apostrophes or hyphens ("don't", "après-midi", "segunda-feira").
WORD = r"[^\W\d_]+(?:['’\-][^\W\d_]+)*"
# French and Italian elide articles and pronouns ("l'homme", "c'est", "dov'è"); they count as their own token.
ELISION = r"[^\W\d_]{1,4}['’](?=[^\W\d_]|$)"
ELIDING_LANGUAGES = frozenset({"fr", "it"})

_TOKEN = {
    False: re.compile(rf"(?P<word>{WORD})|(?P<space>\s+)|(?P<other>.)", re.S),
    True: re.compile(rf"(?P<word>{ELISION}|{WORD})|(?P<space>\s+)|(?P<other>.)", re.S),
}
_COUNTED_WORD = re.compile(r"\w+(?:['’\-]\w+)*")
# From a sentence's first visible character (sentences are stripped), so that no match starts in a run of white
# space: starting anywhere in one made the search quadratic in its length.
_SENTENCE = re.compile(r"[^.!?\s][^.!?]*(?:[.!?]+[\"')\]]*|$)")

_CONTRACTIONS = {
    "i'm": "i am", "you're": "you are", "we're": "we are", "they're": "they are", "it's": "it is",
    "that's": "that is", "what's": "what is", "where's": "where is", "there's": "there is", "he's": "he is",
    "she's": "she is", "let's": "let us", "don't": "do not", "doesn't": "does not", "didn't": "did not",
    "can't": "cannot", "won't": "will not", "isn't": "is not", "aren't": "are not", "wasn't": "was not",
    "i've": "i have", "you've": "you have", "we've": "we have", "i'll": "i will", "you'll": "you will",
    "i'd": "i would", "haven't": "have not", "hasn't": "has not", "couldn't": "could not",
    "wouldn't": "would not", "shouldn't": "should not",
}


def tokens(text: str, elide: bool = False) -> list[tuple[str, str]]:
    """``(kind, text)`` pairs covering ``text`` exactly; kind is ``word``, ``space`` or ``other``."""
    return [(m.lastgroup, m.group()) for m in _TOKEN[elide].finditer(text)]


def words(text: str) -> list[str]:
    """Words as a word processor counts them: runs of letters or digits, joined by ' or -."""
    return _COUNTED_WORD.findall(text)


def sentences(text: str) -> list[str]:
    """Sentences, split after . ! or ? (with any closing quote or bracket); each one stripped."""
    return [s.strip() for s in _SENTENCE.findall(text) if re.search(r"\w", s)]


def expand_contractions(text: str) -> str:
    """English contractions written out ("I'm" -> "I am"), keeping a leading capital."""

    def expand(match: re.Match) -> str:
        found = match.group()
        full = _CONTRACTIONS.get(found.lower().replace("’", "'"))
        if full is None:
            return found
        return full[0].upper() + full[1:] if found[0].isupper() else full

    return re.sub(r"[A-Za-z]+['’][A-Za-z]+", expand, text)


def syllables(word: str) -> int:
    """English syllables by the usual heuristic: vowel groups, less a silent final e, -es or -ed."""
    w = re.sub(r"[^a-z]", "", word.lower())
    if not w:
        return 1  # a number or symbol is read as at least one syllable
    count = len(re.findall(r"[aeiouy]+", w))
    if len(w) > 2 and count > 1:
        if w.endswith("e") and w[-2] not in "aeiouyl":
            count -= 1  # make, whole
        elif w.endswith("le") and w[-3] in "aeiouy":
            count -= 1  # whale, mile
        elif w.endswith("es") and w[-3] not in "aeiouysxzhcg" and not (w[-3] == "l" and w[-4:-3] not in "aeiouy"):
            count -= 1  # makes, files (but not tables, boxes)
        elif w.endswith("ed") and w[-3] not in "aeiouytd":
            count -= 1  # walked (but not wanted)
    return max(1, count)


def edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal-string-alignment distance (insert, delete, substitute, swap neighbours); ``limit + 1`` once over."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return min(previous[-1], limit + 1)


def _letter_row(word: str) -> list[int]:
    row = [0] * 27  # a-z, then any other character
    for char in word:
        index = ord(char) - 97
        row[index if 0 <= index < 26 else 26] += 1
    return row


def letter_counts(words: Sequence[str]) -> np.ndarray:
    """One row per word: how often each letter a-z occurs in it, and (last column) any other character (capped at
    127, which only loosens ``bag_distances``)."""
    return np.array([[min(n, 127) for n in _letter_row(w)] for w in words], dtype=np.int8).reshape(len(words), 27)


def bag_distances(counts: np.ndarray, lengths: np.ndarray, word: str) -> np.ndarray:
    """For the words of ``letter_counts`` rows and their ``lengths``, a lower bound of each one's edit distance to
    ``word``: the larger count of characters one has beyond the other (an insertion, deletion or substitution
    changes it by at most one). That is (sum |d| + |sum d|) / 2 over the per-character differences d."""
    difference = counts - letter_counts([word])[0]
    return (np.abs(difference).sum(axis=1, dtype=np.int32) + np.abs(lengths - len(word))) // 2


def inflections(word: str) -> set[str]:
    """Regular English inflections of ``word``: plural or third person, -ed, -ing, -er, -est and -ly."""
    forms = set()
    vowels = "aeiou"
    consonant_y = word.endswith("y") and len(word) > 1 and word[-2] not in vowels
    stem = word[:-1] + "i" if consonant_y else word
    forms.add(word + "es" if word.endswith(("s", "x", "z", "ch", "sh")) else stem + "es" if consonant_y else word + "s")
    one_syllable = len(re.findall(r"[aeiouy]+", word)) == 1
    doubled = (one_syllable and len(word) >= 3 and word[-1] not in vowels + "wxy" and word[-2] in vowels
               and word[-3] not in vowels)  # stop -> stopped, big -> bigger
    bases = {word[:-1] if word.endswith("e") else stem} | ({word + word[-1]} if doubled else set())
    for base in bases:
        forms |= {base + "ed", base + "er", base + "est"}
    if word.endswith("ie"):
        forms.add(word[:-2] + "ying")
    elif word.endswith("e") and not word.endswith(("ee", "ye", "oe")):
        forms.add(word[:-1] + "ing")
    else:
        forms.add(word + "ing")
        if doubled:
            forms.add(word + word[-1] + "ing")
    forms.add(word[:-2] + "ly" if word.endswith("le") else word + "y" if word.endswith("ll")
              else stem + "ly" if consonant_y else word + "ly")
    return forms


# ----------------------------------------------------------------------------------------- case styles
CASE_STYLES = ("upper", "lower", "title", "sentence", "snake", "kebab", "camel", "pascal")
_MINOR_WORDS = frozenset("a an and as at but by for in nor of on or per the to via vs".split())


def _identifier_parts(text: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", text)
    return [p.lower() for p in re.findall(r"[^\W_]+", spaced)]


def _title(text: str) -> str:
    pieces = re.split(r"(\s+)", text)
    positions = [i for i, p in enumerate(pieces) if p.strip()]

    def cap(word: str) -> str:
        return re.sub(r"[^\W\d_]", lambda m: m.group().upper(), word.lower(), count=1)

    for n, i in enumerate(positions):
        word = pieces[i]
        minor = re.sub(r"\W", "", word.lower()) in _MINOR_WORDS and 0 < n < len(positions) - 1
        pieces[i] = word.lower() if minor else cap(word)
    return "".join(pieces)


def _sentence_case(text: str) -> str:
    lowered = re.sub(r"\bi\b", "I", text.lower())
    return re.sub(r"(^|[.!?]\s+)([^\W\d_])", lambda m: m.group(1) + m.group(2).upper(), lowered)


def change_case(text: str, style: str) -> str:
    """``text`` in one of ``CASE_STYLES``; title case keeps minor words (a, of, the, ...) lower inside."""
    if style == "upper":
        return text.upper()
    if style == "lower":
        return text.lower()
    if style == "title":
        return _title(text)
    if style == "sentence":
        return _sentence_case(text)
    parts = _identifier_parts(text)
    if style == "snake":
        return "_".join(parts)
    if style == "kebab":
        return "-".join(parts)
    if style == "camel":
        return "".join(p if i == 0 else p.capitalize() for i, p in enumerate(parts))
    if style == "pascal":
        return "".join(p.capitalize() for p in parts)
    raise ValueError(f"unknown case style {style!r}; use one of {', '.join(CASE_STYLES)}")
