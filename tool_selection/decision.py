"""What a selector decides: zero or more tool calls, with the reasoning and any problems found in them."""

from __future__ import annotations

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
