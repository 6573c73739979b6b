"""Answers cut short on purpose: a Yes/No question asked for one or two tokens ends at ``max_tokens`` by design,
and DSPy warns "LM response was truncated" for each one (hundreds per run with a re-ranker). Inside
``expected_truncation()`` that warning is dropped; everywhere else it stands."""

from __future__ import annotations

import contextlib
import contextvars
import logging

__all__ = ["expected_truncation"]

_EXPECTED = contextvars.ContextVar("tool_selection_expected_truncation", default=False)
_TRUNCATION_WARNING = "LM response was truncated"


class _DropExpectedTruncation(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (_EXPECTED.get() and record.getMessage().startswith(_TRUNCATION_WARNING))


_FILTER = _DropExpectedTruncation()


@contextlib.contextmanager
def expected_truncation():
    """Calls made inside do not warn that their answers were truncated (this thread or task only)."""
    logger = logging.getLogger("dspy.clients.lm")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    token = _EXPECTED.set(True)
    try:
        yield
    finally:
        _EXPECTED.reset(token)
