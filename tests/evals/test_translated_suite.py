"""The ``translated`` suite (``evals/suites/translated.jsonl``), which ``evals/suites/build_translated.py`` writes
from the domain suites and the hand-written ``translations.json``: each source case asked in every language with
the same tools and expected answer."""

import json
import re
from collections import Counter

import pytest

from evals.suite import SUITES_DIR, load_suite
from tests.evals.suite_scripts import build_script

BUILD = build_script("build_translated")
TRANSLATED = load_suite("translated")
TABLE = json.loads((SUITES_DIR / "translations.json").read_text(encoding="utf-8"))
LANGUAGES = ["en", *TABLE["languages"]]
HAN = re.compile(r"[\u4e00-\u9fff]")


def test_translated_file_is_what_the_script_writes():
    assert (SUITES_DIR / "translated.jsonl").read_text(encoding="utf-8") == BUILD.render(BUILD.build()), \
        "out of date: run python evals/suites/build_translated.py"


def test_every_source_case_is_asked_once_per_language():
    sources = Counter(case.id.rsplit(".", 1)[0] for case in TRANSLATED)
    assert set(sources) == set(TABLE["requests"]) and set(sources.values()) == {len(LANGUAGES)}
    for case in TRANSLATED:
        language = case.id.rsplit(".", 1)[1]
        assert f"lang_{language}" in case.tags and ("translated" in case.tags) == (language != "en"), case.id


def test_translated_cases_differ_from_their_source_only_in_the_request():
    sources = {c.id: c for name in BUILD.DOMAINS for c in load_suite(name)}
    for case in TRANSLATED:
        source_id, language = case.id.rsplit(".", 1)
        source = sources[source_id]
        assert (case.tool_set, case.expected_calls, case.split) == (source.tool_set, source.expected_calls, "test")
        assert (case.request == source.request) == (language == "en"), case.id
        assert bool(HAN.search(case.request)) == (language == "zh"), case.id


def test_both_kinds_of_request_in_every_language_and_domain():
    for language in LANGUAGES:
        for domain in BUILD.DOMAINS:
            cases = [c for c in TRANSLATED if f"lang_{language}" in c.tags and domain in c.tags]
            assert Counter(bool(c.expected_calls) for c in cases) == {True: 12, False: 4}, (language, domain)


def test_a_missing_or_unknown_translation_is_refused(tmp_path):
    for name in BUILD.DOMAINS:
        (tmp_path / f"{name}.jsonl").write_text((SUITES_DIR / f"{name}.jsonl").read_text(encoding="utf-8"))
    table = json.loads(json.dumps(TABLE))
    del table["requests"]["events-005"]["zh"]
    (tmp_path / "translations.json").write_text(json.dumps(table), encoding="utf-8")
    with pytest.raises(SystemExit, match="events-005 has no zh translation"):
        BUILD.build(tmp_path)
    table["requests"]["events-005"]["zh"] = "取消预订 B1004。"
    table["requests"]["events-999"] = {"es": "x", "zh": "x"}
    (tmp_path / "translations.json").write_text(json.dumps(table), encoding="utf-8")
    with pytest.raises(SystemExit, match="events-999"):
        BUILD.build(tmp_path)
