"""``evaluate`` takes the selector as a ``SelectorSpec`` and the run as a ``RunConfig``; its former keywords fold
into the same two values, with a warning, and give the same rows and params; the command line builds both in one
place, from flags or files."""

import warnings

import pandas as pd
import pytest

from evals.cli_experiment import run_config, selector_spec
from evals.evaluation import evaluate
from tests.evals.test_runner import ANSWERS, CountingLM
from tool_selection.cli import build_parser
from tool_selection.errors import ToolSelectionError
from tool_selection.run_config import RunConfig
from tool_selection.spec import GateSpec, RetrievalSpec, SelectorSpec

SPEC = SelectorSpec(strategy="json-cot", relevance="none")


def _rows(result):
    return result.results.drop(columns=["latency_s"])


def test_the_spec_and_run_config_give_the_rows_and_params_of_the_former_keywords(suite_path, tmp_path):
    new = evaluate(str(suite_path), CountingLM(ANSWERS), selector=SPEC,
                   run=RunConfig(mlflow=False, progress=False, limit=5, run_dir=tmp_path / "new"))
    with pytest.warns(DeprecationWarning, match=r"evaluate\(strategy=, relevance=, mlflow=, progress=, limit=, "
                                                r"run_dir=\) is deprecated"):
        old = evaluate(str(suite_path), CountingLM(ANSWERS), strategy="json-cot", relevance="none", mlflow=False,
                       progress=False, limit=5, run_dir=tmp_path / "old")
    pd.testing.assert_frame_equal(_rows(new), _rows(old))
    assert len(new.results) == 5
    skip = ("git_commit",)
    assert {k: v for k, v in new.params.items() if k not in skip} == {k: v for k, v in old.params.items()
                                                                      if k not in skip}
    assert new.params["strategy"] == "json-cot" and new.params["program"] == "zero-shot"


def test_the_two_forms_of_one_setting_and_unknown_keywords_are_refused(suite_path):
    with pytest.raises(TypeError, match="give selector=/run= or the old keywords for the same settings, not both"):
        evaluate(str(suite_path), CountingLM(ANSWERS), selector=SPEC, strategy="json")
    with pytest.raises(TypeError, match=r"evaluate\(\) got unexpected keyword argument\(s\): colour"):
        evaluate(str(suite_path), CountingLM(ANSWERS), colour="red")
    with pytest.raises(TypeError, match="selector must be a SelectorSpec or a MultiToolSelector"):
        evaluate(str(suite_path), CountingLM(ANSWERS), selector="json-cot")


def test_no_warning_for_the_new_form(suite_path, tmp_path):
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*is deprecated: pass selector=", category=DeprecationWarning)
        evaluate(str(suite_path), CountingLM(ANSWERS), selector=SPEC,
                 run=RunConfig(mlflow=False, progress=False, limit=1, run_dir=tmp_path / "run"))


def _args(*argv):
    return build_parser().parse_args(["eval", *argv])


def test_flags_build_the_spec_and_the_run_config_in_one_place():
    args = _args("--strategy", "gate+native", "--gate-threshold", "0.3", "--retrieve", "4", "--retriever", "bm25",
                 "--rerank", "8", "--undeclared-arguments", "drop", "--relevance", "none", "--serve", "4",
                 "--no-mlflow", "--limit", "7")
    assert selector_spec(args) == SelectorSpec(strategy="gate+native", gate=GateSpec(threshold=0.3),
                                               retrieval=RetrievalSpec(k=4, retriever="bm25", rerank=8),
                                               undeclared_arguments="drop", relevance="none")
    assert run_config(args) == RunConfig(serve=4, threads=4, mlflow=False, limit=7)
    assert selector_spec(_args()) == SelectorSpec() and run_config(_args()) == RunConfig()
    with pytest.raises(ToolSelectionError, match=r"give retrieve \(--retrieve\) too"):
        selector_spec(_args("--rerank", "8"))


def test_files_start_the_spec_and_the_run_config_and_flags_change_them(tmp_path):
    spec_file, run_file = tmp_path / "spec.yaml", tmp_path / "run.yaml"
    spec_file.write_text("strategy: native\nretrieval:\n  k: 3\n  retriever: bm25\nrelevance: none\n")
    run_file.write_text("threads: 2\nmlflow: false\nlimit: 10\n")
    args = _args("--spec", str(spec_file), "--run-config", str(run_file), "--retrieve", "5", "--limit", "4")
    assert selector_spec(args) == SelectorSpec(strategy="native", retrieval=RetrievalSpec(k=5, retriever="bm25"),
                                               relevance="none")
    assert run_config(args) == RunConfig(threads=2, mlflow=False, limit=4)
    spec_file.write_text("strategy: telepathy\n")
    with pytest.raises(ToolSelectionError, match="spec.yaml: strategy: Unknown selection strategy 'telepathy'"):
        selector_spec(_args("--spec", str(spec_file)))
