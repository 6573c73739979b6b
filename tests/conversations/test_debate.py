"""Debates over scripted models: phase order and what each agent is asked, per-agent tools (an unknown one warned and
skipped, the rest listed in the system prompt), the per-phase tool-call limit counting failed invocations,
context_search over the debate so far, contribution metadata, the state file after every contribution, and
resuming after a kill without asking a finished contribution again."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conversations.conftest import LARGE, SMALL, call
from tool_selection.conversations import (
    PHASES,
    ConversationConfigError,
    DebateRunner,
    DebateState,
    StateFileError,
    load_debate_config,
)
from tool_selection.conversations.speaker import LIMIT_NOTE

TOPIC = "How should we cache a read-heavy API?"
SEARCH = {"name": "context_search", "description": "Search the debate so far.",
          "parameters": {"type": "object", "properties": {"term": {"type": "string"}}, "required": ["term"]}}


def agent(agent_id, model, tools=(), limit=None, **extra):
    data = {"id": agent_id, "name": agent_id.title(), "role": agent_id, "model": model, "temperature": 0.5,
            "tools": list(tools), "strategy": "native", **extra}
    if limit is not None:
        data["toolCallLimit"] = limit
    return data


def config(*agents, rounds=1, **extra):
    agents = agents or (agent("architect", LARGE, [SEARCH]), agent("critic", SMALL))
    return {"debate": {"topic": TOPIC, "rounds": rounds, "agents": list(agents), **extra}}


def runner(models, data=None, **kwargs):
    return DebateRunner.from_files(data or config(), lm_factory=models, **kwargs)


def script_round(models, prefix=""):
    models.script(LARGE, f"{prefix}A proposes Redis.", f"{prefix}A critiques C.", f"{prefix}A refines.")
    models.script(SMALL, f"{prefix}C proposes CDN.", f"{prefix}C critiques A.", f"{prefix}C refines.")


class Killed(BaseException):
    """What a kill looks like from inside: an exception nothing in the toolkit catches (as KeyboardInterrupt)."""


def user_message(models, spec, index):
    return models.messages(spec, index)[-1]["content"]


# ------------------------------------------------------------------------------------------ phases
def test_a_round_is_proposal_critique_refinement_with_every_agent_in_each(models):
    script_round(models)
    state = runner(models).run()
    (round_,) = state.rounds
    assert [(c.type, c.agent_id) for c in round_.contributions] == [
        (phase, who) for phase in PHASES for who in ("architect", "critic")]
    assert round_.completed_phases == list(PHASES) and state.status == "complete"
    assert round_.of("refinement", "critic")[0].content == "C refines."


def test_each_phase_asks_for_the_right_contributions(models):
    script_round(models)
    runner(models).run()
    proposal, critique, refinement = (user_message(models, SMALL, i) for i in range(3))
    assert f"Topic: {TOPIC}" in proposal and "Round 1, proposal phase." in proposal
    assert "[Architect (architect)]: A proposes Redis." in critique and "C proposes CDN." not in critique
    assert "Your proposal:\nC proposes CDN." in refinement
    assert "[Architect (architect)]: A critiques C." in refinement and "C critiques A." not in refinement


def test_a_second_round_starts_from_the_refinements(models):
    script_round(models)
    script_round(models, "2: ")
    state = runner(models, config(rounds=2)).run()
    assert [r.number for r in state.rounds] == [1, 2]
    second_proposal = user_message(models, SMALL, 3)
    assert "Your refined proposal from the last round:\nC refines." in second_proposal
    assert "[Architect (architect)]: A refines." in second_proposal


def test_long_contributions_are_quoted_up_to_quote_chars(models):
    models.script(LARGE, "R" * 1000, "ok", "ok")
    models.script(SMALL, "ok", "ok", "ok")
    runner(models, config(quoteChars=300)).run()
    critique = user_message(models, SMALL, 1)
    assert "R" * 293 + " [cut]" in critique and "R" * 294 not in critique


# ------------------------------------------------------------------------------------------ tools
def test_an_unknown_tool_is_warned_about_and_skipped_and_the_prompt_lists_the_rest(models):
    telepathy = {"name": "telepathy", "parameters": {"type": "object", "properties": {}}}
    data = config(agent("architect", LARGE, [SEARCH, telepathy]), agent("critic", SMALL))
    with pytest.warns(UserWarning, match="Agent 'architect': tool 'telepathy' matches no registered tool; skipped"):
        debate = runner(models, data)
    assert debate.speakers["architect"].loop.registry.names() == ["context_search"]
    script_round(models)
    debate.run()
    system = models.messages(LARGE, 0)[0]["content"]
    assert "You are Architect, the architect, in a structured debate with Critic (critic)." in system
    assert "- context_search(term, max_results?, recency_weight?, source?)" in system and "telepathy" not in system
    assert "You have no tools" in models.messages(SMALL, 0)[0]["content"]


def test_a_schema_property_the_tool_does_not_take_is_warned_about():
    from tool_selection.conversations.toolbox import agent_tools

    schema = {"name": "context_search", "parameters": {"type": "object", "properties": {"query": {}}}}
    with pytest.warns(UserWarning, match="tool 'context_search' does not take query"):
        assert agent_tools("a", [schema]).names() == ["context_search"]


def test_the_per_phase_limit_counts_failed_invocations(models):
    data = config(agent("architect", LARGE, [SEARCH], limit=2), agent("critic", SMALL))
    models.script(LARGE, call("context_search", query="cache"), call("context_search", term=""),
                  call("context_search", term="never reached"), "My proposal: Redis.", "crit", "ref")
    models.script(SMALL, "p", "c", "r")
    state = runner(models, data).run()
    proposal = state.rounds[0].of("proposal", "architect")[0]
    meta = proposal.metadata
    assert meta.tool_call_limit == 2 and meta.limit_hit and meta.stop_reason == "call_limit"
    assert [c.ok for c in meta.tool_calls] == [False, False] and meta.failed_calls == 2
    assert [c.result["status"] for c in meta.tool_calls] == ["error", "error"]
    assert meta.closing_calls == ["context_search"]  # written in the closing step, not run
    assert proposal.content == "" and meta.error == ("at the call limit the model wrote more calls "
                                                     "(context_search; not run) and no message")
    assert meta.iterations == 3 and proposal.content == ""
    assert user_message(models, LARGE, 2) == LIMIT_NOTE.format(limit=2)
    critique = state.rounds[0].of("critique", "architect")[0]  # the limit is per phase: it starts again
    assert critique.content == "My proposal: Redis." and not critique.metadata.limit_hit


def test_context_search_searches_the_debate_so_far(models):
    models.script(LARGE, "Use Redis as a write-through cache.", call("context_search", term="cdn"),
                  "The CDN misses private data.", "refined")
    models.script(SMALL, "Put a CDN in front.", "crit", "ref")
    state = runner(models).run()
    critique = state.rounds[0].of("critique", "architect")[0]
    (search,) = critique.metadata.tool_calls
    assert search.ok and search.arguments == {"term": "cdn"}
    assert search.result["result"]["matches"] == [{
        "roundNumber": 1, "agentId": "critic", "agentRole": "critic", "type": "proposal",
        "contentSnippet": "Put a CDN in front.", "relevanceScore": 1.0}]
    assert critique.content == "The CDN misses private data." and critique.metadata.iterations == 2


def test_contribution_metadata_holds_calls_results_and_iterations(models, tmp_path):
    models.script(LARGE, call("context_search", term="x"), "p", "c", "r")
    models.script(SMALL, "p", "c", "r")
    path = tmp_path / "state.json"
    runner(models, state_path=path).run()
    stored = json.loads(path.read_text())["rounds"][0]["contributions"][0]
    assert set(stored) == {"agentId", "agentName", "agentRole", "type", "content", "metadata"}
    meta = stored["metadata"]
    assert meta["iterations"] == 2 and meta["toolCallLimit"] == 10 and meta["limitHit"] is False
    assert meta["toolCalls"][0]["name"] == "context_search"
    assert meta["toolCalls"][0]["result"] == {"status": "success", "result": {"matches": [], "totalFound": 0,
                                                                               "searchTerm": "x"}}


# ------------------------------------------------------------------------------------------ state and resume
def test_the_state_is_saved_after_every_contribution(models, tmp_path):
    path = tmp_path / "state.json"
    saved = []
    script_round(models)
    runner(models, state_path=path,
           on_contribution=lambda n, c: saved.append(len(json.loads(path.read_text())["rounds"][0]["contributions"]))
           ).run()
    assert saved == [1, 2, 3, 4, 5, 6]
    assert DebateState.load(path).status == "complete"


def test_a_killed_debate_resumes_from_its_state_file_without_repeating_work(models, tmp_path):
    path = tmp_path / "state.json"
    models.script(LARGE, "A proposes Redis.", "A critiques C.")
    models.script(SMALL, "C proposes CDN.", Killed("killed"))  # the process dies in the critique phase
    with pytest.raises(Killed):
        runner(models, state_path=path).run()
    saved = DebateState.load(path)
    assert saved.status == "running" and saved.rounds[0].completed_phases == ["proposal"]
    assert [(c.type, c.agent_id) for c in saved.rounds[0].contributions] == [
        ("proposal", "architect"), ("proposal", "critic"), ("critique", "architect")]

    from tests.conversations.conftest import ScriptedModels

    fresh = ScriptedModels(tmp_path / "again")
    fresh.script(LARGE, "A refines.")
    fresh.script(SMALL, "C critiques A.", "C refines.")
    state = runner(fresh, state_path=path).run()
    assert state.status == "complete" and state.rounds[0].completed_phases == list(PHASES)
    assert [(c.type, c.agent_id, c.content) for c in state.rounds[0].contributions] == [
        ("proposal", "architect", "A proposes Redis."), ("proposal", "critic", "C proposes CDN."),
        ("critique", "architect", "A critiques C."), ("critique", "critic", "C critiques A."),
        ("refinement", "architect", "A refines."), ("refinement", "critic", "C refines.")]
    assert len(fresh.llama(LARGE).calls) == 1 and len(fresh.llama(SMALL).calls) == 2  # nothing asked twice
    assert "[Architect (architect)]: A proposes Redis." in fresh.messages(SMALL, 0)[-1]["content"]


KILLED_RUN = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from tests.conversations.conftest import LARGE, SMALL, ScriptedLlama, ScriptedModels
    from tests.conversations.test_debate import config, runner

    class Hangs(ScriptedLlama):  # once its script is spoken, the model never answers: the process waits to be killed
        def create_chat_completion(self, messages, grammar=None, **options):
            if not self.answers:
                time.sleep(600)
            return super().create_chat_completion(messages, grammar=grammar, **options)

    models = ScriptedModels(Path(sys.argv[2]))
    models.llamas = {LARGE: Hangs(["A proposes Redis.", "A critiques C."]), SMALL: Hangs(["C proposes CDN."])}
    runner(models, config(), state_path=sys.argv[1]).run()
""")


def test_a_debate_killed_with_sigkill_resumes_from_its_state_file(tmp_path):
    """A real kill: a debate in another process is killed (SIGKILL) while a model is answering in the critique
    phase; the state file it left is whole and the debate resumes from it."""
    path = tmp_path / "state.json"
    root = Path(__file__).parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(path), str(tmp_path)], cwd=root, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and process.poll() is None:
            if path.is_file() and len(json.loads(path.read_text())["rounds"][0]["contributions"]) == 3:
                break
            time.sleep(0.2)
        assert process.poll() is None, process.stderr.read().decode()
        time.sleep(0.5)  # the critic is now waiting on its model
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL

    saved = DebateState.load(path)
    assert saved.status == "running" and saved.rounds[0].completed_phases == ["proposal"]
    assert [c.content for c in saved.rounds[0].contributions] == ["A proposes Redis.", "C proposes CDN.",
                                                                  "A critiques C."]
    from tests.conversations.conftest import ScriptedModels

    fresh = ScriptedModels(tmp_path / "again")
    fresh.script(LARGE, "A refines.")
    fresh.script(SMALL, "C critiques A.", "C refines.")
    state = runner(fresh, state_path=path).run()
    assert state.status == "complete" and [c.type for c in state.rounds[0].contributions] == [
        "proposal", "proposal", "critique", "critique", "refinement", "refinement"]
    assert len(fresh.llama(LARGE).calls) == 1 and len(fresh.llama(SMALL).calls) == 2


def test_more_rounds_continue_a_finished_debate(models, tmp_path):
    path = tmp_path / "state.json"
    script_round(models)
    runner(models, state_path=path).run()
    script_round(models, "2: ")
    state = runner(models, state_path=path).run(rounds=2)
    assert [len(r.contributions) for r in state.rounds] == [6, 6] and state.rounds_planned == 2


def test_a_state_file_of_another_debate_is_refused(models, tmp_path):
    path = tmp_path / "state.json"
    script_round(models)
    runner(models, state_path=path).run()
    other = config(agent("architect", LARGE, [SEARCH]), agent("critic", SMALL, temperature=0.9))
    with pytest.raises(StateFileError, match="belongs to another debate .* --fresh"):
        runner(models, other, state_path=path)
    assert runner(models, other, state_path=path, fresh=True).state.rounds == []


@pytest.mark.parametrize("text, message", [
    ("not json", "is not a JSON DebateState file"),
    ('{"version": 9}', "is a version 9 DebateState file"),
    ('{"fingerprint": "x"}', "not a valid DebateState file: config: Field required"),
])
def test_a_broken_state_file_says_what_is_wrong(tmp_path, text, message):
    path = tmp_path / "state.json"
    path.write_text(text)
    with pytest.raises(StateFileError, match=message):
        DebateState.load(path)


# ------------------------------------------------------------------------------------------ configs
@pytest.mark.parametrize("change, message", [
    (lambda d: d["agents"].pop(), "debate.agents: List should have at least 2 items"),
    (lambda d: d["agents"][1].update(id="architect"), "agent ids must be unique; repeated: architect"),
    (lambda d: d["agents"][0].update(toolCallLimit=0), "agents.0.toolCallLimit"),
    (lambda d: d["agents"][0].update(tools=[{"description": "x"}]), "tools\\[0\\] has no name"),
    (lambda d: d["agents"][0].update(model="local:nope"), "agents.0.model: Unknown embedded model"),
])
def test_bad_debate_configs_name_the_field(change, message):
    data = config()
    change(data["debate"])
    with pytest.raises(ConversationConfigError, match=message):
        load_debate_config(data)


def test_the_shipped_example_loads():
    from pathlib import Path

    example = load_debate_config(Path(__file__).parents[2] / "examples" / "debate.json")
    assert [a.id for a in example.agents] == ["agent-architect", "agent-engineer", "agent-reviewer"]
    assert example.agents[0].tool_call_limit == 10 and example.agents[0].temperature == 0.5
    assert example.agents[0].tools[0]["parameters"]["required"] == ["term"]
