"""Suite files: loading, validation errors naming line and field, splits, datasets."""

import json

import pytest

from evals.suite import SuiteError, available_suites, load_suite, registry_for
from tests.evals.conftest import WEATHER


def test_load_suite_from_path_with_splits_and_tags(suite_path):
    suite = load_suite(suite_path)
    assert suite.name == "mini" and len(suite) == 8
    assert suite.split_counts() == {"test": 5, "train": 3}
    assert suite.tag_counts()["no_tool"] == 1
    test = suite.split("test")
    assert len(test) == 5 and all(c.split == "test" for c in test)
    assert len(suite.limit(2)) == 2
    assert registry_for(suite.cases[0]).names() == ["get_time", "get_weather"]


def test_suite_loads_with_datasets(suite_path):
    dataset = load_suite(suite_path).to_dataset()
    assert dataset.num_rows == 8
    assert json.loads(dataset[0]["expected_calls"])[0]["tool_name"] == "get_weather"
    import datasets

    raw = datasets.load_dataset("json", data_files=str(suite_path), split="train")
    assert raw.num_rows == 8 and "expected_calls" in raw.column_names


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON (Expecting property name"),
        ('{"id": "x", "tool_set": "finance", "expected_calls": [], "split": "test"}', "give exactly one of 'request' or 'messages'"),
        ('{"id": "x", "request": "r", "tool_set": "finance", "expected_calls": [], "split": "prod"}', "field 'split'"),
        ('{"id": "x", "request": "r", "tool_set": "f", "expected_calls": [{"arguments": {}}]}', "field 'expected_calls.0.tool_name'"),
        ('{"id": "x", "request": "r", "tool_set": "f", "expected_calls": [], "colour": 1}', "field 'colour'"),
        ('{"id": "x", "request": "r", "tool_set": "f", "expected_calls": [{"tool_name": "t", "arguments": {"a": {"one_of": []}}}]}', "one_of must be a non-empty list"),
    ],
)
def test_bad_suite_lines_name_the_line_and_field(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    good = '{"id": "ok", "request": "r", "tool_set": "f", "expected_calls": []}'
    path.write_text(good + "\n" + line + "\n")
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert f"{path}, line 2:" in str(info.value)
    assert message in str(info.value)


def test_duplicate_ids_and_unknown_suites(tmp_path):
    path = tmp_path / "dup.jsonl"
    line = '{"id": "a", "request": "r", "tool_set": "f", "expected_calls": [], "split": "test"}'
    path.write_text(line + "\n" + line + "\n")
    with pytest.raises(SuiteError, match="duplicate id 'a' \\(first on line 1\\)"):
        load_suite(path)
    with pytest.raises(SuiteError, match="Unknown suite 'nonesuch'"):
        load_suite("nonesuch")
    with pytest.raises(SuiteError, match=r"Unknown suite 'treasure_hnut' \(did you mean 'treasure_hunt'\?\)"):
        load_suite("treasure_hnut")


def test_builtin_suites_are_listed():
    names = available_suites()
    assert "bfcl:multiple" in names and "bfcl:irrelevance" in names


def test_a_seeded_sample_is_fixed_and_keeps_suite_order():
    from evals.suite import load_suite

    suite = load_suite("treasure_hunt").split("test")
    first, again, other = suite.sample(20, 0), suite.sample(20, 0), suite.sample(20, 1)
    assert [c.id for c in first] == [c.id for c in again] and len(first) == 20
    assert [c.id for c in first] != [c.id for c in other]
    order = [c.id for c in suite]
    assert [c.id for c in first] == sorted((c.id for c in first), key=order.index)
    assert suite.sample(10_000) is suite


def test_cases_chosen_by_id_keep_suite_order_and_an_unknown_id_is_named():
    from evals.suite import SuiteError, load_suite

    suite = load_suite("treasure_hunt").split("test")
    order = [c.id for c in suite]
    chosen = suite.only(f"{order[5]}, {order[2]},{order[5]}")
    assert [c.id for c in chosen] == [order[2], order[5]]
    assert suite.only(None) is suite
    with pytest.raises(SuiteError, match=r"no case 'nope'.*--ids takes the ids"):
        suite.only(f"{order[0]},nope")


GOOD = {"id": "ok", "request": "Weather in Oslo?", "tools": [WEATHER], "expected_calls": [
    {"tool_name": "get_weather", "arguments": {"city": "Oslo"}}], "tags": ["single"], "split": "test"}
PATTERNED = {**WEATHER, "parameters": {"type": "object", "properties": {"city": {"type": "string",
                                                                              "pattern": "^(a+)+$"}}}}


def _write_lines(tmp_path, *lines):
    path = tmp_path / "suite.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def _refusal(path):
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    return str(info.value)


@pytest.mark.parametrize(("line", "message"), [
    pytest.param({**GOOD, "tags": ["\ud800"]}, "tags[0] holds a lone surrogate", id="surrogate tag"),
    pytest.param({**GOOD, "request": "Oslo \ud800?"}, "request holds a lone surrogate", id="surrogate request"),
    pytest.param({**GOOD, "tools": [{**WEATHER, "name": 7}]}, "tools[0].name: must be a non-empty string, got 7",
                 id="numeric tool name"),
    pytest.param({**GOOD, "tools": [{**WEATHER, "description": 7}]}, "tools[0].description: must be a string, got int",
                 id="numeric description"),
    pytest.param({**GOOD, "tools": [{**WEATHER, "parameters": "city"}]},
                 "tools[0].parameters: must be an object, got str", id="string parameters"),
    pytest.param({**GOOD, "tools": [{"type": "function", "function": "get_weather"}]},
                 "tools[0].function: must be an object, got str", id="string function"),
    pytest.param({**GOOD, "tools": [WEATHER, {**WEATHER, "description": "Another."}]},
                 "tools[1].name: 'get_weather' is already the name of tools[0]", id="duplicate tool names"),
    pytest.param('{"id": "x", "request": "r", "tools": [], "expected_calls": [], "score": NaN}',
                 "NaN is not a JSON value", id="NaN"),
    pytest.param('{"id": "x", "request": "r", "tools": [], "expected_calls": [], "score": -Infinity}',
                 "-Infinity is not a JSON value", id="Infinity"),
    pytest.param(json.dumps(GOOD).replace('"Oslo"}', '1e999}'), "1e999 is beyond the range of a JSON number",
                 id="huge number"),
    pytest.param(json.dumps(GOOD).replace('"split"', '"id": "again", "split"'), "duplicate key 'id'",
                 id="duplicate key"),
    pytest.param({**GOOD, "request": "x" * 100_001}, "at most 100000 characters", id="long request"),
    pytest.param({**GOOD, "request": "x" * 30_000_000}, "longer than 1,048,576 bytes, the limit for one case",
                 id="30 MB request"),
    pytest.param({**GOOD, "expected_calls": [{"tool_name": "get_weather", "arguments": {"city": 7}}]},
                 "get_weather refuses the expected value 7 of 'city': 7 is not of type 'string'",
                 id="expected value fails the schema"),
    pytest.param({**GOOD, "strict_arguments": True, "expected_calls": [{"tool_name": "get_weather", "arguments": {}}]},
                 "get_weather needs 'city', which the expected call leaves out, and strict_arguments refuses",
                 id="required argument left out"),
    pytest.param({**GOOD, "tools": [{**WEATHER, "parameters": {**WEATHER["parameters"], "properties": {
        "city": {"type": "string", "minLength": 1}}}}], "expected_calls": [
        {"tool_name": "get_weather", "arguments": {"city": {"one_of": ["", 7]}}}]},
                 "get_weather needs 'city', which the expected call lists with no value the tool takes",
                 id="required argument omitted"),
    pytest.param({**GOOD, "tools": [PATTERNED], "expected_calls": [
        {"tool_name": "get_weather", "arguments": {"city": "a" * 40 + "!"}}]},
                 "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\" of 'city': 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!' "
                 "does not match '^(a+)+$'", id="catastrophic pattern"),
    pytest.param({**GOOD, "tools": [{**WEATHER, "parameters": {"type": "object", "properties": {
        "city": {"$ref": "#/$defs/none"}}}}]}, "$ref '#/$defs/none' points to nothing in the schema",
                 id="unresolvable $ref"),
])
def test_an_attack_on_the_suite_loader_is_named_with_its_line(tmp_path, line, message):
    path = _write_lines(tmp_path, {**GOOD, "id": "first"}, line)
    problem = _refusal(path)
    assert f"{path}, line 2: " in problem and message in problem, problem
    assert "line 1" not in problem


def test_every_problem_of_a_suite_is_in_one_error_with_its_line(tmp_path):
    path = _write_lines(tmp_path, GOOD, "{not json", {**GOOD, "id": "b", "tags": ["\ud800"]}, "", GOOD,
                        {**GOOD, "id": "c", "expected_calls": [{"tool_name": "get_time", "arguments": {}}]})
    problem = _refusal(path)
    assert problem.startswith(f"Suite file {path} has 4 problem(s)")
    assert [line.split(": ", 1)[0] for line in problem.splitlines()[1:]] == [
        f"  - {path}, line {n}" for n in (2, 3, 5, 6)]
    assert "duplicate id 'ok' (first on line 1)" in problem and "expected tool 'get_time'" in problem


def test_only_the_first_problems_are_listed_with_the_count_of_the_rest(tmp_path):
    path = _write_lines(tmp_path, *["[]"] * 70)
    problem = _refusal(path)
    assert "has 70 problem(s)" in problem and "line 50: expected a JSON object" in problem
    assert "line 51:" not in problem and problem.endswith("... and 20 more")


def test_a_tool_with_a_catastrophic_pattern_still_loads_and_checks_ordinary_values(tmp_path):
    """The time limit refuses only what cannot be matched in time: the pattern itself works."""
    case = {**GOOD, "tools": [PATTERNED], "expected_calls": [{"tool_name": "get_weather", "arguments": {"city": "aaa"}}]}
    suite = load_suite(_write_lines(tmp_path, case))
    tool = registry_for(suite.cases[0]).get("get_weather")
    assert tool.check_arguments({"city": "aaaa"}) == []
    assert "does not match" in str(tool.check_arguments({"city": "aab"}))


def test_an_unlisted_argument_is_any_value_unless_arguments_are_strict(tmp_path):
    """A later step that depends on an earlier result lists no arguments (the domain suites do this)."""
    unchecked = {**GOOD, "expected_calls": [{"tool_name": "get_weather", "arguments": {}}]}
    empty_ok = {**GOOD, "id": "empty", "expected_calls": [
        {"tool_name": "get_weather", "arguments": {"city": {"one_of": [""]}}}]}  # city="" is a string the tool takes
    assert len(load_suite(_write_lines(tmp_path, unchecked, empty_ok))) == 2


def test_bfcl_conventions_in_a_suite_file_pass_the_expected_call_check(tmp_path):
    """"" marks an argument that may be omitted; a value among several that fits is enough to list it; an integer
    fits a number."""
    tool = {"name": "area", "description": "Area.", "parameters": {"type": "dict", "properties": {
        "base": {"type": "float"}, "unit": {"type": "string", "enum": ["cm", "m"]}}, "required": ["base"]}}
    case = {**GOOD, "tools": [tool], "expected_calls": [
        {"tool_name": "area", "arguments": {"base": {"one_of": [3, 3.0]}, "unit": {"one_of": ["cm", ""]}}}]}
    assert len(load_suite(_write_lines(tmp_path, case))) == 1


def test_the_built_in_suites_pass_every_check():
    for name in available_suites():
        if not name.startswith("bfcl:"):
            assert len(load_suite(name)) > 0, name


def test_a_suite_reference_loads_the_same_suite_from_any_directory(suite_path, monkeypatch):
    from evals.suite import SUITES_DIR, suite_reference

    monkeypatch.chdir(suite_path.parent)
    assert suite_reference("mini.jsonl") == str(suite_path.resolve())
    assert suite_reference(SUITES_DIR / "finance.jsonl") == suite_reference("finance") == "finance"  # no machine path
    assert suite_reference("bfcl:multiple") == "bfcl:multiple"


def test_a_line_without_its_split_is_a_problem_beside_the_others(tmp_path):
    path = tmp_path / "no_split.jsonl"
    path.write_text('{"id": "a", "request": "x", "tool_set": "finance", "expected_calls": []}\n'
                    '{"id": "b", "request": 5, "tool_set": "finance", "expected_calls": []}\n')
    with pytest.raises(SuiteError) as raised:
        load_suite(path)
    message = str(raised.value)
    assert "line 1: case 'a': field 'split': Field required (train, dev or test)" in message
    assert "line 2: case 'b': field 'request': Input should be a valid string; field 'split': Field required" in message
