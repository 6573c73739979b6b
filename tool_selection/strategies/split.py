"""Requests that ask for several things: the request split into the actions it asks for, a decision per action,
the calls merged.

Small models answer a request that asks for several things with its first call alone (BFCL ``parallel``: one call
in every answer of the 0.5B model, each naming the right function). ``native-strict-split`` first asks the model,
in a short prompt without the tools, to list the separate actions the request asks for, one per line, each
repeating the values it needs. A request of one action is decided as ``native-strict`` decides it, on the request
as written; one of several gets one decision per action over the same tools, and their calls are merged in order,
exact repeats dropped. ``native-split`` does the same over ``native``.
"""

from __future__ import annotations

import re
from typing import Any

import dspy

from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.lm.short_answers import expected_truncation
from tool_selection.parsing import safe_text
from tool_selection.registry import ToolRegistry
from tool_selection.strategies.base import ToolChoice, check_decision, decided, inner_predict, register_strategy
from tool_selection.strategies.native import Native, NativeStrict

__all__ = ["MAX_ACTIONS", "actions_of", "merged", "split_request"]

MAX_ACTIONS = 6  # BFCL's parallel requests ask for two to four things; more lines are a model rambling
MAX_ACTION_CHARS = 300
SPLIT_TOKENS = 160

SPLIT_INSTRUCTIONS = (
    "List the separate actions the user's request asks for, one per line. Each line is one short instruction that "
    "repeats every value it needs from the request (names, numbers, places, dates, units). A request that asks "
    "for one thing is one line. Write only the lines.")
SPLIT_EXAMPLES = (  # hand-written, about no suite's tools
    ("What's the weather in Paris and in Rome tomorrow?",
     "Get tomorrow's weather in Paris\nGet tomorrow's weather in Rome"),
    ("Book a table for two at Luigi's at 7 pm.", "Book a table for two at Luigi's at 7 pm"),
    ("Convert 100 USD to EUR, then email the result to Ana.",
     "Convert 100 USD to EUR\nEmail the converted amount to Ana"),
)
_LIST_MARK = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)]|step \d{1,2}:)\s*", re.IGNORECASE)


def actions_of(text: str) -> list[str]:
    """The actions in the model's list: one per non-empty line, list marks removed, at most ``MAX_ACTIONS``."""
    lines = (_LIST_MARK.sub("", line).strip() for line in safe_text(text).splitlines())
    return [line[:MAX_ACTION_CHARS] for line in lines if line][:MAX_ACTIONS]


def split_request(lm: dspy.BaseLM, request: str) -> list[str]:
    """The actions ``lm`` reads in ``request`` (greedy; an unreadable answer is one action, the request)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SPLIT_INSTRUCTIONS}]
    for asked, listed in SPLIT_EXAMPLES:
        messages += [{"role": "user", "content": asked}, {"role": "assistant", "content": listed}]
    messages.append({"role": "user", "content": request})
    with expected_truncation():  # a list cut at the token limit still holds its first actions
        outputs = lm(messages=messages, max_tokens=SPLIT_TOKENS, temperature=0.0)
    output = outputs[0] if outputs else ""
    text = output.get("text") if isinstance(output, dict) else output
    return actions_of(str(text or "")) or [request]


def merged(decisions: list[MultiToolDecision], registry: ToolRegistry) -> MultiToolDecision:
    """One decision from one per action: their calls in order, exact repeats dropped, checked again; a parse
    failure only where no action's answer could be read."""
    readable = [d for d in decisions if d.parse_error is None]
    if not readable:
        return decisions[0]
    calls: list[ToolCall] = []
    for decision in readable:
        calls += [call for call in decision.tool_calls if call not in calls]
    reasoning = " ".join(d.reasoning for d in readable if d.reasoning)
    return check_decision(reasoning, calls, registry)


class _Split:
    """Splits the request, then decides each action with the strategy it is mixed into."""

    def decide(self, predictor: dspy.Module, request: str, registry: ToolRegistry,
               conversation: list[dict[str, Any]] | None = None, tool_choice: ToolChoice = "auto") -> dspy.Prediction:
        decide = super().decide  # type: ignore[misc]
        if conversation:  # a loop's turn carries its context in the turns: decided as a whole
            return decide(predictor, request, registry, conversation=conversation, tool_choice=tool_choice)
        actions = split_request(inner_predict(predictor).lm or dspy.settings.lm, request)
        if len(actions) == 1:
            return decide(predictor, request, registry, tool_choice=tool_choice)
        predictions = [decide(predictor, action, registry, tool_choice=tool_choice) for action in actions]
        prediction = decided(merged([p.decision for p in predictions], registry))
        prediction.row_extras = {"split_actions": float(len(actions))}
        return prediction


@register_strategy
class NativeStrictSplit(_Split, NativeStrict):
    name = "native-strict-split"
    summary = ("the request split into its actions first (one short model call), then native-strict's decision "
               "per action, calls merged (local models)")


@register_strategy
class NativeSplit(_Split, Native):
    name = "native-split"
    summary = "the request split into its actions first, then native's decision per action, calls merged"
