"""What a local completion leaves behind for the stuck detectors: each generated token's score, and the prompt
tokens reused from the KV cache. Light (no llama.cpp), so that the engine and ``tracing`` both import it."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["GenerationTrace", "TokenScore"]


@dataclass(frozen=True)
class TokenScore:
    """One generated token: its id, bytes and log-probability, and the top alternatives as (bytes, logprob)."""

    id: int
    piece: bytes
    logprob: float
    top: tuple[tuple[bytes, float], ...] = ()


@dataclass
class GenerationTrace:
    """What one completion did, filled in by the model object (``TracingLlama``) while it is set as its ``trace``:
    prompt tokens reused from the KV cache and, unless ``top_logprobs`` is None, each generated token's score."""

    top_logprobs: int | None = None
    reused_tokens: int = 0
    tokens: list[TokenScore] = field(default_factory=list)
