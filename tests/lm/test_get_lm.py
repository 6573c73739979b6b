"""get_lm: one spec in, a dspy.LM out."""

import dspy
import pytest

from tool_selection.lm import (
    LocalEngine,
    LocalEngineError,
    LocalEngineOptions,
    ModelFileError,
    ModelSpecError,
    get_lm,
)
from tool_selection.lm import engine as engine_module


def test_hosted_specs_become_plain_dspy_lms():
    lm = get_lm("openai/gpt-4o-mini", max_tokens=128, logprobs=True, api_base="http://localhost:8000/v1")
    assert isinstance(lm, dspy.LM) and lm.model == "openai/gpt-4o-mini" and lm.engine == "auto"
    assert lm.kwargs["temperature"] == 0.0 and lm.kwargs["max_tokens"] == 128
    assert lm.kwargs["logprobs"] is True and lm.kwargs["api_base"] == "http://localhost:8000/v1"
    assert lm.cache is True
    assert "logprobs" not in get_lm("ollama_chat/qwen2.5", cache=False).kwargs


def test_local_only_options_are_refused_for_hosted_models():
    with pytest.raises(ModelSpecError, match=r"\['n_ctx'\] apply to local models"):
        get_lm("openai/gpt-4o-mini", local=LocalEngineOptions(n_ctx=8192))


def test_the_former_local_keywords_are_refused():
    with pytest.raises(TypeError, match=r"get_lm\(\) got an unexpected keyword argument 'n_ctx': give "
                                        r"local=LocalEngineOptions\(n_ctx=...\)"):
        get_lm("openai/gpt-4o-mini", n_ctx=8192)
    with pytest.raises(TypeError, match="'n_threads'"):
        get_lm("local:qwen2.5-coder-0.5b", local=LocalEngineOptions(), n_threads=2)


def test_a_catalog_model_is_assembled_and_wrapped_without_loading(tiny_model, installed_parts, model_dir):
    pytest.importorskip("llama_cpp")
    lm = get_lm("local:tiny", constrained=True, logprobs=True, cache=False)
    engine = lm.engine
    assert isinstance(engine, LocalEngine) and lm.model == "local:tiny" and engine.spec == "local:tiny"
    assert engine.model_path == model_dir / "tiny.gguf" and engine.model_path.is_file()
    assert engine.settings.n_ctx == 512  # the catalog's setting
    assert not any(path == str(engine.model_path) for path, _ in engine_module._LOADED)  # loaded on first call
    assert lm.kwargs["logprobs"] is True and lm.num_retries == 0 and lm.cache is False
    assert lm.supports_response_schema
    assert get_lm("local:tiny", local=LocalEngineOptions(n_ctx=1024)).engine.settings.n_ctx == 1024


def test_a_missing_model_file_is_a_clear_error(tmp_path, model_dir):
    pytest.importorskip("llama_cpp")
    with pytest.raises(ModelFileError, match="does not exist"):
        get_lm(f"local:{tmp_path / 'absent.gguf'}")


def test_missing_llama_cpp_names_the_extra(tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(LocalEngineError, match=r"pip install 'tool-selection\[local\]'"):
        get_lm(f"local:{gguf}")


def test_malformed_specs_fail_before_anything_is_built():
    with pytest.raises(ModelSpecError, match="names no model"):
        get_lm("local:")
