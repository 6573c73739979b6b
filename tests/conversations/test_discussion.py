"""Discussions over scripted models: turn order and roles, each model's view of the conversation, tools through the
loop with their parameters, registry entries (aliases, disabled, unknown ones warned and skipped), the
collaboration pair's escalation, a failed turn recorded without stopping the discussion, the transcript file."""

import json

import pytest

from tests.conversations.conftest import LARGE, SMALL, call, guidance
from tool_selection.conversations import ConversationConfigError, DiscussionManager, load_discussion_config
from tool_selection.conversations.discussion import HUMAN_PROMPT, NO_REPLY, OPENING
from tool_selection.conversations.speaker import CONVERSATION_INSTRUCTIONS, LIMIT_NOTE

GOAL = "Write a Python script that sums a CSV column."


def config(turns=4, tools=None, collaboration=None, **model_options):
    data = {"turns": turns, "goal": GOAL,
            "models": {"model1": {"type": SMALL, "role": "human", "strategy": "native", **model_options},
                       "model2": {"type": LARGE, "role": "assistant", "strategy": "native", **model_options}}}
    if tools is not None:
        data["tools"] = {"enabled": True, "registry": tools}
    if collaboration is not None:
        data["collaboration"] = collaboration
    return {"discussion": data}


def manager(models, data, **kwargs):
    return DiscussionManager.from_config(data, lm_factory=models, **kwargs)


# ------------------------------------------------------------------------------------------ turns and roles
def test_the_human_opens_and_the_models_alternate(models):
    models.script(SMALL, "I need a script for my CSV.", "It fails on empty lines.")
    models.script(LARGE, "Here is a script: ...", "Skip blank lines like this: ...")
    transcript = manager(models, config()).run()
    assert [(t.agent_id, t.agent_role) for t in transcript.turns] == [
        ("model1", "human"), ("model2", "assistant"), ("model1", "human"), ("model2", "assistant")]
    assert [t.content for t in transcript.turns] == ["I need a script for my CSV.", "Here is a script: ...",
                                                     "It fails on empty lines.", "Skip blank lines like this: ..."]
    assert transcript.status == "complete" and all(t.type == "message" for t in transcript.turns)


def test_each_model_sees_its_own_messages_as_the_assistant_and_the_others_as_the_user(models):
    models.script(SMALL, "I need a script.", "Thanks, that works.")
    models.script(LARGE, "Here it is.", "Glad to help.")
    manager(models, config()).run()
    human_first, human_second = (models.messages(SMALL, i) for i in (0, 1))
    assert human_first[0]["role"] == "system" and HUMAN_PROMPT.format(goal=GOAL) in human_first[0]["content"]
    assert CONVERSATION_INSTRUCTIONS in human_first[0]["content"]
    assert [(m["role"], m["content"]) for m in human_first[1:]] == [("user", OPENING)]
    assert [(m["role"], m["content"]) for m in human_second[1:]] == [
        ("user", OPENING), ("assistant", "I need a script."), ("user", "Here it is.")]
    assistant_second = models.messages(LARGE, 1)
    assert "AI assistant" in assistant_second[0]["content"] and GOAL in assistant_second[0]["content"]
    assert [(m["role"], m["content"]) for m in assistant_second[1:]] == [
        ("user", "I need a script."), ("assistant", "Here it is."), ("user", "Thanks, that works.")]


def test_turns_can_be_overridden_and_an_odd_number_ends_with_the_human(models):
    models.script(SMALL, "a", "c", "e")
    models.script(LARGE, "b", "d")
    transcript = manager(models, config(turns=2)).run(turns=5)
    assert [t.content for t in transcript.turns] == ["a", "b", "c", "d", "e"]


def test_older_messages_are_dropped_beyond_the_context_budget_but_the_opening_stays(models):
    data = config(turns=5)
    data["discussion"]["context_chars"] = 500
    models.script(SMALL, "x" * 300, "y" * 300, "z")
    models.script(LARGE, "u" * 300, "v" * 300)
    manager(models, data).run()
    seen = "\n".join(m["content"] for m in models.messages(SMALL)[1:])
    assert seen.startswith(OPENING) and seen.endswith("v" * 300) and "x" * 300 not in seen and "u" * 300 not in seen


# ------------------------------------------------------------------------------------------ tools
def test_tool_calls_run_through_the_loop_and_are_recorded_with_their_results(models):
    models.script(SMALL, "Please write and run it.")
    models.script(LARGE, call("run_python", code="print(sum([1, 2, 3]))"), "It prints 6.")
    data = config(turns=2, tools=[{"name": "code_execution", "parameters": {"timeout": 15}}])
    heard = []
    discussion = manager(models, data, on_call=lambda name, record: heard.append((name, record.tool_name, record.ok)))
    transcript = discussion.run()
    assert heard == [("model2", "run_python", True)]  # each call reported as it returns (--verbose)
    assistant = transcript.turns[1]
    assert assistant.content == "It prints 6."
    (used,) = assistant.metadata.tool_calls
    assert used.tool_name == "run_python" and used.ok and used.result["stdout"].strip() == "6"
    assert assistant.metadata.iterations == 2 and assistant.metadata.stop_reason == "answered"
    assert transcript.turns[0].metadata.tool_calls == []
    assert discussion.speakers["model2"].loop.session.tool("run_python").timeout_s == 15  # parameters reach the tool
    tool_turn = models.messages(LARGE)[-1]
    assert tool_turn["role"] == "tool" and '"stdout": "6\\n"' in tool_turn["content"]


def test_registry_entries_aliases_disabled_and_unknown_names(models):
    tools = [{"name": "code_execution"}, {"name": "web_search", "enabled": True},
             {"name": "file_manipulation", "enabled": False}, {"name": "telepathy"}, {"name": "calculate"}]
    with pytest.warns(UserWarning, match="Discussion tool 'telepathy' matches no tool set or tool; skipped"):
        discussion = manager(models, config(tools=tools))
    names = discussion.speakers["model1"].loop.registry.names()
    assert {"run_python", "run_bash", "web_search", "calculate"} <= set(names)
    assert not {"read_file", "write_file"} & set(names)
    assert discussion.transcript.skipped_tools == ["telepathy"]
    assert "- run_python(code)" in discussion.speakers["model1"].loop.system_prompt


def test_tools_disabled_gives_no_tools(models):
    data = config(tools=[{"name": "code"}])
    data["discussion"]["tools"]["enabled"] = False
    discussion = manager(models, data)
    assert len(discussion.speakers["model1"].loop.registry) == 0
    assert "You have no tools" in discussion.speakers["model1"].loop.system_prompt


@pytest.mark.parametrize("entry, message", [
    ({"name": "code", "parameters": {"timeut": 3}}, "unknown parameter 'timeut'; its tools take"),
    ({"name": "code", "parameters": {"timeout": -1}}, "parameters.timeout_s"),
])
def test_bad_parameters_are_configuration_errors(models, entry, message):
    with pytest.raises(ConversationConfigError, match=message):
        manager(models, config(tools=[entry]))


def test_two_entries_giving_one_field_two_values_is_an_error(models):
    tools = [{"name": "code", "parameters": {"timeout": 3}}, {"name": "run_python", "parameters": {"timeout": 9}}]
    with pytest.raises(ConversationConfigError, match="both set timeout_s"):
        manager(models, config(tools=tools))


def test_context_search_searches_this_discussion(models):
    models.script(SMALL, "My CSV has a column called revenue.", call("context_search", term="REVENUE"), "Found it.")
    models.script(LARGE, "Which column should I sum?")
    transcript = manager(models, config(turns=3, tools=[{"name": "context_search"}])).run()
    result = transcript.turns[2].metadata.tool_calls[0].result
    assert result["status"] == "success"
    assert result["result"]["matches"][0] == {
        "roundNumber": 1, "agentId": "model1", "agentRole": "human", "type": "message",
        "contentSnippet": "My CSV has a column called revenue.", "relevanceScore": 0.8}


def test_the_call_limit_ends_the_tool_loop_and_a_closing_step_asks_for_the_message(models):
    models.script(SMALL, "Go.")
    models.script(LARGE, call("run_python", code="1/0"), call("run_python", code="1/0"), "I could not run it.")
    transcript = manager(models, config(turns=2, tools=[{"name": "code"}], max_tool_calls=2)).run()
    meta = transcript.turns[1].metadata
    assert meta.limit_hit and len(meta.tool_calls) == 2 and meta.iterations == 3
    assert transcript.turns[1].content == "I could not run it."
    assert models.messages(LARGE)[-1]["content"] == LIMIT_NOTE.format(limit=2)


# ------------------------------------------------------------------------------------------ collaboration
PAIR = {"enabled": True, "pairs": [{"primary": SMALL, "secondary": LARGE, "threshold": 0.7, "max_retries": 2}]}


def test_a_stuck_primary_gets_the_secondarys_guidance_and_retries(models):
    models.script(SMALL, "I cannot help with that.", "Could you write a script that sums the price column?")
    models.script(LARGE, guidance("Ask the assistant for a script that sums one column."), "Sure: ...")
    transcript = manager(models, config(turns=2, collaboration=PAIR)).run()
    human = transcript.turns[0]
    assert human.content == "Could you write a script that sums the price column?"
    (escalation,) = human.metadata.escalations
    assert escalation.decided_by == "guided" and escalation.stuck_score >= 0.7
    assert "gives up" in escalation.reasons
    assert escalation.guidance == "Ask the assistant for a script that sums one column."
    retried = models.messages(SMALL, 1)
    assert "Guidance from a more capable model: Ask the assistant" in retried[-1]["content"]
    assert transcript.turns[1].metadata.escalations == []  # the assistant is no pair's primary
    assert set(human.metadata.tokens) == {SMALL, LARGE}


def test_escalations_are_bounded_by_max_retries(models):
    pair = {"enabled": True, "pairs": [{"primary": SMALL, "secondary": LARGE, "threshold": 0.7,
                                        "max_retries": 1}]}
    models.script(SMALL, *[call("run_python", source="1/0")] * 4, "Still broken.")
    models.script(LARGE, guidance("The argument is called code."))
    transcript = manager(models, config(turns=1, tools=[{"name": "code"}], collaboration=pair)).run()
    meta = transcript.turns[0].metadata
    assert sum(score >= 0.7 for score in meta.stuck_scores) >= 3  # stuck again and again, helped once
    (escalation,) = meta.escalations
    assert escalation.step == 0 and escalation.reasons == ["combined 1.00"]  # the pair's detector: invalid arguments


def test_pair_strategy_defaults_to_guide_and_delegate_can_be_asked_for():
    assert load_discussion_config(config(collaboration=PAIR)).collaboration.pairs[0].strategy == "guide"
    delegate = {"enabled": True, "pairs": [{**PAIR["pairs"][0], "strategy": "delegate"}]}
    assert load_discussion_config(config(collaboration=delegate)).collaboration.pairs[0].strategy == "delegate"


def test_a_pair_for_a_model_not_in_the_discussion_is_refused():
    pair = {"enabled": True, "pairs": [{"primary": "openai/gpt-4o-mini", "secondary": LARGE}]}
    with pytest.raises(ConversationConfigError, match="its primary is none of the models' models"):
        load_discussion_config(config(collaboration=pair))


# ------------------------------------------------------------------------------------------ failures and files
def test_a_failed_turn_is_recorded_and_the_discussion_goes_on(models):
    from dspy.utils.exceptions import ContextWindowExceededError

    models.script(SMALL, "Hello.", "Are you there?")
    models.script(LARGE, ContextWindowExceededError(model=LARGE, message="too long"), "Yes.")
    transcript = manager(models, config(turns=4)).run()
    failed = transcript.turns[1]
    assert failed.content == "" and failed.metadata.stop_reason == "model_error"
    assert "ContextWindowExceededError" in failed.metadata.error
    assert [(m["role"], m["content"]) for m in models.messages(SMALL)[1:]] == [
        ("user", OPENING), ("assistant", "Hello."), ("user", NO_REPLY)]
    assert transcript.turns[3].content == "Yes."


def test_the_transcript_is_saved_after_every_turn_in_camel_case(models, tmp_path):
    out = tmp_path / "runs" / "discussion.json"
    seen = []
    models.script(SMALL, "One.")
    models.script(LARGE, "Two.")
    manager(models, config(turns=2), out=out,
            on_turn=lambda turn: seen.append(json.loads(out.read_text())["status"])).run()
    data = json.loads(out.read_text())
    assert seen == ["running", "running"] and data["status"] == "complete"
    assert [t["agentId"] for t in data["turns"]] == ["model1", "model2"]
    assert {"toolCalls", "iterations", "toolCallLimit", "limitHit", "escalations", "tokens", "seconds"} <= set(
        data["turns"][0]["metadata"])
    assert data["config"]["goal"] == GOAL


@pytest.mark.parametrize("change, message", [
    (lambda d: d["models"]["model2"].update(role="human"), "one with role human and one with role assistant"),
    (lambda d: d["models"]["model1"].update(type="local:nope"), "models.model1.type: Unknown embedded model"),
    (lambda d: d.update(turns=0), "discussion.turns"),
    (lambda d: d["models"]["model1"].update(strategy="gate+native"), "a relevance gate"),
    (lambda d: d.update(extra=1), "discussion.extra"),
])
def test_bad_configs_name_the_field(change, message):
    data = config()
    change(data["discussion"])
    with pytest.raises(ConversationConfigError, match=message):
        load_discussion_config(data)


def test_the_shipped_example_loads():
    from pathlib import Path

    example = load_discussion_config(Path(__file__).parents[2] / "examples" / "discussion.yaml")
    assert example.turns == 5 and example.opener == "model1"
    assert [e.name for e in example.tools.registry] == ["code_execution", "web_search", "file_manipulation"]
    assert example.collaboration.pairs[0].strategy == "guide"
