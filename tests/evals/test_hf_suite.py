"""Suites in the Hugging Face datasets format (hf:FOLDER, hf:NAME): round trips, splits, problems in one message."""

import json

import datasets
import pytest

from evals.suite import SuiteError, load_suite, suite_reference


def test_a_saved_suite_loads_back_case_for_case(suite_path, tmp_path):
    suite = load_suite(suite_path)
    suite.to_dataset().save_to_disk(str(tmp_path / "mini"))
    again = load_suite(f"hf:{tmp_path / 'mini'}")
    assert again.name == "hf-mini" and len(again) == len(suite)
    assert [c.model_dump() for c in again.cases] == [c.model_dump() for c in suite.cases]
    assert again.split_counts() == suite.split_counts()


@pytest.mark.parametrize("name", ["mixed", "bfcl:multiple", "bfcl:simple_python+simple_java"])
def test_conversations_tool_sets_and_bfcl_cases_round_trip(name, tmp_path):
    suite = load_suite(name)
    suite.to_dataset().to_parquet(str(tmp_path / "data" / "cases.parquet"))  # a folder of data files
    again = load_suite(f"hf:{tmp_path / 'data'}")
    assert [c.model_dump() for c in again.cases] == [c.model_dump() for c in suite.cases]


def test_a_dataset_dict_gives_its_split_names_to_cases_without_one(suite_path, tmp_path):
    rows = [{k: v for k, v in row.items() if k != "split"} for row in load_suite(suite_path).to_dataset()]
    parts = datasets.DatasetDict({"train": datasets.Dataset.from_list(rows[:3]),
                                  "validation": datasets.Dataset.from_list(rows[3:5]),
                                  "test": datasets.Dataset.from_list(rows[5:])})
    parts.save_to_disk(str(tmp_path / "parts"))
    suite = load_suite(f"hf:{tmp_path / 'parts'}")
    assert suite.split_counts() == {"train": 3, "dev": 2, "test": 3}


def test_every_bad_row_is_named_in_one_error(suite_path, tmp_path):
    rows = list(load_suite(suite_path).to_dataset())
    rows[1]["expected_calls"] = "{not json"
    rows[2]["split"] = "prod"
    rows[3]["id"] = rows[0]["id"]
    rows[4]["expected_calls"] = json.dumps([{"tool_name": "get_stock", "arguments": {}}])
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "bad"))
    with pytest.raises(SuiteError) as raised:
        load_suite(f"hf:{tmp_path / 'bad'}")
    message = str(raised.value)
    assert "has 4 problem(s)" in message
    assert "row 1: column 'expected_calls' is not valid JSON" in message
    assert "row 2: case" in message and "field 'split'" in message
    assert "row 3: duplicate id 'w-0' (first at row 0)" in message
    assert "row 4: case 'w-4': expected tool 'get_stock' is not among its tools" in message


def test_nested_columns_are_refused_with_the_fix(suite_path, tmp_path):
    rows = [json.loads(line) for line in suite_path.read_text().splitlines()]
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "nested"))
    with pytest.raises(SuiteError, match="write nested fields as JSON strings"):
        load_suite(f"hf:{tmp_path / 'nested'}")


def test_a_name_not_in_the_cache_is_never_downloaded(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(SuiteError, match="never downloaded at run time"):
        load_suite("hf:nobody/no-such-suite")
    with pytest.raises(SuiteError, match="hf: needs a dataset"):
        load_suite("hf:")


def test_a_run_records_a_folder_by_its_absolute_path(tmp_path, monkeypatch):
    (tmp_path / "suite").mkdir()
    monkeypatch.chdir(tmp_path)
    assert suite_reference("hf:suite") == f"hf:{tmp_path / 'suite'}"
    assert suite_reference("hf:org/name") == "hf:org/name"


def test_the_cli_exports_a_suite_that_evaluates_back(tmp_path, capsys):
    from tool_selection.cli import main

    assert main(["suites", "finance", "--export", str(tmp_path / "finance")]) == 0
    assert "saved to" in capsys.readouterr().out
    assert [c.id for c in load_suite(f"hf:{tmp_path / 'finance'}").cases] == [c.id for c in load_suite("finance").cases]
    assert main(["suites", "--export", str(tmp_path / "x")]) == 2
    assert "name it" in capsys.readouterr().err
