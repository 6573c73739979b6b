"""The language tool set: real work over the shipped data, argument validation, and the eval suite."""

import json
import random
import string
import time
import typing

import jsonschema
import pytest

from evals.suite import load_suite
from tests.evals.test_domain_suites import expected_arguments
from tests.tool_sets.test_calculator import assert_failure
from tool_selection import ToolArgumentError, load_tool_set
from tool_sets.language import SUPPORTED_LANGUAGES, TOOL_SET, load_data
from tool_sets.language.text import CASE_STYLES, syllables
from tool_sets.language.tools import CaseStyle

DATA = load_data()
LOOK_ALIKES = {"define_word", "find_synonyms", "count_words", "text_statistics", "summarize_text", "extract_keywords"}

REMOTE = ("Remote work has changed how teams collaborate. Many companies now let employees work from home several "
          "days a week. Studies show that remote work can raise productivity, but it can also make collaboration "
          "harder. The office cafeteria added a new salad bar in March. Overall, remote work seems here to stay, and "
          "companies are investing in better tools for remote collaboration.")


def run(name: str, **arguments):
    """Execute a tool through the set's registry; every result must be JSON-serialisable."""
    result = TOOL_SET.registry().execute(name, arguments)
    json.dumps(result)
    return result


def translate(text: str, target: str, source: str | None = None) -> dict:
    return run("translate_text", text=text, target_language=target,
               **({"source_language": source} if source else {}))


# ------------------------------------------------------------------------------------------ the set
def test_loads_by_name_with_enough_tools():
    tool_set = load_tool_set("language")
    assert tool_set is TOOL_SET
    assert len(tool_set) >= 8
    assert {t.category for t in tool_set} == {"language"}


@pytest.mark.parametrize("tool", TOOL_SET.tools, ids=TOOL_SET.names())
def test_schema_is_valid_json_schema(tool):
    jsonschema.Draft202012Validator.check_schema(tool.input_schema())
    assert tool.input_schema().get("additionalProperties") is False


def test_case_styles_match_the_schema():
    assert typing.get_args(CaseStyle) == CASE_STYLES


def test_supported_languages_are_the_lexicon_languages():
    assert SUPPORTED_LANGUAGES == ("en", "es", "fr", "de", "it", "pt")
    for key, translations in DATA.entries.items():
        assert set(translations) == set(SUPPORTED_LANGUAGES) - {"en"}, key
    description = TOOL_SET.get("translate_text").input_schema()["properties"]["target_language"]["description"]
    assert all(code in description for code in SUPPORTED_LANGUAGES)


# ------------------------------------------------------------------------------------------ translation
@pytest.mark.parametrize("text, target, expected", [
    ("good morning", "es", "buenos días"),
    ("thank you very much", "it", "grazie mille"),
    ("good night", "fr", "bonne nuit"),  # the phrase, not "bon nuit" word by word
    ("where is the train station", "de", "wo ist der Bahnhof"),
    ("see you tomorrow, my friend", "pt", "até amanhã, meu amigo"),
])
def test_translate_from_english(text, target, expected):
    result = translate(text, target)
    assert result["ok"] and result["translation"] == expected
    assert result["source_language"] == "en" and result["source_detected"] is True
    assert result["unknown_words"] == [] and result["coverage"] == 1.0


@pytest.mark.parametrize("text, source, expected", [
    ("Je ne comprends pas.", "fr", "I do not understand."),
    ("Tengo hambre y quiero comer pan con queso.", "es", "I am hungry and I want eat bread with cheese."),
    ("L'homme est dans la maison.", "fr", "The man is in the house."),
    ("Das Haus ist sehr groß und schön.", "de", "The house is very big and beautiful."),
    ("Ho fame, dov'è il ristorante?", "it", "I am hungry, where is the restaurant?"),
])
def test_translate_into_english_detects_the_source(text, source, expected):
    result = translate(text, "en")
    assert (result["source_language"], result["translation"]) == (source, expected)
    assert translate(text, "en", source)["translation"] == expected


def test_translate_expands_contractions_and_marks_spanish_questions():
    assert translate("I'm hungry.", "fr")["translation"] == "J'ai faim."
    assert translate("Good morning! How are you?", "es")["translation"] == "¡Buenos días! ¿Cómo estás?"
    assert translate("¿Dónde está el baño?", "de")["translation"] == "Wo ist die Toilette?"


def test_translate_between_two_foreign_languages_pivots_through_the_lexicon():
    result = translate("buenos días, amigo", "it", "es")
    assert result["translation"] == "buongiorno, amico" and result["source_detected"] is False


def test_unknown_words_are_kept_and_reported():
    result = translate("Good morning, Zorblax and Quux!", "fr")
    assert result["translation"] == "Bonjour, Zorblax et Quux!"
    assert result["unknown_words"] == ["Zorblax", "Quux"]
    assert result["coverage"] == pytest.approx(3 / 5, abs=1e-3)


def test_text_in_no_known_language_is_treated_as_english():
    result = translate("Zorblax quux", "fr")
    assert result["source_language"] == "en" and "assumed English" in result["note"]
    assert result["translation"] == "Zorblax quux" and result["coverage"] == 0.0


def test_same_source_and_target_returns_the_text():
    result = translate("hello there", "en", "en")
    assert result["translation"] == "hello there" and "note" in result


@pytest.mark.parametrize("language", [c for c in SUPPORTED_LANGUAGES if c != "en"])
def test_every_lexicon_entry_translates_to_its_first_form(language):
    for key, translations in DATA.entries.items():
        assert translate(key, language, "en")["translation"] == translations[language][0], key


@pytest.mark.parametrize("language", [c for c in SUPPORTED_LANGUAGES if c != "en"])
def test_every_lexicon_form_translates_back_to_an_entry_with_that_form(language):
    for key, translations in DATA.entries.items():
        for form in translations[language]:
            english = translate(form, "en", language)["translation"]
            entries = [k for k, t in DATA.entries.items() if DATA.render(k, "en").lower() == english.lower()]
            assert any(form.lower() in (f.lower() for f in DATA.entries[k][language]) for k in entries), (key, form)


# ------------------------------------------------------------------------------------------ detection
@pytest.mark.parametrize("text, language", [
    ("Bonjour, je voudrais changer ma réservation pour demain, s'il vous plaît.", "fr"),
    ("Ich habe Hunger und ich bin müde.", "de"),
    ("¿Dónde está la estación de tren? No entiendo el mapa.", "es"),
    ("Ho fame, dov'è il ristorante? Il cibo era molto buono.", "it"),
    ("Obrigado pela ajuda, até amanhã. Eu não sei onde fica o banheiro.", "pt"),
    ("The weather is nice and we are going to the beach with our friends.", "en"),
])
def test_detect_language(text, language):
    result = run("detect_language", text=text)
    assert result["ok"] and result["language"] == language
    assert result["language_name"] == DATA.languages[language]
    assert result["scores"][language] == max(result["scores"].values())
    assert 0 < result["confidence"] <= 1 and result["matched_words"]


def test_detect_language_refuses_an_unsupported_language():
    result = run("detect_language", text="Ik heb honger en ik ben moe vandaag")  # Dutch
    assert_failure(result, "language_not_recognised")
    assert result["supported"] == list(SUPPORTED_LANGUAGES) and set(result["scores"]) == set(SUPPORTED_LANGUAGES)


# ------------------------------------------------------------------------------------------ dictionary
def test_define_word():
    result = run("define_word", word="Ephemeral")
    entry = DATA.dictionary["ephemeral"]
    assert result["ok"] and result["word"] == "ephemeral"
    assert result["definitions"] == entry["definitions"] and result["part_of_speech"] == "adjective"
    assert run("define_word", word="happier")["word"] == "happy"  # a regular inflection finds its headword


def test_define_word_unknown_suggests_close_headwords():
    result = run("define_word", word="ephemerel")
    assert_failure(result, "unknown_word")
    assert result["suggestions"] == ["ephemeral"] and result["word"] == "ephemerel"


def test_find_synonyms():
    result = run("find_synonyms", word="happy")
    assert result["ok"] and result["synonyms"] == DATA.dictionary["happy"]["synonyms"]
    assert "antonyms" not in result
    with_antonyms = run("find_synonyms", word="generous", include_antonyms=True, max_results=2)
    assert len(with_antonyms["synonyms"]) == 2 and with_antonyms["antonyms"] == ["stingy", "mean"]


def test_find_synonyms_follows_links_back_to_headwords():
    # "cheerful" is not a headword, but "happy" and "sad" list it as a synonym and an antonym
    result = run("find_synonyms", word="cheerful", include_antonyms=True)
    assert "happy" in result["synonyms"] and "sad" in result["antonyms"]
    assert_failure(run("find_synonyms", word="xylophone"), "unknown_word")


# ------------------------------------------------------------------------------------------ spelling
def test_spell_check_finds_and_corrects_misspellings():
    result = run("spell_check", text="I definately recieved the pakage yesterday.")
    assert [m["word"] for m in result["misspellings"]] == ["definately", "recieved", "pakage"]
    assert [m["suggestions"][0] for m in result["misspellings"]] == ["definitely", "received", "package"]
    assert result["corrected_text"] == "I definitely received the package yesterday."
    assert result["misspellings"][0]["offset"] == 2


def test_spell_check_keeps_case_and_accepts_inflections_names_and_acronyms():
    result = run("spell_check", text="Teh committee's members were going home. Later Alice told NASA they're "
                                     "happier.", max_suggestions=1)
    assert [(m["word"], m["suggestions"]) for m in result["misspellings"]] == [("Teh", ["The"])]
    assert result["corrected_text"].startswith("The committee's")


def test_spell_check_of_correct_text_finds_nothing():
    text = "This sentence is spelled correctly and nothing in it needs fixing."
    result = run("spell_check", text=text)
    assert result["misspelled_count"] == 0 and result["corrected_text"] == text
    assert result["words_checked"] == len(text.split())


# ------------------------------------------------------------------------------------------ counts and readability
def test_count_words():
    text = "The data team shares data.  Data matters!\nDon't panic."
    result = run("count_words", text=text, word="DATA")
    assert result["words"] == len(text.split()) == 9
    assert result["characters"] == len(text)
    assert result["characters_no_spaces"] == len("".join(text.split()))
    assert result["unique_words"] == 7 and result["occurrences"] == 3
    assert "occurrences" not in run("count_words", text=text)


@pytest.mark.parametrize("word, count", [("the", 1), ("make", 1), ("walked", 1), ("wanted", 2), ("table", 2),
                                         ("reading", 2), ("boxes", 2), ("beautiful", 3), ("elephant", 3)])
def test_syllables(word, count):
    assert syllables(word) == count


def test_text_statistics_computes_flesch_scores():
    text = "The cat sat on the mat. It was happy."
    result = run("text_statistics", text=text)
    words, sentences_, syllables_ = 9, 2, 10  # happy has two syllables, every other word one
    assert (result["words"], result["sentences"], result["syllables"]) == (words, sentences_, syllables_)
    assert result["flesch_reading_ease"] == pytest.approx(
        206.835 - 1.015 * words / sentences_ - 84.6 * syllables_ / words, abs=0.01)
    assert result["flesch_kincaid_grade"] == pytest.approx(
        0.39 * words / sentences_ + 11.8 * syllables_ / words - 15.59, abs=0.01)
    letters = sum(map(len, "The cat sat on the mat It was happy".split()))
    assert result["average_word_length"] == pytest.approx(letters / words, abs=0.01)
    assert result["reading_level"] == "very easy"


def test_harder_text_reads_harder():
    easy = run("text_statistics", text="The dog ran. The cat sat. We had fun in the sun.")
    hard = run("text_statistics", text="Comprehensive institutional reorganization necessitates considerable "
                                       "administrative coordination across interdependent departments.")
    assert hard["flesch_reading_ease"] < easy["flesch_reading_ease"]
    assert hard["flesch_kincaid_grade"] > easy["flesch_kincaid_grade"]
    assert hard["complex_words"] > easy["complex_words"] == 0
    assert_failure(run("text_statistics", text="... !!!"), "no_words")


# ------------------------------------------------------------------------------------------ summary and keywords
def test_summarize_text_keeps_the_central_sentences_in_order():
    result = run("summarize_text", text=REMOTE, max_sentences=2)
    assert result["ok"] and result["total_sentences"] == 5 and len(result["sentences"]) == 2
    assert result["positions"] == sorted(result["positions"])
    assert all(s in REMOTE for s in result["sentences"]) and result["summary"] == " ".join(result["sentences"])
    assert not any("cafeteria" in s for s in result["sentences"])  # the off-topic sentence is dropped
    everything = run("summarize_text", text=REMOTE, max_sentences=10)
    assert everything["positions"] == [1, 2, 3, 4, 5]
    assert_failure(run("summarize_text", text="... !!!"), "no_sentences")


def test_extract_keywords_ranks_content_words_and_merges_plurals():
    result = run("extract_keywords", text=REMOTE, max_keywords=3)
    assert [k["keyword"] for k in result["keywords"]] == ["remote", "work", "companies"]
    assert [k["count"] for k in result["keywords"]] == [4, 4, 2]
    assert {"phrase": "remote work", "count": 3} in result["phrases"]
    merged = run("extract_keywords", text="Each company files reports. Companies file a report yearly.")
    assert merged["keywords"] == [{"keyword": "company", "count": 2}, {"keyword": "file", "count": 2},
                                  {"keyword": "report", "count": 2}, {"keyword": "yearly", "count": 1}]
    assert merged["phrases"] == [{"phrase": "company file", "count": 2}]
    assert_failure(run("extract_keywords", text="It is what it is."), "no_content_words")


# ------------------------------------------------------------------------------------------ case
@pytest.mark.parametrize("case, expected", [
    ("upper", "THE LORD OF THE RINGS, PART 2"), ("lower", "the lord of the rings, part 2"),
    ("title", "The Lord of the Rings, Part 2"), ("sentence", "The lord of the rings, part 2"),
    ("snake", "the_lord_of_the_rings_part_2"), ("kebab", "the-lord-of-the-rings-part-2"),
    ("camel", "theLordOfTheRingsPart2"), ("pascal", "TheLordOfTheRingsPart2"),
])
def test_change_case(case, expected):
    assert run("change_case", text="the lord of THE rings, part 2", case=case)["result"] == expected


def test_change_case_splits_identifiers():
    assert run("change_case", text="parseHTTPResponse code", case="snake")["result"] == "parse_http_response_code"


# ------------------------------------------------------------------------------------------ long inputs
@pytest.mark.parametrize("name", ["summarize_text", "extract_keywords", "text_statistics", "detect_language"])
def test_long_white_space_takes_linear_time(name):
    start = time.perf_counter()
    run(name, text=" " * 20_000)  # the sentence pattern was quadratic here: 4.7 s
    assert time.perf_counter() - start < 1.0


def test_spell_check_of_a_longest_text_of_unknown_words_stays_fast():
    rng = random.Random(0)
    text = " ".join("".join(rng.choices(string.ascii_lowercase, k=5)) for _ in range(1000))[:5000]
    start = time.perf_counter()
    result = run("spell_check", text=text)  # each word was compared with every known word near its length
    assert time.perf_counter() - start < 3.0
    assert result["misspelled_count"] > 800


# ------------------------------------------------------------------------------------------ validation
INVALID = [
    ("translate_text", {"text": "hello", "target_language": "english"}, "target_language"),
    ("translate_text", {"text": "hello", "target_language": "EN"}, "target_language"),
    ("translate_text", {"text": "hello", "target_language": "ja"}, "target_language"),
    ("translate_text", {"text": "hello", "target_language": "fr", "source_language": "xx"}, "source_language"),
    ("translate_text", {"text": "", "target_language": "fr"}, "text"),
    ("detect_language", {"text": ""}, "text"),
    ("define_word", {"word": "two words"}, "word"),
    ("find_synonyms", {"word": "happy", "max_results": 0}, "max_results"),
    ("spell_check", {"text": "hello", "max_suggestions": 11}, "max_suggestions"),
    ("spell_check", {"text": "a" * 5001}, "text"),
    ("count_words", {"text": "hello", "word": "two words"}, "word"),
    ("text_statistics", {"text": "hello", "language": "en"}, "language"),
    ("summarize_text", {"text": "Hello there.", "max_sentences": 0}, "max_sentences"),
    ("extract_keywords", {"text": "hello", "max_keywords": "many"}, "max_keywords"),
    ("change_case", {"text": "hello", "case": "shouting"}, "case"),
]


@pytest.mark.parametrize("name, arguments, field", INVALID, ids=[f"{n}-{f}" for n, _, f in INVALID])
def test_invalid_arguments_raise_naming_the_field(name, arguments, field):
    with pytest.raises(ToolArgumentError) as caught:
        TOOL_SET.registry().execute(name, arguments)
    assert field in [p.field for p in caught.value.problems]
    assert caught.value.tool == name


def test_every_tool_is_exercised_by_the_invalid_cases():
    assert {name for name, _, _ in INVALID} == set(TOOL_SET.names())


@pytest.mark.parametrize("code", ["ja", "EN", "english"])
def test_bad_language_codes_list_the_supported_ones(code):
    problems = TOOL_SET.get("translate_text").check_arguments({"text": "hi", "target_language": code})
    assert len(problems) == 1 and "supported: en, es, fr, de, it, pt" in problems[0].message


# ------------------------------------------------------------------------------------------ the suite
# The checks every domain suite must pass are in tests/evals/test_domain_suites.py; these are language's own.
def test_suite_similar_tools_cases_use_a_tool_with_a_look_alike():
    for case in load_suite("language"):
        if "similar_tools" in case.tags:
            assert {c.tool_name for c in case.expected_calls} & LOOK_ALIKES, case.id


def test_suite_complete_calls_succeed():
    """Expected calls that give every required argument run and succeed."""
    for case, tool, arguments in expected_arguments("language"):
        if {a.name for a in tool.arguments() if a.required} <= set(arguments):
            assert run(tool.NAME, **arguments)["ok"], (case.id, arguments)
