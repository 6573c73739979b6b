"""Each relevance model read against #47's targets on kept rows: one column per model, each figure with its verdict."""

import math

import pandas as pd
import pytest

from evals.benchmarks.relevance_targets import Target, main, target_rows, targets_table
from tests.evals.test_relevance import rows
from tests.evals.test_relevance_compare import write_runs
from tool_selection.relevance import RelevanceModel


def model(threshold):
    return RelevanceModel(signals=("dense_best",), means=(0.4,), scales=(0.2,), coefficients=(4.0,), intercept=0.0,
                          threshold=threshold)


def suites():
    return {"bfcl_irrelevance": rows("test", seed=3), "bfcl_simple_python": rows("test", seed=5),
            "events": pd.concat([rows("test", seed=4), rows("train", seed=6)], ignore_index=True)}


def by_name(targets):
    return {target.name: target for target in targets}


def test_a_model_that_refuses_everything_meets_abstention_and_misses_false_abstention():
    refuses, keeps = by_name(target_rows(suites(), None, model(1.0))), by_name(target_rows(suites(), None, model(0.0)))
    assert refuses["bfcl_irrelevance abstention %"].value == 100.0 and refuses["bfcl_irrelevance abstention %"].met
    added = refuses["bfcl_simple_python added false abstention, points"]
    assert added.value == pytest.approx(100 * 20 / 21) and added.met is False  # 20 of 21 calls needed, all dropped
    assert keeps["bfcl_simple_python added false abstention, points"].value == 0.0
    assert keeps["bfcl_irrelevance abstention %"].value == 0.0  # the selection called on every one
    assert keeps["domains false abstention %"].value == pytest.approx(100 / 21)  # the test rows only: 1 of 21


def test_only_the_targets_whose_rows_are_given_are_read():
    names = [target.name for target in target_rows({"events": rows("test")}, None, model(0.5))]
    assert names == ["domains abstention %", "domains false abstention %"]


def test_other_languages_are_read_against_english():
    translated = pd.DataFrame({"language": ["en", "en", "es", "es", "zh", "zh"],
                               "false_abstained": [0.0, 0.0, 1.0, 0.0, 0.0, math.nan]})
    targets = by_name(target_rows({}, translated, model(0.5)))
    assert targets["false abstention in es - English, points"].value == 50.0
    assert targets["false abstention in es - English, points"].met is False
    assert targets["false abstention in zh - English, points"].met is True


def test_a_figure_with_no_rows_has_no_verdict():
    assert Target("x", math.nan, 2.0, False).met is None and Target("x", 2.0, 2.0, False).met is True


def test_the_table_holds_one_column_per_model_and_the_command_writes_it(tmp_path, capsys):
    table = targets_table(suites(), None, {"strict": model(0.9), "loose": model(0.1)})
    assert list(table.columns) == ["target", "bound", "strict", "loose"] and table["bound"][0] == ">= 85"
    runs = write_runs(tmp_path, suites())
    path = model(0.5).save(tmp_path / "m.json")
    out = tmp_path / "targets.md"
    assert main([*runs, "--model", f"shipped one={path}", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| target | bound | shipped one |" in text and "'shipped one=" in text and " yes |" in text
    with pytest.raises(SystemExit):
        main([*runs, "--model", str(path)])
    assert "write it as LABEL=MODEL.json" in capsys.readouterr().err
