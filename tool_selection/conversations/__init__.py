"""Conversations between models with tools: discussions (two models, one playing the human, toward a goal, with
collaboration pairs) and debates (agents with their own tools and tool-call limits, in rounds of proposal,
critique and refinement, resumable from a state file).

    from tool_selection.conversations import DebateRunner, DiscussionManager

    transcript = DiscussionManager.from_config("examples/discussion.yaml").run()
    state = DebateRunner.from_files("examples/debate.json", state_path="runs/debate/state.json").run(rounds=1)

Modules: ``config`` (both configurations), ``toolbox`` (which tools an agent gets), ``speaker`` (one agent's turn
through the tool-calling loop), ``discussion``, ``debate``, ``state`` (records and state files), ``summary`` (tool
use per agent and phase), ``tracking`` (MLflow), ``cli`` (``toolsel discuss`` / ``toolsel debate``).
"""

from tool_selection.conversations.config import (
    PHASES,
    DebateAgent,
    DebateConfig,
    DiscussionConfig,
    DiscussionModel,
    load_debate_config,
    load_discussion_config,
)
from tool_selection.conversations.debate import DebateRunner
from tool_selection.conversations.discussion import DiscussionManager
from tool_selection.conversations.errors import ConversationConfigError, StateFileError
from tool_selection.conversations.speaker import Speaker, TurnMetadata, Utterance
from tool_selection.conversations.state import Contribution, DebateState, DiscussionTranscript, Round
from tool_selection.conversations.summary import debate_rows, discussion_rows

__all__ = [
    "PHASES",
    "Contribution",
    "ConversationConfigError",
    "DebateAgent",
    "DebateConfig",
    "DebateRunner",
    "DebateState",
    "DiscussionConfig",
    "DiscussionManager",
    "DiscussionModel",
    "DiscussionTranscript",
    "Round",
    "Speaker",
    "StateFileError",
    "TurnMetadata",
    "Utterance",
    "debate_rows",
    "discussion_rows",
    "load_debate_config",
    "load_discussion_config",
]
