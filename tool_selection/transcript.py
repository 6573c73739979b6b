"""What one turn of the tool-calling loop leaves behind: its messages, each step's decision and the calls it made.

``Transcript`` holds a turn (``AgentLoop.run``); ``Step`` one decision and its ``CallRecord``s; ``Message`` one turn
of the conversation in the OpenAI chat shape. The records sit below the loop, so that the stuck detector, the
demonstrations (``tool_selection.trajectories``) and the conversations read them without importing the loop.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

from tool_selection.decision import MultiToolDecision, ToolCall

__all__ = ["FINISH_TOOL", "NOT_EXECUTED", "Attachment", "CallRecord", "ErrorKind", "Message", "Role", "Step",
           "Transcript"]

FINISH_TOOL = "finish"  # the call that ends a turn under LoopLimits(finish="tool")


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class Attachment(BaseModel):
    """An image sent with a user message (base64), for a vision-capable hosted model."""

    media_type: str = "image/png"
    data: str = Field(description="Base64-encoded bytes.")

    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.data}"


class Message(BaseModel):
    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    call_ids: list[str] = Field(default_factory=list)  # ids of ``tool_calls``, for the tool turns that answer them
    tool_call_id: str | None = None  # on a tool turn: the call it answers
    name: str | None = None  # on a tool turn: the tool
    attachments: list[Attachment] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def openai(self) -> dict[str, Any]:
        """The message in the OpenAI chat shape (what chat templates and providers take)."""
        if self.role is Role.TOOL:
            return {"role": "tool", "tool_call_id": self.tool_call_id, "content": self.content}
        message: dict[str, Any] = {"role": self.role.value, "content": self.content}
        if self.attachments:
            message["content"] = [{"type": "text", "text": self.content}] + [
                {"type": "image_url", "image_url": {"url": a.data_url()}} for a in self.attachments]
        if self.tool_calls:
            message["tool_calls"] = [{"id": call_id, "type": "function", "function": {
                "name": call.tool_name, "arguments": json.dumps(call.arguments, ensure_ascii=False, default=str)}}
                for call_id, call in zip(self.call_ids, self.tool_calls, strict=True)]
            message["content"] = self.content or None
        return message


ErrorKind = Literal["unknown_tool", "invalid_arguments", "execution_error", "tool_failure", "repeated_call"]
NOT_EXECUTED: tuple[ErrorKind, ...] = ("unknown_tool", "invalid_arguments", "repeated_call")  # never reached a tool


class CallRecord(BaseModel):
    id: str
    tool_name: str
    arguments: dict[str, Any]
    ok: bool
    result: Any = None
    error: ErrorKind | None = None
    message: str | None = None
    seconds: float = 0.0


class Step(BaseModel):
    index: int
    decided_by: Literal["primary", "secondary", "guided"] = "primary"
    decision: MultiToolDecision
    calls: list[CallRecord] = Field(default_factory=list)
    stuck_score: float | None = None
    stuck_reasons: list[str] = Field(default_factory=list)
    guidance: str | None = None
    seconds: float = 0.0


class Transcript(BaseModel):
    """One user turn run by the loop: the messages (system, user, assistant, tool), every step, and the end."""

    messages: list[Message]
    steps: list[Step] = Field(default_factory=list)
    final_answer: str | None = None
    stop_reason: Literal["answered", "call_limit", "step_limit", "parse_failure", "model_error"] = "answered"
    error: str | None = None
    reminders: int = 0  # answers without a call sent back for one (``LoopLimits.reminders``)
    seconds: float = 0.0

    @property
    def calls(self) -> list[CallRecord]:
        return [call for step in self.steps for call in step.calls]

    @property
    def tool_errors(self) -> int:
        return sum(not call.ok for call in self.calls)

    @property
    def errors_recovered(self) -> int:
        """Failed calls followed, later in the turn, by a successful call of the same tool."""
        calls = self.calls
        return sum(1 for i, call in enumerate(calls) if not call.ok
                   and any(later.ok and later.tool_name == call.tool_name for later in calls[i + 1:]))

    @property
    def escalations(self) -> int:
        return sum(step.decided_by != "primary" for step in self.steps)
