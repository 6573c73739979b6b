"""A ``llama_cpp.Llama`` that reports what each completion did: how many prompt tokens came from the KV cache,
and, when asked, the log-probability of every generated token (and its top alternatives). It also checks a
grammar before use: llama.cpp crashes the process on a grammar it cannot parse.

llama-cpp-python returns log-probabilities only for models loaded with ``logits_all=True``, which keeps logits
for every prompt token (gigabytes at n_ctx=4096, and slower prompt processing). The logits of the token just
sampled are still in the context when ``generate`` yields it, so reading them there costs one softmax per
generated token and nothing per prompt token.
"""

from __future__ import annotations

import llama_cpp
import numpy as np
from llama_cpp._utils import suppress_stdout_stderr

from tool_selection.lm.generation_trace import GenerationTrace, TokenScore

__all__ = ["TracingLlama"]


class TracingLlama(llama_cpp.Llama):
    """``Llama`` whose ``generate`` fills ``self.trace`` (a ``GenerationTrace``) while one is set."""

    trace: GenerationTrace | None = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._grammar_checks: dict[str, bool] = {}

    def accepts_grammar(self, grammar: llama_cpp.LlamaGrammar) -> bool:
        """Whether llama.cpp can parse ``grammar`` (a grammar it cannot parse makes sampling crash the process).

        Checked once per grammar text; llama.cpp's parse error (which prints the whole grammar) is silenced.
        """
        checked = self._grammar_checks
        if grammar._grammar not in checked:
            with suppress_stdout_stderr(disable=False):
                sampler = llama_cpp.llama_sampler_init_grammar(
                    self._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"))
            if sampler:
                llama_cpp.llama_sampler_free(sampler)
            checked[grammar._grammar] = bool(sampler)
        return checked[grammar._grammar]

    def generate(self, tokens, *args, **kwargs):
        trace = self.trace
        if trace is None:
            return (yield from super().generate(tokens, *args, **kwargs))
        tokens = list(tokens)
        if kwargs.get("reset", True) and self.n_tokens > 0:
            reused = self.longest_token_prefix(self._input_ids.tolist(), tokens)
            trace.reused_tokens = min(reused, max(len(tokens) - 1, 0))
        for token in super().generate(tokens, *args, **kwargs):
            if trace.top_logprobs is not None:
                trace.tokens.append(self._score(token, trace.top_logprobs))
            yield token

    def _score(self, token: int, top: int) -> TokenScore:
        logits = np.ctypeslib.as_array(self._ctx.get_logits_ith(-1), shape=(self.n_vocab(),))
        peak = float(logits.max())
        log_norm = peak + float(np.log(np.exp(logits - peak, dtype=np.float64).sum()))
        alternatives: tuple[tuple[bytes, float], ...] = ()
        if top > 0:
            best = np.argpartition(logits, -top)[-top:]
            best = best[np.argsort(-logits[best])]
            alternatives = tuple((self.detokenize([int(i)]), float(logits[i]) - log_norm) for i in best)
        return TokenScore(int(token), self.detokenize([int(token)]), float(logits[token]) - log_norm, alternatives)
