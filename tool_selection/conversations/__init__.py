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


from tool_selection._lazy import lazy_getattr

_LAZY = {  # name -> module: the commands' --help imports none of them
    "Contribution": "tool_selection.conversations.state",
    "ConversationConfigError": "tool_selection.conversations.errors",
    "DebateAgent": "tool_selection.conversations.config",
    "DebateConfig": "tool_selection.conversations.config",
    "DebateRunner": "tool_selection.conversations.debate",
    "DebateState": "tool_selection.conversations.state",
    "DiscussionConfig": "tool_selection.conversations.config",
    "DiscussionManager": "tool_selection.conversations.discussion",
    "DiscussionModel": "tool_selection.conversations.config",
    "DiscussionTranscript": "tool_selection.conversations.state",
    "PHASES": "tool_selection.conversations.config",
    "Round": "tool_selection.conversations.state",
    "Speaker": "tool_selection.conversations.speaker",
    "StateFileError": "tool_selection.conversations.errors",
    "TurnMetadata": "tool_selection.conversations.speaker",
    "Utterance": "tool_selection.conversations.speaker",
    "debate_rows": "tool_selection.conversations.summary",
    "discussion_rows": "tool_selection.conversations.summary",
    "load_debate_config": "tool_selection.conversations.config",
    "load_discussion_config": "tool_selection.conversations.config",
}


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


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
