"""One agent's turn in a conversation: its model answers through the tool-calling loop, with its own tools, call
limit, system prompt and (optionally) a collaboration pair, and everything the turn did is returned as an
``Utterance``.

The selector a speaker decides with is the toolkit's ``MultiToolSelector``, its instructions replaced by
``CONVERSATION_INSTRUCTIONS`` (the selector's own, written for one tool decision, tell a model with no fitting tool
to answer that none fits, which is no conversation). When the loop stops at the call limit without an answer, one
more step without tools asks for the answer from what was found, so every turn that does not fail has a text.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import dspy
from dspy.utils.usage_tracker import track_usage
from pydantic import BaseModel, ConfigDict, Field, FieldSerializationInfo, field_serializer, field_validator
from pydantic.alias_generators import to_camel

from tool_selection.agent import AgentLoop, LoopLimits, ToolSession
from tool_selection.collaboration import CollaborationConfig, PairConfig
from tool_selection.conversations.errors import ConversationConfigError
from tool_selection.decision import ToolCall
from tool_selection.escalation import EscalationPolicy
from tool_selection.registry import ToolRegistry
from tool_selection.selector import MultiToolSelector
from tool_selection.strategies import parse_strategy
from tool_selection.strategies.base import inner_predict
from tool_selection.stuck.loop import LoopStuckDetector
from tool_selection.transcript import CallRecord, Message, Transcript

__all__ = ["CONVERSATION_INSTRUCTIONS", "Escalation", "LMFactory", "LMPool", "Speaker", "TurnMetadata", "Utterance",
           "conversation_selector", "default_lm_factory", "pair_escalation", "pairs_by_primary", "stored_call"]

CONVERSATION_INSTRUCTIONS = (
    "You take part in a conversation, in the role the system message gives you. When one of the functions helps "
    "with your next message (running code, searching), call it; its result comes back as a tool message, and you "
    "may call again. When you have what you need, or no function helps, write your message in plain text.")
LIMIT_NOTE = ("You have used all {limit} tool calls allowed for this turn. Without calling a tool, write your "
              "message now from what you have found.")
MAX_STORED_RESULT_CHARS = 4000

CallObserver = Callable[[str, CallRecord], None]
"""Called with the speaker's name and each tool call's record as soon as the call returns."""
LMFactory = Callable[..., dspy.BaseLM]
"""``(spec, *, temperature, max_tokens, cache) -> LM``; the default is ``get_lm``."""


def default_lm_factory(spec: str, *, temperature: float = 0.0, max_tokens: int = 384,
                       cache: bool = True) -> dspy.BaseLM:
    from tool_selection.lm import get_lm

    return get_lm(spec, temperature=temperature, max_tokens=max_tokens, cache=cache)


class LMPool:
    """One LM per (spec, temperature, max_tokens), made by ``factory`` on first use (a local model's weights are
    loaded once per process whatever the settings)."""

    def __init__(self, factory: LMFactory | None = None, *, cache: bool = True):
        self.factory, self.cache = factory or default_lm_factory, cache
        self._lms: dict[tuple[str, float, int], dspy.BaseLM] = {}

    def get(self, spec: str, *, temperature: float = 0.0, max_tokens: int = 384) -> dspy.BaseLM:
        key = (spec, temperature, max_tokens)
        if key not in self._lms:
            self._lms[key] = self.factory(spec, temperature=temperature, max_tokens=max_tokens, cache=self.cache)
        return self._lms[key]


def pairs_by_primary(collaboration: CollaborationConfig) -> dict[str, PairConfig]:
    """The enabled pairs, by their primary model's spec."""
    return {pair.primary: pair for pair in collaboration.pairs} if collaboration.enabled else {}


class _Record(BaseModel):
    """Stored records: snake_case in Python, camelCase in JSON (the debate protocol's spelling)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True)


def stored_call(record: CallRecord) -> CallRecord:
    """A call as stored with its turn: a long result cut to its first 4,000 characters, seconds rounded."""
    result = record.result
    text = json.dumps(result, ensure_ascii=False, default=str)
    if len(text) > MAX_STORED_RESULT_CHARS:
        result = {"truncated": text[:MAX_STORED_RESULT_CHARS], "chars": len(text)}
    return record.model_copy(update={"result": result, "seconds": round(record.seconds, 4)})


class Escalation(_Record):
    """A loop step the stuck detector handed to the pair's secondary model."""

    step: int
    decided_by: str
    stuck_score: float | None
    reasons: list[str] = Field(default_factory=list)
    guidance: str | None = None


class TurnMetadata(_Record):
    """Everything one turn did and cost: stored with each discussion turn and debate contribution."""

    model: str
    tool_calls: list[CallRecord] = Field(default_factory=list, description="Stored with each call's tool as 'name'.")
    iterations: int = Field(0, description="Model steps the turn took (the closing step after a limit included).")
    tool_call_limit: int
    limit_hit: bool = False
    closing_calls: list[str] = Field(default_factory=list,
                                     description="Calls the model still wrote in the closing step (not run).")
    stop_reason: str
    error: str | None = None
    escalations: list[Escalation] = Field(default_factory=list)
    stuck_scores: list[float | None] = Field(default_factory=list)
    tokens: dict[str, dict[str, int]] = Field(default_factory=dict, description="{model: {input, output}}.")
    seconds: float = 0.0
    cpu_seconds: float = Field(0.0, description="CPU time of this process during the turn, every thread together "
                                                "(the cost when the CPU is shared; 0 in older records).")

    @field_validator("tool_calls", mode="before")
    @classmethod
    def _read_stored_calls(cls, calls: Any) -> Any:
        return [{"tool_name": c["name"], **{k: v for k, v in c.items() if k != "name"}}
                if isinstance(c, dict) and "name" in c else c for c in calls] if isinstance(calls, list) else calls

    @field_serializer("tool_calls")
    def _store_calls(self, calls: list[CallRecord], info: FieldSerializationInfo) -> list[dict[str, Any]]:
        return [{"name" if key == "tool_name" else key: value for key, value in c.model_dump(mode=info.mode).items()}
                for c in calls]

    @property
    def failed_calls(self) -> int:
        return sum(not call.ok for call in self.tool_calls)


@dataclass
class Utterance:
    """A turn's text (empty when the model gave none) and its record."""

    text: str
    metadata: TurnMetadata


class _ObservedSession(ToolSession):
    """A tool session that reports each call as soon as it returns (``--verbose``)."""

    def __init__(self, tools: ToolRegistry, observer: Callable[[CallRecord], None], **config: Any):
        super().__init__(tools, **config)
        self._observer = observer

    def execute(self, call: ToolCall, call_id: str) -> CallRecord:
        record = super().execute(call, call_id)
        self._observer(record)
        return record


def conversation_selector(tools: ToolRegistry, strategy: str) -> MultiToolSelector:
    """A selector over ``tools`` that lets a model talk: the strategy's prompt with ``CONVERSATION_INSTRUCTIONS``."""
    gated, _ = parse_strategy(strategy)
    if gated:
        raise ConversationConfigError(f"Strategy {strategy!r}: a relevance gate answers 'no tool fits' instead of "
                                      "letting the model talk; use the strategy without the gate+ prefix.")
    selector = MultiToolSelector(tools, strategy=strategy)
    predict = inner_predict(selector.select)
    predict.signature = predict.signature.with_instructions(CONVERSATION_INSTRUCTIONS)
    return selector


def pair_escalation(pair: PairConfig, secondary_lm: dspy.BaseLM) -> EscalationPolicy:
    """How a collaboration pair helps a speaker's stuck step: the pair's detector scores each step of the loop;
    ``guide`` has the secondary (``secondary_lm``) write guidance the primary retries with, ``delegate`` lets it
    decide; at most ``max_retries`` times per turn."""
    return EscalationPolicy(secondary_lm=secondary_lm, strategy=pair.strategy, threshold=pair.threshold,
                            max_escalations=pair.max_retries,
                            detector=LoopStuckDetector(decision_detector=pair.build_detector()))


class Speaker:
    """One agent: a model, its tools and limit, its system prompt, and optionally a secondary model that helps a
    stuck step (``escalation``; ``pair_escalation`` makes it from a collaboration pair). ``session_config`` starts
    the tools' session (shared state, parameters); ``observe`` reports each tool call as it returns."""

    def __init__(self, name: str, lm: dspy.BaseLM, *, tools: ToolRegistry, system_prompt: str,
                 max_tool_calls: int = 10, strategy: str = "auto", session_config: dict[str, Any] | None = None,
                 escalation: EscalationPolicy | None = None):
        self.name, self.lm, self.max_tool_calls = name, lm, max_tool_calls
        self.session_config = session_config
        self.loop = AgentLoop(tools, selector=conversation_selector(tools, strategy), lm=lm,
                              limits=LoopLimits(max_tool_calls=max_tool_calls), system_prompt=system_prompt,
                              session_config=session_config, escalation=escalation)
        closing_tools = ToolRegistry(f"{name}-closing")
        self.closing = AgentLoop(closing_tools, selector=conversation_selector(closing_tools, strategy), lm=lm,
                                 limits=LoopLimits(max_tool_calls=1, max_steps=1), system_prompt=system_prompt)

    def observe(self, observer: CallObserver | None) -> Speaker:
        """Report each of this speaker's tool calls to ``observer`` (with the speaker's name) as soon as it returns;
        call it before the first turn (its tools' session starts again)."""
        if observer is not None:
            self.loop.session = _ObservedSession(self.loop.registry, lambda record: observer(self.name, record),
                                                 **(self.session_config or {}))
        return self

    def speak(self, request: str, history: Sequence[Message] = ()) -> Utterance:
        """The agent's answer to ``request`` after ``history`` (earlier turns, from this agent's point of view)."""
        start, cpu = time.perf_counter(), time.process_time()
        with track_usage() as tracker:
            transcript = self.loop.run(request, history=history)
            closing = None
            if transcript.stop_reason in ("call_limit", "step_limit"):
                closing = self.closing.run(LIMIT_NOTE.format(limit=self.max_tool_calls),
                                           history=transcript.messages)
        utterance = self._utterance(transcript, closing)
        utterance.metadata.tokens = {model: {"input": int(u.get("prompt_tokens") or 0),
                                             "output": int(u.get("completion_tokens") or 0)}
                                     for model, u in tracker.get_total_tokens().items()}
        utterance.metadata.seconds = round(time.perf_counter() - start, 3)
        utterance.metadata.cpu_seconds = round(time.process_time() - cpu, 3)
        return utterance

    def _utterance(self, transcript: Transcript, closing: Transcript | None) -> Utterance:
        steps = transcript.steps
        text = (transcript.final_answer or "").strip()
        metadata = TurnMetadata(
            model=str(getattr(self.lm, "model", self.lm)), tool_calls=[stored_call(c) for c in transcript.calls],
            iterations=len(steps), tool_call_limit=self.max_tool_calls,
            limit_hit=transcript.stop_reason == "call_limit", stop_reason=transcript.stop_reason, error=transcript.error,
            escalations=[Escalation(step=s.index, decided_by=s.decided_by, stuck_score=s.stuck_score,
                                    reasons=s.stuck_reasons, guidance=s.guidance)
                         for s in steps if s.decided_by != "primary"],
            stuck_scores=[s.stuck_score for s in steps])
        if transcript.stop_reason == "parse_failure" and metadata.error is None:
            metadata.error = f"unreadable answer: {steps[-1].decision.parse_error}"[:1000]
        if closing is not None:
            metadata.iterations += len(closing.steps)
            metadata.closing_calls = [c.tool_name for c in closing.calls]
            last = closing.steps[-1].decision if closing.steps else None
            text = (closing.final_answer or (last.reasoning if last else "") or "").strip()
            if closing.stop_reason in ("parse_failure", "model_error"):
                metadata.error = closing.error or f"the closing step ended with {closing.stop_reason}"
            elif not text and metadata.closing_calls:
                metadata.error = (f"at the call limit the model wrote more calls ({', '.join(metadata.closing_calls)}; "
                                  "not run) and no message")
        return Utterance(text=text, metadata=metadata)
