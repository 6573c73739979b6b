"""Stuck detection: how likely a selector's decision is wrong enough to hand the request to a larger model.

Every detector maps an ``Attempt`` (the request, the tools, the decision and, where the LM returned them, the
generated text with its token log-probabilities) to a ``StuckSignal``: a score in [0, 1], higher meaning more
likely stuck, and the evidence behind it.

- ``heuristic``: give-up and hedging phrases in the reasoning, and a quality score from the answer's length,
  its relevance to the request (share of the request's content words the reasoning, tool names and argument
  values cover) and whether it is actionable (calls with arguments, or an explicitly reasoned abstention).
- ``validation``: the decision did not parse, names an unknown tool, or has arguments that fail validation.
- ``confidence``: ``1 - exp(mean log-probability)`` of the tokens that spell the chosen tool names (of the
  empty list ``[]`` when the model abstained), located in the generated text.
- ``confidence_min``: ``1 - exp(min log-probability)`` over every token of the tool calls (names, argument
  values, and the token that ends the list).
- ``consistency``: ``1 - share`` of k sampled decisions (temperature > 0, one ``rollout_id`` each so that
  DSPy's cache cannot answer k times alike) that agree with the modal set of tool names.
- ``combined``: the maximum or a weighted mean of other detectors' scores.

Token log-probabilities reach DSPy when the LM is called with ``logprobs=True``: each LM output is then a dict
``{"text": ..., "logprobs": {"content": [{"token", "logprob", "bytes", ...}, ...]}}``. ``MultiToolSelector``
returns a new prediction without them, so ``capture_generation()`` records the last LM output through a DSPy
callback (``on_lm_end``) instead.
"""

from __future__ import annotations

import bisect
import math
import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import dspy
from dspy.utils.callback import BaseCallback
from dspy.utils.usage_tracker import UsageTracker, track_usage
from pydantic import BaseModel, Field

from tool_selection.decision import MultiToolDecision
from tool_selection.errors import ToolSelectionError
from tool_selection.registry import ToolRegistry

__all__ = [
    "DEFAULT_COMPONENTS",
    "DETECTORS",
    "Attempt",
    "CombinedDetector",
    "ConfidenceDetector",
    "ConsistencyDetector",
    "DetectorUnavailable",
    "Generation",
    "HeuristicDetector",
    "LeastConfidenceDetector",
    "Samples",
    "StuckDetector",
    "StuckSignal",
    "ValidationDetector",
    "capture_generation",
    "decision_key",
    "make_detector",
    "make_sampler",
    "usage_totals",
]

DETECTORS = ("heuristic", "validation", "confidence", "confidence_min", "consistency", "combined")


class DetectorUnavailable(ToolSelectionError):
    """A detector lacks what it measures (no token log-probabilities, no way to sample); not a model error."""


class StuckSignal(BaseModel):
    """One detector's verdict on one decision."""

    detector: str
    score: float = Field(ge=0.0, le=1.0, description="Higher means more likely stuck.")
    evidence: dict[str, Any] = Field(default_factory=dict)


# ------------------------------------------------------------------------------------------------ attempts


@dataclass
class Generation:
    """The text an LM generated for a decision and, when it returned them, its tokens with log-probabilities."""

    text: str
    tokens: list[tuple[str, float, bytes | None]] = field(default_factory=list)

    @classmethod
    def from_output(cls, output: Any) -> Generation:
        """From one DSPy LM output: a string, or a dict with ``text`` and optionally ``logprobs``."""
        if not isinstance(output, dict):
            return cls(text=str(output or ""))
        tokens = []
        for entry in _field(output.get("logprobs"), "content") or []:
            raw = _field(entry, "bytes")
            tokens.append((str(_field(entry, "token") or ""), float(_field(entry, "logprob") or 0.0),
                           bytes(raw) if raw is not None else None))
        return cls(text=str(output.get("text") or ""), tokens=tokens)

    @property
    def has_logprobs(self) -> bool:
        return bool(self.tokens)


def _field(obj: Any, name: str) -> Any:
    """A field of a dict or of an SDK object (LiteLLM's logprobs are objects, DSPy's native ones dicts)."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


@dataclass
class Samples:
    """Decisions drawn for the consistency detector, and the tokens they cost."""

    decisions: list[MultiToolDecision]
    input_tokens: int = 0
    output_tokens: int = 0


Sampler = Callable[[int, float], Samples]


@dataclass
class Attempt:
    """What the detectors look at: one decision for one request, and how to draw more like it."""

    request: str
    decision: MultiToolDecision
    tools: ToolRegistry | None = None
    generation: Generation | None = None
    sampler: Sampler | None = None
    signals: dict[str, StuckSignal] = field(default_factory=dict)  # filled as detectors run; reused by combined


class _Capture(BaseCallback):
    def __init__(self):
        self.output: Any = None

    def on_lm_end(self, call_id, outputs, exception=None):
        if exception is None and outputs:
            self.output = outputs[-1] if isinstance(outputs, list) else outputs


class _Captured:
    def __init__(self, capture: _Capture):
        self._capture = capture

    @property
    def generation(self) -> Generation | None:
        return None if self._capture.output is None else Generation.from_output(self._capture.output)


@contextmanager
def capture_generation() -> Iterator[_Captured]:
    """Records the last LM output made inside the block (with its log-probabilities, if the LM returned them)."""
    capture = _Capture()
    with dspy.context(callbacks=[*(dspy.settings.callbacks or []), capture]):
        yield _Captured(capture)


def usage_totals(tracker: UsageTracker) -> tuple[int, int]:
    """(prompt tokens, completion tokens) recorded by a DSPy usage tracker, over all its models."""
    totals = tracker.get_total_tokens()
    return (sum(int(u.get("prompt_tokens") or 0) for u in totals.values()),
            sum(int(u.get("completion_tokens") or 0) for u in totals.values()))


def make_sampler(decide: Callable[[str, ToolRegistry | None], dspy.Prediction], request: str,
                 tools: ToolRegistry | None, lm: dspy.BaseLM | None = None) -> Sampler:
    """A sampler that runs ``decide`` k times at ``temperature``, each with its own ``rollout_id`` so that DSPy's
    cache keeps k distinct answers. The samples' tokens are counted in ``Samples`` and, like any call, in the
    caller's usage tracker (run the detector under a separate ``UsageTracker`` to keep them apart)."""

    def sample(k: int, temperature: float) -> Samples:
        base = lm or dspy.settings.lm
        if base is None:
            raise DetectorUnavailable("Sampling needs an LM: configure one with dspy.configure(lm=...) or pass lm=.")
        decisions = []
        with track_usage() as tracker:
            for i in range(1, k + 1):
                with dspy.context(lm=base.copy(rollout_id=i, temperature=temperature)):
                    decisions.append(decide(request, tools).decision)
        input_tokens, output_tokens = usage_totals(tracker)
        return Samples(decisions, input_tokens, output_tokens)

    return sample


# ------------------------------------------------------------------------------------------------ detectors


class StuckDetector(ABC):
    """Scores an ``Attempt``: 0 = clearly fine, 1 = clearly stuck."""

    name: ClassVar[str]
    needs_logprobs: ClassVar[bool] = False

    def __call__(self, attempt: Attempt) -> StuckSignal:
        signal = self.detect(attempt)
        attempt.signals[self.name] = signal
        return signal

    @abstractmethod
    def detect(self, attempt: Attempt) -> StuckSignal: ...

    def _signal(self, score: float, **evidence: Any) -> StuckSignal:
        return StuckSignal(detector=self.name, score=min(1.0, max(0.0, float(score))), evidence=evidence)


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


class HeuristicDetector(StuckDetector):
    """Phrases of giving up and of hedging, and a quality score (length, relevance, actionability).

    ``score = 1 - (1 - give_up) * (1 - hedge_weight * hedging) * quality`` where ``give_up = min(1,
    give_up_weight * phrases)`` (a "no tool fits" statement counts only when the decision calls a tool anyway:
    with no call it is the reasoned abstention the selector is asked for), ``hedging = min(1, phrases /
    hedge_saturation)`` and ``quality`` is the weighted mean of ``length`` (words of reasoning and arguments: 0 when empty, 1 from ``min_words`` to ``max_words``,
    fading to 0 at twice ``max_words``), ``relevance`` (share of the request's content words found in the
    reasoning, tool names and argument values) and ``actionable`` (share of calls that carry their arguments, or
    1 for an abstention explained in at least ``min_words`` words; 0 for an unparsed answer).
    """

    name = "heuristic"

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


class ValidationDetector(StuckDetector):
    """1 when the answer did not parse, names an unknown tool or has invalid arguments; else 0."""

    name = "validation"

    def detect(self, attempt: Attempt) -> StuckSignal:
        decision = attempt.decision
        reasons = ([f"parse_error: {decision.parse_error}"] if decision.parse_error is not None else [])
        reasons += [f"{p.kind}: {p.detail}" for p in decision.problems]
        return self._signal(1.0 if reasons else 0.0, problems=reasons)


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
    """Where the value of the (last) ``tool_calls`` field begins in ``text``; None when there is none."""
    keys = list(_CALLS_KEY.finditer(text))
    return keys[-1].end() if keys else None


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


class ConsistencyDetector(StuckDetector):
    """``1 - (samples agreeing with the modal set of tool names) / k`` over k decisions drawn at ``temperature``.
    An unparsed sample counts as its own answer. The samples' tokens are in the evidence (they cost calls)."""

    name = "consistency"

    def __init__(self, *, k: int = 3, temperature: float = 0.7):
        if k < 2:
            raise ValueError(f"consistency needs k >= 2 samples, got {k}")
        if not 0 < temperature <= 2:
            raise ValueError(f"consistency needs a sampling temperature in (0, 2], got {temperature}")
        self.k, self.temperature = k, temperature

    def detect(self, attempt: Attempt) -> StuckSignal:
        if attempt.sampler is None:
            raise DetectorUnavailable("The consistency detector needs to sample decisions: build the attempt with a "
                                      "sampler (see make_sampler) so it can call the model again.")
        samples = attempt.sampler(self.k, self.temperature)
        keys = [decision_key(d) for d in samples.decisions]
        (modal, count), = Counter(keys).most_common(1)
        return self._signal(1 - count / len(keys), samples=[list(k) for k in keys], modal=list(modal),
                            agrees_with_decision=decision_key(attempt.decision) == modal,
                            input_tokens=samples.input_tokens, output_tokens=samples.output_tokens)


def decision_key(decision: MultiToolDecision) -> tuple[str, ...]:
    """The sorted tool names of a decision (``()`` for an abstention, ``("<unparsed>",)`` for a parse error)."""
    return ("<unparsed>",) if decision.parse_error is not None else tuple(sorted(decision.tool_names))


class CombinedDetector(StuckDetector):
    """The maximum (``mode="max"``) or weighted mean (``mode="mean"``) of its components' scores. Components
    that are unavailable for an attempt (e.g. no log-probabilities) are left out and named in the evidence."""

    name = "combined"

    def __init__(self, components: Sequence[StuckDetector], *, mode: Literal["max", "mean"] = "max",
                 weights: Sequence[float] | None = None):
        if not components:
            raise ValueError("a combined detector needs at least one component")
        if mode not in ("max", "mean"):
            raise ValueError(f"combine mode must be 'max' or 'mean', got {mode!r}")
        if weights is not None and (len(weights) != len(components) or any(w < 0 for w in weights)):
            raise ValueError(f"give one non-negative weight per component ({len(components)}), got {list(weights)}")
        self.components, self.mode = list(components), mode
        self.weights = list(weights) if weights is not None else [1.0] * len(self.components)

    @property
    def needs_logprobs(self) -> bool:  # type: ignore[override]
        return any(c.needs_logprobs for c in self.components)

    def detect(self, attempt: Attempt) -> StuckSignal:
        scores, weights, unavailable = {}, {}, {}
        for component, weight in zip(self.components, self.weights):
            try:
                signal = attempt.signals.get(component.name) or component(attempt)
            except DetectorUnavailable as error:
                unavailable[component.name] = str(error)
                continue
            scores[component.name], weights[component.name] = signal.score, weight
        if not scores:
            raise DetectorUnavailable(f"No component of the combined detector could score this attempt: {unavailable}")
        return self._signal(self.combine(scores, weights), mode=self.mode, components=scores, unavailable=unavailable)

    def combine(self, scores: dict[str, float], weights: dict[str, float] | None = None) -> float:
        if self.mode == "max":
            return max(scores.values())
        weights = weights or dict(zip((c.name for c in self.components), self.weights))
        total = sum(weights.get(n, 1.0) for n in scores)
        return sum(weights.get(n, 1.0) * s for n, s in scores.items()) / total if total else max(scores.values())


DEFAULT_COMPONENTS = ("heuristic", "validation", "confidence")


def make_detector(name: str, *, consistency_k: int = 3, temperature: float = 0.7,
                  components: Sequence[str] = DEFAULT_COMPONENTS, mode: Literal["max", "mean"] = "max",
                  weights: Sequence[float] | None = None, **heuristic_options: Any) -> StuckDetector:
    """A detector by name (one of ``DETECTORS``); ``components``/``mode``/``weights`` configure ``combined``."""
    if name == "heuristic":
        return HeuristicDetector(**heuristic_options)
    if name == "validation":
        return ValidationDetector()
    if name == "confidence":
        return ConfidenceDetector()
    if name == "confidence_min":
        return LeastConfidenceDetector()
    if name == "consistency":
        return ConsistencyDetector(k=consistency_k, temperature=temperature)
    if name == "combined":
        bad = [c for c in components if c not in DETECTORS or c == "combined"]
        if bad:
            raise ToolSelectionError(f"Unknown combined component(s) {bad}: use some of "
                                     f"{', '.join(d for d in DETECTORS if d != 'combined')}.")
        parts = [make_detector(c, consistency_k=consistency_k, temperature=temperature, **heuristic_options)
                 for c in components]
        return CombinedDetector(parts, mode=mode, weights=weights)
    raise ToolSelectionError(f"Unknown stuck detector {name!r}. Choose one of: {', '.join(DETECTORS)}.")
