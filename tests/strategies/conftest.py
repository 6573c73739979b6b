"""An LM over the local engine with a scripted llama.cpp stand-in: every strategy's prompt and answer path runs
for real, only the model's text is scripted."""

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from evals.evaluation import evaluate
from evals.suite import Suite
from tests.lm.conftest import FakeLlama
from tool_selection.lm import LocalEngine
from tool_selection.lm.engine import AsyncLocalEngine
from tool_selection.run_config import RunConfig


@pytest.fixture
def scripted(tmp_path):
    """``scripted(answers, llama=None)`` -> (dspy.LM, FakeLlama)."""

    def make(answers=(), *, llama=None, constrained=True):
        llama = llama or FakeLlama(answers)
        engine = LocalEngine(tmp_path / "fake.gguf", llama=llama, spec="local:fake", constrained=constrained)
        lm = dspy.LM("local:fake", engine=engine, async_engine=AsyncLocalEngine(engine), cache=False,
                     num_retries=0, temperature=0.0, max_tokens=128)
        return lm, llama

    return make


@pytest.fixture
def finished_run(tmp_path):
    """``finished_run(case, answer, selector)`` -> (run folder, suite file): ``case`` evaluated alone, the model
    scripted to give ``answer`` (a JSON adapter's fields), under the ``SelectorSpec`` ``selector``; the suite file
    holds the case, for ``toolsel eval rescore --suite``."""

    def make(case, answer, selector):
        suite_file = tmp_path / "suite.jsonl"
        suite_file.write_text(case.model_dump_json(exclude_none=True) + "\n")
        run = tmp_path / "run"
        evaluate(Suite(name="suite", cases=[case]), DummyLM([answer], adapter=dspy.JSONAdapter()), split=None,
                 selector=selector, run=RunConfig(run_dir=run, mlflow=False, progress=False))
        return run, suite_file

    return make


@pytest.fixture
def read_again(tmp_path):
    """``read_again(run, suite_file, flag, value)`` -> the first row of ``run`` before and of its copy read by
    ``toolsel eval rescore RUN FLAG VALUE --into DIR`` (the command must succeed)."""
    import pandas as pd

    from tool_selection.cli import main

    def read(run, suite_file, flag, value):
        copy = tmp_path / f"read-{value}"
        assert main(["eval", "rescore", str(run), flag, value, "--into", str(copy), "--suite", str(suite_file)]) == 0
        return (pd.read_parquet(run / "results.parquet").iloc[0], pd.read_parquet(copy / "results.parquet").iloc[0])

    return read
