"""What a model call can fail with that is the model's or its provider's doing: DSPy's LM errors (a context window
exceeded included), the engine layer's, the network's. The harness scores these and the loop ends a turn on them;
anything else (the toolkit's own errors, bugs) propagates."""

from dspy.lm15 import LM15Error
from dspy.utils.exceptions import DSPyError

__all__ = ["MODEL_FAILURES"]

MODEL_FAILURES = (DSPyError, LM15Error, ConnectionError, TimeoutError)
