"""Running loop tasks: a scripted model that follows a task's oracle succeeds, one that stops early fails, and a
run resumes without redoing finished tasks."""

import json

import dspy
import pytest

from evals.loop_eval import LoopSetup, load_loop_suite, run_loop_suite
from tests.lm.conftest import FakeLlama
from tool_selection.agent import EscalationPolicy
from tool_selection.lm import LocalEngine
from tool_selection.run_config import RunConfig
from tool_selection.spec import SelectorSpec

NATIVE = SelectorSpec(strategy="native", relevance="none")


def _lm(answers, tmp_path):
    """A local model answering whole chat completions, so these runs name ``native`` (``auto`` would decode its
    calls in stages: tests/agent/test_loop.py)."""
    llama = FakeLlama(answers)
    engine = LocalEngine(tmp_path / "fake.gguf", llama=llama, spec="local:fake", constrained=True)
    return dspy.LM("local:fake", engine=engine, cache=False, num_retries=0), llama


def _script(task) -> list[str]:
    calls = [f'<tool_call>\n{json.dumps({"name": c.tool_name, "arguments": c.arguments})}\n</tool_call>'
             for c in task.oracle]
    answer = " ".join(task.success.answer["any_of"]) if task.success.answer else "Done."
    return [*calls, f"Done: {answer}"]


def test_following_the_oracle_succeeds_and_stopping_early_does_not(tmp_path):
    task = next(t for t in load_loop_suite("multistep") if "treasure_hunt" in t.tool_sets and len(t.oracle) >= 2
                and not any("recovery" == tag for tag in t.tags))
    lm, _ = _lm(_script(task), tmp_path)
    result = run_loop_suite([task], lm, selector=NATIVE, run=RunConfig(run_dir=tmp_path / "good"))
    row = result.results.iloc[0]
    assert row["success"] == 1.0 and row["calls"] == len(task.oracle) and row["stop_reason"] == "answered"
    assert result.summary["task_success"] == 1.0

    lazy, _ = _lm(["I would need to look around first."], tmp_path)
    failed = run_loop_suite([task], lazy, selector=NATIVE, run=RunConfig(run_dir=tmp_path / "lazy")).results.iloc[0]
    assert failed["success"] == 0.0 and failed["calls"] == 0


def test_a_run_resumes_without_redoing_finished_tasks(tmp_path):
    tasks = [t for t in load_loop_suite("multistep") if t.tool_sets == ["calculator"]][:2]
    first_lm, first = _lm(_script(tasks[0]), tmp_path)
    run_loop_suite(tasks[:1], first_lm, selector=NATIVE, run=RunConfig(run_dir=tmp_path / "run"))
    second_lm, second = _lm(_script(tasks[1]), tmp_path)
    result = run_loop_suite(tasks, second_lm, selector=NATIVE, run=RunConfig(run_dir=tmp_path / "run"))
    assert len(result.results) == 2 and len(second.calls) == len(tasks[1].oracle) + 1
    assert (tmp_path / "run" / "results.parquet").exists()


def test_a_nan_threshold_is_refused_before_any_task_runs(tmp_path):

    from tool_selection.errors import ToolSelectionError

    with pytest.raises(ToolSelectionError, match=r"threshold \(--threshold\) is NaN"):
        run_loop_suite(load_loop_suite("multistep")[:1], dspy.LM("openai/unused"),
                       escalation=EscalationPolicy(threshold=float("nan")), run=RunConfig(run_dir=tmp_path / "run"))
    assert not (tmp_path / "run").exists()


def test_a_task_run_with_finish_ends_by_the_models_call(tmp_path):
    from tests.lm.conftest import staged_lm
    from tool_selection.agent import LoopLimits

    task = next(t for t in load_loop_suite("multistep") if "treasure_hunt" in t.tool_sets and len(t.oracle) >= 2
                and not any("recovery" == tag for tag in t.tags))
    answer = " ".join(task.success.answer["any_of"]) if task.success.answer else "Done."
    stages = []
    for call in [*task.oracle, type(task.oracle[0])(tool_name="finish", arguments={"answer": answer})]:
        stages += [json.dumps({"name": call.tool_name, "arguments": call.arguments}), "\n</tool_call>"]
    lm, llama = staged_lm(tmp_path, stages)
    result = run_loop_suite([task], lm, selector=SelectorSpec(strategy="native-strict", relevance="none"),
                            setup=LoopSetup(LoopLimits(finish="tool", max_tool_calls=1)))
    row = result.results.iloc[0]
    assert row["success"] == 1.0 and row["calls"] == len(task.oracle) and row["finish"] == "tool"
    assert row["final_answer"] == answer and row["steps"] == len(task.oracle) + 1  # the task's own call limit stood


def test_the_loop_benchmark_script_runs_commands_the_command_line_accepts(tmp_path):
    import shlex
    import subprocess
    from pathlib import Path

    from evals.experiment import loop_section
    from tool_selection.cli import build_parser

    script = Path(__file__).parents[2] / "evals" / "benchmarks" / "measure_loop.sh"
    env = {"PATH": "/usr/bin:/bin", "DRY_RUN": "1", "LIMIT": "20", "OUT": str(tmp_path)}
    printed = subprocess.run(["bash", str(script), "qwen2.5-coder-1.5b", "default", "both"], env=env,
                             capture_output=True, text=True, check=True).stdout
    commands = [build_parser().parse_args(shlex.split(line.split(" ", 1)[1])[1:]) for line in printed.splitlines()
                if "/toolsel " in line]
    optimize, default, both = commands
    default_loop, both_loop = loop_section(default), loop_section(both)
    assert optimize.suite == "multistep" and optimize.out == str(tmp_path / "trajectories")
    assert (default_loop.finish, default_loop.trajectories, default.limit) == ("answer", None, 20)
    assert (both_loop.finish, both_loop.trajectories, both.model) == ("tool", optimize.out, "local:qwen2.5-coder-1.5b")
    failed = subprocess.run(["bash", str(script), "m", "sideways"], env=env, capture_output=True, text=True)
    assert failed.returncode == 2 and "unknown variant sideways" in failed.stdout
