"""``toolsel optimize --target descriptions`` with scripted LMs: GEPA evolves the tools' descriptions with the
teacher's proposals, the compiled selector shows them, the tool set keeps its own, and the harness's guards hold."""

import json

import dspy
import pytest

from evals import description_optimization
from evals.evaluation import evaluate
from evals.optimization import FalseAbstentionRiseError, OptimizeSettings, optimize
from evals.suite import load_suite, registry_for
from tests.evals.conftest import CLOCK, WEATHER
from tests.evals.test_runner import CountingLM, calls
from tool_selection.descriptions import descriptions_of, descriptions_sha256
from tool_selection.errors import ToolSelectionError
from tool_selection.run_config import RunConfig
from tool_selection.selector import MultiToolSelector, ToolSelectionAdapter
from tool_selection.spec import SelectorSpec

PROPOSED = "Weather now in one city: call it for any question about weather, rain or temperature."


class DescriptionsLM(CountingLM):
    """The selector's answer depends on whether the prompt shows the proposed description: ``before`` or
    ``after`` (each a function of the request); every other call is the teacher's, which proposes it."""

    def __init__(self, before, after):
        super().__init__({}, adapter=ToolSelectionAdapter())
        self.before, self.after = before, after
        self.selector_prompts, self.proposals, self.prompts = [], 0, []

    def forward(self, prompt=None, messages=None, **kwargs):
        last = messages[-1]["content"]
        self.prompts.append(json.dumps(messages))
        if "[[ ## request ## ]]" in last:
            shown = json.dumps(messages)
            self.selector_prompts.append(shown)
            request = last.split("[[ ## request ## ]]", 1)[1].strip().splitlines()[0]
            answer = (self.after if PROPOSED in shown else self.before)(request)
        else:
            self.proposals += 1
            answer = {"new_description": PROPOSED}
        self.answers = {"": answer}
        return super().forward(prompt=prompt, messages=messages, **kwargs)


def wrong_tool(request):
    return {"reasoning": "clock", "tool_calls": calls(("get_time", {"city": request.rstrip("?").split()[-1]}))}


def right(request):
    if "weather" not in request:
        return {"reasoning": "no tool fits", "tool_calls": "[]"}
    return {"reasoning": "weather", "tool_calls": calls(("get_weather", {"city": request.rstrip("?").split()[-1]}))}


def abstain(request):
    return {"reasoning": "unsure", "tool_calls": "[]"}


@pytest.fixture
def weather_suite(tmp_path):
    """Weather requests and jokes (no tool fits) in train, dev and test, over one catalog."""
    rows = [(f"What is the weather in {city}?", split, city)
            for city, split in [("Oslo", "train"), ("Rome", "train"), ("Lima", "train"), ("Kyiv", "train"),
                                ("Baku", "dev"), ("Riga", "dev"), ("Quito", "test"), ("Accra", "test")]]
    rows += [(f"Tell me a joke about {thing}", split, None)
             for thing, split in [("cats", "train"), ("dogs", "train"), ("owls", "dev"), ("bees", "dev"),
                                  ("ants", "test")]]
    cases = [{"id": f"c-{i}", "request": request, "tools": [WEATHER, CLOCK], "split": split,
              "expected_calls": [{"tool_name": "get_weather", "arguments": {"city": city}}] if city else []}
             for i, (request, split, city) in enumerate(rows)]
    path = tmp_path / "weather.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    return path


@pytest.fixture(autouse=True)
def small_budget(monkeypatch):
    monkeypatch.setattr(description_optimization, "metric_call_budget", lambda budget, **_: 40)


def run(suite, lm, out, **fields):
    return optimize(str(suite), lm, OptimizeSettings(target="descriptions", **fields),
                    selector=SelectorSpec(strategy="json-cot", relevance="none"), run=RunConfig(run_dir=out, mlflow=False))


def test_the_teachers_description_is_what_the_compiled_selector_shows(weather_suite, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lm = DescriptionsLM(before=wrong_tool, after=right)
    originals = descriptions_of(registry_for(load_suite(weather_suite).cases[0]))
    result = run(weather_suite, lm, tmp_path / "desc")

    assert lm.proposals >= 1 and result.manifest.optimizer == "gepa"
    manifest = json.loads((tmp_path / "desc" / "manifest.json").read_text())
    assert PROPOSED in manifest["descriptions"].values()
    assert manifest["original_descriptions_sha256"] == descriptions_sha256(originals)
    assert manifest["optimizer_args"]["target"] == "descriptions" and manifest["optimizer_args"]["max_metric_calls"] == 40
    assert result.dev_score == 1.0 and manifest["scores"]["dev_unoptimized_balanced_accuracy"] == 0.0
    assert result.candidate_scores[0] == 0.0 and max(result.candidate_scores) == 1.0  # the seed, then the rewrite
    assert descriptions_of(registry_for(load_suite(weather_suite).cases[0])) == originals  # the tools keep theirs

    loaded = MultiToolSelector.load(tmp_path / "desc")
    shown = DescriptionsLM(before=wrong_tool, after=right)
    with dspy.context(lm=shown):
        decision = loaded.decide("What is the weather in Quito?", tools=registry_for(load_suite(weather_suite).cases[0]))
    assert PROPOSED in shown.selector_prompts[-1] and decision.tool_names == ["get_weather"]
    assert loaded.select.predict.signature.instructions == MultiToolSelector(strategy="json-cot").select.predict.signature.instructions

    shown = DescriptionsLM(before=wrong_tool, after=right)  # toolsel eval --program DIR
    again = evaluate(str(weather_suite), shown, selector=SelectorSpec(program=str(tmp_path / "desc"), relevance="none"),
                     run=RunConfig(mlflow=False, progress=False, run_dir=tmp_path / "eval"))
    assert again.accuracy == 1.0 and shown.selector_prompts and all(PROPOSED in p for p in shown.selector_prompts)


def test_the_test_split_is_never_read_while_optimizing(weather_suite, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lm = DescriptionsLM(before=wrong_tool, after=right)
    run(weather_suite, lm, tmp_path / "p", evaluate_test=False)
    test_requests = [c.prompt for c in load_suite(weather_suite).split("test")]
    assert lm.selector_prompts and lm.proposals  # the teacher's prompts hold cases too
    assert not any(r in p for p in lm.prompts for r in test_requests)


def test_descriptions_that_gain_by_refusing_are_not_saved_unless_allowed(weather_suite, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lm = DescriptionsLM(before=wrong_tool, after=abstain)  # refusing everything: 50% balanced, up from 0
    with pytest.raises(FalseAbstentionRiseError, match=r"100.0% of the dev cases .* against 0.0%"):
        run(weather_suite, lm, tmp_path / "refused", evaluate_test=False)
    assert not (tmp_path / "refused" / "program.json").exists()
    result = run(weather_suite, lm, tmp_path / "allowed", evaluate_test=False, allow_false_abstention_rise=True)
    assert result.manifest.scores["dev_false_abstention_rate"] == 1.0 and result.manifest.descriptions


def test_descriptions_are_evolved_by_gepa_only():
    assert OptimizeSettings(target="descriptions").optimizer == "gepa"
    assert OptimizeSettings.build(OptimizeSettings(), target="descriptions").optimizer == "gepa"
    with pytest.raises(ToolSelectionError, match="--target descriptions evolves the tool descriptions with GEPA, "
                                                 "not 'mipro': use --optimizer gepa"):
        OptimizeSettings.build(target="descriptions", optimizer="mipro")


def test_a_cap_in_metric_calls_replaces_the_budgets_number(weather_suite, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lm = DescriptionsLM(before=wrong_tool, after=right)
    result = run(weather_suite, lm, tmp_path / "capped", evaluate_test=False, max_metric_calls=12)
    manifest = json.loads((tmp_path / "capped" / "manifest.json").read_text())
    assert manifest["optimizer_args"]["max_metric_calls"] == 12
    assert manifest["cost"]["compile_seconds"] > 0 and manifest["cost"]["model_calls"] >= 12
    assert manifest["cost"]["candidates"] == len(result.candidate_scores) >= 1
    assert result.program.detailed_results.total_metric_calls <= 12 + 3  # GEPA stops after the step that crosses it


def test_a_cap_in_metric_calls_is_for_gepa_only():
    assert OptimizeSettings.build(optimizer="gepa", max_metric_calls=50).max_metric_calls == 50
    with pytest.raises(ToolSelectionError, match="--max-metric-calls caps GEPA's search; 'bootstrap' is sized by "
                                                 "--budget"):
        OptimizeSettings.build(optimizer="bootstrap", max_metric_calls=50)
    with pytest.raises(ToolSelectionError, match="max_metric_calls"):
        OptimizeSettings.build(target="descriptions", max_metric_calls=0)


def test_a_suite_over_several_catalogs_is_refused():
    from evals.optimization import make_examples
    from evals.suite import Case

    cases = [Case(id="a", request="weather?", tools=[WEATHER, CLOCK], expected_calls=[]),
             Case(id="b", request="time?", tools=[CLOCK], expected_calls=[])]
    with pytest.raises(ToolSelectionError, match="train and dev cases use 2 catalogs"):
        description_optimization.one_catalog(make_examples(cases))


def test_the_failing_tools_are_the_ones_rewritten():
    rollout = description_optimization.Rollout
    wrong = rollout("r", ("get_weather",), ("get_time",), "get_time({})", 0.0, "Wrong tool.")
    missed = rollout("r", ("get_weather",), (), "(no call)", 0.0, "It abstained.")
    fine = rollout("r", ("get_weather",), ("get_weather",), "get_weather({})", 1.0, "Correct.")
    candidate = {"get_weather": "w", "get_time": "t"}
    select = description_optimization.FailingTools()
    assert select(None, [wrong, missed, fine], [0, 0, 1], 0, candidate) == ["get_weather", "get_time"]
    assert select(None, [fine], [1], 0, candidate) == []  # all right: GEPA skips the step


def test_the_command_line_names_the_target(capsys):
    from tool_selection.cli import build_parser, main

    args = build_parser().parse_args(["optimize", "--target", "descriptions"])
    assert args.target == "descriptions" and args.optimizer is None
    from evals.cli_experiment import optimization_section

    assert optimization_section(build_parser().parse_args(["optimize"])).target == "program"
    assert main(["optimize", "--target", "descriptions", "--optimizer", "bootstrap"]) == 2  # before any model loads
    assert "--target descriptions evolves the tool descriptions with GEPA, not 'bootstrap'" in capsys.readouterr().err


def test_the_benchmark_script_runs_commands_the_command_line_accepts(tmp_path):
    import shlex
    import subprocess
    from pathlib import Path

    from tool_selection.cli import build_parser

    script = Path(__file__).parents[2] / "evals" / "benchmarks" / "measure_descriptions.sh"
    env = {"PATH": "/usr/bin:/bin", "DRY_RUN": "1", "LIMIT": "2", "OUT": str(tmp_path / "runs"),
           "KEEP": str(tmp_path / "kept")}
    printed = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, check=True).stdout
    commands = [shlex.split(line.split(" ", 1)[1]) for line in printed.splitlines() if "/toolsel " in line]
    assert len(commands) == 5 * 4  # per suite: optimize, two test runs, the comparison
    for command in commands:
        args = build_parser().parse_args(command[1:])
        assert args.handler is not None
    optimize = build_parser().parse_args(commands[0][1:])
    assert (optimize.suite, optimize.target, optimize.model, optimize.teacher, optimize.test) == (
        "treasure_hunt", "descriptions", "local:qwen2.5-coder-0.5b", "local:qwen2.5-coder-1.5b", False)
    optimized, original = (build_parser().parse_args(c[1:]) for c in commands[1:3])
    assert optimized.program == optimize.out and original.program is None and original.strategy == optimize.strategy
    assert optimized.limit == original.limit == 2 and optimized.relevance == original.relevance == "none"
    assert commands[3][1:4] == ["eval", "compare", original.run_dir] and commands[3][4] == optimized.run_dir
    assert "-m evals.benchmarks.keep_results" in printed and str(tmp_path / "kept") in printed

    env = {**env, "LIMIT": "", "DEV_LIMIT": "30", "MAX_METRIC_CALLS": "150"}
    printed = subprocess.run(["bash", str(script), "events"], env=env, capture_output=True, text=True,
                             check=True).stdout
    optimize = build_parser().parse_args(shlex.split(printed.splitlines()[0].split(" ", 1)[1])[1:])
    assert (optimize.dev_limit, optimize.max_metric_calls, optimize.train_limit) == (30, 150, None)


def test_the_dev_baseline_is_the_selection_alone_as_the_program_is(weather_suite, tmp_path, monkeypatch):
    import evals.evaluation

    scored = []
    real = evals.evaluation.evaluate

    def recording(*args, selector=None, **kwargs):
        scored.append(selector)
        return real(*args, selector=selector, **kwargs)

    monkeypatch.setattr(evals.evaluation, "evaluate", recording)
    monkeypatch.chdir(tmp_path)
    run(weather_suite, DescriptionsLM(before=wrong_tool, after=right), tmp_path / "p", evaluate_test=False)
    program, baseline = scored
    assert program.relevance is None and baseline.relevance == "none"  # no shipped relevance model on one side only
