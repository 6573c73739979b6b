"""A case whose request and tools cannot fit in a local model's context is refused before the run starts, with
what to do (--retrieve K); --n-ctx sets the context a local model is loaded with. No real model: a fake tokenizer."""

import json

import dspy
import pytest

from evals.context_fit import context_error, oversized_cases
from evals.evaluation import evaluate
from evals.suite import load_suite
from tests.evals.conftest import WEATHER
from tests.evals.test_runner import ANSWERS, CountingLM
from tool_selection.cli import build_parser
from tool_selection.errors import ToolSelectionError
from tool_selection.run_config import RunConfig
from tool_selection.spec import SelectorSpec


def _tool(i: int) -> dict:
    return {"name": f"lookup_{i}", "description": f"Look up record kind {i} in the archive. " * 5,
            "parameters": {"type": "object", "properties": {"key": {"type": "string", "description": "Record key."}},
                           "required": ["key"]}}


@pytest.fixture
def huge_suite(tmp_path):
    """Two cases over 300 tools each (one catalog, and one with a tool of its own), one over a single tool."""
    catalog = [_tool(i) for i in range(300)]
    cases = [{"id": "huge-a", "request": "Find record 7.", "tools": catalog,
              "expected_calls": [{"tool_name": "lookup_7", "arguments": {"key": "7"}}]},
             {"id": "huge-b", "request": "Find record 8.", "tools": [*catalog, _tool(300)],
              "expected_calls": [{"tool_name": "lookup_8", "arguments": {"key": "8"}}]},
             {"id": "small", "request": "What is the weather in Oslo?", "tools": [WEATHER],
              "expected_calls": [{"tool_name": "get_weather", "arguments": {"city": "Oslo"}}]}]
    path = tmp_path / "huge.jsonl"
    path.write_text("\n".join(json.dumps({**case, "split": "test"}) for case in cases) + "\n")
    return path


class WordCounter:
    """A tokenizer stand-in: a token per word; records what it was asked."""

    def __init__(self):
        self.texts = []

    def __call__(self, text: str) -> int:
        self.texts.append(text)
        return len(text.split())


def test_the_cases_whose_request_and_tools_outgrow_the_context_are_found(huge_suite):
    count = WordCounter()
    over = oversized_cases(load_suite(huge_suite), count=count, limit=4096)
    assert [(case.case_id, case.tools) for case in over] == [("huge-a", 300), ("huge-b", 301)]
    assert over[0].tokens == over[0].tool_tokens + 3 and over[0].tool_tokens > 4096
    assert len(count.texts) == 302 + 3  # each of the 302 distinct tools counted once, and each request
    assert oversized_cases(load_suite(huge_suite), count=count, limit=20_000) == []


def test_the_refusal_says_how_many_tools_would_fit(huge_suite):
    over = oversized_cases(load_suite(huge_suite), count=WordCounter(), limit=4096)
    message = str(context_error(over, limit=4096, cases=3, model="local:tiny"))
    assert message.startswith("2 of 3 cases cannot fit in the 4,096 tokens of context local:tiny can take (the length "
                              "it was trained for): their requests and tool listings alone come to up to ")
    assert "(huge-b: 301 tools). Cases: huge-a, huge-b. Show the selector fewer tools with --retrieve K" in message
    per_tool = round(over[0].tool_tokens / 300)
    assert f"at about {per_tool} tokens a tool, K={2048 // per_tool} keeps the listing within half" in message


class CountingLlama:
    """A loaded model to the engine: a word tokenizer, trained for 4,096 tokens; any completion is a failure."""

    def __init__(self):
        self.completions = 0

    def tokenize(self, data: bytes, add_bos=True, special=False):
        return data.decode().split()

    def n_ctx_train(self):
        return 4096

    def create_chat_completion(self, *args, **kwargs):
        self.completions += 1
        raise AssertionError("a case ran")


def test_evaluate_refuses_them_before_the_first_case(huge_suite, tmp_path):
    from tool_selection.lm import LocalEngine

    llama = CountingLlama()
    engine = LocalEngine(tmp_path / "fake.gguf", llama=llama, spec="local:fake")
    lm = dspy.LM("local:fake", engine=engine, cache=False, num_retries=0)
    with pytest.raises(ToolSelectionError, match=r"^2 of 3 cases cannot fit .*--retrieve K"):
        evaluate(str(huge_suite), lm, split=None, selector=SelectorSpec(strategy="json-cot", relevance="none"),
                 run=RunConfig(mlflow=False, progress=False, run_dir=tmp_path / "run"))
    assert llama.completions == 0 and not (tmp_path / "run" / "results.jsonl").exists()


def test_n_ctx_is_a_run_flag_for_local_models(suite_path, tmp_path, monkeypatch):
    from evals.cli_experiment import run_config

    parse = build_parser().parse_args
    assert run_config(parse(["eval", "--n-ctx", "8192"])) == RunConfig(n_ctx=8192)
    assert parse(["eval", "loop", "--n-ctx", "8192"]).n_ctx == 8192  # the loop's own flag, as before

    import tool_selection.lm as lm_module

    loaded = {}

    def get_lm(spec, **kwargs):
        loaded.update(kwargs, spec=spec)
        return CountingLM(ANSWERS)

    monkeypatch.setattr(lm_module, "get_lm", get_lm)
    monkeypatch.setattr(lm_module, "prepare_lm", lambda lm: None)
    result = evaluate(str(suite_path), "local:qwen2.5-coder-0.5b", selector=SelectorSpec(strategy="json-cot"),
                      run=RunConfig(n_ctx=8192, mlflow=False, progress=False, limit=1, run_dir=tmp_path / "run"))
    assert str(loaded["spec"]) == "local:qwen2.5-coder-0.5b" and loaded["local"].n_ctx == 8192  # parsed once
    assert result.params["n_ctx"] == 8192

    with pytest.raises(ToolSelectionError, match=r"n_ctx=8192 \(--n-ctx\) is the context of a local model"):
        evaluate(str(suite_path), "openai/gpt-4o-mini", run=RunConfig(n_ctx=8192, mlflow=False, progress=False))
