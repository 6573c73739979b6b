"""Bad input is one clear `toolsel: error:` line (exit 2) before any work starts, never a traceback: the list a
careless user walked, case by case."""

import json

import pytest

from tool_selection.cli import main
from tool_selection.collaboration import load_collaboration_config
from tool_selection.errors import ToolSelectionError


def _suite(tmp_path, cases, name="s.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    return str(path)


CASE = {"id": "c1", "request": "What time is it in Oslo?", "tool_set": "datetime", "tags": ["single"],
        "split": "train", "expected_calls": [{"tool_name": "get_current_time", "arguments": {"timezone": "Europe/Oslo"}}]}


def _bad_inputs(tmp_path):
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"id": "caf\xe9"}\n')
    (tmp_path / "folder.jsonl").mkdir()
    not_json, pickle = tmp_path / "program.json", tmp_path / "program.pkl"
    not_json.write_text("this is not JSON")
    pickle.write_bytes(b"\x80\x04\x95cos\nsystem\n.")
    a_file = tmp_path / "results"
    a_file.write_text("occupied")
    only_train = _suite(tmp_path, [CASE])
    unknown_tool = _suite(tmp_path, [{**CASE, "expected_calls": [{"tool_name": "get_weather", "arguments": {}}]}],
                          "unknown_tool.jsonl")
    unknown_arg = _suite(tmp_path, [{**CASE, "expected_calls": [{"tool_name": "get_current_time",
                                                                  "arguments": {"zone": "UTC"}}]}], "unknown_arg.jsonl")
    unknown_set = _suite(tmp_path, [{**CASE, "tool_set": "weather"}], "unknown_set.jsonl")
    eval_ = ["eval", "--no-mlflow", "--suite"]
    return {
        "n-ctx hosted": (eval_ + ["treasure_hunt", "--model", "openai/gpt-4o-mini", "--n-ctx", "8192"],
                         "n_ctx=8192 (--n-ctx) is the context of a local model (local:...); 'openai/gpt-4o-mini' is "
                         "not one"),
        "empty split": (eval_ + [only_train, "--split", "test"], "has no cases in split 'test'"),
        "program missing": (eval_ + ["treasure_hunt", "--program", str(tmp_path / "absent.json")], "is missing"),
        "program not JSON": (eval_ + ["treasure_hunt", "--program", str(not_json)], "is not valid JSON"),
        "program pickle": (eval_ + ["treasure_hunt", "--program", str(pickle)], "is not valid JSON"),
        "run dir a file": (eval_ + [only_train, "--split", "train", "--run-dir", str(a_file)], "is a file"),
        "bogus tracking": (["eval", "--suite", "treasure_hunt", "--tracking-uri", "bogus://x"],
                           "MLflow cannot use the tracking URI 'bogus://x'"),
        "suite nested deep": (eval_ + [str(deep)], "nested deeper than"),
        "suite not UTF-8": (eval_ + [str(latin)], "not UTF-8"),
        "suite a directory": (eval_ + [str(tmp_path / "folder.jsonl")], "is a directory"),
        "expected tool not in set": (eval_ + [unknown_tool], "expected tool 'get_weather' is not among its tools"),
        "expected argument not taken": (eval_ + [unknown_arg], "takes no argument(s) ['zone']"),
        "unknown tool set": (eval_ + [unknown_set], "Unknown tool set 'weather'"),
        "retrieve past every catalog": (eval_ + ["treasure_hunt", "--retrieve", "100000"],
                                        "retrieve=100000 (--retrieve) keeps every tool of every case"),
        "rerank without retrieve": (eval_ + ["treasure_hunt", "--rerank", "20"], "give retrieve (--retrieve) too"),
        "rerank not deeper": (eval_ + ["treasure_hunt", "--retrieve", "5", "--rerank", "3"], "must exceed retrieve=5"),
        "thresholds too fine": (["bench", "stuck", "--suite", "treasure_hunt", "--no-mlflow", "--thresholds",
                                 "0:1:1e-9", "--pair", "local:qwen2.5-coder-0.5b,local:qwen2.5-coder-1.5b"],
                                "over 1000 thresholds"),
        "no API key": (["optimize", "--suite", "treasure_hunt", "--no-mlflow", "--model", "openai/gpt-4o-mini"],
                       "needs OPENAI_API_KEY in the environment"),
    }


@pytest.mark.parametrize("name", [
    "n-ctx hosted", "empty split",
    "program missing", "program not JSON", "program pickle", "run dir a file", "bogus tracking", "suite nested deep", "suite not UTF-8",
    "suite a directory", "expected tool not in set", "expected argument not taken", "unknown tool set",
    "retrieve past every catalog", "rerank without retrieve", "rerank not deeper",
    "thresholds too fine", "no API key"])
def test_bad_input_is_one_clear_line(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for key in ("OPENAI_API_KEY", "OPENAI_API_BASE"):
        monkeypatch.delenv(key, raising=False)
    argv, message = _bad_inputs(tmp_path)[name]
    assert main(argv) == 2, name
    err = capsys.readouterr().err
    assert err.startswith("toolsel: error: ") and "Traceback" not in err, err
    assert message in err, err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("results.jsonl"))


@pytest.mark.parametrize(("argv", "message"), [
    (["eval", "--threads", "0"], "argument --threads: 0 is out of range: give a number from 1 to 256"),
    (["eval", "--threads", "-3"], "argument --threads: -3 is out of range"),
    (["eval", "--serve", "0"], "argument --serve: 0 is out of range: give a number from 1 to 64"),
    (["eval", "--max-tokens", "-5"], "argument --max-tokens: -5 is out of range"),
    (["eval", "--n-ctx", "100"], "argument --n-ctx: 100 is out of range: give a number from 256 to 131,072"),
    (["eval", "--retrieve", "5", "--rerank", "0"], "argument --rerank: 0 is out of range: give a number at least 1"),
    (["eval", "--threads", "two"], "argument --threads: 'two' is not a whole number"),
    (["optimize", "--train-limit", "-1"], "argument --train-limit: -1 is out of range"),
])
def test_a_number_out_of_range_is_refused_by_the_parser(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("content", [b"collaboration:\n" + b"  - " * 5000 + b"x\n", b"collaboration: caf\xe9\n", None])
def test_a_bad_collaboration_config_is_a_clear_error(tmp_path, content):
    path = tmp_path / "collab.yaml"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    with pytest.raises(ToolSelectionError) as raised:
        load_collaboration_config(path)
    assert str(path) in str(raised.value)


@pytest.mark.parametrize("argv", [
    ["eval", "--no-mlflow", "--suite", "treasure_hunt", "--strategy", "gate+native", "--gate-threshold", "nan"],
    ["eval", "loop", "--threshold", "NaN"],
])
def test_a_nan_threshold_is_refused_naming_its_flag(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    flag = argv[argv.index("nan" if "nan" in argv else "NaN") - 1]
    assert exited.value.code == 2 and f"argument {flag}: " in err and "is not a number" in err, err
    assert not (tmp_path / "runs").exists()


def test_infinite_thresholds_stay_allowed():
    """-inf opens the gate (every case scored and selected), as 'toolsel bench gate' needs."""
    from tool_selection.flags import threshold

    assert threshold("-inf") == float("-inf") and threshold("inf") == float("inf") and threshold("0.5") == 0.5


def test_a_server_of_ones_own_that_does_not_answer_stops_the_run_before_any_case(tmp_path, monkeypatch, capsys):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"  # closed once the probe is
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_BASE", url)
    monkeypatch.setenv("OPENAI_API_KEY", "not-needed")
    assert main(["eval", "--no-mlflow", "--suite", "finance", "--model", "openai/any-name"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"toolsel: error: No model server answers at {url} (") and "OPENAI_API_BASE" in err, err
    assert not (tmp_path / "runs").exists()


def test_a_run_where_no_case_reached_the_model_exits_non_zero(capsys):
    import pandas as pd

    from evals.eval_report import every_call_failed as _every_call_failed

    failed = pd.DataFrame({"error": [1.0, 1.0], "error_message": ["APIConnectionError: Connection error.", "x"]})
    assert _every_call_failed(failed) == 1
    assert "every model call failed" in capsys.readouterr().err
    assert _every_call_failed(failed.assign(error=[1.0, 0.0])) == 0
    assert _every_call_failed(failed.iloc[:0]) == 0


def _benchmark_mistakes(tmp_path):
    from evals.benchmarks.mistakes import mistakes

    return mistakes(tmp_path)


@pytest.mark.parametrize("index", range(20))
def test_each_mistake_the_speed_benchmark_times_is_a_clear_error(index, tmp_path, monkeypatch, capsys):
    """The twenty slips evals/benchmarks/mistakes.py times (docs/results/errors.md) stay one clear error each, in
    a fresh folder; how fast they answer is the benchmark's figure, not an assertion here."""
    monkeypatch.chdir(tmp_path)
    name, argv, environment = _benchmark_mistakes(tmp_path)[index]
    for key in ("OPENAI_API_BASE", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(key, raising=False)
    for key, value in environment.items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)
    try:
        code = main(argv)
    except SystemExit as exited:  # argparse's own refusals exit from the parser
        code = exited.code
    err = capsys.readouterr().err
    assert code == 2, (name, err)
    assert "error: " in err and "Traceback" not in err, (name, err)
