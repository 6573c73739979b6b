"""Fixtures for the LM layer: fake part packages, a tiny catalog model, a fake llama.cpp model."""

from __future__ import annotations

import hashlib
import importlib.metadata
from pathlib import Path, PurePosixPath

import pytest
import yaml

from tool_selection.lm import CATALOG_ENV, MODEL_DIR_ENV

PART_VERSION = "1.0"
PARTS = [b"GGUF" + bytes(range(200)) * 3, bytes(range(255, 0, -1)) * 2, b"tail of the model"]
PACKAGES = [f"tiny-part{i}" for i in range(1, len(PARTS) + 1)]


class FakeDistribution:
    """What assembly reads from an installed part package: version, file list, file locations."""

    def __init__(self, root: Path, package: str, version: str, files: dict[str, bytes]):
        self.version = version
        self._root = root / package
        self.files = []
        for name, data in files.items():
            path = self._root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            self.files.append(PurePosixPath(name))
        self.files.append(PurePosixPath(package.replace("-", "_") + "/__init__.py"))

    def locate_file(self, name) -> Path:
        return self._root / str(name)


@pytest.fixture
def model_dir(tmp_path, monkeypatch) -> Path:
    directory = tmp_path / "models"
    monkeypatch.setenv(MODEL_DIR_ENV, str(directory))
    return directory


@pytest.fixture
def tiny_model(tmp_path, monkeypatch, model_dir):
    """A catalog model 'tiny' whose file is split over three fake installed packages."""
    data = b"".join(PARTS)
    entry = {"description": "a test model", "file": "tiny.gguf", "size": len(data),
             "sha256": hashlib.sha256(data).hexdigest(), "n_ctx": 512,
             "parts": {"packages": PACKAGES, "version": PART_VERSION, "path": "data/part{index:02d}.bin"},
             "hub": {"repo": "example/tiny-GGUF", "file": "tiny.gguf"},
             "cost": {"input_per_1k": 0.001, "output_per_1k": 0.002}}
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(yaml.safe_dump({"local": {"tiny": entry}}))
    monkeypatch.setenv(CATALOG_ENV, str(catalog))
    from tool_selection.lm import load_catalog

    return load_catalog().local["tiny"]


@pytest.fixture
def installed_parts(tmp_path, monkeypatch):
    """Install the tiny model's parts as fake distributions; returns {package: FakeDistribution}."""
    root = tmp_path / "site-packages"
    installed = {package: FakeDistribution(root, package, PART_VERSION,
                                           {f"{package.replace('-', '_')}/data/part{i:02d}.bin": part})
                 for i, (package, part) in enumerate(zip(PACKAGES, PARTS, strict=True), start=1)}
    real = importlib.metadata.distribution

    def distribution(name):
        if name in installed:
            return installed[name]
        if name.startswith("tiny-part"):
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", distribution)
    return installed


class FakeLlama:
    """A scripted stand-in for ``llama_cpp.Llama``, in the manner of DSPy's DummyEngine: it answers with the next
    scripted text, records each call, and fills the engine's trace as ``TracingLlama`` does (reused prompt
    tokens; one score per generated token, the end-of-sequence token included)."""

    def __init__(self, answers=(), *, prompt_tokens=120, reused_tokens=7, finish_reason="stop", extra_tokens=(),
                 refuses=lambda grammar_text: False):
        self.answers = list(answers)
        self.refuses = refuses
        self.prompt_tokens, self.reused_tokens = prompt_tokens, reused_tokens
        self.finish_reason, self.extra_tokens = finish_reason, list(extra_tokens)
        self.calls = []
        self.trace = None

    def accepts_grammar(self, grammar) -> bool:
        return not self.refuses(grammar._grammar)

    def create_chat_completion(self, messages, grammar=None, **options):
        from tool_selection.lm.engine import TokenScore

        self.calls.append({"messages": messages, "grammar": grammar, **options})
        text = self.answers.pop(0) if self.answers else "No more responses"
        pieces = [text[i:i + 3] for i in range(0, len(text), 3)]
        if self.trace is not None:
            self.trace.reused_tokens = self.reused_tokens
            if self.trace.top_logprobs is not None:
                generated = pieces + self.extra_tokens + [""]  # the end-of-sequence token scores too
                for index, piece in enumerate(generated):
                    top = tuple((f"alt{k}".encode(), -1.0 - k) for k in range(self.trace.top_logprobs))
                    self.trace.tokens.append(TokenScore(index, piece.encode(), -0.01 * (index + 1), top))
        return {"id": f"chatcmpl-{len(self.calls)}", "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": self.finish_reason}],
                "usage": {"prompt_tokens": self.prompt_tokens, "completion_tokens": len(pieces),
                          "total_tokens": self.prompt_tokens + len(pieces)}}


@pytest.fixture
def fresh_cache(monkeypatch):
    """An empty in-memory DSPy response cache for the test."""
    import dspy
    from dspy.clients.cache import Cache

    monkeypatch.setattr(dspy, "cache", Cache(enable_disk_cache=False, enable_memory_cache=True, disk_cache_dir=None))
    return dspy.cache


@pytest.fixture
def make_lm(tmp_path, fresh_cache):
    """``make_lm(answers, **lm_kwargs)`` -> (dspy.LM over a LocalEngine with a FakeLlama, the FakeLlama)."""
    import dspy

    from tool_selection.lm import LocalEngine
    from tool_selection.lm.engine import AsyncLocalEngine

    def make(answers=(), *, constrained=False, llama=None, **kwargs):
        llama = llama or FakeLlama(answers)
        engine = LocalEngine(tmp_path / "fake.gguf", constrained=constrained, llama=llama, spec="local:fake")
        kwargs = {"temperature": 0.0, "max_tokens": 64, "num_retries": 0, **kwargs}
        return dspy.LM("local:fake", engine=engine, async_engine=AsyncLocalEngine(engine), **kwargs), llama

    return make


STAGED_TEMPLATE = ("{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}"
                   "{% if tools %}<tools>{% for t in tools %}{{ t.function.name }};{% endfor %}</tools>\n{% endif %}"
                   "<assistant>")


class StagedLlama:
    """A scripted llama with one token per character: each completion writes the next scripted stage, a free stage
    stopping where the stopping criterion says (as llama.cpp checks it, after each token), a grammar stage whole."""

    def __init__(self, stages):
        self.stages = list(stages)
        self.calls = []
        self.metadata = {"tokenizer.chat_template": STAGED_TEMPLATE}

    def token_eos(self):
        return -1

    def token_bos(self):
        return -1

    def accepts_grammar(self, grammar):
        return True

    def tokenize(self, data: bytes, add_bos=True, special=False):
        return [ord(c) for c in data.decode("utf-8")]

    def detokenize(self, tokens, prev_tokens=None, special=False):
        return "".join(chr(t) for t in tokens).encode("utf-8")

    def create_completion(self, prompt, *, max_tokens, stop=None, stopping_criteria=None, grammar=None, **options):
        self.calls.append({"prompt": self.detokenize(prompt).decode(), "grammar": grammar, "max_tokens": max_tokens,
                           "stop": stop, **options})
        script = self.stages.pop(0) if self.stages else ""
        ids, written, opened = list(prompt), "", False
        for char in script:
            if len(written) == max_tokens:
                break
            written += char
            ids.append(ord(char))
            self._score(char)
            if grammar is None and stopping_criteria is not None and stopping_criteria(ids, None):
                opened = True
                break
        finish = "length" if len(written) < len(script) and len(written) == max_tokens else "stop"
        if finish == "stop" and not opened:
            self._score("")  # the end-of-sequence token, scored as llama.cpp yields it
        return {"choices": [{"text": written, "finish_reason": finish}],
                "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(written)}}


    trace = None

    def _score(self, piece: str):
        from tool_selection.lm.engine import TokenScore

        if self.trace is not None:
            self.trace.tokens.append(TokenScore(len(self.trace.tokens), piece.encode(), -0.1))


def staged_lm(tmp_path, stages, *, max_tokens=200):
    """(dspy.LM, StagedLlama): a local model whose chat template renders tools, answering ``stages``."""
    import dspy

    from tool_selection.lm import LocalEngine

    llama = StagedLlama(stages)
    engine = LocalEngine(tmp_path / "m.gguf", llama=llama)
    engine.supports_native_tools = lambda: True
    return dspy.LM("local:fake", engine=engine, cache=False, temperature=0.0, max_tokens=max_tokens), llama
