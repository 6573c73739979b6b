"""The language tools: translation, language detection, dictionary look-ups, spelling, counts and readability,
summaries, keywords and letter case.

Everything runs offline and deterministically over the shipped data (``data.py``); results are JSON-serialisable.
Language codes are validated by the ``Arguments`` models: a code must be two lowercase letters (ISO 639-1) *and*
one the lexicon supports, otherwise the call fails with a ``ToolArgumentError`` that lists the supported codes.
An input that is well formed but cannot be handled (a word not in the dictionary, a text with no recognisable
language) gives the shared failure shape (``tool_selection.tool_failures``): ``{"ok": False, "error": <code>, "message",
"suggestions", ...}``, e.g. ``unknown_word`` with the closest headwords as suggestions.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, InstanceOf, field_validator

from tool_selection import BaseTool, StrictArguments, register_tool
from tool_selection.tool_failures import tool_failure
from tool_sets.language.data import LanguageData, load_data
from tool_sets.language.text import (
    ELIDING_LANGUAGES,
    WORD,
    bag_distances,
    change_case,
    edit_distance,
    expand_contractions,
    inflections,
    sentences,
    syllables,
    tokens,
    words,
)

_DATA = load_data()
SUPPORTED_LANGUAGES: tuple[str, ...] = tuple(_DATA.codes())
_SUPPORTED_TEXT = ", ".join(f"{code} ({name})" for code, name in _DATA.languages.items())
LANGUAGE_CODE = r"^[a-z]{2}$"
ENGLISH_WORD = r"^[A-Za-z]+(?:['-][A-Za-z]+)*$"
MIN_DETECTION_SCORE = 0.2  # share of a text's words that must be recognised to name its language

CaseStyle = Literal["upper", "lower", "title", "sentence", "snake", "kebab", "camel", "pascal"]  # = CASE_STYLES


def check_language_code(value: Any) -> Any:
    """Refuse a code that is not two lowercase letters, or one the lexicon does not support."""
    if isinstance(value, str):
        if not re.fullmatch(LANGUAGE_CODE, value):
            raise ValueError(f"expected a lowercase two-letter ISO 639-1 code such as 'fr', got {value!r}; "
                             f"supported: {', '.join(SUPPORTED_LANGUAGES)}")
        if value not in SUPPORTED_LANGUAGES:
            raise ValueError(f"unsupported language {value!r}; supported: {', '.join(SUPPORTED_LANGUAGES)}")
    return value


def _text(purpose: str, max_length: int = 20_000) -> Any:
    return Field(min_length=1, max_length=max_length, description=purpose)


def _english_word(purpose: str) -> Any:
    return Field(min_length=1, max_length=40, pattern=ENGLISH_WORD, description=f"{purpose} One English word.")


class LanguageTool(BaseTool, abstract=True):
    """Base of the language tools: the read-only data they work over."""

    category = "language"
    data: InstanceOf[LanguageData] = Field(default_factory=load_data, exclude=True, repr=False,
                                           description="The shipped lexicon, stopwords, dictionary and word list.")


# ------------------------------------------------------------------------------------------ helpers
def _word_tokens(text: str) -> list[str]:
    return [w.lower().replace("’", "'") for w in re.findall(WORD, text)]


def _pieces(word: str) -> list[str]:
    """A word and, for an elided form such as "l'homme", its article and its rest."""
    head, mark, rest = word.partition("'")
    return [word, head + mark, rest] if mark and rest else [word]


def detect(data: LanguageData, text: str) -> dict[str, Any]:
    """Score each language by the share of words that are its stopwords (1) or other lexicon words (0.5)."""
    found = _word_tokens(text)
    if not found:
        return {"language": None, "scores": {}, "matched_words": []}
    scores, matched = {}, {}
    for code in data.codes():
        stop, vocabulary = data.stopwords[code], data.lexicon_words[code]
        hits, total = [], 0.0
        for word in found:
            pieces = _pieces(word)
            weight = 1.0 if any(p in stop for p in pieces) else 0.5 if any(p in vocabulary for p in pieces) else 0
            if weight:
                total += weight
                hits.append(word)
        scores[code], matched[code] = total / len(found), hits
    best = max(data.codes(), key=lambda c: scores[c])  # ties go to the earlier language
    language = best if scores[best] >= MIN_DETECTION_SCORE else None
    return {"language": language, "scores": scores, "matched_words": matched[best] if language else []}


def _match_case(new: str, original: str, sentence_start: bool) -> str:
    if original.isupper() and sum(c.isalpha() for c in original) > 1:  # "NASA", not "I" or "L'"
        return new.upper()
    if sentence_start and original[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def _spanish_marks(text: str) -> str:
    """Open Spanish questions and exclamations with ¿ and ¡."""
    parts = re.split(r"((?<=[.!?])\s+)", text)
    for i, part in enumerate(parts):
        for close, opening in (("?", "¿"), ("!", "¡")):
            if re.search(rf"\{close}[\"')\]]*$", part) and opening not in part:
                lead = len(part) - len(part.lstrip())
                parts[i] = part = part[:lead] + opening + part[lead:]
    return "".join(parts)


def translate(data: LanguageData, text: str, source: str, target: str) -> dict[str, Any]:
    """Longest phrase first, then word by word, through the English-keyed lexicon; unknown words are kept."""
    if source == "en":
        text = expand_contractions(text)
    stream = tokens(text, elide=source in ELIDING_LANGUAGES)
    index = data.phrase_index[source]
    out: list[str] = []
    unknown: list[str] = []
    known_count = word_count = 0
    sentence_start = True
    i = 0
    while i < len(stream):
        kind, piece = stream[i]
        if kind != "word":
            sentence_start = sentence_start or piece in ".!?"
            if not (piece in "¿¡" and target != "es"):
                out.append(piece)
            i += 1
            continue
        span = [i]  # this word and the words after it, separated by spaces only
        while len(span) < data.longest_phrase:
            k = span[-1] + 1
            if k < len(stream) and stream[k][0] == "space":
                k += 1
            if k < len(stream) and stream[k][0] == "word":
                span.append(k)
            else:
                break
        for n in range(len(span), 0, -1):
            key = tuple(stream[p][1].lower().replace("’", "'") for p in span[:n])
            if key in index:
                rendered = _match_case(data.render(index[key], target), piece, sentence_start)
                out.append(rendered)
                known_count += n
                break
        else:
            n = 1
            out.append(piece)
            unknown.append(piece)
        word_count += n
        i = span[n - 1] + 1
        sentence_start = False
        if i < len(stream) and stream[i][0] == "word" and not out[-1].endswith(("'", "’")):
            out.append(" ")  # an elided source word ("l'") joined to a translation that no longer elides
    translation = "".join(out)
    if target == "es":
        translation = _spanish_marks(translation)
    return {"translation": translation, "unknown_words": list(dict.fromkeys(unknown)),
            "coverage": round(known_count / word_count, 3) if word_count else 1.0}


def _content_words(data: LanguageData, sentence: str, language: str, min_length: int) -> list[str | None]:
    """The sentence's words, lowercased and without an elided article ("l'homme" -> "homme"), with stopwords
    and short words replaced by ``None`` (which break phrases)."""
    stop = data.stopwords[language]
    found = [_pieces(w)[-1] for w in _word_tokens(sentence)]
    return [w if w not in stop and len(w) >= min_length else None for w in found]


def _singular(counts: Counter) -> dict[str, str]:
    """Map plurals seen alongside their singular ("reports", "report"; "companies", "company") onto it."""
    found = {}
    for w in counts:
        for plural, singular in (("ies", "y"), ("s", "")):
            if w.endswith(plural) and not w.endswith("ss") and w[:-len(plural)] + singular in counts:
                found[w] = w[:-len(plural)] + singular
                break
    return found


# ------------------------------------------------------------------------------------------ tools
@register_tool
class TranslateText(LanguageTool):
    NAME = "translate_text"
    description = ("Translate text between English and Spanish, French, German, Italian or Portuguese with the "
                   "built-in phrase dictionary: known phrases first, then word by word. Words it does not know are "
                   "kept as they are and listed. To only find out which language a text is in, use "
                   "detect_language.")

    class Arguments(StrictArguments):
        text: str = _text("The text to translate.", max_length=5000)
        target_language: str = Field(pattern=LANGUAGE_CODE, max_length=2,
                                     description=f"Language to translate into, as a lowercase ISO 639-1 code: "
                                                 f"{_SUPPORTED_TEXT}.")
        source_language: Annotated[str, Field(pattern=LANGUAGE_CODE, max_length=2)] | None = Field(
            default=None, description="Language the text is in, same codes; omit to detect it automatically.")

        _codes = field_validator("target_language", "source_language", mode="before")(check_language_code)

    def execute(self, text: str, target_language: str, source_language: str | None = None) -> dict[str, Any]:
        detected = source_language is None
        result: dict[str, Any] = {"ok": True}
        if detected:
            source_language = detect(self.data, text)["language"]
            if source_language is None:
                source_language, result["note"] = "en", "no supported language recognised; assumed English"
        result |= {"source_language": source_language, "source_detected": detected,
                   "target_language": target_language}
        if source_language == target_language:
            return {**result, "translation": text, "unknown_words": [], "coverage": 1.0,
                    "note": f"the text is already in {self.data.languages[target_language]}; returned unchanged"}
        return {**result, **translate(self.data, text, source_language, target_language)}


@register_tool
class DetectLanguage(LanguageTool):
    NAME = "detect_language"
    description = (f"Identify which language a text is written in ({', '.join(SUPPORTED_LANGUAGES)}) from its "
                   "common words, with a confidence and a score per language. It does not translate.")

    class Arguments(StrictArguments):
        text: str = _text("The text whose language to identify.")

    def execute(self, text: str) -> dict[str, Any]:
        found = detect(self.data, text)
        scores = {code: round(s, 3) for code, s in found["scores"].items()}
        if found["language"] is None:
            return tool_failure("language_not_recognised", "no supported language recognised: too few known words",
                                supported=list(SUPPORTED_LANGUAGES), scores=scores)
        language = found["language"]
        return {"ok": True, "language": language, "language_name": self.data.languages[language],
                "confidence": round(found["scores"][language] / sum(found["scores"].values()), 3),
                "scores": scores, "matched_words": found["matched_words"]}


class _DictionaryTool(LanguageTool, abstract=True):
    def _entry(self, word: str) -> tuple[str, dict[str, Any]] | None:
        """The headword for ``word`` itself or for a regular inflection of it ("happier" -> "happy")."""
        word = word.lower()
        if word in self.data.dictionary:
            return word, self.data.dictionary[word]
        for headword, entry in self.data.dictionary.items():
            if word in inflections(headword):
                return headword, entry
        return None

    def _not_found(self, word: str) -> dict[str, Any]:
        near = sorted((edit_distance(word.lower(), h, 2), h) for h in self.data.dictionary)
        return tool_failure("unknown_word", f"{word!r} is not in the dictionary",
                            suggestions=[h for d, h in near if d <= 2][:3], word=word)


@register_tool
class DefineWord(_DictionaryTool):
    NAME = "define_word"
    description = ("Look up what an English word means: its part of speech, its definitions and an example "
                   "sentence. For other words with the same meaning use find_synonyms.")

    class Arguments(StrictArguments):
        word: str = _english_word("The word to define, e.g. 'ephemeral'.")

    def execute(self, word: str) -> dict[str, Any]:
        found = self._entry(word)
        if found is None:
            return self._not_found(word)
        headword, entry = found
        return {"ok": True, "word": headword, "part_of_speech": entry["pos"],
                "definitions": list(entry["definitions"]), "example": entry["example"]}


@register_tool
class FindSynonyms(_DictionaryTool):
    NAME = "find_synonyms"
    description = ("List English words with a similar meaning (synonyms) to a word, and optionally its opposites "
                   "(antonyms). For the meaning of a word use define_word.")

    class Arguments(StrictArguments):
        word: str = _english_word("The word to find alternatives for, e.g. 'happy'.")
        max_results: int = Field(default=10, ge=1, le=30, description="Most synonyms (and antonyms) to return.")
        include_antonyms: bool = Field(default=False, description="Also list words with the opposite meaning.")

    def _related(self, headword: str, relation: str) -> list[str]:
        """Listed ones first, then the headwords that list this word the same way."""
        entry = self.data.dictionary.get(headword, {})
        linked = [h for h, e in self.data.dictionary.items() if headword in e[relation]]
        return [w for w in dict.fromkeys([*entry.get(relation, []), *linked]) if w != headword]

    def execute(self, word: str, max_results: int = 10, include_antonyms: bool = False) -> dict[str, Any]:
        found = self._entry(word)
        headword = found[0] if found else word.lower()
        synonyms = self._related(headword, "synonyms")
        if not synonyms:
            return self._not_found(word)
        result = {"ok": True, "word": headword, "synonyms": synonyms[:max_results]}
        if include_antonyms:
            result["antonyms"] = self._related(headword, "antonyms")[:max_results]
        return result


@register_tool
class SpellCheck(LanguageTool):
    NAME = "spell_check"
    description = ("Find misspelled English words in a text and suggest corrections (closest known words by edit "
                   "distance), and return the text with each misspelling replaced by its best suggestion. "
                   "Acronyms and capitalised words that look like names are not flagged.")

    class Arguments(StrictArguments):
        text: str = _text("The English text to check.", max_length=5000)  # each unknown word costs a search
        max_suggestions: int = Field(default=3, ge=1, le=10, description="Most suggestions per misspelled word.")

    def _known(self, word: str) -> bool:
        if word in self.data.known_words:
            return True
        if "-" in word:
            return all(self._known(part) for part in word.split("-"))
        base, mark, ending = word.rpartition("'")
        if mark and ending in {"s", "re", "ve", "ll", "d", "m"}:
            return self._known(base)
        if word.endswith("n't"):
            stem = word[:-3]
            return stem in {"ca", "wo", "sha"} or self._known(stem)
        return False

    def _suggest(self, word: str, limit: int, max_distance: int) -> list[str]:
        """Closest known words; ties prefer the same first, then last letter, then the more common word. An
        inflected form is left out when its base word is already suggested at a smaller distance."""
        scored = []
        start, stop = np.searchsorted(self.data.known_lengths, [len(word) - max_distance, len(word) + max_distance + 1])
        bounds = bag_distances(self.data.known_letters[start:stop], self.data.known_lengths[start:stop], word)
        near = start + np.flatnonzero(bounds <= max_distance)
        for candidate, base in (self.data.known_forms[i] for i in near):  # the rest are further than max_distance
            d = edit_distance(word, candidate, max_distance)
            if d <= max_distance:
                scored.append((d, candidate[0] != word[0], candidate[-1] != word[-1], self.data.word_rank[base],
                               candidate, base))
        chosen: list[str] = []
        base_distance: dict[str, int] = {}
        for d, *_, candidate, base in sorted(scored):
            if base_distance.setdefault(base, d) == d:
                chosen.append(candidate)
        return chosen[:limit]

    def execute(self, text: str, max_suggestions: int = 3) -> dict[str, Any]:
        misspellings, corrected, last, checked = [], [], 0, 0
        sentence_start = True
        suggested: dict[tuple[str, int], list[str]] = {}  # a word repeated in the text is looked up once
        for match in re.finditer(rf"{WORD}|[.!?]", text):
            token = match.group()
            if token in ".!?":
                sentence_start = True
                continue
            at_start, sentence_start = sentence_start, False
            checked += 1
            word = token.lower().replace("’", "'")
            capitalised = token[0].isupper()
            if self._known(word) or (len(token) > 1 and token.isupper()) or (capitalised and not at_start):
                continue  # known, an acronym, or a name inside a sentence
            name_like = capitalised and at_start  # flagged only when a word one edit away exists
            distance = 1 if len(word) <= 4 or name_like else 2
            if (word, distance) not in suggested:
                suggested[word, distance] = self._suggest(word, max_suggestions, distance)
            suggestions = [_match_case(s, token, True) for s in suggested[word, distance]]
            if name_like and not suggestions:
                continue
            misspellings.append({"word": token, "offset": match.start(), "suggestions": suggestions})
            if suggestions:
                corrected += [text[last:match.start()], suggestions[0]]
                last = match.end()
        corrected.append(text[last:])
        return {"ok": True, "words_checked": checked, "misspelled_count": len(misspellings),
                "misspellings": misspellings, "corrected_text": "".join(corrected)}


@register_tool
class CountWords(LanguageTool):
    NAME = "count_words"
    description = ("Count the words and characters of a text (characters with and without spaces, unique words), "
                   "or how many times one given word occurs in it. For sentences, syllables and readability "
                   "scores use text_statistics.")

    class Arguments(StrictArguments):
        text: str = _text("The text to count.", max_length=100_000)
        word: str | None = Field(default=None, max_length=40, pattern=r"^[^\W_]+(?:['’-][^\W_]+)*$",
                                 description="Also count the occurrences of this word (whole words, any case).")

    def execute(self, text: str, word: str | None = None) -> dict[str, Any]:
        found = [w.lower() for w in words(text)]
        result = {"ok": True, "words": len(found), "unique_words": len(set(found)), "characters": len(text),
                  "characters_no_spaces": len(re.sub(r"\s", "", text))}
        if word is not None:
            result["word"] = word
            result["occurrences"] = found.count(word.lower())
        return result


def reading_level(score: float) -> str:
    """The conventional band of a Flesch reading-ease score."""
    for floor, label in ((90, "very easy"), (80, "easy"), (70, "fairly easy"), (60, "standard"),
                         (50, "fairly difficult"), (30, "difficult")):
        if score >= floor:
            return label
    return "very difficult"


@register_tool
class TextStatistics(LanguageTool):
    NAME = "text_statistics"
    description = ("Readability statistics of an English text: sentence, word and syllable counts, average word "
                   "length and sentence length, Flesch reading ease (0-100, higher is easier), Flesch-Kincaid "
                   "grade level and a reading-level label. For just word or character counts use count_words.")

    class Arguments(StrictArguments):
        text: str = _text("The English text to analyse.", max_length=100_000)

    def execute(self, text: str) -> dict[str, Any]:
        found = words(text)
        if not found:
            return tool_failure("no_words", "the text has no words")
        sentence_count = max(1, len(sentences(text)))
        syllable_count = sum(syllables(w) for w in found)
        letters = sum(len(re.sub(r"[\W_]", "", w)) for w in found)
        per_sentence = len(found) / sentence_count
        per_word = syllable_count / len(found)
        ease = 206.835 - 1.015 * per_sentence - 84.6 * per_word
        grade = 0.39 * per_sentence + 11.8 * per_word - 15.59
        return {"ok": True, "sentences": sentence_count, "words": len(found), "syllables": syllable_count,
                "complex_words": sum(syllables(w) >= 3 for w in found),
                "average_word_length": round(letters / len(found), 2),
                "average_sentence_length": round(per_sentence, 2),
                "average_syllables_per_word": round(per_word, 2),
                "flesch_reading_ease": round(ease, 2), "flesch_kincaid_grade": round(grade, 2),
                "reading_level": reading_level(ease)}


def _language_of(data: LanguageData, text: str) -> str:
    return detect(data, text)["language"] or "en"


@register_tool
class SummarizeText(LanguageTool):
    NAME = "summarize_text"
    description = ("Shorten a text to its most important sentences (an extractive summary): each sentence is "
                   "scored by how frequent its content words are in the whole text, and the best max_sentences "
                   "are returned in their original order. For a list of key terms use extract_keywords.")

    class Arguments(StrictArguments):
        text: str = _text("The text to summarise.", max_length=100_000)
        max_sentences: int = Field(default=3, ge=1, le=20, description="Most sentences in the summary.")

    def execute(self, text: str, max_sentences: int = 3) -> dict[str, Any]:
        found = sentences(text)
        if not found:
            return tool_failure("no_sentences", "the text has no sentences")
        language = _language_of(self.data, text)
        content = [[w for w in _content_words(self.data, s, language, 3) if w] for s in found]
        counts = Counter(w for ws in content for w in ws)
        top = max(counts.values(), default=1)
        scores = [sum(counts[w] / top for w in ws) / math.sqrt(len(ws)) if ws else 0.0 for ws in content]
        best = sorted(sorted(range(len(found)), key=lambda i: (-scores[i], i))[:max_sentences])
        return {"ok": True, "summary": " ".join(found[i] for i in best), "sentences": [found[i] for i in best],
                "positions": [i + 1 for i in best], "total_sentences": len(found), "language": language}


@register_tool
class ExtractKeywords(LanguageTool):
    NAME = "extract_keywords"
    description = ("The key terms of a text: its most frequent content words (ignoring common filler words, "
                   "plurals merged) with counts, and its repeated two-word phrases. For a shortened version of the "
                   "text use summarize_text.")

    class Arguments(StrictArguments):
        text: str = _text("The text to extract keywords from.", max_length=100_000)
        max_keywords: int = Field(default=10, ge=1, le=50, description="Most keywords to return.")

    def execute(self, text: str, max_keywords: int = 10) -> dict[str, Any]:
        language = _language_of(self.data, text)
        runs = [_content_words(self.data, s, language, 3) for s in sentences(text)]
        counts = Counter(w for run in runs for w in run if w)
        if not counts:
            return tool_failure("no_content_words", "the text has no content words")
        singular = _singular(counts)
        merged: Counter = Counter()
        for w in counts:  # insertion order is first occurrence, so ties keep the text's order
            merged[singular.get(w, w)] += counts[w]
        ranked = sorted(merged, key=lambda w: -merged[w])[:max_keywords]
        pairs = Counter(f"{singular.get(a, a)} {singular.get(b, b)}"
                        for run in runs for a, b in zip(run, run[1:]) if a and b)
        phrases = [{"phrase": p, "count": c} for p, c in sorted(pairs.items(), key=lambda x: -x[1]) if c >= 2]
        return {"ok": True, "keywords": [{"keyword": w, "count": merged[w]} for w in ranked],
                "phrases": phrases[:max_keywords], "language": language}


@register_tool
class ChangeCase(LanguageTool):
    NAME = "change_case"
    description = ("Rewrite text in another letter case: UPPER, lower, Title Case, Sentence case, or as an "
                   "identifier in snake_case, kebab-case, camelCase or PascalCase.")

    class Arguments(StrictArguments):
        text: str = _text("The text to rewrite.")
        case: CaseStyle = Field(description="The case to convert to; snake, kebab, camel and pascal join the "
                                            "words into one identifier.")

    def execute(self, text: str, case: str) -> dict[str, Any]:
        return {"ok": True, "case": case, "result": change_case(text, case)}


TOOLS = (TranslateText, DetectLanguage, DefineWord, FindSynonyms, SpellCheck, CountWords, TextStatistics,
         SummarizeText, ExtractKeywords, ChangeCase)
