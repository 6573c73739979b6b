"""How a tool-calling loop is set up: the prompt that opens its conversation, how long a turn may run and how it
ends (``LoopLimits``, ``FinishTurn``), and one agent's tools, limit and selector (``AgentConfig``)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from tool_selection.defaults import DEFAULT_MAX_TOOL_CALLS
from tool_selection.errors import ToolSelectionError
from tool_selection.registry import ToolRegistry
from tool_selection.spec import SelectorSpec
from tool_selection.strategies.base import ToolChoice
from tool_selection.tool import BaseTool, StrictArguments
from tool_selection.trajectories import Trajectory
from tool_selection.transcript import FINISH_TOOL

__all__ = ["EMPTY_RESULT", "LOOP_FINISH_SYSTEM_PROMPT", "LOOP_PROMPT", "LOOP_SYSTEM_PROMPT", "NO_CALL_REMINDER",
           "AgentConfig", "FinishTurn", "LoopLimits", "LoopPrompt"]


class AgentConfig(BaseModel):
    """One agent's tools, limit and selector: tool names or OpenAI-style function schemas (their ``name`` is looked
    up), and how it decides each step (a ``SelectorSpec``; by default without a relevance stage, which was fitted
    on single decisions, not on the steps of a conversation)."""

    name: str = "agent"
    tools: list[str | dict[str, Any]] = Field(default_factory=list)
    selector: SelectorSpec = Field(default_factory=lambda: SelectorSpec(relevance="none"))

    @field_validator("selector", mode="before")
    @classmethod
    def _no_relevance_unless_asked(cls, value: Any) -> Any:
        return {"relevance": "none", **value} if isinstance(value, dict) else value
    max_tool_calls: int = Field(default=DEFAULT_MAX_TOOL_CALLS, ge=1, le=100)
    system_prompt: str | None = Field(default=None, description="None: the loop's default; \"\" for none.")

    def registry(self, available: ToolRegistry) -> ToolRegistry:
        """The configured tools found in ``available``; names that match none are warned about and skipped."""
        chosen = []
        for entry in self.tools:
            name = entry if isinstance(entry, str) else (entry.get("function") or entry).get("name")
            if isinstance(name, str) and name in available:
                chosen.append(available.get(name))
            else:
                warnings.warn(f"Agent {self.name!r}: tool {name!r} matches no registered tool; skipped.",
                              stacklevel=2)
        return ToolRegistry(f"{self.name}-tools", chosen)


LOOP_SYSTEM_PROMPT = (
    "You act for the user by calling functions; a request can take several steps. For the user's latest message, "
    "call the function that does the next step now, with argument values from the conversation or from earlier "
    "results; when a value you need is unknown, first call a function that finds it. Each result comes back as a "
    "tool message: read it and go on with the next call. When a call fails, read its error, then call again with "
    "the arguments fixed, or first call a function that gets what was missing. When everything the latest message "
    "asks is done, answer in one or two plain sentences without a call. Earlier messages are already handled."
)
"""The loop's instructions. They stand instead of a selector's own instructions, which are written for one
decision (call only what does exactly what is asked, else say that no function can) and made models refuse every
step after the first (see ``LoopPrompt``)."""


@dataclass(frozen=True)
class LoopPrompt:
    """What opens a loop's conversation: ``text``, its system prompt, and ``demonstrations``, solved tasks shown
    after it as earlier conversations or (``show_as="text"``) told in it as examples
    (``tool_selection.trajectories``). With ``replaces_selector`` (the default)
    the text stands instead of the selector's one-decision instructions (native strategies); a plain string given
    as ``system_prompt`` follows them."""

    text: str
    replaces_selector: bool = True
    demonstrations: tuple[Trajectory, ...] = ()
    show_as: Literal["turns", "text"] = "turns"  # demonstrations as earlier turns, or as examples in the text

LOOP_PROMPT = LoopPrompt(LOOP_SYSTEM_PROMPT)
NO_CALL_REMINDER = ("You answered without calling a function. If one of the functions can do what I asked, call it "
                    "now instead of describing it; if none can, say so in one sentence.")
EMPTY_RESULT = "Done: the call succeeded and returned nothing."  # a None result, which reads as a failure as "null"
LOOP_FINISH_SYSTEM_PROMPT = LOOP_SYSTEM_PROMPT.replace(
    "answer in one or two plain sentences without a call",
    f"call {FINISH_TOOL} with your answer to the user in one or two plain sentences")


class FinishTurn(BaseTool):
    """The call that ends a turn under ``LoopLimits(finish="tool")``: the loop reads its ``answer`` and never runs
    it, so that ending a turn is a decision the model makes, not what it falls into by writing text."""

    NAME = FINISH_TOOL
    description = ("Call this when everything the user's latest message asks is done, or cannot be done with the "
                   "other functions: answer is what you tell the user.")

    class Arguments(StrictArguments):
        answer: str = Field(description="The answer to the user: the result, or why it cannot be done.")

    def execute(self, answer: str) -> str:
        return answer


@dataclass(frozen=True)
class LoopLimits:
    """How long one user turn may run: ``max_tool_calls`` calls (failed ones count), and ``max_steps`` decisions
    (default: ``max_tool_calls + 2``). ``reminders``: how many times an answer without a call, in a turn that has
    made no call yet, is sent back with ``NO_CALL_REMINDER`` (each reminder takes a step). ``first_step``: the
    tool choice of each turn's first decision; ``required`` makes it a call (native strategies: a local model's
    call is opened for it under ``native-strict``, a provider is sent ``tool_choice``). ``finish``: how a turn
    ends, by an answer without a call, or (``tool``) by a call of ``FINISH_TOOL`` that the model must choose: every
    decision is then a required call, and the tool's ``answer`` is the turn's answer."""

    max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS
    max_steps: int | None = None
    reminders: int = 0
    first_step: ToolChoice = "auto"
    finish: Literal["answer", "tool"] = "answer"

    def __post_init__(self) -> None:
        if self.max_tool_calls < 1:
            raise ToolSelectionError(f"max_tool_calls must be at least 1, got {self.max_tool_calls}.")
        if self.reminders < 0:
            raise ToolSelectionError(f"reminders must be 0 or more, got {self.reminders}.")
        if self.first_step not in ("auto", "required"):
            raise ToolSelectionError(f"first_step must be 'auto' or 'required', got {self.first_step!r}.")
        if self.finish not in ("answer", "tool"):
            raise ToolSelectionError(f"finish must be 'answer' or 'tool', got {self.finish!r}.")

    def tool_choice(self, step: int) -> ToolChoice:
        """The tool choice of a turn's ``step``-th decision: every one a call when the turn ends with
        ``FINISH_TOOL``, else the first as ``first_step`` says."""
        if self.finish == "tool":
            return "required"
        return self.first_step if step == 0 else "auto"

    @property
    def steps(self) -> int:
        return self.max_steps or self.max_tool_calls + 2
