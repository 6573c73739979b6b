"""What a model call can fail with that is the model's or its provider's doing: DSPy's LM errors (a context window
exceeded included), the engine layer's, the network's. The harness scores these and the loop ends a turn on them;
anything else (the toolkit's own errors, bugs) propagates.

Some of them are the model's answer itself, which its server or DSPy could not read (``unreadable_answer``): a
strategy scores those as parse failures, like any answer it cannot read, not as failed calls that a resumed run
would try again."""

from dspy.lm15 import LM15Error
from dspy.utils.exceptions import DSPyError

__all__ = ["MODEL_FAILURES", "UNREADABLE_ANSWER_SIGNS", "unreadable_answer"]

MODEL_FAILURES = (DSPyError, LM15Error, ConnectionError, TimeoutError)

UNREADABLE_ANSWER_SIGNS = (
    "The model produced output that does not match the expected",  # llama-server: its chat parser refused the answer
    "Failed to parse input at pos",  # the same, from llama-server builds before 2026-03
    "is a tool call with no name",  # DSPy's lm15: a tool call the model left without a name
)


def unreadable_answer(error: BaseException) -> str | None:
    """The message of a model failure that is the model's own answer, unreadable (an HTTP 500 from llama-server
    whose chat parser rejected the answer, a tool call without a name); None for any other failure."""
    if not isinstance(error, DSPyError):
        return None
    message = str(error)
    return message if any(sign in message for sign in UNREADABLE_ANSWER_SIGNS) else None
