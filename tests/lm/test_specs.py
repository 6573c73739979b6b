"""Model specs: the one way to name a model in the CLI, config files and Python."""

import pytest

from tool_selection.errors import ToolSelectionError
from tool_selection.lm import ModelSpec, ModelSpecError


@pytest.mark.parametrize(("text", "kind", "target"), [
    ("local:qwen2.5-coder-0.5b", "catalog", "qwen2.5-coder-0.5b"),
    ("local:qwen2.5-coder-1.5b", "catalog", "qwen2.5-coder-1.5b"),
    ("  LOCAL:Qwen2.5-Coder-0.5B ", "catalog", "qwen2.5-coder-0.5b"),
    ("local:/models/my model.gguf", "file", "/models/my model.gguf"),
    ("local:tiny.GGUF", "file", "tiny.GGUF"),
    ("local:./models/tiny.gguf", "file", "models/tiny.gguf"),
    ("openai/gpt-4o-mini", "dspy", "openai/gpt-4o-mini"),
    ("ollama_chat/qwen2.5", "dspy", "ollama_chat/qwen2.5"),
    ("openai/Qwen/Qwen2.5-7B-Instruct", "dspy", "openai/Qwen/Qwen2.5-7B-Instruct"),
    ("gpt-4o-mini", "dspy", "gpt-4o-mini"),
])
def test_valid_specs(text, kind, target):
    spec = ModelSpec.parse(text)
    assert (spec.kind, spec.target) == (kind, target)
    assert spec.is_local == (kind != "dspy")
    assert ModelSpec.parse(str(spec)) == spec  # the canonical text parses back to the same spec


def test_home_directory_is_expanded(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ModelSpec.parse("local:~/m.gguf").target == str(tmp_path / "m.gguf")


@pytest.mark.parametrize(("text", "expected"), [
    ("", "non-empty"),
    ("   ", "non-empty"),
    ("local:", "names no model"),
    ("local:  ", "names no model"),
    ("local:unknown-model", "Unknown embedded model 'unknown-model'"),
    ("local:/models/readme.txt", "must be a GGUF file ending in .gguf"),
    ("openai/", "needs both a provider and a model id"),
    ("/gpt-4o", "needs both a provider and a model id"),
    ("gpt 4o", "contains whitespace"),
    ("local/qwen2.5-coder-0.5b", "written with a colon, 'local:qwen2.5-coder-0.5b'"),
])
def test_malformed_specs_name_the_problem(text, expected):
    with pytest.raises(ModelSpecError) as caught:
        ModelSpec.parse(text)
    assert expected in str(caught.value)
    assert isinstance(caught.value, ToolSelectionError) and isinstance(caught.value, ValueError)


def test_unknown_local_model_lists_known_names_and_suggests():
    with pytest.raises(ModelSpecError) as caught:
        ModelSpec.parse("local:qwen2.5-coder-0.5")
    message = str(caught.value)
    assert "Known: qwen2.5-coder-0.5b, qwen2.5-coder-1.5b" in message
    assert "Did you mean 'local:qwen2.5-coder-0.5b'" in message
    assert "local:/path/to/model.gguf" in message


def test_empty_local_spec_lists_known_names():
    with pytest.raises(ModelSpecError, match="qwen2.5-coder-0.5b, qwen2.5-coder-1.5b"):
        ModelSpec.parse("local:")


def test_non_string_spec_is_refused():
    with pytest.raises(ModelSpecError, match="non-empty string"):
        ModelSpec.parse(None)
