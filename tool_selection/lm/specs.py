"""One way to name a model everywhere (CLI, config files, Python).

- ``local:NAME``: an embedded catalog model, e.g. ``local:qwen2.5-coder-0.5b``;
- ``local:/path/to/model.gguf``: any GGUF file, run in-process the same way;
- ``served:http://HOST:PORT``: a llama-server (``toolsel serve model NAME``), native tool calls included;
- anything else: a model string ``dspy.LM`` accepts (``openai/gpt-4o-mini``, ``ollama_chat/qwen2.5``, or
  ``openai/NAME`` with ``api_base=`` for vLLM or a llama.cpp server).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from tool_selection.errors import ToolSelectionError, close_matches

__all__ = ["LOCAL_PREFIX", "SERVED_PREFIX", "LocalEngineOptions", "ModelSpec", "ModelSpecError", "check_n_ctx"]

LOCAL_PREFIX = "local:"
SERVED_PREFIX = "served:"


class ModelSpecError(ToolSelectionError, ValueError):
    """A model spec is malformed or names no known model."""


@dataclass(frozen=True)
class LocalEngineOptions:
    """How a local model (``local:...``) is loaded, for ``get_lm`` and ``ModelServer``: the folder catalog models
    are assembled in (``model_dir``; default ``$TOOLSEL_MODEL_DIR`` or the user cache), the context in tokens
    (``n_ctx``; default the catalog's) and CPU threads (``n_threads``; default every core). None keeps the default."""

    model_dir: str | os.PathLike | None = None
    n_ctx: int | None = None
    n_threads: int | None = None

    def given(self) -> list[str]:
        """The names of the options set (not None), sorted."""
        return sorted(name for name, value in asdict(self).items() if value is not None)


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec. ``kind`` says what ``target`` is: a catalog name, a GGUF path, a server's address or a
    DSPy model string."""

    kind: Literal["catalog", "file", "served", "dspy"]
    target: str

    @classmethod
    def parse(cls, text: str) -> ModelSpec:
        """Parse ``text``; a malformed spec or an unknown embedded model raises ``ModelSpecError``."""
        if not isinstance(text, str) or not text.strip():
            raise ModelSpecError(f"A model spec must be a non-empty string, got {text!r}. {_forms()}")
        text = text.strip()
        if text.lower().startswith(LOCAL_PREFIX):
            return cls._parse_local(text, text[len(LOCAL_PREFIX):].strip())
        if text.lower().startswith(SERVED_PREFIX):
            address = text[len(SERVED_PREFIX):].strip().rstrip("/")
            if not address.startswith(("http://", "https://")) or len(address.split("//", 1)[1]) == 0:
                raise ModelSpecError(f"Model spec {text!r}: a served model is written served:http://HOST:PORT "
                                     "(the address 'toolsel serve model' prints).")
            return cls("served", address)
        if any(c.isspace() for c in text):
            raise ModelSpecError(f"Model spec {text!r} contains whitespace. {_forms()}")
        provider, slash, model = text.partition("/")
        if slash and (not provider or not model):
            raise ModelSpecError(f"Model spec {text!r} needs both a provider and a model id, e.g. "
                                 f"'openai/gpt-4o-mini'. {_forms()}")
        if provider.lower() == "local" and slash:
            raise ModelSpecError(f"Model spec {text!r}: embedded models are written with a colon, "
                                 f"'{LOCAL_PREFIX}{model}'.")
        return cls("dspy", text)

    @classmethod
    def of(cls, spec: str | ModelSpec) -> ModelSpec:
        """``spec`` parsed, or as it is when parsed already (where a string enters, it is parsed once)."""
        return spec if isinstance(spec, ModelSpec) else cls.parse(spec)

    @classmethod
    def _parse_local(cls, text: str, rest: str) -> ModelSpec:
        from tool_selection.lm.catalog import load_catalog

        known = sorted(load_catalog().local)
        if not rest:
            raise ModelSpecError(f"Model spec {text!r} names no model. Write local:NAME with one of: "
                                 f"{', '.join(known)}; or local:/path/to/model.gguf.")
        if _looks_like_path(rest):
            if not rest.lower().endswith(".gguf"):
                raise ModelSpecError(f"Model spec {text!r}: a local model file must be a GGUF file ending in .gguf.")
            return cls("file", str(Path(rest).expanduser()))
        name = rest.lower()
        if name not in known:
            suggestions = close_matches(name, known)
            hint = f" Did you mean {' or '.join(repr(LOCAL_PREFIX + s) for s in suggestions)}?" if suggestions else ""
            raise ModelSpecError(f"Unknown embedded model {rest!r} in spec {text!r}.{hint} Known: "
                                 f"{', '.join(known)}. A GGUF file is written local:/path/to/model.gguf.")
        return cls("catalog", name)

    @property
    def is_local(self) -> bool:
        """Whether the model runs in-process (a catalog model or a GGUF file)."""
        return self.kind in ("catalog", "file")

    def __str__(self) -> str:
        prefix = {"catalog": LOCAL_PREFIX, "file": LOCAL_PREFIX, "served": SERVED_PREFIX}.get(self.kind, "")
        return prefix + self.target


def _looks_like_path(rest: str) -> bool:
    return "/" in rest or "\\" in rest or rest.startswith(("~", ".")) or rest.lower().endswith(".gguf")


def _forms() -> str:
    return ("Use local:NAME (an embedded model), local:/path/to/model.gguf, served:http://HOST:PORT, or a DSPy model string such as "
            "'openai/gpt-4o-mini'.")


def check_n_ctx(model: str | ModelSpec, n_ctx: int | None) -> None:
    """Refuse a context size (``--n-ctx``) for a model that is not run here: only a local model is loaded with one."""
    if n_ctx is not None and not ModelSpec.of(model).is_local:
        raise ToolSelectionError(f"n_ctx={n_ctx} (--n-ctx) is the context of a local model (local:...); "
                                 f"{str(model)!r} is not one. Leave --n-ctx out.")
