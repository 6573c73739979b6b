"""Language models for the toolkit: one spec names any model, ``get_lm`` turns it into a ``dspy.LM``.

The embedded default runs offline and needs no API key: a small instruction-tuned GGUF model in-process on the
CPU (``local:qwen2.5-coder-0.5b``, ``local:qwen2.5-coder-1.5b``), through ``LocalEngine``. Any other model
string ``dspy.LM`` accepts works the same way (``openai/gpt-4o-mini``, ``ollama_chat/qwen2.5``, or
``openai/NAME`` with ``api_base=`` for a vLLM or llama.cpp server).

    lm = get_lm("local:qwen2.5-coder-0.5b", constrained=True)   # JSONAdapter answers always parse
    lm = get_lm("local:qwen2.5-coder-0.5b", logprobs=True)      # outputs carry token log-probabilities
    lm = get_lm("local:qwen2.5-coder-0.5b", local=LocalEngineOptions(n_ctx=8192))  # a longer context
"""

from __future__ import annotations

import os
from dataclasses import fields

from tool_selection._lazy import lazy_getattr
from tool_selection.defaults import DEFAULT_MAX_TOKENS

# LiteLLM fetches its price map from the network on import unless told not to; this toolkit runs offline
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from typing import TYPE_CHECKING

from tool_selection.lm.endpoint import EndpointError, api_base_set, check_endpoint, lm_endpoint, missing_key_error
from tool_selection.lm.specs import LocalEngineOptions, ModelSpec, ModelSpecError

if TYPE_CHECKING:
    import dspy

    from tool_selection.lm.assemble import MODEL_DIR_ENV, ModelFileError, default_model_dir, ensure_model
    from tool_selection.lm.catalog import CATALOG_ENV, CatalogError, load_catalog
    from tool_selection.lm.costs import model_cost
    from tool_selection.lm.engine import (  # noqa: F401 - lazy names outside __all__ too
        AsyncLocalEngine,
        LocalEngine,
        LocalEngineError,
        local_engine,
        unload_models,
    )
    from tool_selection.lm.server import ModelServer, ServedLM, ServerError, ServerOptions

# name -> module, loaded on first use (PEP 562): DSPy and llama.cpp load when a model is asked for, not with the
# package (so that 'toolsel models --help' stays fast)
_LAZY = {
    **dict.fromkeys(["MODEL_DIR_ENV", "ModelFileError", "default_model_dir", "ensure_model"],
                    "tool_selection.lm.assemble"),
    **dict.fromkeys(["CATALOG_ENV", "CatalogError", "load_catalog"], "tool_selection.lm.catalog"),
    "model_cost": "tool_selection.lm.costs",
    **dict.fromkeys(["AsyncLocalEngine", "LocalEngine", "LocalEngineError", "local_engine", "unload_models"],
                    "tool_selection.lm.engine"),
    **dict.fromkeys(["ModelServer", "ServedLM", "ServerError", "ServerOptions"], "tool_selection.lm.server"),
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


__all__ = [
    "CATALOG_ENV",
    "MODEL_DIR_ENV",
    "CatalogError",
    "EndpointError",
    "LocalEngine",
    "LocalEngineError",
    "LocalEngineOptions",
    "ModelFileError",
    "ModelSpec",
    "ModelSpecError",
    "ModelServer",
    "ServedLM",
    "ServerError",
    "ServerOptions",
    "default_model_dir",
    "ensure_model",
    "get_lm",
    "load_catalog",
    "model_cost",
    "prepare_lm",
    "unload_models",
]


def get_lm(spec: str | ModelSpec, *, temperature: float = 0.0, max_tokens: int = DEFAULT_MAX_TOKENS, cache: bool = True,
           constrained: bool = True, logprobs: bool = False, local: LocalEngineOptions | None = None,
           **kwargs) -> dspy.LM:
    """A ``dspy.LM`` for ``spec``.

    ``cache``: DSPy's response cache (a repeated call at temperature 0 makes no new model call).
    ``logprobs``: outputs carry token log-probabilities (DSPy puts them on each output as ``"logprobs"``, and on
    a ``Prediction`` as ``.logprobs``). ``constrained`` (default): for local models, tell DSPy's adapters that
    structured output is supported, so ``JSONAdapter`` sends the signature's JSON schema and llama.cpp enforces it
    with a grammar (hosted models use their provider's own structured outputs); the same default as the CLI, so a
    selector behaves alike in both. ``local`` (``LocalEngineOptions``: ``model_dir``, ``n_ctx``, ``n_threads``)
    applies to local models. Other keyword arguments go to ``dspy.LM`` (``api_base``, ``num_retries``).
    """
    import dspy

    from tool_selection.lm.engine import AsyncLocalEngine, LocalEngine

    _refuse_local_keywords(kwargs)
    local = local or LocalEngineOptions()
    parsed = ModelSpec.of(spec)
    if logprobs:
        kwargs["logprobs"] = True
    if not parsed.is_local:
        if local.given():
            raise ModelSpecError(f"{local.given()} apply to local models (local:...), not to {str(parsed)!r}.")
        if parsed.kind == "served":
            from tool_selection.lm.server import served_lm

            return served_lm(parsed.target, temperature=temperature, max_tokens=max_tokens, cache=cache, **kwargs)
        return dspy.LM(parsed.target, temperature=temperature, max_tokens=max_tokens, cache=cache, **kwargs)
    engine = LocalEngine.from_spec(parsed, model_dir=local.model_dir, n_ctx=local.n_ctx, n_threads=local.n_threads,
                                   constrained=constrained)
    kwargs.setdefault("num_retries", 0)  # a local failure is deterministic; retrying only repeats it
    return dspy.LM(engine.spec, engine=engine, async_engine=AsyncLocalEngine(engine), temperature=temperature,
                   max_tokens=max_tokens, cache=cache, **kwargs)


def _refuse_local_keywords(kwargs: dict) -> None:
    """A ``LocalEngineOptions`` field given as a keyword of its own would reach ``dspy.LM`` and be sent to the model:
    refused, with where it belongs."""
    for option in fields(LocalEngineOptions):
        if option.name in kwargs:
            raise TypeError(f"get_lm() got an unexpected keyword argument {option.name!r}: give "
                            f"local=LocalEngineOptions({option.name}=...)")


def prepare_lm(lm: dspy.BaseLM) -> None:
    """Load a local LM's model now, which proves the engine runs on this machine (``EngineCheckError`` if it
    cannot); other LMs are left as they are. Commands call it before any work, so a broken engine stops them
    before a result is written."""
    from tool_selection.lm.engine import local_engine

    engine = local_engine(lm)
    if engine is not None:
        engine.model  # noqa: B018 - loading is the point
    elif isinstance(getattr(lm, "model", None), str):
        _require_api_key(lm)
        if (endpoint := lm_endpoint(lm)) is not None:
            check_endpoint(endpoint)


def _require_api_key(lm: dspy.BaseLM) -> None:
    """A hosted model whose provider needs a key that the environment lacks stops here, not at its first call."""
    kwargs = getattr(lm, "kwargs", {}) or {}
    if kwargs.get("api_base") or kwargs.get("api_key"):
        return  # a server of one's own (vLLM, llama.cpp) or a key given in code
    try:
        import litellm

        missing = litellm.validate_environment(model=lm.model).get("missing_keys") or []
    except Exception:  # litellm does not know the provider: let the call itself say what is wrong
        return
    keys = [key for key in missing if key.endswith("_API_KEY")]
    if keys and not api_base_set():
        raise missing_key_error(lm.model, keys)
