"""Solved tasks shown to the loop's model before its own: built from verified oracles, chosen by the task's tools,
rendered as the model's own turns, saved and loaded, and never scored as the task's calls."""

import json

import pytest

from evals.loop_eval import LoopSetup, load_loop_suite, oracle_trajectories, run_loop_suite
from tests.agent.test_loop import TREASURE, call, lm_for
from tool_selection import ToolSelectionError
from tool_selection.agent import FINISH_TOOL, LOOP_PROMPT, AgentLoop, LoopLimits, Role
from tool_selection.decision import ToolCall
from tool_selection.spec import SelectorSpec
from tool_selection.trajectories import (
    Trajectory,
    TrajectoryStep,
    choose_trajectories,
    load_trajectories,
    save_trajectories,
)


def trajectory(source, *tools, answer="Done."):
    return Trajectory(source=source, request=f"request {source}", answer=answer,
                      steps=[TrajectoryStep(call=ToolCall(tool_name=t, arguments={}), result='{"ok": true}')
                             for t in tools])


def test_a_trajectory_reads_as_the_models_own_turns():
    solved = trajectory("t1", "move", "check_inventory", answer="You carry a rope.")
    turns = solved.messages()
    assert [m.role for m in turns] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert turns[1].tool_calls[0].tool_name == "move" and turns[2].tool_call_id == turns[1].call_ids[0]
    assert turns[-1].content == "You carry a rope." and all(m.metadata["demonstration"] == "t1" for m in turns)
    finished = solved.messages("tool")  # under finish="tool" the answer is the finish call
    assert finished[-2].tool_calls[0] == ToolCall(tool_name=FINISH_TOOL, arguments={"answer": "You carry a rope."})
    assert finished[-1].role is Role.TOOL and all(m.openai() for m in finished)


def test_the_chosen_trajectories_use_only_the_tasks_tools():
    pool = [trajectory("a", "move"), trajectory("b", "move", "take_item"), trajectory("c", "calculate"),
            trajectory("d", "move", "take_item", "move")]
    names = ["move", "take_item", "examine_location"]
    assert [t.source for t in choose_trajectories(pool, names, 2)] == ["d", "b"]  # most tools, then longest
    assert [t.source for t in choose_trajectories(pool, names, 5, exclude=["d"])] == ["b", "a"]
    assert choose_trajectories(pool, ["calculate"], 2)[0].source == "c" and not choose_trajectories(pool, [], 2)


def test_trajectories_are_saved_and_loaded(tmp_path):
    pool = [trajectory("a", "move"), trajectory("b", "take_item")]
    path = save_trajectories(pool, tmp_path / "p" / "trajectories.json", suite="multistep")
    assert load_trajectories(tmp_path / "p") == pool == load_trajectories(path)
    assert json.loads(path.read_text())["suite"] == "multistep"
    with pytest.raises(ToolSelectionError, match="No trajectories at .*toolsel optimize --suite LOOP_SUITE"):
        load_trajectories(tmp_path / "missing")
    path.write_text('{"trajectories": [{"source": "x"}]}')
    with pytest.raises(ToolSelectionError, match="is not a trajectories file"):
        load_trajectories(path)


def test_the_loop_shows_them_after_its_instructions_and_scores_only_its_own_calls(tmp_path):
    from dataclasses import replace

    lm, llama = lm_for([call("move", direction="north"), "Moved."], tmp_path)
    prompt = replace(LOOP_PROMPT, demonstrations=(trajectory("t1", "check_inventory", answer="A rope."),))
    transcript = AgentLoop(TREASURE, strategy="native", lm=lm, system_prompt=prompt).run("Go north.")
    seen = llama.calls[0]["messages"]
    assert seen[0]["role"] == "system" and seen[1] == {"role": "user", "content": "request t1"}
    assert seen[2]["tool_calls"][0]["function"]["name"] == "check_inventory" and seen[4]["content"] == "A rope."
    assert seen[5] == {"role": "user", "content": "Go north."}
    assert [c.tool_name for c in transcript.calls] == ["move"] and transcript.final_answer == "Moved."


def test_oracles_become_trajectories_only_when_they_pass_their_task():
    train = [t for t in load_loop_suite("multistep") if t.split == "train"]
    solved = oracle_trajectories(train)
    assert [t.source for t in solved] == [t.id for t in train]  # every train oracle passes
    first = solved[0]
    assert [s.call for s in first.steps] == train[0].oracle and json.loads(first.steps[0].result)["ok"] is True
    broken = train[0].model_copy(update={"oracle": train[0].oracle[:1]})  # stops before the task is done
    assert oracle_trajectories([broken]) == []


def test_a_task_is_never_shown_its_own_solution(tmp_path):
    task = next(t for t in load_loop_suite("multistep") if t.split == "train" and "treasure_hunt" in t.tool_sets)
    pool = tuple(oracle_trajectories([t for t in load_loop_suite("multistep") if t.split == "train"]))
    lm, _ = lm_for(["I cannot."], tmp_path)
    row = run_loop_suite([task], lm, selector=SelectorSpec(strategy="native", relevance="none"),
                         setup=LoopSetup(LoopLimits(), pool, shown=2)).results.iloc[0]
    assert task.id not in row["demonstrations"] and len(row["demonstrations"]) == 2


def test_the_command_line_saves_a_loop_suites_trajectories(tmp_path, capsys):
    from tool_selection.cli import main

    assert main(["optimize", "--suite", "multistep", "--out", str(tmp_path / "t")]) == 0
    assert "12 of 12 train tasks' oracles pass" in capsys.readouterr().out
    assert len(load_trajectories(tmp_path / "t")) == 12
    assert main(["optimize", "--suite", "multistep", "--teacher", "local:qwen2.5-coder-1.5b"]) == 2
    assert "leave --teacher, --optimizer and --target out" in capsys.readouterr().err


def test_trajectories_told_as_examples_join_the_system_prompt(tmp_path):
    from dataclasses import replace

    solved = trajectory("t1", "check_inventory", answer="A rope.")
    solved.steps[0].result = '{"ok": true, "items": "' + "x" * 400 + '"}'
    told = solved.text()
    assert told.startswith("Request: request t1\nCall check_inventory() -> {") and told.endswith("Answer: A rope.")
    assert len(told.splitlines()[1]) < 330 and told.splitlines()[1].endswith("...")  # a long result is cut
    assert solved.text("tool").endswith("Call finish(answer='A rope.')")

    lm, llama = lm_for(["Moved."], tmp_path)
    prompt = replace(LOOP_PROMPT, demonstrations=(solved,), show_as="text")
    AgentLoop(TREASURE, strategy="native", lm=lm, system_prompt=prompt).run("Go north.")
    seen = llama.calls[0]["messages"]
    assert [m["role"] for m in seen] == ["system", "user"]  # no turns of its own
    assert "Examples of finished tasks:\n\nRequest: request t1" in seen[0]["content"]
