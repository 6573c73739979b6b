"""The detectors that read token log-probabilities (``confidence``, ``confidence_min``), and how they find the
tokens of the tool calls in the generated text."""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable

from tool_selection.decision import MultiToolDecision
from tool_selection.parsing import native_calls_start
from tool_selection.stuck.base import Attempt, DetectorUnavailable, Generation, StuckDetector, StuckSignal
from tool_selection.stuck.registry import register_detector

__all__ = ["ConfidenceDetector", "LeastConfidenceDetector", "align_tokens", "answer_spans", "calls_start"]


@register_detector
class ConfidenceDetector(StuckDetector):
    """``1 - exp(mean log-probability)`` of the tokens spelling the chosen tool names (or the ``[]`` of an
    abstention). Where they cannot be located in the text, every generated token counts (``target`` says so)."""

    name = "confidence"
    needs_logprobs = True

    def generation(self, attempt: Attempt) -> Generation:
        generation = attempt.generation
        if generation is None or not generation.has_logprobs:
            raise DetectorUnavailable(
                f"The {self.name} detector needs token log-probabilities of the decision: call the primary with "
                "logprobs=True (get_lm(spec, logprobs=True)) on an engine that returns them (the local engine does).")
        return generation

    def detect(self, attempt: Attempt) -> StuckSignal:
        generation = self.generation(attempt)
        spans, target = answer_spans(generation.text, attempt.decision)
        offsets, alignment = align_tokens(generation)
        chosen = [i for i, (start, end) in enumerate(offsets) if any(start < b and a < end for a, b in spans)]
        if not chosen:
            chosen, target = list(range(len(generation.tokens))), "whole_answer"
        mean = sum(generation.tokens[i][1] for i in chosen) / len(chosen)
        return self._signal(1 - math.exp(mean), target=target, alignment=alignment, mean_logprob=round(mean, 6),
                            tokens=[generation.tokens[i][0] for i in chosen][:64])


@register_detector
class LeastConfidenceDetector(ConfidenceDetector):
    """``1 - (the lowest probability of any token in the tool calls)``: from where the ``tool_calls`` value starts
    to the end of the answer, so argument values and the token that closes the list (rather than adding another
    call) count as well as the names. One uncertain choice is enough to flag the answer, where a mean over the
    names would dilute it."""

    name = "confidence_min"

    def detect(self, attempt: Attempt) -> StuckSignal:
        generation = self.generation(attempt)
        start = calls_start(generation.text)
        offsets, alignment = align_tokens(generation)
        start, target = (start, "tool_calls") if start is not None else (0, "whole_answer")
        chosen = [i for i, (_, end) in enumerate(offsets) if end > start] or list(range(len(generation.tokens)))
        weakest = min(chosen, key=lambda i: generation.tokens[i][1])
        token, logprob, _ = generation.tokens[weakest]
        return self._signal(1 - math.exp(logprob), target=target, alignment=alignment, min_logprob=round(logprob, 6),
                            weakest_token=token, weakest_at=offsets[weakest][0], tokens_considered=len(chosen))


_CALLS_KEY = re.compile(r'(?<!\\)"tool_calls"\s*:|\[\[\s*##\s*tool_calls\s*##\s*\]\]')


def calls_start(text: str) -> int | None:
    """Where the calls begin in ``text``: the value of the (last) ``tool_calls`` field of a JSON answer, else the
    first ``<tool_call>`` tag or JSON fence of the model's own format; None when there is none (prose)."""
    keys = list(_CALLS_KEY.finditer(text))
    if keys:
        return keys[-1].end()
    return native_calls_start(text)


def answer_spans(text: str, decision: MultiToolDecision) -> tuple[list[tuple[int, int]], str]:
    """Character spans of the chosen tool names in ``text`` (after the ``tool_calls`` key), or of the empty list
    when the decision abstained; ``([], "not_found")`` when they are not there."""
    start = calls_start(text) or 0
    if decision.tool_calls:
        spans, cursor = [], start
        for name in decision.tool_names:
            pattern = re.compile(r'\\*"(?:tool_name|name)\\*"\s*:\s*\\*"(' + re.escape(name) + r')\\*"')
            match = pattern.search(text, cursor)
            if match is None:
                continue
            spans.append(match.span(1))
            cursor = match.end()
        return (spans, "tool_names") if spans else ([], "not_found")
    match = re.compile(r"\[\s*\]").search(text, start)
    if match is None or text[start:match.start()].strip(' :"\n') != "":
        return [], "not_found"
    return [match.span()], "empty_list"


def align_tokens(generation: Generation) -> tuple[list[tuple[int, int]], str]:
    """Character offsets of each token in ``generation.text``: exact from the token bytes or strings when they
    spell the text, else proportional (``"approximate"``)."""
    text, tokens = generation.text, generation.tokens
    if tokens and all(b is not None for _, _, b in tokens):
        joined = b"".join(b for _, _, b in tokens)
        encoded = text.encode("utf-8")
        shift = joined.find(encoded) if encoded else -1
        if shift >= 0:
            char_at = _byte_to_char(text)
            offsets, position = [], -shift
            for _, _, raw in tokens:
                start, end = position, position + len(raw)
                offsets.append((char_at(start), char_at(end)))
                position = end
            return offsets, "bytes"
    joined = "".join(t for t, _, _ in tokens)
    shift = joined.find(text) if text else -1
    if shift >= 0:
        offsets, position = [], -shift
        for token, _, _ in tokens:
            offsets.append((position, position + len(token)))
            position += len(token)
        return offsets, "exact"
    scale = len(text) / max(len(joined), 1)
    offsets, position = [], 0
    for token, _, _ in tokens:
        offsets.append((round(position * scale), round((position + len(token)) * scale)))
        position += len(token)
    return offsets, "approximate"


def _byte_to_char(text: str) -> Callable[[int], int]:
    boundaries = [0]
    for ch in text:
        boundaries.append(boundaries[-1] + len(ch.encode("utf-8")))
    def char_at(byte_offset: int) -> int:
        if byte_offset <= 0:
            return byte_offset
        return bisect.bisect_left(boundaries, byte_offset)

    return char_at
