"""A relevance gate in front of any strategy: "can one of these tools do what is asked?", asked first.

The gate shows the model the tools' names and descriptions and the request, and asks for Yes or No. Its score is
log P(Yes) - log P(No) of the first answer token (from the token log-probabilities of the local engine, or of a
provider that returns them); without log-probabilities it is +-``TEXT_ONLY_SCORE`` from the answer's text. A
request whose score is below the threshold is answered with no call, and the selection is not run. The gate's
model need not be the selector's (a 1.5B gate in front of a 0.5B selector costs one prompt pass); the threshold
is chosen on dev (``evals.gate.sweep_gate``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError

from tool_selection.lm.short_answers import expected_truncation
from tool_selection.parsing import safe_text
from tool_selection.registry import ToolRegistry

__all__ = ["GateAdapter", "GateVerdict", "IsRelevant", "ask_yes_no", "gate_score", "run_gate"]

TEXT_ONLY_SCORE = 10.0
TOP_LOGPROBS = 20
QUESTION = "Can one of the functions above do exactly what this request asks? Answer Yes or No."


class IsRelevant(dspy.Signature):
    """You decide whether a request can be done with the functions listed below."""

    tools: str = dspy.InputField(desc="The functions: name and description of each.")
    request: str = dspy.InputField(desc="What the user asked for.")
    relevant: bool = dspy.OutputField(desc="Yes if one of the functions does exactly what is asked, else No.")


@dataclass(frozen=True)
class GateVerdict:
    score: float
    answer: str
    passed: bool


def brief_tools(registry: ToolRegistry) -> str:
    return "\n".join(f"- {tool.NAME}: {tool.description}" for tool in registry)


def _first_token_logprobs(logprobs: Any) -> dict[str, float]:
    """{normalised token: logprob} for the first generated token and its top alternatives."""
    content = (logprobs or {}).get("content") if isinstance(logprobs, dict) else None
    if not content:
        return {}
    first = content[0]
    candidates = [(first.get("token", ""), first.get("logprob"))]
    candidates += [(top.get("token", ""), top.get("logprob")) for top in first.get("top_logprobs") or []]
    scores: dict[str, float] = {}
    for token, logprob in candidates:
        key = (token or "").strip().lower()
        if key and isinstance(logprob, int | float) and key not in scores:
            scores[key] = float(logprob)
    return scores


def gate_score(text: str, logprobs: Any) -> float:
    """log P(yes) - log P(no) of the first token; a candidate outside the top alternatives gets one nat less than
    the least probable one listed. Without log-probabilities: +-TEXT_ONLY_SCORE from the text."""
    scores = _first_token_logprobs(logprobs)
    if "yes" in scores or "no" in scores:
        floor = min(scores.values()) - 1.0
        return scores.get("yes", floor) - scores.get("no", floor)
    answer = (text or "").strip().lower()
    if answer.startswith("yes"):
        return TEXT_ONLY_SCORE
    if answer.startswith("no"):
        return -TEXT_ONLY_SCORE
    return 0.0


def ask_yes_no(lm: dspy.BaseLM, messages: list[dict[str, Any]], **lm_kwargs: Any) -> float:
    """``gate_score`` of ``lm``'s answer to ``messages``, a Yes/No question (two tokens, greedy, with the top
    alternatives' log-probabilities)."""
    with expected_truncation():  # two tokens are all the answer needs
        outputs = lm(messages=messages, max_tokens=2, temperature=0.0, logprobs=True, top_logprobs=TOP_LOGPROBS,
                     **lm_kwargs)
    output = outputs[0] if outputs else ""
    if isinstance(output, dict):
        return gate_score(str(output.get("text") or ""), output.get("logprobs"))
    return gate_score(str(output), None)


class GateAdapter(dspy.Adapter):
    """The functions in the system turn, the question after the request; one token, with log-probabilities."""

    def format(self, signature, demos, inputs):
        return [{"role": "system", "content": f"{signature.instructions}\n\nFunctions:\n{inputs['tools']}"},
                {"role": "user", "content": f"Request: {inputs['request']}\n\n{QUESTION}"}]

    def __call__(self, lm, lm_kwargs, signature, demos, inputs):
        lm_kwargs = {**lm_kwargs, "max_tokens": 2, "temperature": 0.0, "logprobs": True,
                     "top_logprobs": TOP_LOGPROBS}
        with expected_truncation():  # two tokens are all the answer needs
            return super().__call__(lm, lm_kwargs, signature, demos, inputs)

    def _call_postprocess(self, processed_signature, original_signature, outputs, lm, lm_kwargs):
        values = []
        for output in outputs:
            text = safe_text(output.get("text") if isinstance(output, dict) else output)
            score = gate_score(text, output.get("logprobs") if isinstance(output, dict) else None)
            values.append({"relevant": score >= 0, "score": score, "answer": text.strip()[:20]})
        return values

    def parse(self, signature, completion):
        score = gate_score(completion, None)
        return {"relevant": score >= 0, "score": score, "answer": completion.strip()[:20]}


def run_gate(predictor: dspy.Module, request: str, registry: ToolRegistry, *, threshold: float,
             lm: dspy.BaseLM | None = None) -> GateVerdict:
    """The gate's verdict on ``request``; an unreadable answer scores 0 (no evidence either way)."""
    with dspy.context(adapter=GateAdapter(), **({"lm": lm} if lm is not None else {})):
        try:
            prediction = predictor(request=request, tools=brief_tools(registry))
            score, answer = float(prediction.score), str(prediction.answer)
        except AdapterParseError as error:
            score, answer = 0.0, safe_text(error.lm_response or "")[:20]
    if math.isnan(score):
        score = 0.0
    return GateVerdict(score=score, answer=answer, passed=score >= threshold)
