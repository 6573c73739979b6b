"""Text protocols: the tool-calling conventions the systems this toolkit studies write into their prompts.

Each protocol is a documented prompt (how to call a tool) plus a tolerant parser; the tools are listed in the
system turn (first, so prompts over one catalog share a prefix), the request is the user turn, and demonstrations
are earlier turns written in the protocol.

- ``text:fenced`` (seed AI Battle): a ```` ```tool ```` fence holding ``{"name": ..., "arguments": {...}}``.
- ``text:call`` (seed agent-from-scratch): ``TOOL_CALL: name(arg="value", n=3)`` lines.
- ``text:tags`` (seed MCP tutorial): ``<tool>{"name": ..., "arguments": {...}}</tool>`` tags.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError

from tool_selection.decision import ToolCall
from tool_selection.parsing import (
    ParsedAnswer,
    call_json,
    parse_call_lines,
    parse_fenced_tool_blocks,
    parse_tool_tags,
    safe_text,
)
from tool_selection.registry import ToolRegistry
from tool_selection.strategies.base import (
    SelectionStrategy,
    ToolChoice,
    as_calls,
    check_decision,
    decided,
    inner_predict,
    only_auto,
    parse_failure,
    register_strategy,
)
from tool_selection.strategies.json_strategies import render_tools

__all__ = ["PROTOCOLS", "TextProtocol", "TextProtocolAdapter", "TextSelect"]

ABSTAIN_TEXT = "None of the available tools can do this."


class TextSelect(dspy.Signature):
    """You help the user by calling tools. Call a tool only when it does exactly what the user asks, with argument
    values taken from the request; make several calls when the request asks for several things. If none of the
    tools can do what is asked, call none: answer in one plain sentence that none of the tools can do this."""

    tools: str = dspy.InputField(desc="The available tools: name, description and arguments of each.")
    request: str = dspy.InputField(desc="What the user asked for.")
    tool_calls: list[ToolCall] = dspy.OutputField(desc="The tool calls to make; none when no tool fits.")


def _python_value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, bool | type(None)) else repr(value)


@dataclass(frozen=True)
class TextProtocol:
    """A way of writing tool calls in text: how the prompt explains it, how a call is written, how it is read."""

    name: str
    seed: str
    shape: str
    how_to_call: str
    render: Callable[[ToolCall], str]
    parse: Callable[[str], ParsedAnswer]

    def render_calls(self, calls: list[ToolCall]) -> str:
        return "\n".join(self.render(call) for call in calls)


PROTOCOLS = {
    "fenced": TextProtocol(
        "fenced", "AI Battle", "```tool fences holding JSON calls",
        "To call a tool, write a fenced block tagged `tool` holding one JSON object with the tool's name and its "
        'arguments:\n```tool\n{"name": "tool_name", "arguments": {"argument": "value"}}\n```\nWrite one block per '
        "call, and nothing else after the last block.",
        lambda call: f"```tool\n{call_json(call)}\n```", parse_fenced_tool_blocks),
    "call": TextProtocol(
        "call", "agent-from-scratch", "TOOL_CALL: name(arg=value) lines",
        "To call a tool, write one line per call in the form\nTOOL_CALL: tool_name(argument=\"value\", number=3)\n"
        "with keyword arguments written as JSON values, and nothing else after the last line.",
        lambda call: "TOOL_CALL: " + call.tool_name + "(" + ", ".join(
            f"{k}={_python_value(v)}" for k, v in call.arguments.items()) + ")",
        parse_call_lines),
    "tags": TextProtocol(
        "tags", "MCP tutorial", "<tool>{JSON call}</tool> tags",
        "To call a tool, write a <tool> tag holding one JSON object with the tool's name and its arguments:\n"
        '<tool>{"name": "tool_name", "arguments": {"argument": "value"}}</tool>\nWrite one tag per call, and '
        "nothing else after the last tag.",
        lambda call: f"<tool>{call_json(call)}</tool>", parse_tool_tags),
}


class TextProtocolAdapter(dspy.Adapter):
    """The tools and the protocol in the system turn, the request as the user turn, the answer parsed by the
    protocol's parser; an answer with a call that cannot be read raises ``AdapterParseError``."""

    def __init__(self, protocol: TextProtocol, callbacks=None):
        super().__init__(callbacks=callbacks)
        self.protocol = protocol

    def format(self, signature, demos, inputs):
        system = f"{signature.instructions}\n\n{self.protocol.how_to_call}\n\nAvailable tools:\n\n{inputs['tools']}"
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        for demo in demos:
            if "request" in demo and demo.get("tool_calls") is not None:
                calls = as_calls(demo["tool_calls"])
                answer = self.protocol.render_calls(calls) if calls else ABSTAIN_TEXT
                messages += [{"role": "user", "content": demo["request"]}, {"role": "assistant", "content": answer}]
        messages.append({"role": "user", "content": inputs["request"]})
        return messages

    def _call_postprocess(self, processed_signature, original_signature, outputs, lm, lm_kwargs):
        # the prose around the calls is kept as reasoning, which is not a signature field (DSPy would drop it)
        values = []
        for output in outputs:
            text = output.get("text") if isinstance(output, dict) else output
            value = self.parse(original_signature, text or "")
            if isinstance(output, dict) and output.get("logprobs"):
                value["logprobs"] = output["logprobs"]
            values.append(value)
        return values

    def parse(self, signature, completion):
        text = safe_text(completion)
        parsed = self.protocol.parse(text)
        if parsed.failed:
            raise AdapterParseError(adapter_name=type(self).__name__, signature=signature, lm_response=text,
                                    message="; ".join(parsed.failures)[:500])
        return {"tool_calls": parsed.calls, "reasoning": parsed.text}


class _TextStrategy(SelectionStrategy):
    protocol: TextProtocol

    def build_predictor(self) -> dspy.Module:
        return dspy.Predict(TextSelect)

    def adapter(self) -> dspy.Adapter:
        return TextProtocolAdapter(self.protocol)

    def decide(self, predictor: dspy.Module, request: str, registry: ToolRegistry,
               conversation: list[dict[str, Any]] | None = None, tool_choice: ToolChoice = "auto") -> dspy.Prediction:
        only_auto(tool_choice, self.name)
        demos = [{k: v for k, v in dict(d).items() if k != "tools"} for d in inner_predict(predictor).demos]
        try:
            prediction = predictor(request=request, tools=render_tools(registry), demos=demos)
        except AdapterParseError as error:
            return parse_failure(error, error.lm_response)
        return decided(check_decision(getattr(prediction, "reasoning", "") or "", as_calls(prediction.tool_calls),
                                      registry))


def _text_strategy(key: str) -> type[_TextStrategy]:
    protocol = PROTOCOLS[key]
    cls = type(f"Text{key.title()}", (_TextStrategy,), {
        "name": f"text:{key}", "protocol": protocol, "__module__": __name__,
        "summary": f"text protocol (seed {protocol.seed}): {protocol.shape}, tools listed in the prompt"})
    return register_strategy(cls)


TextFenced, TextCall, TextTags = (_text_strategy(key) for key in PROTOCOLS)
