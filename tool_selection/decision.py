"""What a selector decides: zero or more tool calls, with the reasoning and any problems found in them."""

from __future__ import annotations

from html import escape
from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = ["CallProblem", "MultiToolDecision", "ToolCall"]


class ToolCall(BaseModel):
    """One call: a tool name and its arguments."""

    tool_name: str = Field(description="Name of the tool to call, exactly as listed.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Arguments for the tool, by name.")

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.arguments.items())
        return f"{self.tool_name}({args})"


class CallProblem(BaseModel):
    """A problem with one call of a decision, recorded (not raised) so that metrics can count it."""

    kind: Literal["unknown_tool", "invalid_arguments"]
    tool_name: str
    call_index: int
    detail: str
    fields: list[str] = Field(default_factory=list)


class MultiToolDecision(BaseModel):
    """A selector's answer: reasoning plus tool calls; no calls means no tool fits the request."""

    reasoning: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    problems: list[CallProblem] = Field(default_factory=list)
    parse_error: str | None = None

    @property
    def abstained(self) -> bool:
        return not self.tool_calls and self.parse_error is None

    @property
    def tool_names(self) -> list[str]:
        return [c.tool_name for c in self.tool_calls]

    @property
    def has_unknown_tool(self) -> bool:
        return any(p.kind == "unknown_tool" for p in self.problems)

    @property
    def has_invalid_arguments(self) -> bool:
        return any(p.kind == "invalid_arguments" for p in self.problems)

    @property
    def valid(self) -> bool:
        return self.parse_error is None and not self.problems

    def _repr_html_(self) -> str:
        """A readable table in Jupyter: the calls, then the reasoning, problems and any parse error."""
        rows = "".join(
            f"<tr><td><code>{escape(c.tool_name)}</code></td><td><code>{escape(_json(c.arguments))}</code></td></tr>"
            for c in self.tool_calls) or '<tr><td colspan="2"><i>no call</i></td></tr>'
        parts = [f"<table><thead><tr><th>tool</th><th>arguments</th></tr></thead><tbody>{rows}</tbody></table>"]
        if self.reasoning:
            parts.append(f"<p><b>reasoning</b>: {escape(self.reasoning)}</p>")
        for problem in self.problems:
            parts.append(f'<p style="color:#b00"><b>{problem.kind}</b> (call {problem.call_index}, '
                         f"{escape(problem.tool_name)}): {escape(problem.detail)}</p>")
        if self.parse_error:
            parts.append(f'<p style="color:#b00"><b>parse error</b>: {escape(self.parse_error)}</p>')
        return "<div>" + "".join(parts) + "</div>"


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, default=str)
