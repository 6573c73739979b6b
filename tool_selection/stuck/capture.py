"""What detectors need from the model beyond the decision: its last output (with log-probabilities), more samples,
and the tokens they cost.

Token log-probabilities reach DSPy when the LM is called with ``logprobs=True``: each LM output is then a dict
``{"text": ..., "logprobs": {"content": [{"token", "logprob", "bytes", ...}, ...]}}``. ``MultiToolSelector``
returns a new prediction without them, so ``capture_generation()`` records the last LM output through a DSPy
callback (``on_lm_end``) instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import dspy
from dspy.utils.callback import BaseCallback
from dspy.utils.usage_tracker import UsageTracker, track_usage

from tool_selection.registry import ToolRegistry
from tool_selection.stuck.base import DetectorUnavailable, Generation, Sampler, Samples

__all__ = ["capture_generation", "make_sampler", "usage_totals"]


class _Capture(BaseCallback):
    def __init__(self):
        self.output: Any = None

    def on_lm_end(self, call_id, outputs, exception=None):
        if exception is None and outputs:
            self.output = outputs[-1] if isinstance(outputs, list) else outputs


class _Captured:
    def __init__(self, capture: _Capture):
        self._capture = capture

    @property
    def generation(self) -> Generation | None:
        return None if self._capture.output is None else Generation.from_output(self._capture.output)


@contextmanager
def capture_generation() -> Iterator[_Captured]:
    """Records the last LM output made inside the block (with its log-probabilities, if the LM returned them)."""
    capture = _Capture()
    with dspy.context(callbacks=[*(dspy.settings.callbacks or []), capture]):
        yield _Captured(capture)


def usage_totals(tracker: UsageTracker) -> tuple[int, int]:
    """(prompt tokens, completion tokens) recorded by a DSPy usage tracker, over all its models."""
    totals = tracker.get_total_tokens()
    return (sum(int(u.get("prompt_tokens") or 0) for u in totals.values()),
            sum(int(u.get("completion_tokens") or 0) for u in totals.values()))


def make_sampler(decide: Callable[[str, ToolRegistry | None], dspy.Prediction], request: str,
                 tools: ToolRegistry | None, lm: dspy.BaseLM | None = None) -> Sampler:
    """A sampler that runs ``decide`` k times at ``temperature``, each with its own ``rollout_id`` so that DSPy's
    cache keeps k distinct answers. The samples' tokens are counted in ``Samples`` and, like any call, in the
    caller's usage tracker (run the detector under a separate ``UsageTracker`` to keep them apart)."""

    def sample(k: int, temperature: float) -> Samples:
        base = lm or dspy.settings.lm
        if base is None:
            raise DetectorUnavailable("Sampling needs an LM: configure one with dspy.configure(lm=...) or pass lm=.")
        decisions = []
        with track_usage() as tracker:
            for i in range(1, k + 1):
                with dspy.context(lm=base.copy(rollout_id=i, temperature=temperature)):
                    decisions.append(decide(request, tools).decision)
        input_tokens, output_tokens = usage_totals(tracker)
        return Samples(decisions, input_tokens, output_tokens)

    return sample
