"""The tool-calling loop: decide, execute, feed the results back, decide again; stuck detection inside it.

``AgentLoop(tools, selector=...)`` runs one user turn: the selector (any strategy) decides on the conversation so
far; each call runs through the tool's validating entry point; results (and errors, as observations the model can
correct: an unknown tool, invalid arguments with the tool's own message, a failed execution, a tool's
structured failure) go back as tool turns; the turn ends when the model answers without a call, or when the
per-turn tool-call limit is reached (failed calls count; ``LoopLimits``). With a ``LoopEscalation``, a
``LoopStuckDetector`` (``tool_selection.stuck.loop``) scores every step; a stuck primary hands the step to a
secondary model (``delegate``) or gets its written guidance (``guide``), a bounded number of times. Every call,
argument, result, error, timing and escalation is kept on a typed ``Transcript``.

Tools of one tool set that declare the same configuration field (treasure_hunt's game ``state``, ecommerce's
``shop``) share one value for the whole session (``ToolSession``), so the world the loop acts on persists from
call to call.
"""

from __future__ import annotations

import json
import logging
import math
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Literal

import dspy
from pydantic import BaseModel, Field, field_validator

from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.defaults import DEFAULT_MAX_TOOL_CALLS, DEFAULT_STRATEGY
from tool_selection.errors import ToolArgumentError, ToolSelectionError, UnknownToolError
from tool_selection.lm.model_errors import MODEL_FAILURES
from tool_selection.parsing import clip
from tool_selection.registry import ToolRegistry
from tool_selection.spec import SelectorSpec
from tool_selection.strategies.base import ToolChoice
from tool_selection.stuck.loop import LoopStuckDetector
from tool_selection.tool import BaseTool, StrictArguments
from tool_selection.tool_failures import is_failure, tool_failure
from tool_selection.toolset import ToolSet
from tool_selection.trajectories import Trajectory

__all__ = [
    "LOOP_FINISH_SYSTEM_PROMPT",
    "LOOP_PROMPT",
    "LOOP_SYSTEM_PROMPT",
    "AgentConfig",
    "AgentLoop",
    "Attachment",
    "FINISH_TOOL",
    "FinishTurn",
    "CallRecord",
    "LoopEscalation",
    "LoopLimits",
    "LoopPrompt",
    "NOT_EXECUTED",
    "NO_CALL_REMINDER",
    "Message",
    "Role",
    "Step",
    "ToolSession",
    "Transcript",
    "result_text",
]

log = logging.getLogger(__name__)

MAX_RESULT_CHARS = 2000  # a tool result longer than this is cut before it goes back to the model


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


_SETTINGS = (str, int, float, bool, type(None))  # per-tool settings (an interpreter, a timeout): never shared


class ToolSession:
    """Tool instances for one session, created on first use. Tools that declare the same configuration field
    share its value when it is state (a game, a shop, a folder: anything but a plain string, number or flag); the
    first tool created makes it. ``config`` sets values for the session (e.g. ``root=`` for the file tools)."""

    def __init__(self, tools: ToolRegistry | ToolSet, **config: Any):
        self.registry = tools.registry() if isinstance(tools, ToolSet) else tools
        self.shared: dict[str, Any] = dict(config)
        self._instances: dict[str, BaseTool] = {}

    def tool(self, name: str) -> BaseTool:
        if name not in self._instances:
            cls = self.registry.get(name)
            fields = set(cls.model_fields)
            instance = cls(**{k: v for k, v in self.shared.items() if k in fields})
            for field in fields:
                value = getattr(instance, field)
                if not isinstance(value, _SETTINGS):
                    self.shared.setdefault(field, value)
            self._instances[name] = instance
        return self._instances[name]

    def execute(self, call: ToolCall, call_id: str) -> CallRecord:
        """Run one call through the tool's validation; every failure becomes a record, never an exception."""
        start = time.perf_counter()
        record = {"id": call_id, "tool_name": call.tool_name, "arguments": call.arguments}
        try:
            result = self.tool(call.tool_name).validate_and_execute(**call.arguments)
        except UnknownToolError as error:
            return CallRecord(**record, ok=False, error="unknown_tool", message=str(error),
                              result=tool_failure("unknown_tool", str(error), suggestions=error.suggestions),
                              seconds=time.perf_counter() - start)
        except ToolArgumentError as error:
            return CallRecord(**record, ok=False, error="invalid_arguments", message=str(error),
                              result=tool_failure("invalid_arguments", str(error)), seconds=time.perf_counter() - start)
        except Exception as error:  # a tool's own bug or refusal is an observation for the model
            message = f"{type(error).__name__}: {error}"[:500]
            return CallRecord(**record, ok=False, error="execution_error", message=message,
                              result=tool_failure("execution_error", message), seconds=time.perf_counter() - start)
        failed = is_failure(result)
        message = result.get("message") if failed else None
        return CallRecord(**record, ok=not failed, result=result, error="tool_failure" if failed else None,
                          message=message, seconds=time.perf_counter() - start)


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
FINISH_TOOL = "finish"
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


@dataclass(frozen=True)
class LoopEscalation:
    """What the loop does with a stuck step: ``detector`` scores every step (default: a ``LoopStuckDetector`` when
    there is a ``secondary_lm``); a step whose score reaches ``threshold`` goes to ``secondary_lm`` with
    ``strategy`` ``delegate`` (it decides the step) or ``guide`` (it writes guidance the primary decides with), at
    most ``max_escalations`` times per turn. Without a ``secondary_lm`` nothing escalates."""

    secondary_lm: dspy.BaseLM | None = None
    strategy: Literal["delegate", "guide"] = "delegate"
    threshold: float = 0.7
    max_escalations: int = 2
    detector: LoopStuckDetector | None = None

    def __post_init__(self) -> None:
        if self.strategy not in ("delegate", "guide"):
            raise ToolSelectionError(f"escalation strategy must be 'delegate' or 'guide', got {self.strategy!r}.")
        if math.isnan(self.threshold):
            raise ToolSelectionError("threshold (--threshold) is NaN, which no stuck score reaches; give a number.")


class AgentLoop:
    """Runs user turns over ``tools`` with a selector (default: ``MultiToolSelector(strategy=strategy)``).

    ``lm``: the primary model (default: the configured one). ``limits``: calls and steps per turn
    (``LoopLimits``). ``escalation``: a secondary model that takes or guides stuck steps (``LoopEscalation``).
    ``system_prompt`` opens every turn: a ``LoopPrompt`` (default ``LOOP_PROMPT``) stands instead of the selector's
    own instructions, a string follows them, None or "" adds none. ``session_config``
    starts the tools' session (``ToolSession``).
    """

    def __init__(self, tools: ToolRegistry | ToolSet, *, selector: Any = None, strategy: str = DEFAULT_STRATEGY,
                 lm: dspy.BaseLM | None = None, limits: LoopLimits | None = None,
                 system_prompt: str | LoopPrompt | None = LOOP_PROMPT, escalation: LoopEscalation | None = None,
                 session_config: dict[str, Any] | None = None):
        from tool_selection.selector import MultiToolSelector

        self.limits = limits or LoopLimits()
        self.escalation = escalation or LoopEscalation()
        self.registry = tools.registry() if isinstance(tools, ToolSet) else tools
        self.choices = self.registry  # what each decision chooses from: the tools, and FINISH_TOOL where it ends turns
        if self.limits.finish == "tool":
            if FINISH_TOOL in self.registry:
                raise ToolSelectionError(f"The tools already hold one named {FINISH_TOOL!r}, the call that ends a turn "
                                         "under LoopLimits(finish='tool'): rename that tool or use finish='answer'.")
            self.choices = ToolRegistry(self.registry.name, [*self.registry, FinishTurn])
        self.selector = selector or MultiToolSelector(self.choices, strategy=strategy)
        self.lm = lm
        prompt = system_prompt if isinstance(system_prompt, LoopPrompt) else LoopPrompt(system_prompt or "", False)
        if self.limits.finish == "tool" and prompt.text == LOOP_SYSTEM_PROMPT:
            prompt = replace(prompt, text=LOOP_FINISH_SYSTEM_PROMPT)
        if prompt.demonstrations and prompt.show_as == "text":
            examples = "\n\n".join(t.text(self.limits.finish) for t in prompt.demonstrations)
            prompt = replace(prompt, text=f"{prompt.text}\n\nExamples of finished tasks:\n\n{examples}",
                             demonstrations=())
        self.system_prompt, self.replaces_selector = prompt.text or None, prompt.replaces_selector
        self.demonstrations = prompt.demonstrations
        self.detector = self.escalation.detector or (LoopStuckDetector() if self.secondary_lm is not None else None)
        self.session = ToolSession(self.registry, **(session_config or {}))
        self._guide = None

    @property
    def max_tool_calls(self) -> int:
        return self.limits.max_tool_calls

    @property
    def max_steps(self) -> int:
        return self.limits.steps

    @property
    def secondary_lm(self) -> dspy.BaseLM | None:
        return self.escalation.secondary_lm

    @classmethod
    def from_config(cls, config: AgentConfig, available: ToolRegistry | ToolSet, **kwargs: Any) -> AgentLoop:
        """The loop ``config`` describes over the tools it finds in ``available`` (``kwargs``: the loop's other
        options, e.g. ``lm=``, ``escalation=``)."""
        from tool_selection.selector import MultiToolSelector

        registry = available.registry() if isinstance(available, ToolSet) else available
        kwargs.setdefault("selector", MultiToolSelector.from_spec(config.selector))
        return cls(config.registry(registry), limits=LoopLimits(max_tool_calls=config.max_tool_calls),
                   system_prompt=LOOP_PROMPT if config.system_prompt is None else config.system_prompt,
                   **kwargs)

    def run(self, request: str | Message, *, history: Iterable[Message] = ()) -> Transcript:
        start = time.perf_counter()
        user = request if isinstance(request, Message) else Message(role=Role.USER, content=request)
        messages = [*history, user]
        if not any(m.role is Role.SYSTEM or "demonstration" in m.metadata for m in messages):  # a conversation's start
            messages[:0] = [demo for t in self.demonstrations for demo in t.messages(self.limits.finish)]
            if self.system_prompt:
                messages.insert(0, Message(role=Role.SYSTEM, content=self.system_prompt,
                                           metadata={"replaces_instructions": self.replaces_selector}))
        transcript = Transcript(messages=messages)
        calls_made = escalations = 0
        while len(transcript.steps) < self.max_steps:
            try:
                step = self._step(transcript, escalations)
            except MODEL_FAILURES as error:  # a context window outgrown, a provider down: the turn ends, recorded
                transcript.stop_reason, transcript.error = "model_error", f"{type(error).__name__}: {error}"[:1000]
                break
            escalations += step.decided_by != "primary"
            transcript.steps.append(step)
            decision = step.decision
            if decision.parse_error and not decision.tool_calls:
                transcript.stop_reason = "parse_failure"
                break
            if not decision.tool_calls and self._remind(transcript, calls_made):
                continue
            calls, answer = self._calls_and_answer(decision)
            calls_made += self._run_calls(transcript, step, calls, calls_made)
            if answer is not None:
                transcript.final_answer, transcript.stop_reason = answer, "answered"
                transcript.messages.append(Message(role=Role.ASSISTANT, content=answer, metadata={"step": step.index}))
                break
            if calls_made >= self.max_tool_calls:
                transcript.stop_reason = "call_limit"
                break
        else:
            transcript.stop_reason = "step_limit"
        transcript.seconds = time.perf_counter() - start
        return transcript

    def _calls_and_answer(self, decision: MultiToolDecision) -> tuple[list[ToolCall], str | None]:
        """The calls to run, and the turn's answer if the decision ends it: an answer without a call, or (under
        ``finish="tool"``) a ``FINISH_TOOL`` call, after the calls before it; calls after it are dropped."""
        calls = decision.tool_calls
        if not calls:
            return [], decision.reasoning
        finish = next((i for i, c in enumerate(calls) if c.tool_name == FINISH_TOOL), None)
        if finish is None or self.limits.finish != "tool":
            return calls, None
        return calls[:finish], str(calls[finish].arguments.get("answer") or decision.reasoning or "")

    def _run_calls(self, transcript: Transcript, step: Step, calls: list[ToolCall], calls_made: int) -> int:
        """Run ``calls`` (as many as the turn's call limit leaves), each result a tool turn; how many ran."""
        allowed = calls[: self.max_tool_calls - calls_made]
        if not allowed:
            return 0
        ids = [f"call_{calls_made + i}" for i in range(len(allowed))]
        transcript.messages.append(Message(role=Role.ASSISTANT, content=step.decision.reasoning, tool_calls=allowed,
                                           call_ids=ids, metadata={"step": step.index}))
        for call, call_id in zip(allowed, ids, strict=True):
            record = self._execute(call, call_id, transcript.calls)
            step.calls.append(record)
            transcript.messages.append(Message(role=Role.TOOL, tool_call_id=call_id, name=call.tool_name,
                                               content=result_text(record), metadata={"ok": record.ok}))
        return len(allowed)

    def _execute(self, call: ToolCall, call_id: str, earlier: list[CallRecord]) -> CallRecord:
        """Run ``call``, unless the same call already failed this turn (one try per failing call); a failure's
        result says what to fix."""
        failed = next((c for c in earlier if not c.ok and c.tool_name == call.tool_name
                       and c.arguments == call.arguments), None)
        if failed is not None:
            message = f"This exact call already failed in this turn: {failed.message}"[:500]
            record = CallRecord(id=call_id, tool_name=call.tool_name, arguments=call.arguments, ok=False,
                                error="repeated_call", message=message, result=tool_failure("repeated_call", message))
        else:
            record = self.session.execute(call, call_id)
        if not record.ok and isinstance(record.result, dict):
            record.result = {**record.result, "fix": fix_hint(record, self.registry)}
        return record

    def _remind(self, transcript: Transcript, calls_made: int) -> bool:
        """Send an answer without a call back with ``NO_CALL_REMINDER`` when the turn has made no call and has
        reminders left; whether it did."""
        if calls_made or transcript.reminders >= self.limits.reminders:
            return False
        transcript.reminders += 1
        step = transcript.steps[-1]
        transcript.messages += [
            Message(role=Role.ASSISTANT, content=step.decision.reasoning, metadata={"step": step.index}),
            Message(role=Role.USER, content=NO_CALL_REMINDER, metadata={"reminder": True})]
        return True

    # ------------------------------------------------------------------------------------------------- a step
    def _step(self, transcript: Transcript, escalations: int) -> Step:
        start = time.perf_counter()
        request, conversation = self._request(transcript.messages)
        choice = self.limits.tool_choice(len(transcript.steps))
        decision = self._decide(request, conversation, self.lm, choice)
        step = Step(index=len(transcript.steps), decision=decision)
        if self.detector is not None:
            step.stuck_score, step.stuck_reasons = self.detector.score(transcript.steps, decision, request,
                                                                       self.registry)
            escalation = self.escalation
            if (escalation.secondary_lm is not None and step.stuck_score >= escalation.threshold
                    and escalations < escalation.max_escalations):
                if escalation.strategy == "delegate":
                    step.decision, step.decided_by = (self._decide(request, conversation, self.secondary_lm, choice),
                                                      "secondary")
                else:
                    step.guidance = self._guidance(request, decision, step.stuck_reasons)
                    from tool_selection.collaboration import guided_request

                    guided = guided_request(request, step.guidance)
                    guided_conversation = conversation + [{"role": "user", "content": "Guidance from a more "
                                                           f"capable model: {step.guidance}"}] if conversation else None
                    step.decision, step.decided_by = self._decide(guided, guided_conversation, self.lm, choice), "guided"
        step.seconds = time.perf_counter() - start
        return step

    def _decide(self, request: str, conversation: list[dict[str, Any]] | None, lm: dspy.BaseLM | None,
                tool_choice: ToolChoice = "auto"):
        context = {"lm": lm} if lm is not None else {}
        forced = {"tool_choice": tool_choice} if tool_choice != "auto" else {}  # any selector takes the default
        with dspy.context(**context):
            return self.selector(request=request, tools=self.choices, conversation=conversation, **forced).decision

    def _request(self, messages: list[Message]) -> tuple[str, list[dict[str, Any]] | None]:
        """The conversation as one request text (for every strategy) and as chat turns (for native ones)."""
        first_user = next(i for i, m in enumerate(messages) if m.role is Role.USER)
        turns = messages[first_user:]
        system = [m for m in messages[:first_user] if m.role is Role.SYSTEM]
        if len(turns) == 1 and not system:
            return turns[0].content, None
        lines = [f"system: {m.content}" for m in system]
        for message in turns:
            if message.role is Role.USER:
                lines.append(f"user: {message.content}")
            elif message.role is Role.ASSISTANT and message.tool_calls:
                lines.append("assistant called " + "; ".join(str(c) for c in message.tool_calls))
            elif message.role is Role.ASSISTANT:
                lines.append(f"assistant: {message.content}")
            else:
                lines.append(f"{message.name} returned: {message.content}")
        ending = (f"call {FINISH_TOOL} with your answer" if self.limits.finish == "tool"
                  else "answer without a call")
        lines.append("Decide the next call(s) for the user's request, taking the results above into account; when "
                     f"the request is done, or no tool can help further, {ending}.")
        chat = [m.openai() for m in system + turns]
        if system and system[0].metadata.get("replaces_instructions"):
            chat[0]["replaces_instructions"] = True  # read (and removed) by the native adapter
        return "\n".join(lines), chat

    def _guidance(self, request: str, decision: MultiToolDecision, reasons: list[str]) -> str:
        from tool_selection.collaboration import WriteGuidance
        from tool_selection.selector import render_tools

        if self._guide is None:
            self._guide = dspy.Predict(WriteGuidance)
        attempt = (f"It proposed: {'; '.join(str(c) for c in decision.tool_calls) or 'no call'}. "
                   f"Stuck because: {', '.join(reasons) or 'low confidence'}.")
        with dspy.context(lm=self.secondary_lm, adapter=dspy.ChatAdapter()):
            try:
                return self._guide(tools=render_tools(self.registry), request=request,
                                   stuck_attempt=attempt).guidance
            except Exception as error:  # guidance is best effort: the primary decides without it
                log.warning("The secondary model's guidance failed: %s", error)
                return ""


def fix_hint(record: CallRecord, registry: ToolRegistry) -> str:
    """What a model can do about a failed call: the parameters it must match, another tool, or where to look."""
    name = record.tool_name
    if record.error == "unknown_tool":
        return "Call one of the listed functions instead; their names are exact."
    if record.error == "invalid_arguments" and name in registry:
        parameters = registry.get(name).input_schema()
        shape = {"properties": parameters.get("properties", {}), "required": parameters.get("required", [])}
        return f"Call {name} again with arguments that match its parameters: " + json.dumps(shape)[:1000]
    if record.error == "repeated_call":
        return ("Do not repeat it: change its arguments, first call another function that finds the right values, "
                "or tell the user what went wrong.")
    return (f"Read the message: fix the argument it names, or first call a function that finds the right value "
            f"(one that lists, searches or looks it up), then call {name} again; if neither helps, tell the user.")


def result_text(record: CallRecord) -> str:
    """A call's result as the model reads it: JSON, cut at ``MAX_RESULT_CHARS``; ``EMPTY_RESULT`` for nothing."""
    if record.result is None and record.ok:
        return EMPTY_RESULT
    text = json.dumps(record.result, ensure_ascii=False, default=str)
    return clip(text, MAX_RESULT_CHARS)
