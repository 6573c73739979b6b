"""The ``language`` tool set: translation, language detection, definitions and synonyms, spelling, word counts
and readability, extractive summaries, keywords and letter case.

Everything runs offline and deterministically over the shipped data: ``lexicon.json`` (English <-> es, fr, de,
it, pt words and phrases), ``stopwords.json``, ``dictionary.json`` (English definitions, synonyms, antonyms) and
``words.json`` (common English words for spelling). Language codes are ISO 639-1; a code that is well formed but
not supported (e.g. ``ja``) is an argument error listing the supported ones.
"""

from tool_selection import ToolSet
from tool_sets.language.data import DATA_FILES, LanguageData, load_data
from tool_sets.language.tools import (
    SUPPORTED_LANGUAGES,
    TOOLS,
    ChangeCase,
    CountWords,
    DefineWord,
    DetectLanguage,
    ExtractKeywords,
    FindSynonyms,
    LanguageTool,
    SpellCheck,
    SummarizeText,
    TextStatistics,
    TranslateText,
)

__all__ = [
    "DATA_FILES", "SUPPORTED_LANGUAGES", "TOOL_SET", "TOOLS", "ChangeCase", "CountWords", "DefineWord",
    "DetectLanguage", "ExtractKeywords", "FindSynonyms", "LanguageData", "LanguageTool", "SpellCheck",
    "SummarizeText", "TextStatistics", "TranslateText", "load_data",
]

TOOL_SET = ToolSet(
    name="language",
    description="Language and text tools: translation between English, Spanish, French, German, Italian and "
                "Portuguese, language detection, English definitions and synonyms, spell checking, word counts "
                "and readability statistics, extractive summaries, keywords and letter-case conversion.",
    tools=TOOLS,
)
