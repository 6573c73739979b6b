"""The conversations results tables, from a scripted discussion's transcript and a scripted debate's state file."""

from evals.benchmarks.conversations_report import main
from tests.conversations.conftest import LARGE, SMALL, ScriptedModels, call
from tool_selection.conversations import DebateRunner, DiscussionManager


def test_the_report_prints_both_tables(tmp_path, capsys):
    models = ScriptedModels(tmp_path)
    models.script(SMALL, "Please sum it.", "p", "c", "r")
    models.script(LARGE, call("context_search", term="sum"), "Done.", "p", "c", "r")
    agents = [{"id": a, "name": a, "role": a, "model": m, "strategy": "native"} for a, m in (("a", SMALL), ("b", LARGE))]
    DiscussionManager.from_config(
        {"discussion": {"turns": 2, "goal": "Sum a column.", "tools": {"registry": [{"name": "context_search"}]},
                        "models": {"m1": {"type": SMALL, "role": "human", "strategy": "native"},
                                   "m2": {"type": LARGE, "role": "assistant", "strategy": "native"}}}},
        lm_factory=models, out=tmp_path / "talk.json").run()
    DebateRunner.from_files({"debate": {"topic": "t", "agents": agents}}, lm_factory=models,
                            state_path=tmp_path / "state.json").run()
    assert main(["--discussion", str(tmp_path / "talk.json"), "--debate", str(tmp_path / "state.json")]) == 0
    printed = capsys.readouterr().out
    assert "| 2 | m2 | assistant |" in printed and "context_search x1" in printed
    assert "| a | proposal | 1 | 1 |" in printed and "How contributions ended: answered 6." in printed
    assert "Status complete; 2 contributions, 1 tool calls (0 failed)" in printed
