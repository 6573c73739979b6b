"""The smoke completion that runs before the first real use of the local engine, and its clear error."""

import json

import pytest

from tool_selection.cli import main
from tool_selection.lm import engine_check
from tool_selection.lm.engine_check import EngineCheckError, check_engine, require_working_engine, smoke_test

SEGFAULT = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
PASSES = "print('{\"text\": \" Paris\"}')"
FAILS = "raise SystemExit('no such model file')"


@pytest.fixture
def checks(tmp_path, monkeypatch):
    """Verdicts cached in a temporary folder for a fixed build id; ``checks.use(script)`` sets the child's code
    and counts the children started."""
    monkeypatch.setattr(engine_check, "_verdict_dir", lambda: tmp_path / "verdicts")
    monkeypatch.setattr(engine_check, "engine_build_id", lambda: "build-1")
    real = engine_check.smoke_test

    class Checks:
        runs = 0

        def use(self, script):
            def run(model_path, **kwargs):
                Checks.runs += 1
                return real(model_path, script=script)

            monkeypatch.setattr(engine_check, "smoke_test", run)

    return Checks()


def test_a_child_killed_by_a_signal_is_reported_by_name():
    verdict = smoke_test("model.gguf", script=SEGFAULT)
    assert not verdict.ok and verdict.signal == "SIGSEGV" and "killed by SIGSEGV" in verdict.detail


def test_a_crash_gives_one_clear_error_with_the_cause_and_the_rebuild_command(checks):
    checks.use(SEGFAULT)
    with pytest.raises(EngineCheckError) as raised:
        require_working_engine("model.gguf")
    message = str(raised.value)
    assert "The local engine crashed: the child process was killed by SIGSEGV" in message
    assert "nothing was written" in message and "AMX" in message
    assert "`make engine`" in message and "toolsel doctor" in message
    with pytest.raises(EngineCheckError):
        require_working_engine("model.gguf")
    assert checks.runs == 1  # the crash verdict is cached for this build


def test_a_passing_verdict_is_cached_per_build(checks, monkeypatch):
    checks.use(PASSES)
    assert require_working_engine("model.gguf").ok
    assert check_engine("model.gguf").cached and checks.runs == 1
    monkeypatch.setattr(engine_check, "engine_build_id", lambda: "build-2")  # rebuilt: checked again
    assert not check_engine("model.gguf").cached and checks.runs == 2
    assert check_engine("model.gguf", recheck=True).ok and checks.runs == 3


def test_a_failure_that_is_not_a_crash_is_reported_but_not_cached(checks):
    checks.use(FAILS)
    with pytest.raises(EngineCheckError, match="did not pass: the child process failed .*no such model file"):
        require_working_engine("model.gguf")
    with pytest.raises(EngineCheckError):
        require_working_engine("model.gguf")
    assert checks.runs == 2


def test_load_model_checks_the_engine_before_it_loads(checks, tmp_path, monkeypatch):
    pytest.importorskip("llama_cpp")
    from tool_selection.lm import engine

    monkeypatch.setattr(engine, "_LOADED", {})
    checks.use(SEGFAULT)
    with pytest.raises(EngineCheckError, match="SIGSEGV"):
        engine.load_model(tmp_path / "m.gguf")
    assert engine._LOADED == {}


def test_toolsel_eval_stops_before_any_work_when_the_engine_crashes(checks, tmp_path, capsys):
    pytest.importorskip("llama_cpp")
    checks.use(SEGFAULT)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    run_dir = tmp_path / "run"
    code = main(["eval", "--suite", "treasure_hunt", "--model", f"local:{gguf}", "--run-dir", str(run_dir),
                 "--no-mlflow", "--limit", "2"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("toolsel: error: The local engine crashed") and "Traceback" not in err
    assert not (run_dir / "results.jsonl").exists()
    verdict = json.loads((tmp_path / "verdicts" / "build-1.json").read_text())
    assert verdict["signal"] == "SIGSEGV" and verdict["ok"] is False
