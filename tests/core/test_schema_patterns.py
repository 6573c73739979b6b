"""Schema-only tools match their patterns under a time limit: a pattern that backtracks catastrophically refuses
the value it cannot match in time, instead of hanging the evaluation."""

import time

from tool_selection.interop import schema_only_tool
from tool_selection.schema_patterns import PATTERN_TIMEOUT_S


def _tool(schema):
    return schema_only_tool("lookup", "Look a word up.", {"type": "object", **schema})


def _timed_problems(tool, arguments):
    start = time.perf_counter()
    problems = tool.check_arguments(arguments)
    return [str(p) for p in problems], time.perf_counter() - start


def test_nested_quantifiers_answer_at_once():
    """Python's re takes about ten seconds on this value; the bounded engine answers in microseconds."""
    tool = _tool({"properties": {"word": {"type": "string", "pattern": "^(a+)+$"}}})
    problems, seconds = _timed_problems(tool, {"word": "a" * 27 + "!"})
    assert problems == [f"word: {'a' * 27 + '!'!r} does not match '^(a+)+$'"] and seconds < 1
    assert _timed_problems(tool, {"word": "a" * 27})[0] == []


def test_a_match_past_the_time_limit_is_refused_and_says_why():
    tool = _tool({"properties": {"word": {"type": "string", "pattern": "^(a|a)*$"}}})
    problems, seconds = _timed_problems(tool, {"word": "a" * 40 + "!"})
    assert len(problems) == 1 and f"takes longer than {PATTERN_TIMEOUT_S} s to match against '^(a|a)*$'" in problems[0]
    assert seconds < 10 * PATTERN_TIMEOUT_S
    assert _timed_problems(tool, {"word": "aaa"})[0] == []


def test_pattern_properties_are_bounded_and_still_decide_what_is_additional():
    tool = _tool({"patternProperties": {"^(a|a)*$": {"type": "integer"}, "^x_": {"type": "string"}},
                  "additionalProperties": False})
    assert _timed_problems(tool, {"aaa": 1, "x_name": "v"})[0] == []
    assert _timed_problems(tool, {"aaa": "one"})[0] == ["aaa: 'one' is not of type 'integer'"]
    problems, seconds = _timed_problems(tool, {"a" * 40 + "!": 1})
    assert any("takes longer than" in p for p in problems) and any("not allowed" in p for p in problems)
    assert seconds < 20 * PATTERN_TIMEOUT_S
