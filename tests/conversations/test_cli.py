"""``toolsel discuss run`` and ``toolsel debate run|show`` over scripted models (the command groups registered on a
parser directly, so the tests hold whatever the installed package's entry points are), the summaries they print,
MLflow logging, and the entry points declared in pyproject.toml."""

import argparse
import json
import tomllib
from importlib import import_module
from pathlib import Path

import pytest

from tests.conversations.conftest import LARGE, SMALL, call
from tool_selection.conversations import cli, speaker
from tool_selection.conversations.summary import debate_rows, format_table, grouped, totals
from tool_selection.errors import ToolSelectionError

ROOT = Path(__file__).parents[2]


def toolsel(*argv) -> int:
    """Run a command as ``toolsel`` does: handler exit codes, ToolSelectionErrors as one line and exit 2."""
    parser = argparse.ArgumentParser(prog="toolsel")
    subparsers = parser.add_subparsers(dest="command")
    cli.register_discuss(subparsers)
    cli.register_debate(subparsers)
    args = parser.parse_args([str(a) for a in argv])
    try:
        return args.handler(args)
    except ToolSelectionError as error:
        print(f"toolsel: error: {error}")
        return 2


@pytest.fixture
def scripted(models, monkeypatch):
    monkeypatch.setattr(speaker, "default_lm_factory", models)
    return models


def write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data))
    return path


DISCUSSION = {"discussion": {"turns": 2, "goal": "Sum a CSV column.",
                             "models": {"model1": {"type": SMALL, "role": "human", "strategy": "native"},
                                        "model2": {"type": LARGE, "role": "assistant", "strategy": "native"}},
                             "tools": {"enabled": True, "registry": [{"name": "code_execution"}]}}}
DEBATE = {"debate": {"topic": "Caching?", "agents": [
    {"id": "architect", "name": "Architect", "role": "architect", "model": LARGE, "strategy": "native",
     "tools": [{"name": "context_search"}], "toolCallLimit": 2},
    {"id": "critic", "name": "Critic", "role": "critic", "model": SMALL, "strategy": "native"}]}}


def test_discuss_run_prints_turns_saves_the_transcript_and_logs_to_mlflow(scripted, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MLflow puts a SQLite store's artifacts under ./mlruns
    scripted.script(SMALL, "Please run it.")
    scripted.script(LARGE, call("run_python", code="print(6)"), "It printed 6.")
    config, out = write(tmp_path / "talk.json", DISCUSSION), tmp_path / "out.json"
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert toolsel("discuss", "run", config, "--out", out, "--verbose", "--no-cache", "--tracking-uri", uri) == 0
    printed = capsys.readouterr().out
    assert "model2 -> run_python" in printed and "ok:" in printed  # --verbose: the call as it happens
    assert "[model2 / assistant] It printed 6." in printed and "1 tool call(s)" in printed
    assert "| turn | agent | role | tool_calls |" in printed
    assert json.loads(out.read_text())["status"] == "complete"
    assert scripted.made and all(options["cache"] is False for _, options in scripted.made)  # --no-cache
    import mlflow

    mlflow.set_tracking_uri(uri)
    (run,) = mlflow.search_runs(experiment_names=["tool-selection"], output_format="list")
    assert run.data.tags["kind"] == "discussion" and run.data.metrics["tool_calls"] == 1.0
    assert run.data.metrics["model2.tool_calls"] == 1.0 and run.data.params["tools"] == "code_execution"


def test_debate_run_then_show(scripted, tmp_path, capsys):
    scripted.script(LARGE, call("context_search", term="x"), call("context_search", term="y"), "p", "c", "r")
    scripted.script(SMALL, "p", "c", "r")
    config, state = write(tmp_path / "debate.json", DEBATE), tmp_path / "state.json"
    assert toolsel("debate", "run", config, "--state", state, "--rounds", "1", "--no-mlflow") == 0
    printed = capsys.readouterr().out
    assert "round 1 proposal: [architect / architect] p" in printed and "limit hit" in printed
    assert toolsel("debate", "show", state) == 0
    shown = capsys.readouterr().out
    assert "status: complete; 3 of 3 phases done" in shown
    row = next(line for line in shown.splitlines() if line.startswith("| architect | proposal |"))
    assert "| 1 | 1 | 2 | 0 | 1 | 3 |" in row and "context_search x2" in row  # 2 calls, limit hit, 3 iterations
    assert toolsel("debate", "show", state, "--by", "contribution", "--json") == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 6 and rows[0]["limit_hits"] == 1 and rows[0]["stop"] == "call_limit"


def test_debate_run_resumes_and_says_so(scripted, tmp_path, capsys):
    scripted.script(LARGE, "p", "c", "r")
    scripted.script(SMALL, "p", "c", "r")
    config, state = write(tmp_path / "debate.json", DEBATE), tmp_path / "state.json"
    assert toolsel("debate", "run", config, "--state", state, "--no-mlflow") == 0
    capsys.readouterr()
    assert toolsel("debate", "run", config, "--state", state, "--no-mlflow") == 0
    assert "resuming" in capsys.readouterr().out and len(scripted.llama(LARGE).calls) == 3  # nothing left to do


def test_errors_are_one_line(tmp_path, capsys):
    assert toolsel("debate", "show", tmp_path / "missing.json") == 2
    assert "DebateState file" in capsys.readouterr().out
    bad = write(tmp_path / "bad.json", {"debate": {"topic": "x", "agents": []}})
    assert toolsel("debate", "run", bad, "--no-mlflow") == 2
    assert "debate.agents: List should have at least 2 items" in capsys.readouterr().out
    assert toolsel("discuss", "run", tmp_path / "nope.yaml") == 2
    assert "does not exist" in capsys.readouterr().out


def test_default_state_path_and_positive_rounds():
    from tool_selection.conversations.debate import default_state_path

    assert default_state_path("examples/debate.json") == Path("runs/debate-debate/state.json")
    with pytest.raises(SystemExit):
        toolsel("debate", "run", "x.json", "--rounds", "0")


def test_grouped_rows_and_totals():
    from tool_selection.conversations import DebateState, load_debate_config
    from tool_selection.conversations.speaker import TurnMetadata
    from tool_selection.conversations.state import Contribution
    from tool_selection.transcript import CallRecord

    state = DebateState.start(load_debate_config(DEBATE))
    for who, calls, limit in (("architect", ["context_search", "context_search"], True), ("critic", [], False)):
        meta = TurnMetadata(model=SMALL, tool_calls=[CallRecord(id="c", tool_name=n, arguments={}, ok=False)
                                                     for n in calls],
                            iterations=len(calls) + 1, tool_call_limit=2, limit_hit=limit, stop_reason="answered",
                            tokens={SMALL: {"input": 10, "output": 2}}, seconds=1.26, cpu_seconds=0.5)
        state.round(1).contributions.append(Contribution(agent_id=who, agent_name=who, agent_role=who,
                                                         type="proposal", content="x", metadata=meta))
    rows = debate_rows(state)
    assert grouped(rows, ("phase",)) == [{"phase": "proposal", "contributions": 2, "answered": 2, "tool_calls": 2,
                                          "failed_calls": 2, "limit_hits": 1, "iterations": 4, "escalations": 0,
                                          "tokens_in": 20, "tokens_out": 4, "seconds": 2.6, "cpu_seconds": 1.0,
                                          "tools": {"context_search": 2}}]
    assert totals(rows)["limit_hits"] == 1
    assert format_table(rows[:1], ("agent", "tools")).splitlines()[-1] == "| architect | context_search x2 |"


def test_entry_points_are_declared_and_resolve():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    commands = project["entry-points"]["tool_selection.commands"]
    tool_sets = project["entry-points"]["tool_selection.tool_sets"]
    assert commands["discuss"] == "tool_selection.conversations.cli:register_discuss"
    assert commands["debate"] == "tool_selection.conversations.cli:register_debate"
    assert tool_sets["vision"] == "tool_sets.vision:TOOL_SET"
    for target in (commands["discuss"], commands["debate"], tool_sets["vision"]):
        module, _, attribute = target.partition(":")
        assert getattr(import_module(module), attribute)
    assert any(dependency.startswith("pillow") for dependency in project["dependencies"])


def test_python_dash_m_runs_the_same_commands(tmp_path, capsys):
    from tool_selection.conversations.__main__ import main

    assert main(["debate", "show", str(tmp_path / "missing.json")]) == 2
    assert "toolsel: error: DebateState file" in capsys.readouterr().err
    assert main([]) == 0 and "discuss" in capsys.readouterr().out
