"""The tool-calling loop: decide, execute, feed the results back, decide again; stuck detection inside it.

``AgentLoop(tools, selector=...)`` runs one user turn: the selector (any strategy) decides on the conversation so
far; each call runs through the tool's validating entry point; results (and errors, as observations the model can
correct: an unknown tool, invalid arguments with the tool's own message, a failed execution, a tool's
structured failure) go back as tool turns; the turn ends when the model answers without a call, or when the
per-turn tool-call limit is reached (failed calls count; ``LoopLimits``). With an ``EscalationPolicy``, a
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
import time
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import dspy

from tool_selection.collaboration.protocol import WriteGuidance, guided_request
from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.defaults import DEFAULT_STRATEGY
from tool_selection.errors import ToolArgumentError, ToolSelectionError, UnknownToolError
from tool_selection.escalation import EscalationPolicy
from tool_selection.lm.model_errors import MODEL_FAILURES
from tool_selection.loop_settings import (
    EMPTY_RESULT,
    LOOP_FINISH_SYSTEM_PROMPT,
    LOOP_PROMPT,
    LOOP_SYSTEM_PROMPT,
    NO_CALL_REMINDER,
    AgentConfig,
    FinishTurn,
    LoopLimits,
    LoopPrompt,
)
from tool_selection.parsing import clip
from tool_selection.registry import ToolRegistry
from tool_selection.selector import MultiToolSelector, render_tools
from tool_selection.strategies.base import ToolChoice
from tool_selection.stuck.loop import LoopStuckDetector
from tool_selection.tool import BaseTool
from tool_selection.tool_failures import is_failure, tool_failure
from tool_selection.toolset import ToolSet
from tool_selection.transcript import (
    FINISH_TOOL,
    NOT_EXECUTED,
    Attachment,
    CallRecord,
    Message,
    Role,
    Step,
    Transcript,
)

__all__ = [  # the loop, and the names its settings and records are imported by from here
    "FINISH_TOOL",
    "LOOP_FINISH_SYSTEM_PROMPT",
    "LOOP_PROMPT",
    "LOOP_SYSTEM_PROMPT",
    "NOT_EXECUTED",
    "NO_CALL_REMINDER",
    "AgentConfig",
    "AgentLoop",
    "Attachment",
    "CallRecord",
    "EscalationPolicy",
    "FinishTurn",
    "LoopLimits",
    "LoopPrompt",
    "Message",
    "Role",
    "Step",
    "ToolSession",
    "Transcript",
    "result_text",
]

log = logging.getLogger(__name__)

MAX_RESULT_CHARS = 2000  # a tool result longer than this is cut before it goes back to the model


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


class AgentLoop:
    """Runs user turns over ``tools`` with a selector (default: ``MultiToolSelector(strategy=strategy)``).

    ``lm``: the primary model (default: the configured one). ``limits``: calls and steps per turn
    (``LoopLimits``). ``escalation``: a secondary model that takes or guides stuck steps (``EscalationPolicy``).
    ``system_prompt`` opens every turn: a ``LoopPrompt`` (default ``LOOP_PROMPT``) stands instead of the selector's
    own instructions, a string follows them, None or "" adds none. ``session_config``
    starts the tools' session (``ToolSession``).
    """

    def __init__(self, tools: ToolRegistry | ToolSet, *, selector: Any = None, strategy: str = DEFAULT_STRATEGY,
                 lm: dspy.BaseLM | None = None, limits: LoopLimits | None = None,
                 system_prompt: str | LoopPrompt | None = LOOP_PROMPT, escalation: EscalationPolicy | None = None,
                 session_config: dict[str, Any] | None = None):
        self.limits = limits or LoopLimits()
        self.escalation = escalation or EscalationPolicy()
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
