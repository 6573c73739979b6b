"""Debates in phases: agents with their own models, tools and tool-call limits answer a topic in rounds of
proposal, critique (each agent critiques the others' proposals) and refinement.

    runner = DebateRunner.from_files("examples/debate.json", state_path="runs/debate/state.json")
    state = runner.run(rounds=1)
    [(c.agent_id, c.type, len(c.metadata.tool_calls), c.metadata.limit_hit) for c in state.rounds[0].contributions]

In each phase every agent runs its tool-calling loop until it answers without a call or has made
``toolCallLimit`` calls (failed ones included; then one closing step without tools asks for its answer). Agents
see the topic, the phase's task and the contributions it needs (quoted up to ``quoteChars`` characters); their
``context_search`` searches the debate so far. The state file is written after every contribution and every
finished phase, so a killed debate resumes where it stopped: a finished contribution is never asked again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tool_selection.conversations.config import DebateAgent, DebateConfig, load_debate_config
from tool_selection.conversations.errors import StateFileError
from tool_selection.conversations.speaker import (
    CallObserver,
    LMFactory,
    LMPool,
    Speaker,
    pair_escalation,
    pairs_by_primary,
)
from tool_selection.conversations.state import Contribution, DebateState, Round
from tool_selection.conversations.toolbox import agent_tools, describe_tools

__all__ = ["DebateRunner", "default_state_path"]

SYSTEM_PROMPT = (
    "You are {name}, the {role}, in a structured debate with {others}. Each round has three phases: every agent "
    "proposes, then critiques the others' proposals, then refines its own. Be concrete and brief.")
TASKS = {
    "proposal": "Propose your solution from your perspective as {role}, in at most 150 words.",
    "critique": "Critique the other agents' proposals below: for each, its main weakness and how to fix it, in at "
                "most 150 words in all.",
    "refinement": "Refine your proposal in the light of the critiques below, in at most 150 words.",
}
NO_ANSWER = "(no answer)"


def default_state_path(config_path: str | os.PathLike) -> Path:
    """Where ``toolsel debate run CONFIG`` keeps a config's state file unless told: runs/debate-STEM/state.json."""
    return Path("runs") / f"debate-{Path(config_path).stem}" / "state.json"


class DebateRunner:
    """Runs (or resumes) a debate. ``state`` continues a saved one (it must be this config's); ``state_path`` is
    where the state is saved; ``lm_factory`` makes each agent's LM; ``on_contribution`` and ``on_call`` observe
    each contribution and each tool call as they finish."""

    def __init__(self, config: DebateConfig, *, state: DebateState | None = None,
                 state_path: str | os.PathLike | None = None, lm_factory: LMFactory | None = None,
                 on_contribution: Callable[[int, Contribution], None] | None = None,
                 on_call: CallObserver | None = None):
        if state is not None and state.fingerprint != config.fingerprint():
            where = f"The state file {state_path}" if state_path is not None else "This state"
            raise StateFileError(f"{where} belongs to another debate (its agents, topic or settings differ from this "
                                 "config's); run with --fresh to start over, or give another --state.")
        self.config = config
        self.state = state or DebateState.start(config)
        self.state_path = Path(state_path) if state_path is not None else None
        self.on_contribution = on_contribution
        lms = LMPool(lm_factory, cache=config.cache)
        pairs = pairs_by_primary(config.collaboration)
        self.speakers: dict[str, Speaker] = {}
        for agent in config.agents:
            tools = agent_tools(agent.id, agent.tools)
            others = ", ".join(f"{a.name} ({a.role})" for a in config.agents if a.id != agent.id)
            prompt = "\n\n".join(p for p in (SYSTEM_PROMPT.format(name=agent.name, role=agent.role, others=others),
                                             describe_tools(tools), agent.system_prompt) if p)
            lm = lms.get(agent.model, temperature=agent.temperature, max_tokens=agent.max_tokens)
            pair = pairs.get(agent.model)
            escalation = pair_escalation(pair, lms.get(pair.secondary, max_tokens=agent.max_tokens)) if pair else None
            self.speakers[agent.id] = Speaker(
                agent.id, lm, tools=tools, system_prompt=prompt, max_tool_calls=agent.tool_call_limit,
                strategy=agent.strategy, session_config={"conversation": self.state},
                escalation=escalation).observe(on_call)

    @classmethod
    def from_files(cls, config: str | os.PathLike | dict[str, Any], *, state_path: str | os.PathLike | None = None,
                   fresh: bool = False, **kwargs: Any) -> DebateRunner:
        """From a config file (or dict); resumes from ``state_path`` when that file exists, unless ``fresh``."""
        parsed = load_debate_config(config)
        state = None
        if state_path is not None and Path(state_path).exists() and not fresh:
            state = DebateState.load(state_path)
        return cls(parsed, state=state, state_path=state_path, **kwargs)

    def run(self, rounds: int | None = None) -> DebateState:
        """Run every phase not yet finished, up to ``rounds`` rounds (default: the config's, or more already
        planned); returns the state."""
        state = self.state
        if rounds is not None:
            state.rounds_planned = rounds
        state.status = "running"
        while (step := state.next_phase()) is not None:
            number, phase = step
            self._phase(number, phase)
            state.round(number).completed_phases.append(phase)
            self._save()
        state.status = "complete"
        self._save()
        return state

    def _phase(self, number: int, phase: str) -> None:
        round_ = self.state.round(number)
        for agent in self.config.agents:
            if round_.of(phase, agent.id):
                continue  # made before the run was stopped
            start = time.perf_counter()
            utterance = self.speakers[agent.id].speak(self.request(number, phase, agent))
            contribution = Contribution(agent_id=agent.id, agent_name=agent.name, agent_role=agent.role, type=phase,
                                        content=utterance.text, metadata=utterance.metadata)
            round_.contributions.append(contribution)
            self.state.seconds = round(self.state.seconds + time.perf_counter() - start, 3)
            self._save()
            if self.on_contribution is not None:
                self.on_contribution(number, contribution)

    def request(self, number: int, phase: str, agent: DebateAgent) -> str:
        """What ``agent`` is asked in ``phase`` of round ``number``."""
        round_ = self.state.round(number)
        lines = [f"Topic: {self.config.topic}", f"Round {number}, {phase} phase.",
                 TASKS[phase].format(role=agent.role)]
        if phase == "proposal" and number > 1:
            previous = self.state.round(number - 1)
            lines += ["", "Your refined proposal from the last round:", self._quote(previous.of("refinement", agent.id)),
                      "", "The others' refined proposals:", self._quotes(previous, "refinement", agent.id)]
        elif phase == "critique":
            lines += ["", "The others' proposals:", self._quotes(round_, "proposal", agent.id)]
        elif phase == "refinement":
            lines += ["", "Your proposal:", self._quote(round_.of("proposal", agent.id)),
                      "", "The critiques:", self._quotes(round_, "critique", agent.id)]
        return "\n".join(lines)

    def _quotes(self, round_: Round, phase: str, exclude: str) -> str:
        return "\n\n".join(f"[{c.agent_name} ({c.agent_role})]: {self._quote([c])}"
                           for c in round_.of(phase) if c.agent_id != exclude) or NO_ANSWER

    def _quote(self, contributions: list[Contribution]) -> str:
        text = contributions[-1].content if contributions else ""
        limit = self.config.quote_chars
        return (text if len(text) <= limit else text[: limit - 7] + " [cut]") or NO_ANSWER

    def _save(self) -> None:
        if self.state_path is not None:
            self.state.save(self.state_path)
