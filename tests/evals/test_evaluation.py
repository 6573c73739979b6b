"""``evaluate`` takes the selector as a ``SelectorSpec`` and the run as a ``RunConfig`` (its former keywords are
refused); the command line builds both in one place, from flags or files."""


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


def test_the_former_keywords_and_a_selector_given_as_text_are_refused(suite_path):
    with pytest.raises(TypeError, match="unexpected keyword argument 'strategy'"):
        evaluate(str(suite_path), CountingLM(ANSWERS), strategy="json-cot")
    with pytest.raises(TypeError, match="selector must be a SelectorSpec or a MultiToolSelector"):
        evaluate(str(suite_path), CountingLM(ANSWERS), selector="json-cot")


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
