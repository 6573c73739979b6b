"""toolsel doctor: what it reports, and an exit code that is 0 only when the quick start has what it needs."""

import json

import pytest

from tool_selection import doctor
from tool_selection.cli import main
from tool_selection.doctor import Check
from tool_selection.lm.engine_check import EngineVerdict

REAL_CHECK_SMOKE = doctor.check_smoke


@pytest.fixture
def all_fine(monkeypatch):
    """Every check passes, without touching the machine; a test then breaks one."""
    fine = {
        "check_python": Check("python", "ok", "Python 3.11"),
        "check_packages": Check("packages", "ok", "dspy 3.4"),
        "check_cpu": Check("cpu", "info", "x86_64", required=False),
        "check_engine_build": Check("engine build", "ok", "portable build"),
        "check_system_info": Check("llama.cpp system info", "info", "AVX2 = 1", required=False),
        "check_models": [Check("model qwen2.5-coder-0.5b", "ok", "verified")],
        "check_bfcl": Check("bfcl-eval", "ok", "bfcl-eval 2026.3.23", required=False),
    }
    for name, result in fine.items():
        monkeypatch.setattr(doctor, name, lambda result=result: result)
    monkeypatch.setattr(doctor, "check_smoke", lambda recheck=False: Check("engine smoke test", "ok", "completed"))
    monkeypatch.setattr(doctor, "check_tracking", lambda uri=None: Check("mlflow store", "ok", "opens"))


def test_everything_fine_exits_0(all_fine, capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "[ok  ] engine smoke test" in out and "Everything the quick start needs is in place." in out


def test_a_crashing_engine_fails_with_the_rebuild_command(all_fine, monkeypatch, tmp_path, capsys):
    from tool_selection.lm import engine_check

    crash = EngineVerdict(False, "b1", "the child process was killed by SIGSEGV", signal="SIGSEGV")
    monkeypatch.setattr(engine_check, "check_engine", lambda path, recheck=False: crash)
    monkeypatch.setattr(doctor, "_version", lambda package: "0.3.36")
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    from tool_selection.lm import assemble

    status = assemble.ModelStatus(None, gguf, "verified", True)
    monkeypatch.setattr(assemble, "model_status", lambda name: status)
    monkeypatch.setattr(doctor, "check_smoke", REAL_CHECK_SMOKE)
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "[FAIL] engine smoke test" in out and "killed by SIGSEGV" in out and "fix: make engine" in out
    assert "Something the quick start needs is missing or broken" in out


def test_an_optional_warning_keeps_exit_0_but_a_required_failure_does_not(all_fine, monkeypatch, capsys):
    monkeypatch.setattr(doctor, "check_bfcl", lambda: Check("bfcl-eval", "warn", "not installed", "pip install",
                                                              required=False))
    assert main(["doctor"]) == 0
    assert "[warn] bfcl-eval" in capsys.readouterr().out
    monkeypatch.setattr(doctor, "check_tracking", lambda uri=None: Check("mlflow store", "fail", "bogus:// does "
                                                                          "not open", "Set MLFLOW_TRACKING_URI"))
    assert main(["doctor", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["healthy"] is False
    assert {"name": "mlflow store", "status": "fail", "detail": "bogus:// does not open",
            "fix": "Set MLFLOW_TRACKING_URI", "required": True} in report["checks"]


def test_a_missing_quick_start_model_fails_with_the_pull_command(monkeypatch, tmp_path):
    from tool_selection.lm import assemble

    monkeypatch.setenv("TOOLSEL_MODEL_DIR", str(tmp_path))
    checks = {c.name: c for c in doctor.check_models()}
    small = checks["model qwen2.5-coder-0.5b"]
    assert small.required and small.status == "fail" and "toolsel models pull qwen2.5-coder-0.5b" in small.fix
    assert not checks["model qwen2.5-coder-1.5b"].required
    assert assemble.model_status("qwen2.5-coder-0.5b").state == "missing"


def test_the_tracking_store_check_opens_the_store_or_names_the_problem(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fresh = doctor.check_tracking("sqlite:///mlflow.db")
    assert fresh.status == "ok" and "created on the first run" in fresh.detail
    assert not (tmp_path / "mlflow.db").exists()  # checking creates nothing
    bogus = doctor.check_tracking("bogus://nowhere")
    assert bogus.status == "fail" and "does not open" in bogus.detail and bogus.required


def test_the_engine_build_check_flags_a_native_build_with_amx(monkeypatch, tmp_path):
    from tool_selection.lm import engine_build

    lib = tmp_path / "llama_cpp" / "lib"
    lib.mkdir(parents=True)
    (lib / "libggml-cpu.so").write_bytes(b"...ggml_backend_amx_buffer_type...")
    native = engine_build.InstalledBuild("0.3.36", None, tmp_path / "llama_cpp")
    monkeypatch.setattr(engine_build, "installed_build", lambda: native)
    check = doctor.check_engine_build()
    assert check.status == "warn" and "pip's default (CPU-native) build" in check.detail
    assert "AMX kernels compiled in" in check.detail and check.fix.startswith("make engine")


@pytest.mark.local_model
def test_doctor_on_this_installation_passes():
    pytest.importorskip("llama_cpp")
    from tool_selection.lm.assemble import model_status

    if model_status("qwen2.5-coder-0.5b").state == "missing":
        pytest.skip("the 0.5B model is not assembled (toolsel models pull qwen2.5-coder-0.5b)")
    checks = {c.name: c for c in doctor.run_checks()}
    assert checks["engine smoke test"].status == "ok", checks["engine smoke test"].detail
    assert "AVX2 = 1" in checks["llama.cpp system info"].detail or checks["cpu"].detail.startswith("aarch64")


def test_doctor_says_whether_llama_server_is_built(tmp_path, monkeypatch):
    from tool_selection.doctor import check_server

    monkeypatch.delenv("TOOLSEL_LLAMA_SERVER", raising=False)
    monkeypatch.setenv("TOOLSEL_WHEEL_DIR", str(tmp_path))
    missing = check_server()
    assert missing.status == "info" and "make server" in missing.detail and not missing.required
    binary = tmp_path / "llama-server"
    binary.write_text("")
    monkeypatch.setenv("TOOLSEL_LLAMA_SERVER", str(binary))
    assert (check_server().status, check_server().detail) == ("ok", str(binary))
