"""Relevance signals: cheap evidence, per request, that some listed tool does exactly what is asked.

Each signal reads what a selection already produced (the decision, the answer's token log-probabilities, the
prompt it was sent) or costs one short extra pass, and returns one number, higher meaning "a tool fits". NaN
means the signal has nothing to read (no call was made, the LM returned no log-probabilities). The relevance
model (``relevance.model``) combines them into a probability.

| signal | reads | extra cost |
|---|---|---|
| ``call_open`` | log-odds that the answer's first token opens a call (``<tool_call>``, a fence, ``{``) | none |
| ``name_logprob`` / ``name_logprob_min`` | mean / least log-probability of the chosen names' tokens, under the model's own (unconstrained) distribution: low when a grammar forced a name the model did not want | none |
| ``unlisted`` | 1 when every call names a function that is not listed (free formats) | none |
| ``grounded_args`` | the share of the calls' argument values the request spells out | none |
| ``tools_listed`` | log of the number of tools listed: the context the other scores are read in | none |
| ``dense_best`` / ``dense_chosen`` | cosine of the request to the closest tool / to the called tool (MiniLM) | one small embedding |
| ``bm25_best`` | BM25 score of the best tool, word weights from the listed tools (so lower when fewer are listed) | negligible |
| ``bm25_background`` | BM25 score of the best tool, word weights from a fixed background catalog (``background``) | negligible |
| ``bm25_anchored`` | BM25 score of the best tool, word weights from the listed tools seen beside two background ones (``background``): words every listed tool holds weigh little, and more tools listed move it far less (1.6x against 5x with four more) | negligible |
| ``verify`` | log P(Yes) - log P(No) of "does that call do exactly what I asked?" asked after the answer | one token; the prompt is the answer's own, so the KV cache holds all but the question |
| ``gate`` | the relevance gate's Yes/No score with its own model (``strategies.gate``) | one prompt pass of the gate's model |
| ``agreement`` | the share of ``AGREEMENT_SAMPLES`` answers sampled to the same prompt that call the same functions (native strategies) | that many answers decoded; the prompt stays in the KV cache |
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import dspy
from dspy.utils.callback import BaseCallback

from tool_selection.decision import MultiToolDecision
from tool_selection.errors import ToolSelectionError, close_matches
from tool_selection.named_registry import Registry
from tool_selection.parsing import words
from tool_selection.registry import ToolRegistry
from tool_selection.strategies.gate import ask_yes_no

__all__ = [
    "SIGNAL_PREFIX",
    "CHEAP_SIGNALS",
    "DECISION_SIGNALS",
    "LOGPROB_SIGNALS",
    "SIGNALS",
    "Evidence",
    "SignalSpec",
    "UnknownSignalError",
    "call_open_score",
    "capture_lm_call",
    "check_signals",
    "compute_signals",
    "register_signal",
]

VERIFY_QUESTION = ("Check that answer before it runs: does calling {calls} do exactly what I asked, with a "
                   "function that really offers it? Answer Yes or No.")
AGREEMENT_SAMPLES, AGREEMENT_TEMPERATURE = 4, 0.7
CALL_OPENERS = ("<tool_call", "```", "{", "[{")
SIGNAL_PREFIX = "rel_"  # a signal's column in a results row: rel_<signal>
LOGIT_CAP = 20.0  # a probability of 0 or 1 in the top alternatives is read as +-LOGIT_CAP


class UnknownSignalError(ToolSelectionError, ValueError):
    """A relevance signal name that no signal is defined under."""


@dataclass
class Evidence:
    """What the signals read for one request: the decision, the last LM call's inputs and output, the LM."""

    request: str
    registry: ToolRegistry
    decision: MultiToolDecision
    lm_inputs: dict[str, Any] | None = None  # messages and keyword arguments of the selection's (last) LM call
    lm_output: Any = None  # its output: a string, or a dict with "text" and, when asked for, "logprobs"
    lm: dspy.BaseLM | None = None
    gate_lm: dspy.BaseLM | None = None
    cost: dict[str, float] = field(default_factory=dict)  # tokens spent by signals that call a model

    @property
    def text(self) -> str:
        """The answer as generated: the output's text, or, when the engine returned the calls apart (a local
        model's answer that is all calls), the text its tokens spell."""
        output = self.lm_output
        text = str((output.get("text") if isinstance(output, dict) else output) or "")
        tokens = self.token_logprobs
        if tokens and all(t["bytes"] is not None for t in tokens):
            spelled = b"".join(t["bytes"] for t in tokens).decode("utf-8", errors="replace")
            if len(spelled) > len(text):
                return spelled
        return text

    @property
    def provider_calls(self) -> list[dict[str, Any]]:
        output = self.lm_output
        return list((output.get("tool_calls") if isinstance(output, dict) else None) or [])

    @property
    def token_logprobs(self) -> list[dict[str, Any]]:
        output = self.lm_output
        logprobs = output.get("logprobs") if isinstance(output, dict) else None
        content = _field(logprobs, "content") if logprobs is not None else None
        return [_as_dict(entry) for entry in content or []]


@dataclass(frozen=True)
class SignalSpec:
    """One registered signal (``SIGNALS``): its function and what it takes. ``cheap``: computed by a relevance
    stage unless told otherwise (``CHEAP_SIGNALS``); ``needs_logprobs``: the stage asks the LM for token
    log-probabilities when it is wanted (``LOGPROB_SIGNALS``)."""

    name: str
    compute: Callable[[Evidence], float]
    summary: str
    costs_a_call: bool = False
    reads_the_answer: bool = False  # needs the answer's text or log-probabilities, not only the decision
    cheap: bool = False
    needs_logprobs: bool = False


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _as_dict(entry: Any) -> dict[str, Any]:
    top = [{"token": str(_field(t, "token") or ""), "logprob": _field(t, "logprob")}
           for t in _field(entry, "top_logprobs") or _field(entry, "top") or []]
    raw = _field(entry, "bytes")
    return {"token": str(_field(entry, "token") or ""), "logprob": _field(entry, "logprob"),
            "bytes": bytes(raw) if raw is not None else None, "top_logprobs": top}


def _logit(p: float) -> float:
    if p <= 0.0:
        return -LOGIT_CAP
    if p >= 1.0:
        return LOGIT_CAP
    return max(-LOGIT_CAP, min(LOGIT_CAP, math.log(p) - math.log1p(-p)))


def call_open_score(first_token: dict[str, Any]) -> float:
    """Log-odds that the first generated token opens a call, from its top alternatives (the mass outside them
    counts as not opening one)."""
    seen: dict[str, float] = {}
    candidates = [first_token, *first_token.get("top_logprobs", [])]
    for candidate in candidates:
        token, logprob = str(candidate.get("token") or ""), candidate.get("logprob")
        if isinstance(logprob, int | float) and token not in seen:
            seen[token] = float(logprob)
    opening = sum(math.exp(lp) for token, lp in seen.items() if token.lstrip().startswith(CALL_OPENERS))
    return _logit(opening)


def _call_open(evidence: Evidence) -> float:
    tokens = evidence.token_logprobs
    return call_open_score(tokens[0]) if tokens else math.nan


def _name_logprobs(evidence: Evidence) -> list[float]:
    from tool_selection.stuck.base import Generation
    from tool_selection.stuck.logprobs import align_tokens, answer_spans

    if not evidence.decision.tool_calls or not evidence.token_logprobs:
        return []
    generation = Generation(text=evidence.text, tokens=[(t["token"], float(t["logprob"] or 0.0), t["bytes"])
                                                        for t in evidence.token_logprobs])
    spans, target = answer_spans(generation.text, evidence.decision)
    if target != "tool_names":
        return []
    offsets, _ = align_tokens(generation)
    return [generation.tokens[i][1] for i, (start, end) in enumerate(offsets)
            if any(start < b and a < end for a, b in spans)]


def _name_logprob(evidence: Evidence) -> float:
    values = _name_logprobs(evidence)
    return sum(values) / len(values) if values else math.nan


def _name_logprob_min(evidence: Evidence) -> float:
    values = _name_logprobs(evidence)
    return min(values) if values else math.nan


def _unlisted(evidence: Evidence) -> float:
    calls = evidence.decision.tool_calls
    if not calls:
        return math.nan
    return float(all(call.tool_name not in evidence.registry for call in calls))


def _leaf_values(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaf_values(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaf_values(item)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        yield value


def _grounded_args(evidence: Evidence) -> float:
    """The share of the calls' argument values (strings and numbers) that the request spells out: a call made for
    a request no tool fits often fills its arguments with values of its own."""
    values = [value for call in evidence.decision.tool_calls for value in _leaf_values(call.arguments)]
    values = [words(str(value)) for value in values]
    values = [value for value in values if value]
    if not values:
        return math.nan
    request = f" {words(evidence.request)} "
    return sum(f" {value} " in request or (len(value) > 3 and value in request) for value in values) / len(values)


def _retrieved(name: str, evidence: Evidence) -> list[tuple[str, float]]:
    from tool_selection.retrieval import get_retriever

    retriever = _RETRIEVERS.setdefault(name, get_retriever(name))
    return [(hit.name, hit.score) for hit in retriever.fit(evidence.registry).retrieve(evidence.request,
                                                                                         len(evidence.registry))]


_RETRIEVERS: dict[str, Any] = {}


def _dense_best(evidence: Evidence) -> float:
    hits = _retrieved("dense", evidence)
    return hits[0][1] if hits else math.nan


def _dense_chosen(evidence: Evidence) -> float:
    names = [call.tool_name for call in evidence.decision.tool_calls if call.tool_name in evidence.registry]
    if not names:
        return math.nan
    scores = dict(_retrieved("dense", evidence))
    return min(scores[name] for name in names)


def _bm25_best(evidence: Evidence) -> float:
    hits = _retrieved("bm25", evidence)
    return hits[0][1] if hits else math.nan


def _bm25_background(evidence: Evidence) -> float:
    from tool_selection.relevance.background import background_bm25
    from tool_selection.retrieval import tool_documents

    return background_bm25().best(evidence.request, list(tool_documents(evidence.registry).values()))


def _bm25_anchored(evidence: Evidence) -> float:
    from tool_selection.relevance.background import background_bm25
    from tool_selection.retrieval import tool_documents

    return background_bm25().anchored_best(evidence.request, list(tool_documents(evidence.registry).values()))


def _other_language(evidence: Evidence) -> float:
    from tool_selection.relevance.language import in_other_language

    return float(in_other_language(evidence.request, evidence.registry))


def _tools_listed(evidence: Evidence) -> float:
    return math.log(max(len(evidence.registry), 1))


def describe_calls(decision: MultiToolDecision) -> str:
    """The calls as a reader writes them: ``get_weather(city="Oslo") and get_time(city="Oslo")``."""
    return " and ".join(f"{call.tool_name}({', '.join(f'{k}={json.dumps(v, ensure_ascii=False)}' for k, v in call.arguments.items())})"
                        for call in decision.tool_calls)


def _count_usage(lm: dspy.BaseLM, evidence: Evidence) -> None:
    usage = getattr(lm, "history", None) and lm.history[-1].get("usage") or {}
    evidence.cost["input_tokens"] = evidence.cost.get("input_tokens", 0.0) + float(usage.get("prompt_tokens") or 0)
    evidence.cost["output_tokens"] = evidence.cost.get("output_tokens", 0.0) + float(
        usage.get("completion_tokens") or 0)


def _yes_no(lm: dspy.BaseLM, evidence: Evidence, messages: list[dict[str, Any]], **kwargs: Any) -> float:
    score = ask_yes_no(lm, messages, **kwargs)
    _count_usage(lm, evidence)
    return score


def _verify(evidence: Evidence) -> float:
    """The question goes after the answer in the same conversation, so a local model's KV cache holds the
    prompt and the answer; the tools stay in the call (the same system turn)."""
    if not evidence.decision.tool_calls or evidence.lm_inputs is None or evidence.lm is None:
        return math.nan
    inputs = dict(evidence.lm_inputs)
    messages = list(inputs.pop("messages", None) or [])
    if not messages:
        return math.nan
    kept = {key: value for key, value in inputs.items() if key in ("tools",) and value}
    text = evidence.text
    answer: dict[str, Any] = {"role": "assistant", "content": text}
    if not text.strip() and evidence.provider_calls:  # a provider's calls, with no text to repeat
        answer = {"role": "assistant", "content": None, "tool_calls": evidence.provider_calls}
        messages.append(answer)
        messages += [{"role": "tool", "tool_call_id": call.get("id", f"call_{i}"), "content": "(not run yet)"}
                     for i, call in enumerate(evidence.provider_calls)]
    else:
        messages.append(answer)
    messages += [{"role": "user", "content": VERIFY_QUESTION.format(calls=describe_calls(evidence.decision))}]
    return _yes_no(evidence.lm, evidence, messages, **kept)


def _gate(evidence: Evidence) -> float:
    from tool_selection.strategies.gate import GateAdapter, IsRelevant, brief_tools

    if evidence.gate_lm is None:
        raise ToolSelectionError("The gate signal needs a gate model: give the relevance stage gate_lm=...")
    adapter = GateAdapter()
    messages = adapter.format(dspy.Predict(IsRelevant).signature, [],
                              {"tools": brief_tools(evidence.registry), "request": evidence.request})
    return _yes_no(evidence.gate_lm, evidence, messages)


def sampled_tool_names(output: Any) -> list[str] | None:
    """The functions one sampled native answer calls (sorted), or None when its calls cannot be read."""
    if isinstance(output, dict) and output.get("tool_calls"):
        names = [_field(_field(call, "function") or call, "name") for call in output["tool_calls"]]
        return sorted(str(name) for name in names) if all(names) else None
    from tool_selection.parsing import parse_native

    parsed = parse_native(str((output.get("text") if isinstance(output, dict) else output) or ""))
    return None if parsed.failed else sorted(call.tool_name for call in parsed.calls)


def _agreement(evidence: Evidence) -> float:
    """Each sample is the selection's own call (its messages and tools) decoded again at
    ``AGREEMENT_TEMPERATURE`` with its own seed; an answer that cannot be read counts as disagreeing."""
    inputs = dict(evidence.lm_inputs or {})
    messages, tools = inputs.pop("messages", None), inputs.get("tools")
    if not evidence.decision.tool_calls or not messages or not tools or evidence.lm is None:
        return math.nan  # the native strategies send the tools with the call; the others have none to sample
    chosen = sorted(evidence.decision.tool_names)
    kept = {key: value for key, value in inputs.items() if key in ("tools", "tool_choice", "max_tokens") and value}
    agreeing = 0
    for sample in range(1, AGREEMENT_SAMPLES + 1):
        outputs = evidence.lm(messages=messages, temperature=AGREEMENT_TEMPERATURE, seed=sample, rollout_id=sample,
                              **kept)
        _count_usage(evidence.lm, evidence)
        agreeing += bool(outputs) and sampled_tool_names(outputs[0]) == chosen
    return agreeing / AGREEMENT_SAMPLES


SIGNALS: Registry[SignalSpec] = Registry("relevance signal", error=UnknownSignalError,
                                         conflict_error=UnknownSignalError)
"""The relevance signals by name, each registered once with what it takes (``SignalSpec``)."""
register_signal = SIGNALS.register

for _spec in (  # the order signals are listed and recorded in
    SignalSpec("call_open", _call_open, "log-odds that the answer's first token opens a call",
               reads_the_answer=True, cheap=True, needs_logprobs=True),
    SignalSpec("name_logprob", _name_logprob, "mean log-probability of the chosen names' tokens",
               reads_the_answer=True, cheap=True, needs_logprobs=True),
    SignalSpec("name_logprob_min", _name_logprob_min, "least log-probability of a chosen name's token",
               reads_the_answer=True, cheap=True, needs_logprobs=True),
    SignalSpec("unlisted", _unlisted, "1 when every call names an unlisted function", cheap=True),
    SignalSpec("grounded_args", _grounded_args, "share of the calls' argument values that the request spells out",
               cheap=True),
    SignalSpec("tools_listed", _tools_listed, "log of the number of tools listed (the other signals' context)",
               cheap=True),
    SignalSpec("dense_best", _dense_best, "cosine of the request to the closest tool (MiniLM)", cheap=True),
    SignalSpec("dense_chosen", _dense_chosen, "cosine of the request to the least similar called tool", cheap=True),
    SignalSpec("bm25_best", _bm25_best, "BM25 score of the best tool", cheap=True),
    SignalSpec("bm25_background", _bm25_background, "BM25 score of the best tool, word weights from a fixed "
               "background catalog (the same for any number of listed tools)", cheap=True),
    SignalSpec("bm25_anchored", _bm25_anchored, "BM25 score of the best tool, word weights from the listed tools "
               "seen beside a few background ones", cheap=True),
    SignalSpec("other_language", _other_language, "1 when the request is in another language than the tools' "
               "documents (py3langid)", cheap=True),
    SignalSpec("verify", _verify, "Yes/No score of 'does that call do exactly what I asked?' after the answer",
               costs_a_call=True, reads_the_answer=True, cheap=True, needs_logprobs=True),
    SignalSpec("gate", _gate, "the relevance gate's Yes/No score, with the gate's model", costs_a_call=True),
    SignalSpec("agreement", _agreement, "share of answers sampled to the same prompt that call the same functions",
               costs_a_call=True),
):
    register_signal(_spec)

DECISION_SIGNALS = tuple(name for name, spec in SIGNALS.items() if not spec.costs_a_call and not spec.reads_the_answer)
"""The signals computed from the request, the tools and the decision alone (so also from a finished run's rows)."""
CHEAP_SIGNALS = tuple(name for name, spec in SIGNALS.items() if spec.cheap)
"""The signals a relevance stage computes unless told otherwise: all but the gate, which needs its own model, and
the sampled agreement, which decodes the answer ``AGREEMENT_SAMPLES`` times more."""
LOGPROB_SIGNALS = frozenset(name for name, spec in SIGNALS.items() if spec.needs_logprobs)
"""The signals that read the answer's token log-probabilities."""


def check_signals(names: Sequence[str]) -> tuple[str, ...]:
    unknown = [name for name in names if name not in SIGNALS]
    if unknown:
        hints = "; ".join(f"{name!r}" + (f" (did you mean {', '.join(close_matches(name, SIGNALS))}?)"
                                          if close_matches(name, SIGNALS) else "") for name in unknown)
        raise UnknownSignalError(f"Unknown relevance signal(s): {hints}. Known: {', '.join(SIGNALS)}.")
    if not names:
        raise UnknownSignalError(f"A relevance stage needs at least one signal. Known: {', '.join(SIGNALS)}.")
    return tuple(dict.fromkeys(names))


def compute_signals(evidence: Evidence, names: Sequence[str]) -> dict[str, float]:
    """Each named signal's value (NaN where it has nothing to read)."""
    values = {}
    for name in names:
        value = SIGNALS[name].compute(evidence)
        values[name] = float(value) if value is not None and math.isfinite(value) else math.nan
    return values


class _LMCallCapture(BaseCallback):
    def __init__(self) -> None:
        self.inputs: dict[str, Any] | None = None
        self.output: Any = None
        self.lm: dspy.BaseLM | None = None  # the LM the recorded call went to, when the caller knows it
        self._pending: dict[str, dict[str, Any]] = {}

    def on_lm_start(self, call_id, instance, inputs):
        inputs = dict(inputs)  # the LM call's arguments: prompt, messages, and its keyword arguments as "kwargs"
        self._pending[call_id] = {**(inputs.pop("kwargs", None) or {}), **inputs}

    def on_lm_end(self, call_id, outputs, exception=None):
        inputs = self._pending.pop(call_id, None)
        if exception is None and outputs:
            self.inputs = inputs
            self.output = outputs[-1] if isinstance(outputs, list) else outputs


@contextmanager
def capture_lm_call() -> Iterator[_LMCallCapture]:
    """Records the last LM call made inside the block: its inputs (messages, tools) and its output."""
    capture = _LMCallCapture()
    with dspy.context(callbacks=[*(dspy.settings.callbacks or []), capture]):
        yield capture
