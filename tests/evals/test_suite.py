"""Suite files: loading, validation errors naming line and field, splits, datasets."""

import json

import pytest

from evals.suite import SuiteError, available_suites, load_suite, registry_for


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
    line = '{"id": "a", "request": "r", "tool_set": "f", "expected_calls": []}'
    path.write_text(line + "\n" + line + "\n")
    with pytest.raises(SuiteError, match="duplicate id 'a' \\(first on line 1\\)"):
        load_suite(path)
    with pytest.raises(SuiteError, match="Unknown suite 'nonesuch'"):
        load_suite("nonesuch")


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
