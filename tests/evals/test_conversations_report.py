"""The conversations results page and tables, from a scripted discussion's transcript and a scripted debate's state
file; the committed page is what its kept rows generate."""

import json
from pathlib import Path

import pytest

from evals.benchmarks.conversations_report import PROVENANCE_FIELDS, main, results_page
from tests.conversations.conftest import LARGE, SMALL, ScriptedModels, call
from tool_selection.conversations import DebateRunner, DiscussionManager

ROOT = Path(__file__).parents[2]
PROVENANCE = [{"what": "both", "kept": "results/x", "command": "toolsel discuss run", "commit": "abc1234",
               "machine": "2 cores", "date": "2026-11-26", "notes": "shared CPU"}]


@pytest.fixture
def kept(tmp_path) -> Path:
    """A results folder as the measured runs leave it, from scripted models."""
    models = ScriptedModels(tmp_path)
    models.script(SMALL, "Please sum it.", "p", "c", "r")
    models.script(LARGE, call("context_search", term="sum"), "Done.", "p", "c", "r")
    agents = [{"id": a, "name": a, "role": a, "model": m, "strategy": "native"} for a, m in (("a", SMALL), ("b", LARGE))]
    DiscussionManager.from_config(
        {"discussion": {"turns": 2, "goal": "Sum a column.", "tools": {"registry": [{"name": "context_search"}]},
                        "models": {"m1": {"type": SMALL, "role": "human", "strategy": "native"},
                                   "m2": {"type": LARGE, "role": "assistant", "strategy": "native"}}}},
        lm_factory=models, out=tmp_path / "discussion.json").run()
    DebateRunner.from_files({"debate": {"topic": "t", "agents": agents}}, lm_factory=models,
                            state_path=tmp_path / "debate-state.json").run()
    (tmp_path / "provenance.json").write_text(json.dumps(PROVENANCE))
    return tmp_path


def test_the_report_prints_both_tables(kept, capsys):
    assert main(["--discussion", str(kept / "discussion.json"), "--debate", str(kept / "debate-state.json")]) == 0
    printed = capsys.readouterr().out
    assert "| 2 | m2 | assistant |" in printed and "context_search x1" in printed
    assert "| a | proposal | 1 | 1 |" in printed and "How contributions ended: answered 6." in printed
    assert "Status complete; 2 contributions, 1 tool calls (0 failed)" in printed


def test_the_page_holds_tables_excerpts_notes_and_provenance(kept, tmp_path):
    (kept / "notes.md").write_text("Hand-written: the assistant searched once.")
    page_path = tmp_path / "page.md"
    assert main(["--results", str(kept), "--write", str(page_path)]) == 0
    page = page_path.read_text()
    assert page.startswith("# Conversations\n") and "Hand-written: the assistant searched once." in page
    assert "`examples/discussion.yaml`, 2 turns: local:qwen2.5-coder-0.5b as human" in page
    assert "Tools of both models: `context_search`." in page
    assert '| 2 | m2 | Done. | context_search(term="sum") |' in page
    assert "| 1 proposal | a | p |  |" in page
    assert "| both | `results/x` | `toolsel discuss run` | `abc1234` | 2 cores | 2026-11-26 | shared CPU |" in page
    assert page == results_page(kept)


def test_a_provenance_entry_missing_fields_is_named(kept):
    (kept / "provenance.json").write_text(json.dumps([{"what": "x"}, 3]))
    with pytest.raises(ValueError, match="entry 0: missing command, commit, date, kept, machine, notes; "
                                         "entry 1: not an object"):
        results_page(kept)
    assert set(PROVENANCE_FIELDS) == set(PROVENANCE[0])


def test_write_needs_results(capsys):
    with pytest.raises(SystemExit):
        main(["--write", "page.md"])
    assert "--write needs --results" in capsys.readouterr().err


@pytest.mark.skipif(not (ROOT / "results" / "conversations" / "provenance.json").is_file(),
                    reason="no kept conversation runs")
def test_the_committed_page_is_generated_from_the_kept_runs():
    committed = (ROOT / "docs" / "results" / "conversations.md").read_text(encoding="utf-8")
    assert committed == results_page(ROOT / "results" / "conversations"), (
        "docs/results/conversations.md is out of date: python -m evals.benchmarks.conversations_report "
        "--results results/conversations --write docs/results/conversations.md")
