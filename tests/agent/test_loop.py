"""The tool-calling loop over a scripted model: execution, results fed back as tool turns, errors as
observations, the call limit, shared tool state, stuck detection and escalation, per-agent tools."""

import json

import dspy
import pytest

from tests.lm.conftest import FakeLlama
from tool_selection import load_tool_set
from tool_selection.agent import (
    EMPTY_RESULT,
    LOOP_SYSTEM_PROMPT,
    NO_CALL_REMINDER,
    AgentConfig,
    AgentLoop,
    CallRecord,
    EscalationPolicy,
    LoopLimits,
    Role,
    result_text,
)
from tool_selection.lm import LocalEngine
from tool_selection.strategies.native import NativeSelect
from tool_selection.stuck.loop import LoopStuckDetector

TREASURE = load_tool_set("treasure_hunt")


def call(name, **arguments):
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": arguments})}\n</tool_call>'


def lm_for(answers, tmp_path, name="fake"):
    """A local model answering whole chat completions, so these loops run ``native`` (the default, ``auto``,
    decodes a local model's calls in stages: the last test)."""
    llama = FakeLlama(answers)
    engine = LocalEngine(tmp_path / f"{name}.gguf", llama=llama, spec=f"local:{name}", constrained=True)
    return dspy.LM(f"local:{name}", engine=engine, cache=False, num_retries=0), llama


def test_a_turn_executes_calls_feeds_results_back_and_ends_with_an_answer(tmp_path):
    lm, llama = lm_for([call("move", direction="north"), call("check_inventory"), "You are on the jungle path."],
                       tmp_path)
    transcript = AgentLoop(TREASURE, strategy="native", lm=lm).run("Walk north, then tell me what I carry.")
    assert transcript.stop_reason == "answered" and transcript.final_answer == "You are on the jungle path."
    assert [c.tool_name for c in transcript.calls] == ["move", "check_inventory"] and all(c.ok for c in transcript.calls)
    assert [m.role for m in transcript.messages] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT,
                                                    Role.TOOL, Role.ASSISTANT]
    second = llama.calls[1]["messages"]  # the model saw its call and the tool's result as turns
    assert second[-2]["tool_calls"][0]["function"]["name"] == "move" and second[-1]["role"] == "tool"
    assert '"ok": true' in second[-1]["content"] and "jungle" in second[-1]["content"].lower()


def test_tool_state_persists_across_calls_of_one_session(tmp_path):
    lm, _ = lm_for([call("move", direction="north"), call("examine_location"), "done"], tmp_path)
    transcript = AgentLoop(TREASURE, strategy="native", lm=lm).run("Go north and look around.")
    assert transcript.calls[1].result["location_id"] == "jungle_path"  # the move is remembered


def test_errors_are_observations_the_model_can_correct(tmp_path):
    lm, llama = lm_for([call("teleport", to="x"), call("move", direction="sideways"), call("move", direction="north"),
                        "ok"], tmp_path)
    transcript = AgentLoop(TREASURE, strategy="native", lm=lm).run("Go north.")
    kinds = [c.error for c in transcript.calls]
    assert kinds == ["unknown_tool", "invalid_arguments", None]
    assert transcript.tool_errors == 2 and transcript.errors_recovered == 1
    fed_back = llama.calls[2]["messages"][-1]["content"]
    assert "invalid_arguments" in fed_back and "direction" in fed_back


def test_the_call_limit_counts_failed_calls(tmp_path):
    lm, _ = lm_for([call("move", direction="sideways")] * 5, tmp_path)
    transcript = AgentLoop(TREASURE, strategy="native", lm=lm, limits=LoopLimits(max_tool_calls=3)).run("Go.")
    assert transcript.stop_reason == "call_limit" and len(transcript.calls) == 3


def test_a_stuck_primary_delegates_the_step_to_the_secondary(tmp_path):
    primary, _ = lm_for([call("move", direction="sideways"), call("move", direction="sideways"), "gave up"],
                        tmp_path, "small")
    secondary, big = lm_for([call("move", direction="north"), "You are on the jungle path."], tmp_path, "large")
    escalation = EscalationPolicy(secondary_lm=secondary, detector=LoopStuckDetector(), threshold=0.9)
    loop = AgentLoop(TREASURE, strategy="native", lm=primary, escalation=escalation)
    transcript = loop.run("Go north.")
    assert [s.decided_by for s in transcript.steps] == ["primary", "secondary", "primary"]
    assert transcript.steps[1].stuck_reasons[0].startswith("repeats a failed call")
    assert transcript.calls[1].ok and transcript.escalations == 1 and len(big.calls) == 1


def test_a_call_that_returned_the_same_result_twice_is_stuck_when_made_again(tmp_path):
    primary, _ = lm_for([call("check_inventory")] * 3 + ["done"], tmp_path, "small")
    secondary, big = lm_for([call("move", direction="north")], tmp_path, "large")
    loop = AgentLoop(TREASURE, strategy="native", lm=primary,
                     escalation=EscalationPolicy(secondary_lm=secondary, detector=LoopStuckDetector(), threshold=0.7))
    transcript = loop.run("What do I carry?")
    assert [s.decided_by for s in transcript.steps] == ["primary", "primary", "secondary", "primary"]
    assert transcript.steps[2].stuck_reasons == [
        "repeats a call that returned the same result twice: check_inventory()"]
    assert len(big.calls) == 1


def test_a_repeated_call_whose_result_changes_is_not_stuck():
    from tool_selection.agent import Step
    from tool_selection.decision import MultiToolDecision, ToolCall

    def step(index, location):
        return Step(index=index, decision=MultiToolDecision(tool_calls=[ToolCall(tool_name="move",
                                                                                 arguments={"direction": "north"})]),
                    calls=[CallRecord(id=str(index), tool_name="move", arguments={"direction": "north"}, ok=True,
                                      result={"location_id": location})])

    again = MultiToolDecision(tool_calls=[ToolCall(tool_name="move", arguments={"direction": "north"})])
    detector, registry = LoopStuckDetector(), TREASURE.registry()
    assert detector.score([step(0, "jungle_path"), step(1, "ruins")], again, "Go north.", registry) == (0.0, [])
    score, reasons = detector.score([step(0, "ruins"), step(1, "ruins")], again, "Go north.", registry)
    assert score == 0.8 and reasons[0].startswith("repeats a call that returned the same result twice")


def test_escalations_are_bounded(tmp_path):
    primary, _ = lm_for([call("move", direction="sideways")] * 6, tmp_path, "small")
    secondary, big = lm_for([call("move", direction="sideways")] * 6, tmp_path, "large")
    loop = AgentLoop(TREASURE, strategy="native", lm=primary, limits=LoopLimits(max_tool_calls=6),
                     escalation=EscalationPolicy(secondary_lm=secondary, threshold=0.5, max_escalations=2))
    transcript = loop.run("Go.")
    assert transcript.escalations == 2 and len(big.calls) == 2


def test_an_agent_config_keeps_known_tools_and_warns_about_the_rest():
    config = AgentConfig(name="scout", tools=["move", {"type": "function", "function": {"name": "dig"}}, "fly"],
                         max_tool_calls=4, system_prompt="You explore the island.")
    with pytest.warns(UserWarning, match="tool 'fly' matches no registered tool"):
        loop = AgentLoop.from_config(config, TREASURE)
    assert sorted(loop.registry.names()) == ["dig", "move"] and loop.max_tool_calls == 4
    assert loop.selector.strategy_name == "auto" and loop.selector.relevance is None


def test_an_agent_config_holds_its_selector_spec():
    config = AgentConfig.model_validate({"tools": ["move"], "selector": {"strategy": "native-cot",
                                                                        "undeclared_arguments": "drop"}})
    loop = AgentLoop.from_config(config, TREASURE)
    assert loop.selector.strategy_name == "native-cot" and loop.selector.undeclared_arguments == "drop"


def test_an_agent_system_prompt_joins_the_strategy_instructions(tmp_path):
    lm, llama = lm_for([call("move", direction="north"), "done"], tmp_path)
    AgentLoop(TREASURE, strategy="native", lm=lm, system_prompt="You are a careful explorer.").run("Go north.")
    system = llama.calls[1]["messages"][0]
    assert system["role"] == "system" and system["content"].endswith("You are a careful explorer.")
    assert sum(m["role"] == "system" for m in llama.calls[1]["messages"]) == 1


def test_the_loop_instructions_stand_instead_of_the_selector_one_decision_instructions(tmp_path):
    lm, llama = lm_for(["done"], tmp_path)
    AgentLoop(TREASURE, strategy="native", lm=lm).run("Fetch the lantern from the lighthouse.")
    system = llama.calls[0]["messages"][0]["content"]
    assert system.startswith(LOOP_SYSTEM_PROMPT) and "next step" in system
    assert NativeSelect.__doc__.split(".")[0] not in system and "none of the available functions" not in system
    assert all("replaces_instructions" not in m for m in llama.calls[0]["messages"])
    lm, llama = lm_for(["done"], tmp_path, name="cot")
    AgentLoop(TREASURE, strategy="native-cot", lm=lm).run("Fetch the lantern from the lighthouse.")
    assert "write one short sentence" in llama.calls[0]["messages"][0]["content"]
    lm, llama = lm_for(["done"], tmp_path, name="bare")
    AgentLoop(TREASURE, strategy="native", lm=lm, system_prompt=None).run("Fetch the lantern from the lighthouse.")
    assert LOOP_SYSTEM_PROMPT not in llama.calls[0]["messages"][0]["content"]
    assert AgentLoop.from_config(AgentConfig(tools=["move"]), TREASURE).system_prompt == LOOP_SYSTEM_PROMPT


def test_image_attachments_become_image_parts():
    from tool_selection.agent import Attachment, Message

    message = Message(role=Role.USER, content="What is in this photo?", attachments=[Attachment(data="aGk=")])
    assert message.openai()["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}}


def test_a_model_failure_ends_the_turn_with_what_was_done_kept(tmp_path):
    from dspy.utils.exceptions import ContextWindowExceededError

    lm, _ = lm_for([call("move", direction="north")], tmp_path)
    loop = AgentLoop(TREASURE, strategy="native", lm=lm)
    decide = loop.selector

    def outgrows_its_context_on_the_second_step(**kwargs):
        if kwargs.get("conversation") and any(m.get("role") == "tool" for m in kwargs["conversation"]):
            raise ContextWindowExceededError(model="local:fake", message="Requested tokens (4301) exceed 4096")
        return decide(**kwargs)

    loop.selector = outgrows_its_context_on_the_second_step
    transcript = loop.run("Walk north, then look around.")
    assert transcript.stop_reason == "model_error" and "4301" in transcript.error
    assert [c.tool_name for c in transcript.calls] == ["move"] and transcript.final_answer is None


def test_the_default_loop_decodes_a_local_models_calls_under_the_tools_grammar(tmp_path):
    from tests.lm.conftest import staged_lm

    move = json.dumps({"name": "move", "arguments": {"direction": "north"}})
    lm, llama = staged_lm(tmp_path, ["<tool_call>", "\n" + move, "\n</tool_call>", "You are on the jungle path."])
    transcript = AgentLoop(TREASURE, lm=lm).run("Walk north.")
    assert transcript.stop_reason == "answered" and transcript.final_answer == "You are on the jungle path."
    assert [(c.tool_name, c.ok) for c in transcript.calls] == [("move", True)]
    assert [call["grammar"] is not None for call in llama.calls] == [False, True, False, False]
    assert "<tool>" not in llama.calls[0]["prompt"] and "<tool>" in llama.calls[-1]["prompt"]  # the result went back


def test_limits_and_escalation_are_checked_when_made():
    from tool_selection.errors import ToolSelectionError

    assert (LoopLimits().steps, LoopLimits(max_tool_calls=3).steps, LoopLimits(max_steps=1).steps) == (12, 5, 1)
    with pytest.raises(ToolSelectionError, match="max_tool_calls must be at least 1, got 0"):
        LoopLimits(max_tool_calls=0)
    with pytest.raises(ToolSelectionError, match="escalation strategy must be 'delegate' or 'guide', got 'vote'"):
        EscalationPolicy(strategy="vote")


def test_an_answer_without_a_call_is_sent_back_once_when_the_turn_has_made_none(tmp_path):
    lm, llama = lm_for(["You could call move.", call("move", direction="north"), "Moved north."], tmp_path)
    loop = AgentLoop(TREASURE, strategy="native", lm=lm, limits=LoopLimits(reminders=1))
    transcript = loop.run("Go north.")
    assert [c.tool_name for c in transcript.calls] == ["move"] and transcript.final_answer == "Moved north."
    assert transcript.reminders == 1 and llama.calls[1]["messages"][-1]["content"] == NO_CALL_REMINDER
    lm, llama = lm_for(["I cannot.", "Still no function for that."], tmp_path, name="twice")
    transcript = AgentLoop(TREASURE, strategy="native", lm=lm, limits=LoopLimits(reminders=1)).run("Bake a cake.")
    assert transcript.final_answer == "Still no function for that." and len(llama.calls) == 2


def test_no_reminder_after_a_call_or_by_default(tmp_path):
    lm, llama = lm_for([call("move", direction="north"), "Moved."], tmp_path)
    transcript = AgentLoop(TREASURE, strategy="native", lm=lm, limits=LoopLimits(reminders=1)).run("Go north.")
    assert transcript.reminders == 0 and len(llama.calls) == 2
    lm, llama = lm_for(["No."], tmp_path, name="default")
    assert AgentLoop(TREASURE, strategy="native", lm=lm).run("Go north.").reminders == 0 and len(llama.calls) == 1
    with pytest.raises(Exception, match="reminders must be 0 or more"):
        LoopLimits(reminders=-1)


def test_a_call_that_returns_nothing_reads_as_done():
    record = CallRecord(id="c0", tool_name="mkdir", arguments={}, ok=True, result=None)
    assert result_text(record) == EMPTY_RESULT
    assert result_text(record.model_copy(update={"result": {"n": 1}})) == '{"n": 1}'


def test_a_failed_call_says_what_to_fix_and_is_not_run_twice(tmp_path):
    lm, llama = lm_for([call("move", direction="sideways"), call("move", direction="sideways"),
                        call("move", direction="sideways"), call("move", direction="north"), "ok"], tmp_path)
    transcript = AgentLoop(TREASURE, strategy="native", lm=lm).run("Go north.")
    assert [c.error for c in transcript.calls] == ["invalid_arguments", "repeated_call", "repeated_call", None]
    first = json.loads(llama.calls[1]["messages"][-1]["content"])
    assert first["fix"].startswith("Call move again with arguments that match its parameters")
    assert '"direction"' in first["fix"] and "north" in first["fix"]  # the schema of the right argument
    repeated = json.loads(llama.calls[2]["messages"][-1]["content"])
    assert repeated["message"].startswith("This exact call already failed in this turn")
    assert repeated["fix"].startswith("Do not repeat it") and transcript.errors_recovered == 3


def test_a_failing_tool_points_at_finding_the_right_value(tmp_path):
    from tool_selection.agent import fix_hint

    record = CallRecord(id="c0", tool_name="tail", arguments={"file_name": "config.py"}, ok=False,
                        error="tool_failure", message="tail: config.py: No such file or directory")
    assert "finds the right value" in fix_hint(record, TREASURE.registry()) and "call tail again" in fix_hint(
        record, TREASURE.registry())
    unknown = record.model_copy(update={"error": "unknown_tool", "tool_name": "teleport"})
    assert fix_hint(unknown, TREASURE.registry()).startswith("Call one of the listed functions")


def test_a_required_first_step_opens_a_call_for_the_model(tmp_path):
    from tests.lm.conftest import staged_lm

    move = json.dumps({"name": "move", "arguments": {"direction": "north"}})
    lm, llama = staged_lm(tmp_path, [move, "\n</tool_call>", "You walked north."])
    loop = AgentLoop(TREASURE, strategy="native-strict", lm=lm, limits=LoopLimits(first_step="required"))
    transcript = loop.run("Go north.")
    assert [c.tool_name for c in transcript.calls] == ["move"] and transcript.final_answer == "You walked north."
    assert llama.calls[0]["prompt"].endswith("<tool_call>\n") and llama.calls[0]["grammar"] is not None
    assert llama.calls[2]["grammar"] is None  # the second step is the model's own choice


def test_a_required_first_step_needs_a_native_strategy(tmp_path):
    from tool_selection import ToolSelectionError

    lm, _ = lm_for(["{}"], tmp_path)
    with pytest.raises(ToolSelectionError, match="tool_choice='required' needs a native strategy"):
        AgentLoop(TREASURE, strategy="json", lm=lm, limits=LoopLimits(first_step="required")).run("Go north.")
    with pytest.raises(ToolSelectionError, match="first_step must be 'auto' or 'required'"):
        LoopLimits(first_step="always")


def test_a_turn_ends_when_the_model_calls_finish(tmp_path):
    from tests.lm.conftest import staged_lm
    from tool_selection.agent import LOOP_FINISH_SYSTEM_PROMPT

    move = json.dumps({"name": "move", "arguments": {"direction": "north"}})
    finish = json.dumps({"name": "finish", "arguments": {"answer": "You walked north."}})
    lm, llama = staged_lm(tmp_path, [move, "\n</tool_call>", finish, "\n</tool_call>"])
    loop = AgentLoop(TREASURE, strategy="native-strict", lm=lm, limits=LoopLimits(finish="tool"))
    transcript = loop.run("Go north.")
    assert [c.tool_name for c in transcript.calls] == ["move"]  # finish is read, never run
    assert transcript.final_answer == "You walked north." and transcript.stop_reason == "answered"
    assert transcript.messages[-1].role is Role.ASSISTANT and transcript.messages[-1].content == "You walked north."
    forced = [c for c in llama.calls if c["prompt"].endswith("<tool_call>\n") and c["grammar"] is not None]
    assert len(forced) == 2  # every step is a call
    assert ";finish;" in llama.calls[0]["prompt"] and "call finish with your answer" in llama.calls[0]["prompt"]
    assert transcript.messages[0].content == LOOP_FINISH_SYSTEM_PROMPT and "finish" not in TREASURE.registry()


def test_finish_ends_the_turn_after_the_calls_before_it():
    from tool_selection.agent import FINISH_TOOL
    from tool_selection.decision import MultiToolDecision, ToolCall

    loop = AgentLoop(TREASURE, strategy="native-strict", limits=LoopLimits(finish="tool"))
    decision = MultiToolDecision(reasoning="", tool_calls=[
        ToolCall(tool_name="move", arguments={"direction": "north"}),
        ToolCall(tool_name=FINISH_TOOL, arguments={"answer": "Moved."}),
        ToolCall(tool_name="check_inventory", arguments={})])
    calls, answer = loop._calls_and_answer(decision)
    assert [c.tool_name for c in calls] == ["move"] and answer == "Moved."  # what follows finish is dropped
    answering = AgentLoop(TREASURE, strategy="native-strict")  # finish="answer": a call named finish is a call
    assert answering._calls_and_answer(decision) == (decision.tool_calls, None)
    assert answering._calls_and_answer(MultiToolDecision(reasoning="Hi.", tool_calls=[])) == ([], "Hi.")


def test_finish_needs_its_name_free_and_a_known_mode():
    from tool_selection import BaseTool, ToolRegistry, ToolSelectionError

    class Finish(BaseTool):
        NAME = "finish"
        description = "Finish a painting."

    with pytest.raises(ToolSelectionError, match="already hold one named 'finish'.*rename that tool"):
        AgentLoop(ToolRegistry("art", [Finish]), limits=LoopLimits(finish="tool"))
    with pytest.raises(ToolSelectionError, match="finish must be 'answer' or 'tool', got 'silence'"):
        LoopLimits(finish="silence")
    assert AgentLoop(ToolRegistry("art", [Finish])).choices.names() == ["finish"]  # finish="answer": no clash
    custom = AgentLoop(TREASURE, limits=LoopLimits(finish="tool"), system_prompt="Be brief.")
    assert custom.system_prompt == "Be brief." and "finish" in custom.choices
