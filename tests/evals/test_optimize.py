"""Optimization with DSPy's dummy LM, compiled selectors on disk, and the GEPA feedback metric."""

import json
import re

import dspy
import pytest

from evals.evaluation import evaluate
from evals.optimization import (
    OPTIMIZERS,
    FalseAbstentionRiseError,
    OptimizeSettings,
    UnknownOptimizerError,
    describe_errors,
    feedback_metric,
    make_examples,
    optimize,
    optimizer_names,
    register_optimizer,
    selection_metric,
)
from evals.suite import Case, load_suite
from tests.core.tools_fixture import Add, Echo, Now
from tests.evals.test_runner import ANSWERS, CountingLM, calls
from tool_selection import ToolSet
from tool_selection.compiled import Manifest, ToolsChangedError, save_compiled, tool_fingerprint
from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.errors import ToolSelectionError
from tool_selection.run_config import RunConfig
from tool_selection.selector import MultiToolSelector, ToolSelectionAdapter
from tool_selection.spec import SelectorSpec

JSON_COT = SelectorSpec(strategy="json-cot", relevance="none")


def test_bootstrap_compiles_saves_and_loads_back(suite_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    lm = CountingLM(ANSWERS, adapter=ToolSelectionAdapter())
    result = optimize(str(suite_path), lm, OptimizeSettings(optimizer="bootstrap"),
                      selector=SelectorSpec(strategy="json-cot", relevance="none"),
                      run=RunConfig(run_dir=tmp_path / "prog", tracking_uri=uri))
    demos = result.program.select.predict.demos
    assert demos, "bootstrapping correct answers must yield demonstrations"
    assert all("tools" not in d for d in demos)  # compacted
    assert result.model_calls > 0 and result.wall_time_s > 0
    manifest = json.loads((tmp_path / "prog" / "manifest.json").read_text())
    assert manifest["optimizer"] == "bootstrap" and manifest["dspy_version"] == dspy.__version__
    assert 0 <= manifest["scores"]["test_accuracy"] <= 1
    assert manifest["selector"] == {**SelectorSpec().model_dump(mode="json"), "strategy": "json-cot",
                                    "relevance": "none"}  # the spec, stored

    loaded = MultiToolSelector.load(tmp_path / "prog")
    assert len(loaded.select.predict.demos) == len(demos) and loaded.to_spec().strategy == "json-cot"
    again = evaluate(str(suite_path), CountingLM(ANSWERS, adapter=ToolSelectionAdapter()),
                     selector=SelectorSpec(program=tmp_path / "prog"),
                     run=RunConfig(mlflow=False, progress=False, run_dir=tmp_path / "eval"))
    assert again.params["program"] == str(tmp_path / "prog")

    import mlflow

    mlflow.set_tracking_uri(uri)
    run = mlflow.get_run(result.mlflow_run_id)
    assert run.data.params["optimizer"] == "bootstrap" and run.data.params["kind"] == "optimize"
    assert "test_accuracy" in run.data.metrics and "model_calls" in run.data.metrics


def test_optimizer_never_sees_test_cases(suite_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    seen = []

    class Spy(CountingLM):
        def forward(self, prompt=None, messages=None, **kwargs):
            seen.append(messages[-1]["content"])
            return super().forward(prompt=prompt, messages=messages, **kwargs)

    optimize(str(suite_path), Spy(ANSWERS, adapter=ToolSelectionAdapter()), optimizer="bootstrap",
             evaluate_test=False, selector=JSON_COT, run=RunConfig(run_dir=tmp_path / "p", mlflow=False))
    test_requests = [c.prompt for c in load_suite(suite_path).split("test")]
    assert seen and not any(r in text for text in seen for r in test_requests)


def test_random_search_records_each_candidates_dev_score(suite_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lm = CountingLM(ANSWERS, adapter=ToolSelectionAdapter())
    result = optimize(str(suite_path), lm, optimizer="random-search", evaluate_test=False, selector=JSON_COT,
                      run=RunConfig(run_dir=tmp_path / "rs", mlflow=False))
    assert len(result.candidate_scores) >= 2  # zero-shot, labeled-only, bootstrapped, ... each scored on dev
    assert all(0 <= score <= 100 for score in result.candidate_scores)
    assert (tmp_path / "rs" / "manifest.json").exists()


def test_optimizers_are_one_registry_for_python_and_the_command_line(capsys):
    from tool_selection.cli import build_parser, main

    assert optimizer_names() == list(OPTIMIZERS) == ["bootstrap", "random-search", "mipro", "gepa"]
    assert [n for n, o in OPTIMIZERS.items() if not o.uses_dev] == ["bootstrap"]  # the others select on dev
    assert main(["optimize", "--optimizer", "annealing"]) == 2  # checked when the command runs, before any work
    err = capsys.readouterr().err
    assert "Unknown optimizer 'annealing'" in err and "; choose one of: bootstrap, random-search, mipro, gepa." in err
    with pytest.raises(UnknownOptimizerError, match=re.escape("Unknown optimizer 'bootstrp' (did you mean "
                                                              "'bootstrap'?); choose one of: bootstrap, random-search, "
                                                              "mipro, gepa.")):
        optimize("unused-suite-name", CountingLM(ANSWERS), optimizer="bootstrp")
    assert build_parser().parse_args(["optimize", "--optimizer", "gepa"]).optimizer == "gepa"


@pytest.fixture
def labeled_optimizer():
    @register_optimizer("labeled", uses_dev=False)
    def labeled(setup):
        args = {"k": setup.sizes["labeled"]}
        return dspy.LabeledFewShot(**args), args

    yield labeled
    OPTIMIZERS.unregister("labeled")


def test_a_registered_optimizer_is_known_everywhere(labeled_optimizer, suite_path, tmp_path, monkeypatch):
    from tool_selection.cli import build_parser

    monkeypatch.chdir(tmp_path)
    assert build_parser().parse_args(["optimize", "--optimizer", "labeled"]).optimizer == "labeled"
    result = optimize(str(suite_path), CountingLM(ANSWERS, adapter=ToolSelectionAdapter()), optimizer="labeled",
                      evaluate_test=False, selector=JSON_COT, run=RunConfig(run_dir=tmp_path / "lab", mlflow=False))
    assert result.manifest.optimizer == "labeled" and result.manifest.optimizer_args == {"k": 2, "budget": "light"}
    assert len(result.program.select.predict.demos) == 2
    with pytest.raises(ToolSelectionError, match="'labeled' is taken by .*labeled_optimizer.<locals>.labeled"):
        register_optimizer("labeled")(lambda setup: (None, {}))


def test_compiled_selector_refuses_changed_tools(tmp_path):
    before = ToolSet(name="fixture", tools=(Echo, Add))
    program = MultiToolSelector(before, strategy="json-cot")
    save_compiled(program, tmp_path, Manifest(tool_set=None, tools=tool_fingerprint(before.registry()), model="m"))

    after = ToolSet(name="fixture", tools=(Echo, Now))
    with pytest.raises(ToolsChangedError) as info:
        MultiToolSelector.load(tmp_path, tools=after)
    assert "removed: add_numbers" in str(info.value) and "added: get_time" in str(info.value)
    assert "allow_tool_changes=True" in str(info.value)
    assert MultiToolSelector.load(tmp_path, tools=after, allow_tool_changes=True).tools.names() == ["echo", "get_time"]
    assert MultiToolSelector.load(tmp_path, tools=before).tools.names() == ["add_numbers", "echo"]


def test_metric_and_feedback_name_what_was_wrong():
    case = Case(id="c", request="add 1 and 2", tool_set="x",
                expected_calls=[{"tool_name": "add_numbers", "arguments": {"a": 1, "b": 2}}])
    gold = dspy.Example(case=case)

    def pred(*calls, **kw):
        return dspy.Prediction(decision=MultiToolDecision(tool_calls=[ToolCall(tool_name=n, arguments=a) for n, a in calls], **kw))

    assert selection_metric(gold, pred(("add_numbers", {"a": 1, "b": 2}))) == 1.0
    assert selection_metric(gold, pred(("echo", {})), trace=[]) is False
    assert "Wrong tool" in feedback_metric(gold, pred(("echo", {"message": "x"}))).feedback
    assert "abstained" in feedback_metric(gold, pred()).feedback
    assert "Argument add_numbers.b" in feedback_metric(gold, pred(("add_numbers", {"a": 1, "b": 5}))).feedback
    assert "could not be parsed" in describe_errors(case, MultiToolDecision(parse_error="bad"))
    none_case = Case(id="n", request="joke", tool_set="x", expected_calls=[])
    assert "should have abstained" in describe_errors(none_case, pred(("echo", {})).decision)


class ProposingLM(CountingLM):
    """The selector's scripted answers, and for every other call (MIPRO's proposers, GEPA's reflection) a new
    instruction: as JSON fields when the prompt names output fields, as a fenced block otherwise."""

    INSTRUCTION = "Call the one listed tool that does what is asked; answer [] when none does."

    def forward(self, prompt=None, messages=None, **kwargs):
        messages = messages or [{"role": "user", "content": prompt}]
        text = "\n".join(m["content"] for m in messages if isinstance(m.get("content"), str))
        self.answers = dict(ANSWERS)
        if "[[ ## request ## ]]" not in messages[-1]["content"]:
            listed = text.split("Your output fields are:", 1)
            fields = re.findall(r"^\d+\. `(\w+)`", listed[1].split("All interactions", 1)[0], re.M) if len(listed) > 1 else []
            self.answers = {"": {name: self.INSTRUCTION for name in fields} if fields else f"```\n{self.INSTRUCTION}\n```"}
        return super().forward(prompt=prompt, messages=messages, **kwargs)

    def _format_answer_fields(self, field_names_and_values):
        if isinstance(field_names_and_values, str):
            return field_names_and_values
        return super()._format_answer_fields(field_names_and_values)


@pytest.fixture
def split_suite(tmp_path):
    from tests.evals.conftest import CLOCK, WEATHER

    cities = ["Oslo", "Paris", "Rome", "Lima", "Kyiv", "Baku", "Oslo", "Paris", "Quito", "Rome", "Lima", "Oslo"]
    splits = ["train"] * 6 + ["dev"] * 4 + ["test"] * 2
    cases = [{"id": f"c-{i}", "request": f"What is the weather in {city}?", "tools": [WEATHER, CLOCK],
              "expected_calls": [{"tool_name": "get_weather", "arguments": {"city": city}}],
              "tags": ["single"], "split": split} for i, (city, split) in enumerate(zip(cities, splits))]
    path = tmp_path / "split.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    return path


@pytest.mark.parametrize("optimizer", ["mipro", "gepa"])
def test_instruction_optimizers_compile_save_and_score(optimizer, split_suite, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lm = ProposingLM(ANSWERS, adapter=ToolSelectionAdapter())
    result = optimize(str(split_suite), lm, optimizer=optimizer, selector=JSON_COT,
                      run=RunConfig(run_dir=tmp_path / optimizer, mlflow=False))
    manifest = json.loads((tmp_path / optimizer / "manifest.json").read_text())
    assert manifest["optimizer"] == optimizer and 0 <= manifest["scores"]["test_accuracy"] <= 1
    assert 0 <= result.dev_score <= 1 and result.model_calls > 0
    assert result.candidate_scores, "instruction optimizers record each candidate's score"
    loaded = MultiToolSelector.load(tmp_path / optimizer)
    assert loaded.select.predict.signature.instructions == result.program.select.predict.signature.instructions


def test_gepa_stops_at_a_cap_in_metric_calls(split_suite, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lm = ProposingLM(ANSWERS, adapter=ToolSelectionAdapter())
    optimize(str(split_suite), lm, optimizer="gepa", max_metric_calls=6, evaluate_test=False, selector=JSON_COT,
             run=RunConfig(run_dir=tmp_path / "capped", mlflow=False))
    arguments = json.loads((tmp_path / "capped" / "manifest.json").read_text())["optimizer_args"]
    assert arguments["max_metric_calls"] == 6 and "auto" not in arguments


def test_examples_weigh_so_that_refusing_everything_scores_half(tmp_path):
    from tests.evals.conftest import CLOCK, WEATHER

    cases = [Case(id=f"w{i}", request=f"Weather in {city}?", tools=[WEATHER, CLOCK],
                  expected_calls=[{"tool_name": "get_weather", "arguments": {"city": city}}])
             for i, city in enumerate(["Oslo", "Rome", "Lima"])]
    cases.append(Case(id="n", request="Tell me a joke", tools=[WEATHER, CLOCK], expected_calls=[]))
    examples = make_examples(cases)
    assert [e.weight for e in examples] == pytest.approx([4 / 6, 4 / 6, 4 / 6, 2.0])
    refuse = dspy.Prediction(decision=MultiToolDecision(tool_calls=[]))
    assert sum(selection_metric(e, refuse) for e in examples) / len(examples) == pytest.approx(0.5)
    assert sum(feedback_metric(e, refuse).score for e in examples) / len(examples) == pytest.approx(0.5)
    assert [e.weight for e in make_examples(cases[:3])] == [1.0, 1.0, 1.0]  # one kind only: plain accuracy


class AbstainsWithDemosLM(CountingLM):
    """Answers right when asked alone, and refuses once demonstrations precede the request."""

    def forward(self, prompt=None, messages=None, **kwargs):
        self.answers = dict(ANSWERS)
        if len(messages) > 2:
            self.answers = {"": {"reasoning": "unsure", "tool_calls": "[]"}}
        return super().forward(prompt=prompt, messages=messages, **kwargs)


def test_a_program_that_gains_by_refusing_is_not_saved_unless_allowed(labeled_optimizer, split_suite, tmp_path,
                                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)
    lm = AbstainsWithDemosLM(ANSWERS, adapter=ToolSelectionAdapter())
    with pytest.raises(FalseAbstentionRiseError, match=r"100.0% of the dev cases .* against 0.0%.*"
                                                       r"--allow-false-abstention-rise"):
        optimize(str(split_suite), lm, optimizer="labeled", evaluate_test=False, selector=JSON_COT,
                 run=RunConfig(run_dir=tmp_path / "refused", mlflow=False))
    assert not (tmp_path / "refused" / "program.json").exists()
    assert (tmp_path / "refused" / "dev_eval").is_dir()

    result = optimize(str(split_suite), lm, optimizer="labeled", allow_false_abstention_rise=True, selector=JSON_COT,
                      run=RunConfig(run_dir=tmp_path / "allowed", mlflow=False))
    scores = result.manifest.scores
    assert scores["dev_false_abstention_rate"] == 1.0 and scores["dev_unoptimized_false_abstention_rate"] == 0.0
    assert scores["test_false_abstention_rate"] == 1.0 and (tmp_path / "allowed" / "program.json").is_file()


def test_optimize_announces_each_stage_and_shows_its_progress(tmp_path, monkeypatch, capsys):
    from tests.evals.conftest import make_cases

    monkeypatch.chdir(tmp_path)
    cases = make_cases()
    for case in cases[4:6]:
        case["split"] = "dev"
    suite = tmp_path / "mini.jsonl"
    suite.write_text("\n".join(json.dumps(case) for case in cases) + "\n")
    answers = {**ANSWERS, "Kyiv": {"reasoning": "weather", "tool_calls": calls(("get_weather", {"city": "Kyiv"}))}}
    optimize(str(suite), CountingLM(answers, adapter=ToolSelectionAdapter()), optimizer="bootstrap",
             selector=SelectorSpec(strategy="json-cot", relevance="none"),
             run=RunConfig(run_dir=tmp_path / "prog", mlflow=False))
    err = capsys.readouterr().err
    stages = [line for line in err.splitlines() if line.startswith("optimize ")]
    assert stages == ["optimize 1/3, compile: bootstrap (light) on 2 train cases: bootstrapping demonstrations "
                      "from the train cases",
                      "optimize 2/3, dev: scoring the optimized program, then the unoptimized selector, on 2 dev cases",
                      "optimize 3/3, test: scoring the optimized program on the test split"]
    bars = re.findall(r"(?:(\S+): )?100%\|█+\| (\d+)/(\d+) \[", err)  # each stage's items, counted to the end
    assert bars.count(("mini:dev", "2", "2")) == 2 and ("mini:test", "4", "4") in bars
    assert ("", "2", "2") in bars  # DSPy's own bar over the train cases while it bootstraps

    optimize(str(suite), CountingLM(answers, adapter=ToolSelectionAdapter()), optimizer="bootstrap",
             selector=SelectorSpec(strategy="json-cot", relevance="none"),
             run=RunConfig(run_dir=tmp_path / "quiet", mlflow=False, progress=False), evaluate_test=False)
    assert "optimize 1/2" not in capsys.readouterr().err


def test_a_program_that_got_no_dev_case_right_before_or_after_is_saved_with_a_warning(tmp_path, monkeypatch,
                                                                                      capsys):
    from tests.evals.conftest import make_cases

    monkeypatch.chdir(tmp_path)
    cases = make_cases()
    for case in cases[4:6]:  # Kyiv and Baku, which ANSWERS gets wrong
        case["split"] = "dev"
    suite = tmp_path / "mini.jsonl"
    suite.write_text("\n".join(json.dumps(case) for case in cases) + "\n")
    result = optimize(str(suite), CountingLM(ANSWERS, adapter=ToolSelectionAdapter()), optimizer="bootstrap",
                      selector=SelectorSpec(strategy="json-cot", relevance="none"),
                      run=RunConfig(run_dir=tmp_path / "prog", mlflow=False, progress=False), evaluate_test=False)
    assert "warning: the optimized program and the selector it started from got none of the 2 dev cases right" in (
        capsys.readouterr().err)
    assert result.manifest.scores["dev_accuracy"] == 0.0 and (tmp_path / "prog" / "program.json").is_file()
