"""Discussions between two models: one plays the human, one the assistant, toward a stated goal, each with tools
and, optionally, a larger model that helps it when it is stuck.

    manager = DiscussionManager.from_config("examples/discussion.yaml", out="runs/discussion.json")
    transcript = manager.run()
    [(t.agent_role, t.content[:60], len(t.metadata.tool_calls)) for t in transcript.turns]

The human-role model opens; the two alternate for ``turns`` messages. Each model sees the conversation from its
side (its own messages as the assistant's, the other's as the user's; the oldest dropped beyond ``context_chars``)
and answers through the tool-calling loop with the discussion's tools. When a collaboration pair names the speaking
model as its primary, the pair's stuck detector scores each step of its loop, and a stuck step gets the
secondary's guidance (``guide``, the default here) or its decision (``delegate``), at most ``max_retries`` times a
turn. The transcript (who said what, tool calls and results, escalations, tokens and seconds per turn) is saved
after every turn when ``out`` is given.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tool_selection.agent import Message, Role
from tool_selection.conversations.config import DiscussionConfig, load_discussion_config
from tool_selection.conversations.speaker import (
    CallObserver,
    LMFactory,
    LMPool,
    Speaker,
    pair_escalation,
    pairs_by_primary,
)
from tool_selection.conversations.state import Contribution, DiscussionTranscript
from tool_selection.conversations.toolbox import describe_tools, discussion_tools

__all__ = ["ASSISTANT_PROMPT", "HUMAN_PROMPT", "DiscussionManager"]

HUMAN_PROMPT = (
    "You play the human user in a conversation with an AI assistant. Your goal: {goal}\n"
    "Write only the user's messages: say what you need, answer the assistant's questions, check what it gives you "
    "and ask for changes, and say so when the goal is reached. Keep each message short.")
ASSISTANT_PROMPT = (
    "You are an AI assistant in a conversation with a user. The user's goal: {goal}\n"
    "Help the user reach it: answer each message, ask when something is unclear, and give complete, working "
    "results.")
OPENING = "(The conversation begins. Write your first message to the assistant.)"
NO_REPLY = "(No new message came from the other side. Continue the conversation.)"


class DiscussionManager:
    """Runs a discussion. ``lm_factory`` makes each model's LM (tests pass scripted ones); ``out`` is where the
    transcript is saved after every turn; ``on_turn`` is called with each finished turn, ``on_call`` with each
    tool call as it returns."""

    def __init__(self, config: DiscussionConfig, *, lm_factory: LMFactory | None = None,
                 out: str | os.PathLike | None = None, on_turn: Callable[[Contribution], None] | None = None,
                 on_call: CallObserver | None = None):
        self.config = config
        self.out = Path(out) if out is not None else None
        self.on_turn = on_turn
        toolbox = discussion_tools(config.tools.registry, enabled=config.tools.enabled)
        self.transcript = DiscussionTranscript(config=config.model_dump(mode="json"), skipped_tools=toolbox.skipped)
        session = {**toolbox.config, "conversation": self.transcript}  # context_search reads this discussion
        pairs = pairs_by_primary(config.collaboration)
        lms = LMPool(lm_factory, cache=config.cache)
        self.speakers: dict[str, Speaker] = {}
        for key, model in config.models.items():
            prompt = (HUMAN_PROMPT if model.role == "human" else ASSISTANT_PROMPT).format(goal=config.goal)
            prompt = "\n\n".join(p for p in (prompt, describe_tools(toolbox.registry), model.system_prompt) if p)
            lm = lms.get(model.type, temperature=model.temperature, max_tokens=model.max_tokens)
            pair = pairs.get(model.type)
            escalation = pair_escalation(pair, lms.get(pair.secondary, max_tokens=model.max_tokens)) if pair else None
            self.speakers[key] = Speaker(
                key, lm, tools=toolbox.registry, system_prompt=prompt, max_tool_calls=model.max_tool_calls,
                strategy=model.strategy, session_config=session, escalation=escalation).observe(on_call)
        opener = config.opener
        self.order = [opener, next(k for k in config.models if k != opener)]

    @classmethod
    def from_config(cls, config: DiscussionConfig | dict[str, Any] | str | os.PathLike,
                    **kwargs: Any) -> DiscussionManager:
        """From a config object, a dict (``{"discussion": {...}}``) or a YAML/JSON file."""
        if not isinstance(config, DiscussionConfig):
            config = load_discussion_config(config)
        return cls(config, **kwargs)

    def run(self, turns: int | None = None) -> DiscussionTranscript:
        """Run the turns not yet taken (``turns`` overrides the config's); returns the transcript."""
        total = turns if turns is not None else self.config.turns
        transcript = self.transcript
        transcript.status = "running"
        for number in range(len(transcript.turns) + 1, total + 1):
            key = self.order[(number - 1) % 2]
            model = self.config.models[key]
            request, history = self.view(key)
            start = time.perf_counter()
            utterance = self.speakers[key].speak(request, history)
            turn = Contribution(agent_id=key, agent_name=model.type, agent_role=model.role, type="message",
                                content=utterance.text, metadata=utterance.metadata)
            transcript.turns.append(turn)
            transcript.seconds = round(transcript.seconds + time.perf_counter() - start, 3)
            self._save()
            if self.on_turn is not None:
                self.on_turn(turn)
        transcript.status = "complete"
        self._save()
        return transcript

    def view(self, key: str) -> tuple[str, list[Message]]:
        """The conversation as model ``key`` sees it: (the message it answers, the earlier messages)."""
        messages = [Message(role=Role.USER, content=OPENING)] if key == self.order[0] else []
        for turn in self.transcript.turns:
            if turn.content:
                messages.append(Message(role=Role.ASSISTANT if turn.agent_id == key else Role.USER,
                                        content=turn.content))
        if not messages or messages[-1].role is not Role.USER:
            messages.append(Message(role=Role.USER, content=NO_REPLY))
        messages = _merged(_fitted(messages, self.config.context_chars))
        return messages[-1].content, messages[:-1]

    def _save(self) -> None:
        if self.out is not None:
            self.transcript.save(self.out)


def _fitted(messages: list[Message], budget: int) -> list[Message]:
    """The first message and the newest ones that fit in ``budget`` characters (the newest always)."""
    kept = list(messages)
    while len(kept) > 2 and sum(len(m.content) for m in kept) > budget:
        del kept[1]
    return kept


def _merged(messages: list[Message]) -> list[Message]:
    """Consecutive messages of one role joined, so the roles alternate as chat templates expect."""
    merged: list[Message] = []
    for message in messages:
        if merged and merged[-1].role is message.role:
            merged[-1] = Message(role=message.role, content=f"{merged[-1].content}\n\n{message.content}")
        else:
            merged.append(message)
    return merged
