"""BFCL multi-turn tasks: loaded with their back ends set up from ``initial_config``, ``miss_func`` functions
offered at their turn, and BFCL's checker wired so that replaying the ground truth scores 100% and doing nothing 0%."""

import json

import dspy
import pytest

from evals.bfcl_multi_turn import (
    TURN_LIMITS,
    BfclBackends,
    _chars,
    check_multi_turn,
    ground_truth_trajectories,
    load_multi_turn,
    parse_call_string,
    run_multi_turn,
    trim_history,
)
from evals.loop_eval import LoopSetup
from tests.lm.conftest import FakeLlama
from tool_selection.agent import Message, Role
from tool_selection.decision import ToolCall
from tool_selection.lm import LocalEngine
from tool_selection.lm.engine import LoadSettings
from tool_selection.run_config import RunConfig
from tool_selection.spec import SelectorSpec
from tool_selection.trajectories import load_trajectories

NATIVE = SelectorSpec(strategy="native", relevance="none")


@pytest.fixture(scope="module")
def base():
    return {task.id: task for task in load_multi_turn(["multi_turn_base"])}


@pytest.fixture(scope="module")
def miss_func():
    return {task.id: task for task in load_multi_turn(["multi_turn_miss_func"])}


def _lm(answers, tmp_path):
    llama = FakeLlama(answers)
    engine = LocalEngine(tmp_path / "fake.gguf", llama=llama, spec="local:fake", constrained=True,
                         settings=LoadSettings(n_ctx=16384))
    return dspy.LM("local:fake", engine=engine, cache=False, num_retries=0), llama


def _ground_truth_script(task) -> list[str]:
    """The ground truth as a model's answers: one call per step, then an answer that ends the turn."""
    backends = BfclBackends(task)
    answers = []
    for turn in task.ground_truth:
        for text in turn:
            call = parse_call_string(text, backends)
            answers.append(f"<tool_call>\n{json.dumps({'name': call.tool_name, 'arguments': call.arguments})}\n"
                           "</tool_call>")
        answers += ["Done."] * (1 if turn else 2)  # a turn without calls is sent back once
    return answers


def _offered(call) -> set[str]:
    return {tool["function"]["name"] for tool in call.get("tools") or []}


def test_a_task_sets_up_fresh_back_ends_from_its_initial_config(base):
    task = base["multi_turn_base_0"]
    assert task.involved_classes == ["TwitterAPI", "GorillaFileSystem"] and len(task.turns) == 4
    assert {"cd", "mv", "grep", "post_tweet"} <= {f["name"] for f in task.functions}
    first, second = BfclBackends(task), BfclBackends(task)
    assert first.state()["TwitterAPI"]["username"] == "analyst_pro"
    assert first.call("ls", {})["current_directory_content"] == ["document", "archive"]  # the root, "workspace"
    first.call("cd", {"folder": "document"})
    first.call("mkdir", {"dir_name": "temp"})
    assert "temp" in first.call("ls", {})["current_directory_content"]
    second.call("cd", {"folder": "document"})  # the second instance starts from the configuration, not from the first
    assert "temp" not in second.call("ls", {})["current_directory_content"]


def test_a_missing_function_is_offered_from_its_turn(miss_func, tmp_path):
    task = miss_func["multi_turn_miss_func_0"]
    assert "sort" not in {f["name"] for f in task.functions}
    assert [f["name"] for f in task.added_functions[3]] == ["sort"] and task.turns[3] == []
    lm, llama = _lm(["Not yet."] * 2 * len(task.turns), tmp_path)
    table, _ = run_multi_turn([task], lm, selector=NATIVE)
    assert len(llama.calls) == 2 * len(task.turns) and table.iloc[0]["reminders"] == len(task.turns)  # sent back once
    assert ["sort" in _offered(call) for call in llama.calls[::2]] == [False, False, False, True, True]
    assert "I have updated some more functions" in llama.calls[6]["messages"][-1]["content"]


@pytest.mark.parametrize("task_id", ["multi_turn_base_0", "multi_turn_base_1", "multi_turn_base_2",
                                     "multi_turn_miss_func_0"])
def test_replaying_the_ground_truth_scores_100_and_doing_nothing_0(task_id, base, miss_func, tmp_path):
    task = {**base, **miss_func}[task_id]
    lm, _ = _lm(_ground_truth_script(task), tmp_path)
    table, summary = run_multi_turn([task], lm, selector=NATIVE, run=RunConfig(run_dir=tmp_path / "replay"))
    row = table.iloc[0]
    assert row["success"] == 1.0 and row["turn_success"] == 1.0 and row["error_type"] is None
    assert row["calls"] == sum(len(turn) for turn in task.ground_truth) and row["tool_errors"] == 0
    assert summary["task_success"] == 1.0 and (tmp_path / "replay" / "summary.json").exists()

    idle, _ = _lm(["I cannot help with that."] * len(task.turns), tmp_path)
    table, summary = run_multi_turn([task], idle, selector=NATIVE)
    row = table.iloc[0]
    assert row["success"] == 0.0 and row["turns_passed"] == 0 and summary["turn_success"] == 0.0
    assert row["error_type"] == "multi_turn:empty_turn_model_response"


def test_the_first_failing_turn_is_found(base):
    task = base["multi_turn_base_1"]  # ls(a=True); cd + mv; cd + grep; tail
    right = [[["ls(a=True)"]], [["cd(folder='workspace')"], ["mv(source='log.txt', destination='archive')"]]]
    verdict = check_multi_turn(task, right + [[["cd(folder='archive')"]], []])
    assert not verdict["valid"] and verdict["turns_passed"] == 2
    assert check_multi_turn(task, right)["error_type"] == "multi_turn:force_terminated"


def test_a_checker_crash_fails_the_task_with_its_message_and_leaves_no_instances(base, monkeypatch):
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker, multi_turn_utils

    task = base["multi_turn_base_1"]
    check_multi_turn(task, [[["ls(a=True)"]], [], [], []])
    assert not [name for name in vars(multi_turn_utils) if name.startswith("toolsel_")]

    def crash(*args, **kwargs):
        raise AssertionError("Model instances and ground truth instances do not match")

    monkeypatch.setattr(multi_turn_checker, "multi_turn_checker", crash)
    verdict = check_multi_turn(task, [[["ls(a=True)"]], [], [], []])
    assert verdict == {"valid": False, "error_type": "multi_turn:checker_error", "turns_passed": 0,
                       "error_message": "AssertionError: Model instances and ground truth instances do not match"}


def test_a_turn_that_reaches_the_step_limit_force_terminates_the_task(base, tmp_path):
    task = base["multi_turn_base_1"]
    call = '<tool_call>\n{"name": "pwd", "arguments": {}}\n</tool_call>'
    lm, _ = _lm([call] * 30, tmp_path)
    row = run_multi_turn([task], lm, selector=NATIVE)[0].iloc[0]
    assert row["ended"] == "step_limit" and row["turns_run"] == 1 and row["success"] == 0.0
    assert row["error_type"] == "multi_turn:force_terminated"


def test_older_turns_are_summarised_then_dropped_to_fit_and_it_is_counted():
    def turn(n):
        call = ToolCall(tool_name="cat", arguments={"file_name": f"f{n}.txt"})
        return [Message(role=Role.USER, content=f"request {n}"),
                Message(role=Role.ASSISTANT, tool_calls=[call], call_ids=[f"c{n}"]),
                Message(role=Role.TOOL, tool_call_id=f"c{n}", name="cat", content="x" * 2000, metadata={"ok": True}),
                Message(role=Role.ASSISTANT, content=f"answer {n}")]

    history = [Message(role=Role.SYSTEM, content="system"), *turn(1), *turn(2), *turn(3)]
    assert trim_history(history, 100_000) == (history, 0, 0)
    trimmed, summarised, dropped = trim_history(history, 2600)
    assert (summarised, dropped) == (2, 0) and trimmed[0].content == "system"
    assert "cat(file_name='f1.txt') -> ok" in trimmed[2].content and "answer 1" in trimmed[2].content
    assert trimmed[-4:] == history[-4:]  # the latest turn is kept whole
    just_the_last = _chars([history[0], *history[-4:]])
    trimmed, summarised, dropped = trim_history(history, just_the_last)
    assert (summarised, dropped) == (2, 2) and [m.content for m in trimmed if m.role is Role.USER] == ["request 3"]


def test_the_report_reads_a_run(base, tmp_path, capsys):
    from evals.benchmarks.bfcl_multi_turn_report import main

    task = base["multi_turn_base_1"]
    lm, _ = _lm(_ground_truth_script(task), tmp_path)
    run_multi_turn([task], lm, selector=NATIVE, run=RunConfig(run_dir=tmp_path / "run"))
    idle, _ = _lm(["No."] * 8, tmp_path)
    run_multi_turn([base["multi_turn_base_2"]], idle, selector=NATIVE, run=RunConfig(run_dir=tmp_path / "run"))
    assert main([f"scripted={tmp_path / 'run'}"]) == 0
    row = capsys.readouterr().out.splitlines()[-1]
    assert row.startswith("| scripted | 2 | 50.0 [0, 100] | 44.4 | 50 / 50 / 50 | 3.00 |")
    assert " | 0.00 | 0.00 | 2.50 | 0 | " in row and row.endswith("| empty_turn_model_response 1 |")  # 5 turns sent back
    seconds, per_solved = (float(cell) for cell in row.split(" | ")[-3:-1])
    assert per_solved == pytest.approx(2 * seconds, abs=0.1)  # the run's time over its one solved task
    idle, _ = _lm(["No."] * 16, tmp_path)
    run_multi_turn([task, base["multi_turn_base_2"]], idle, selector=NATIVE,
                   run=RunConfig(run_dir=tmp_path / "idle"))
    assert main(["--paired", f"scripted={tmp_path / 'run'}", f"idle={tmp_path / 'idle'}"]) == 0
    paired = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| idle | task success")]
    assert paired == ["| idle | task success | 2 | 50.0 | 0.0 | -50.0 [-100.0, +0.0] | 1.000 |"]


def test_turns_that_end_by_calling_finish_replay_the_ground_truth(base, tmp_path):
    from dataclasses import replace

    from tests.lm.conftest import staged_lm

    task = base["multi_turn_base_1"]
    stages = []
    for turn in task.ground_truth:  # every step a call: the turn's calls one by one, then finish
        for call in [parse_call_string(text, BfclBackends(task)) for text in turn]:
            stages += [json.dumps({"name": call.tool_name, "arguments": call.arguments}), "\n</tool_call>"]
        stages += [json.dumps({"name": "finish", "arguments": {"answer": "Done."}}), "\n</tool_call>"]
    lm, _ = staged_lm(tmp_path, stages)
    table, _ = run_multi_turn([task], lm, selector=SelectorSpec(strategy="native-strict", relevance="none"),
                              setup=LoopSetup(replace(TURN_LIMITS, finish="tool")))
    row = table.iloc[0]
    assert row["success"] == 1.0 and row["finish"] == "tool" and set(row["turn_stop_reasons"]) == {"answered"}
    assert not any("finish" in call for turn in row["model_result"] for step in turn for call in step)


@pytest.mark.parametrize(("argv", "message"), [
    (["eval", "loop", "--suite", "bfcl:multi_turn_nope"], "Unknown BFCL multi-turn category 'multi_turn_nope'"),
    (["eval", "loop", "--suite", "multistep", "--sample", "3"], "--sample and --n-ctx apply to BFCL"),
    (["eval", "loop", "--suite", "multistep", "--n-ctx", "8192"], "--sample and --n-ctx apply to BFCL"),
    (["eval", "loop", "--suite", "bfcl:multi_turn_base", "--n-ctx", "2048"], "n_ctx 2048 is too small"),
])
def test_bad_loop_arguments_are_one_clear_error(argv, message, capsys):
    from tool_selection.cli import main

    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_the_replay_benchmark_names_the_entries_whose_ground_truth_does_not_pass(base):
    from evals.benchmarks.bfcl_multi_turn_replay import replay

    assert replay(base["multi_turn_base_0"]) == ({"valid": True, "error_type": None, "error_message": None,
                                                   "turns_passed": 4}, [])
    verdict, refusals = replay(base["multi_turn_base_173"])  # BFCL's ground truth passes a string id to an integer
    assert not verdict["valid"] and refusals == [
        "turn 3: close_ticket(ticket_id='ticket_001'): ticket_id: 'ticket_001' is not of type 'integer'"]


def test_a_resumed_run_keeps_finished_tasks_failed_ones_included(base, tmp_path):
    tasks = [base["multi_turn_base_1"], base["multi_turn_base_2"]]
    idle, first = _lm(["No."] * 8, tmp_path)
    run_multi_turn(tasks[:1], idle, selector=NATIVE, run=RunConfig(run_dir=tmp_path / "run"))
    lm, second = _lm(_ground_truth_script(tasks[1]), tmp_path)
    table, _ = run_multi_turn(tasks, lm, selector=NATIVE, run=RunConfig(run_dir=tmp_path / "run"))
    assert list(table["success"]) == [0.0, 1.0] and len(first.calls) == 8  # 4 turns, each sent back once
    assert len(second.calls) == len(_ground_truth_script(tasks[1]))  # the failed first task was not run again


def test_the_run_config_picks_the_tasks(base, tmp_path):
    tasks = [base["multi_turn_base_1"], base["multi_turn_base_2"]]
    idle, _ = _lm(["No."] * 8, tmp_path)
    table, _ = run_multi_turn(tasks, idle, selector=NATIVE, run=RunConfig(limit=1))
    assert list(table["id"]) == ["multi_turn_base_1"]


def test_a_required_first_step_opens_each_turn_with_a_call(base, tmp_path):
    from dataclasses import replace

    from tests.lm.conftest import staged_lm

    task = base["multi_turn_base_1"]
    stages = []
    for turn in task.ground_truth:  # the ground truth's first call of each turn, the rest as the model's own
        calls = [parse_call_string(text, BfclBackends(task)) for text in turn]
        stages += [json.dumps({"name": calls[0].tool_name, "arguments": calls[0].arguments}), "\n</tool_call>"]
        for call in calls[1:]:
            stages += ["<tool_call>", "\n" + json.dumps({"name": call.tool_name, "arguments": call.arguments}),
                       "\n</tool_call>"]
        stages.append("Done.")
    lm, llama = staged_lm(tmp_path, stages)
    table, _ = run_multi_turn([task], lm, selector=SelectorSpec(strategy="native-strict", relevance="none"),
                              setup=LoopSetup(replace(TURN_LIMITS, first_step="required")))
    row = table.iloc[0]
    assert row["success"] == 1.0 and row["first_step"] == "required" and row["reminders"] == 0
    opened = [call for call in llama.calls if call["prompt"].endswith("<tool_call>\n") and call["grammar"]]
    assert len(opened) >= len(task.ground_truth)


def test_train_tasks_first_turns_become_trajectories_that_replay_their_ground_truth(base):
    task = base["multi_turn_base_0"]  # cd, mkdir, mv
    assert task.split == "train"
    [solved] = ground_truth_trajectories([task])
    assert solved.source == task.id and solved.request == task.turns[0][-1]["content"]
    assert [str(step.call) for step in solved.steps] == task.ground_truth[0]
    assert "moved to 'temp/final_report.pdf'" in solved.steps[-1].result
    assert solved.answer.startswith("Done: cd, mkdir and mv all ran without an error. The last result: {")
    broken = task.model_copy(update={"ground_truth": [["cd(folder='no_such_folder')"], *task.ground_truth[1:]]})
    assert ground_truth_trajectories([broken]) == []  # a ground truth that fails here is not shown


def test_solved_tasks_open_the_first_turn_and_never_the_tasks_own(base, tmp_path):
    task = base["multi_turn_base_1"]
    pool = tuple(ground_truth_trajectories([base["multi_turn_base_0"], base["multi_turn_base_1"],
                                            base["multi_turn_base_9"]]))
    lm, llama = _lm(_ground_truth_script(task), tmp_path)
    table, _ = run_multi_turn([task], lm, selector=NATIVE, setup=LoopSetup(TURN_LIMITS, pool, shown=2))
    row = table.iloc[0]
    assert row["success"] == 1.0 and task.id not in row["demonstrations"] and len(row["demonstrations"]) == 2
    first = llama.calls[0]["messages"]
    requests = {p.source: p.request for p in pool}
    shown = [m["content"] for m in first if m["role"] == "user"]
    assert shown == [*(requests[source] for source in row["demonstrations"]), task.turns[0][-1]["content"]]
    later = llama.calls[-1]["messages"]  # the demonstrations stay where they are, once
    assert sum(m["content"] == shown[0] for m in later if m["role"] == "user") == 1


def test_the_command_line_saves_bfcl_trajectories(tmp_path, capsys):
    from tool_selection.cli import main

    assert main(["optimize", "--suite", "bfcl:multi_turn_base", "--train-limit", "3", "--out", str(tmp_path)]) == 0
    assert "3 of 3 train tasks' ground-truth first turns run" in capsys.readouterr().out
    assert [t.source for t in load_trajectories(tmp_path)] == ["multi_turn_base_0", "multi_turn_base_2",
                                                               "multi_turn_base_4"]
