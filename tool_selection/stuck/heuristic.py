"""The heuristic detector: what the answer's words say (giving up, hedging) and how good it looks (length,
relevance to the request, actionability)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from tool_selection.decision import MultiToolDecision
from tool_selection.registry import ToolRegistry
from tool_selection.stuck.base import Attempt, StuckDetector, StuckSignal
from tool_selection.stuck.registry import DetectorOptions, register_detector

__all__ = ["GIVE_UP_PHRASES", "HEDGE_PHRASES", "NO_FIT_PHRASES", "HeuristicDetector", "content_words"]


_STOPWORDS = frozenset("""
a an the and or but if then so of to in on at by for with from as into about over under up down out off this that
these those is are was were be been being am do does did doing have has had having i me my we our you your he she
it its they them their what which who whom whose when where why how all any both each few more most other some such
no nor not only own same than too very can could will would shall should may might must just also please get
want wants need needs like let s t user request asked asks ask tool tools call calls use using make
""".split())

GIVE_UP_PHRASES = (
    "i'm not sure how to", "i am not sure how to", "not sure how", "i'm unable to", "i am unable to", "unable to",
    "i cannot", "i can't", "i can not", "cannot be done", "not possible", "i don't know", "i do not know",
    "beyond my", "i'm stuck", "i am stuck", "unclear how", "i give up",
)
# Statements about the catalog, not about the model: with no call they explain an abstention (what the selector
# is asked to write); next to a call they contradict it, which is a sign of confusion.
NO_FIT_PHRASES = (
    "no tool can", "none of the tools", "none of the available", "no available tool", "no suitable tool",
    "no listed tool", "no tool fits", "no tool is", "not one of the available", "no relevant tool",
)
HEDGE_PHRASES = (
    "maybe", "perhaps", "might", "i think", "possibly", "probably", "i guess", "it seems", "seems like",
    "could be", "unsure", "unclear", "i believe", "not certain", "hopefully", "presumably",
)


def _phrase_pattern(phrases: Sequence[str]) -> re.Pattern[str]:
    ordered = sorted(phrases, key=len, reverse=True)  # longest first: "i'm unable to" before "unable to"
    return re.compile(r"(?<![\w'])(?:" + "|".join(re.escape(p) for p in ordered) + r")(?![\w'])")


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) >= len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    """Lower-cased, crudely stemmed words of ``text`` without stop words; ``snake_case`` splits into words."""
    words = re.findall(r"[a-z0-9]+", text.lower().replace("_", " "))
    return {_stem(w) for w in words if w not in _STOPWORDS and (len(w) > 1 or w.isdigit())}


def _flatten_values(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _flatten_values(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _flatten_values(item)
    elif value is not None:
        yield str(value)


@register_detector
class HeuristicDetector(StuckDetector):
    """Phrases of giving up and of hedging, and a quality score (length, relevance, actionability).

    ``score = 1 - (1 - give_up) * (1 - hedge_weight * hedging) * quality`` where ``give_up = min(1,
    give_up_weight * phrases)`` (a "no tool fits" statement counts only when the decision calls a tool anyway:
    with no call it is the reasoned abstention the selector is asked for), ``hedging = min(1, phrases /
    hedge_saturation)`` and ``quality`` is the weighted mean of ``length`` (words of reasoning and arguments: 0
    when empty, 1 from ``min_words`` to ``max_words``, fading to 0 at twice ``max_words``), ``relevance`` (share of the request's content words found in the
    reasoning, tool names and argument values) and ``actionable`` (share of calls that carry their arguments, or
    1 for an abstention explained in at least ``min_words`` words; 0 for an unparsed answer).
    """

    name = "heuristic"

    @classmethod
    def from_options(cls, options: DetectorOptions) -> HeuristicDetector:
        return cls(**options.heuristic)

    def __init__(self, *, min_words: int = 5, max_words: int = 200, give_up_weight: float = 0.6,
                 hedge_weight: float = 0.5, hedge_saturation: int = 3,
                 quality_weights: tuple[float, float, float] = (1.0, 1.0, 1.0)):
        if min_words < 1 or max_words <= min_words:
            raise ValueError(f"need 1 <= min_words < max_words, got {min_words} and {max_words}")
        self.min_words, self.max_words = min_words, max_words
        self.give_up_weight, self.hedge_weight, self.hedge_saturation = give_up_weight, hedge_weight, hedge_saturation
        self.quality_weights = quality_weights
        self._give_up, self._hedges = _phrase_pattern(GIVE_UP_PHRASES), _phrase_pattern(HEDGE_PHRASES)
        self._no_fit = _phrase_pattern(NO_FIT_PHRASES)

    def detect(self, attempt: Attempt) -> StuckSignal:
        decision = attempt.decision
        reasoning = decision.reasoning.lower().replace("\u2019", "'")
        give_ups, hedges = self._give_up.findall(reasoning), self._hedges.findall(reasoning)
        no_fit = self._no_fit.findall(reasoning)
        contradictions = no_fit if decision.tool_calls else []
        give_up = min(1.0, self.give_up_weight * (len(give_ups) + len(contradictions)))
        hedging = min(1.0, len(hedges) / self.hedge_saturation)
        parts = {"length": self.length(decision), "relevance": self.relevance(attempt.request, decision),
                 "actionable": self.actionable(decision, attempt.tools)}
        quality = sum(w * v for w, v in zip(self.quality_weights, parts.values())) / sum(self.quality_weights)
        score = 1 - (1 - give_up) * (1 - self.hedge_weight * hedging) * quality
        return self._signal(score, give_up_phrases=give_ups, hedge_phrases=hedges,
                            no_fit_phrases=no_fit, contradicts_calls=bool(contradictions), quality=round(quality, 4),
                            **{k: round(v, 4) for k, v in parts.items()})

    def length(self, decision: MultiToolDecision) -> float:
        words = len(decision.reasoning.split())
        words += sum(len(v.split()) for c in decision.tool_calls for v in _flatten_values(c.arguments))
        if words >= 2 * self.max_words:
            return 0.0
        if words > self.max_words:
            return 1 - (words - self.max_words) / self.max_words
        return min(1.0, words / self.min_words)

    @staticmethod
    def relevance(request: str, decision: MultiToolDecision) -> float:
        wanted = content_words(request)
        if not wanted:
            return 1.0
        answer = " ".join([decision.reasoning, *decision.tool_names,
                           *(v for c in decision.tool_calls for v in _flatten_values(c.arguments))])
        return len(wanted & content_words(answer)) / len(wanted)

    def actionable(self, decision: MultiToolDecision, tools: ToolRegistry | None) -> float:
        if decision.parse_error is not None:
            return 0.0
        if not decision.tool_calls:
            return 1.0 if len(decision.reasoning.split()) >= self.min_words else 0.0
        unknown = {p.call_index for p in decision.problems if p.kind == "unknown_tool"}
        complete = [i not in unknown and (bool(c.arguments) or not _requires_arguments(tools, c.tool_name))
                    for i, c in enumerate(decision.tool_calls)]
        return sum(complete) / len(complete)


def _requires_arguments(tools: ToolRegistry | None, name: str) -> bool:
    if tools is None or name not in tools:
        return True
    return bool(tools.get(name).input_schema().get("required"))
