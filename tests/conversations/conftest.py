"""Scripted models for conversations: each model spec gets a ``FakeLlama`` behind the local engine (so the loop runs
the native strategies as with a real local model), answering its scripted texts in order; an exception in a
script is raised at that call (a kill, or a provider failure)."""

from __future__ import annotations

import json

import dspy
import pytest

from tests.lm.conftest import FakeLlama
from tool_selection.lm import LocalEngine


def call(name, **arguments):
    """A native tool call as a Qwen model writes it."""
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": arguments})}\n</tool_call>'


def guidance(text):
    """A secondary model's guidance, in the chat format the collaboration's WriteGuidance is asked in."""
    return f"[[ ## guidance ## ]]\n{text}\n\n[[ ## completed ## ]]"


class ScriptedLlama(FakeLlama):
    def create_chat_completion(self, messages, grammar=None, **options):
        if self.answers and isinstance(self.answers[0], BaseException):
            self.calls.append({"messages": messages, "grammar": grammar, **options})
            raise self.answers.pop(0)
        return super().create_chat_completion(messages, grammar=grammar, **options)


class ScriptedModels:
    """An ``lm_factory``: ``models.script(spec, *answers)``, then every LM made for ``spec`` answers them in order
    (one script per spec, whatever the temperature or token limit); ``models.llama(spec).calls`` records each
    call's messages."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.llamas: dict[str, ScriptedLlama] = {}
        self.made: list[tuple[str, dict]] = []

    def script(self, spec, *answers):
        self.llama(spec).answers.extend(answers)
        return self

    def llama(self, spec) -> ScriptedLlama:
        return self.llamas.setdefault(spec, ScriptedLlama())

    def __call__(self, spec, *, temperature=0.0, max_tokens=384, cache=True):
        self.made.append((spec, {"temperature": temperature, "max_tokens": max_tokens, "cache": cache}))
        name = spec.removeprefix("local:").replace("/", "_")
        engine = LocalEngine(self.tmp_path / f"{name}.gguf", llama=self.llama(spec), spec=spec, constrained=True)
        return dspy.LM(spec, engine=engine, cache=False, num_retries=0, temperature=temperature,
                       max_tokens=max_tokens)

    def messages(self, spec, index=-1) -> list[dict]:
        return self.llama(spec).calls[index]["messages"]


@pytest.fixture
def models(tmp_path) -> ScriptedModels:
    return ScriptedModels(tmp_path)


SMALL, LARGE = "local:qwen2.5-coder-0.5b", "local:qwen2.5-coder-1.5b"
