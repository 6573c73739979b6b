"""The conversations package's errors: a bad configuration or a state file that cannot be used (developer
mistakes, raised at once with the fix). A model's mistakes in a conversation are recorded on its turn instead."""

from __future__ import annotations

from tool_selection.errors import ToolSelectionError

__all__ = ["ConversationConfigError", "StateFileError"]


class ConversationConfigError(ToolSelectionError, ValueError):
    """A discussion or debate configuration is invalid; the message names each bad field and the fix."""


class StateFileError(ToolSelectionError):
    """A debate state file is unreadable, or belongs to another debate; the message says what to do."""
