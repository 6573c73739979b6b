"""The tolerant parsers: every shape small models write, and no answer that can make them raise."""

import json
import threading
import time

import pytest

from tool_selection.parsing import (
    MAX_ANSWER_CHARS,
    MAX_JSON_DEPTH,
    clip,
    parse_call_lines,
    parse_fenced_tool_blocks,
    parse_native,
    parse_tool_tags,
    safe_text,
)


def names(parsed):
    return [(c.tool_name, c.arguments) for c in parsed.calls]


def test_tool_call_tags_with_prose_around_them():
    parsed = parse_native('Checking both.\n<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n'
                          '<tool_call>{"name": "b", "arguments": "{\\"y\\": 2}"}</tool_call>')
    assert names(parsed) == [("a", {"x": 1}), ("b", {"y": 2})]
    assert parsed.text == "Checking both." and not parsed.failures


def test_json_fences_bare_objects_lists_and_other_key_spellings():
    assert names(parse_native('```json\n{"name": "a", "arguments": {"x": 1}}\n```')) == [("a", {"x": 1})]
    assert names(parse_native('```\n[{"name": "a", "parameters": {}}, {"tool_name": "b"}]\n```')) == [
        ("a", {}), ("b", {})]
    assert names(parse_native('{"function": {"name": "a", "arguments": "{}"}}')) == [("a", {})]
    assert names(parse_native('<tool_call>\n{"name": "a", "arguments": {}}')) == [("a", {})]  # cut off before </tool_call>


def test_prose_is_an_answer_without_calls_and_a_broken_call_is_a_failure():
    prose = parse_native("None of the functions can do this.")
    assert prose.calls == [] and prose.text == "None of the functions can do this." and not prose.failed
    broken = parse_native('<tool_call>\n{"name": "a", "arguments": {"x": </tool_call>')
    assert broken.failed and "not valid JSON" in broken.failures[0]
    not_a_call = parse_native('```json\n{"city": "Oslo"}\n```')
    assert not_a_call.failed and "not a call object" in not_a_call.failures[0]


def test_text_protocols():
    assert names(parse_fenced_tool_blocks('I will.\n```tool\n{"name": "a", "arguments": {"x": 1}}\n```')) == [
        ("a", {"x": 1})]
    assert names(parse_tool_tags('<tool>{"name": "a", "arguments": {}}</tool> and <tool>{"name": "b"}</tool>')) == [
        ("a", {}), ("b", {})]
    lines = parse_call_lines('TOOL_CALL: get_weather(city="Oslo", days=3, metric=true)\nTOOL_CALL: now()\n'
                             "TOOL_CALL: f(city=Paris)\nTOOL_CALL: broken(")
    assert names(lines) == [("get_weather", {"city": "Oslo", "days": 3, "metric": True}), ("now", {}),
                            ("f", {"city": "Paris"})]
    assert len(lines.failures) == 1 and "broken(" in lines.failures[0]
    assert parse_call_lines("TOOL_CALL: f(1, 2)").failed  # positional arguments name nothing


@pytest.mark.parametrize("answer", [
    "[" * (MAX_JSON_DEPTH + 5) + "]" * (MAX_JSON_DEPTH + 5),
    "<tool_call>" + "{\"a\": " * 2000 + "1" + "}" * 2000 + "</tool_call>",
    '```json\n{"name": "a", "arguments": {"x": 1e999}}\n```',
    '<tool_call>{"name": "\ud800", "arguments": {"t": "\udfff"}}</tool_call>',
    "x" * (MAX_ANSWER_CHARS * 3),
    "TOOL_CALL: f(" + "(" * 5000 + ")",
    "TOOL_CALL: f(x=" + "[" * 3000 + "]" * 3000 + ")",
    "",
])
def test_pathological_answers_never_raise(answer):
    for parse in (parse_native, parse_fenced_tool_blocks, parse_tool_tags, parse_call_lines):
        parsed = parse(answer)
        parsed.text.encode("utf-8")  # always encodable
        for call in parsed.calls:
            json.dumps(call.model_dump(), ensure_ascii=False).encode("utf-8")


def test_safe_text_replaces_lone_surrogates_and_caps_length():
    assert safe_text("a\ud800b") == "a?b"
    assert len(safe_text("x" * 10, limit=4)) == 4 and safe_text(None) == ""


def test_bare_calls_in_a_row_are_read_up_to_the_first_value_that_is_not_a_call():
    imagined_result = parse_native('{"name": "a", "arguments": {"x": 1}} {"ok": false, "error": "not_carried"}')
    assert names(imagined_result) == [("a", {"x": 1})] and imagined_result.text == '{"ok": false, "error": "not_carried"}'
    repeated = parse_native('{"name": "a", "arguments": {}} {"name": "a", "arguments": {}}\n{"name": "b", '
                            '"arguments": {}} {"name": "a", "argu')  # repeats until max_tokens cut it off
    assert names(repeated) == [("a", {}), ("b", {})] and not repeated.failed
    assert parse_native('{"name": "a", "arguments": {}} {"city": "Oslo"}').calls[0].tool_name == "a"
    assert parse_native('{"city": "Oslo"} {"name": "a", "arguments": {}}').failed  # no call first: not a call


def test_the_doubled_braces_of_qwens_template_example_are_read():
    doubled = '{{"name": "take_item", "arguments": {"item_id": "shovel"}}}} {{"name": "dig", "arguments": {}}}'
    assert names(parse_native(doubled)) == [("take_item", {"item_id": "shovel"}), ("dig", {})]
    assert names(parse_native('<tool_call>\n{{"name": "a", "arguments": {"x": 1}}}\n</tool_call>')) == [("a", {"x": 1})]
    assert parse_native('<tool_call>\n{{"name": "a", "arguments": {"x": 1}}} and more\n</tool_call>').failed


def test_several_call_objects_in_one_block_are_read_as_several_calls():
    fence = '```json\n{"name": "a", "arguments": {"x": 1}}\n{"name": "b", "arguments": {}}\n```'
    assert names(parse_native(fence)) == [("a", {"x": 1}), ("b", {})] and not parse_native(fence).failed
    commas = '<tool_call>\n{"name": "a", "arguments": {}},\n{"name": "a", "arguments": {}}\n</tool_call>'
    assert names(parse_native(commas)) == [("a", {}), ("a", {})]  # a repeat written inside a block is kept
    assert parse_native('```json\n{"name": "a", "arguments": {}}\n{"city": "Oslo"}\n```').failed
    cut_off = parse_native('```json\n{"name": "a", "arguments": {}}\n{"name": "b", "argu')
    assert cut_off.failed and cut_off.calls == []  # the block's objects must all be whole


@pytest.mark.parametrize(("answer", "mend"), [
    # as the 0.5B model wrote them on BFCL `multiple`
    ('{"name": "sort_list", "arguments": {"elements": [\'Sam\', \'Alice\'], "order": "asc"}}', "Python quotes read"),
    ('{"name": "mutation_type.find", "arguments": {"snp_id": "rs6034464"}', "closing brackets added"),
    ('<tool>{"name": "db.query", "arguments": {"rows": [["age", ">", 25]]}}}</tool>', "a closing bracket too many"),
    ("```json\n{'name': 'f', 'arguments': {'ok': true, 'n': null}\n```", "Python quotes read, closing brackets added"),
])
def test_a_fragment_that_plainly_states_one_call_is_mended_and_the_mend_noted(answer, mend):
    parsed = parse_tool_tags(answer) if answer.startswith("<tool>") else parse_native(answer)
    assert len(parsed.calls) == 1 and not parsed.failures
    assert len(parsed.repairs) == 1 and mend in parsed.repairs[0]


def test_the_mended_values_are_the_written_ones():
    assert names(parse_native('{"name": "f", "arguments": {"s": "it\'s \\"quoted\\" {", "b": [true, null]}')) == [
        ("f", {"s": 'it\'s "quoted" {', "b": [True, None]})]
    assert names(parse_native("{'name': 'f', 'arguments': {'flag': True, 'items': ('a', 'b')}}")) == [
        ("f", {"flag": True, "items": ["a", "b"]})]  # as JSON holds it
    assert not parse_native('{"name": "f", "arguments": {"x": 1}}').repairs  # valid JSON: nothing to mend


@pytest.mark.parametrize("answer", [
    '{"name": "hint", "arguments": {"hint_total":',  # cut off after a key: the value would be invented
    '{"name": "travel_to", "',  # cut off inside a string
    '{"name": "f", "arguments": {"a": 1,',  # cut off after a comma
    '{"name": "f", "arguments": {"a": 1]}',  # a bracket that does not match
    "{'name': 'f', 'arguments': {'city': Paris}}",  # a bare word is not a value
    '{"name": "f", "arguments": {"a": __import__("os")}}',  # nor is a call
    "{'name': 'f', 'arguments': {'tags': {'a', 'b'}}}",  # a set: JSON cannot hold it
])
def test_a_fragment_that_would_need_guessing_stays_a_failure(answer):
    parsed = parse_native(answer)
    assert parsed.failed and not parsed.repairs and "not valid JSON" in parsed.failures[0]


def finishes_within(seconds: float, work):
    """``work()``'s result, failing if it takes longer than ``seconds``. It runs in a daemon thread, left to go on
    when it takes too long in Python code; C code (a regular expression) holds the thread it waits from until done,
    so its time is checked after."""
    done: list = []

    def timed():
        start = time.perf_counter()
        result = work()
        done.append((result, time.perf_counter() - start))

    worker = threading.Thread(target=timed, daemon=True)
    worker.start()
    worker.join(seconds)
    assert done and done[0][1] <= seconds, f"took longer than {seconds} s"
    return done[0][0]


def filled(prefix: str, filler: str, suffix: str) -> str:
    """``prefix``, ``filler`` repeated, ``suffix``: an answer of the cap's length."""
    return prefix + filler * (MAX_ANSWER_CHARS - len(prefix) - len(suffix)) + suffix


SLOW_FOR_REGEXES = {  # a lazy body followed by \s* (or ^\s* over blank lines) backtracked over every run of spaces
    "spaces in a <tool_call>": filled("<tool_call>{", " ", "x"),
    "spaces in a json fence": filled("```json\n{", " ", "x"),
    "spaces in a <tool> tag": filled("<tool>{", " ", "x"),
    "blank lines before TOOL_CALL": filled("", "\n", "TOOL_CALL x"),
}


@pytest.mark.parametrize("answer", SLOW_FOR_REGEXES.values(), ids=SLOW_FOR_REGEXES)
def test_an_answer_up_to_the_cap_is_read_in_linear_time(answer):
    """Target: under 1 s (evals/benchmarks/parse_speed.py measures it); the guard is far above it."""
    assert len(answer) == MAX_ANSWER_CHARS
    for parse in (parse_native, parse_tool_tags, parse_fenced_tool_blocks, parse_call_lines):
        parsed = finishes_within(2, lambda: parse(answer))  # noqa: B023 - called at once
        assert not parsed.calls


def test_whitespace_around_a_block_stays_outside_its_call_and_its_prose():
    parsed = parse_native('Here.\n<tool_call>  \n {"name": "a", "arguments": {}} \n\n</tool_call>\n  Done.')
    assert names(parsed) == [("a", {})] and parsed.text == "Here.\n\n  Done."
    lines = parse_call_lines("First.\n\n\n  TOOL_CALL: a(x=1)\n\nTOOL_CALL: b()")
    assert names(lines) == [("a", {"x": 1}), ("b", {})] and lines.text == "First."


def test_clip_keeps_what_fits_and_marks_what_it_cuts():
    assert clip("abcdef", 6) == "abcdef"
    assert clip("abcdefg", 6) == "abc..." and len(clip("x" * 100, 10)) == 10
