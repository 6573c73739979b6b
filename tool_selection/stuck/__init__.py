"""Stuck detection: how likely a selector's decision is wrong enough to hand the request to a larger model.

Every detector maps an ``Attempt`` (the request, the tools, the decision and, where the LM returned them, the
generated text with its token log-probabilities) to a ``StuckSignal``: a score in [0, 1], higher meaning more
likely stuck, and the evidence behind it. ``DETECTORS`` names them (``registry``):

- ``heuristic``: give-up and hedging phrases in the reasoning, and a quality score from the answer's length,
  its relevance to the request (share of the request's content words the reasoning, tool names and argument
  values cover) and whether it is actionable (calls with arguments, or an explicitly reasoned abstention).
- ``validation``: the decision did not parse, names an unknown tool, or has arguments that fail validation.
- ``confidence``: ``1 - exp(mean log-probability)`` of the tokens that spell the chosen tool names (of the
  empty list ``[]`` when the model abstained), located in the generated text.
- ``confidence_min``: ``1 - exp(min log-probability)`` over every token of the tool calls (names, argument
  values, and the token that ends the list).
- ``consistency``: ``1 - share`` of k sampled decisions (temperature > 0, one ``rollout_id`` each so that
  DSPy's cache cannot answer k times alike) that agree with the modal set of tool names.
- ``combined``: the maximum or a weighted mean of other detectors' scores.

Modules: ``base`` (attempts, signals, the detector base class), ``capture`` (the model's output with its
log-probabilities, samples, token usage), ``heuristic``, ``logprobs`` (the confidence detectors and token
alignment), ``detectors`` (validation, consistency, combined), ``loop`` (the tool-calling loop's per-step
detector, ``LoopStuckDetector``), ``registry`` (names, options, ``make_detector``).
"""

from tool_selection.stuck.base import (
    Attempt,
    DetectorUnavailable,
    Generation,
    Samples,
    StuckDetector,
    StuckSignal,
)
from tool_selection.stuck.capture import capture_generation, make_sampler, usage_totals
from tool_selection.stuck.detectors import CombinedDetector, ConsistencyDetector, ValidationDetector, decision_key
from tool_selection.stuck.heuristic import HeuristicDetector
from tool_selection.stuck.logprobs import ConfidenceDetector, LeastConfidenceDetector
from tool_selection.stuck.loop import LoopStuckDetector
from tool_selection.stuck.registry import (
    DEFAULT_COMPONENTS,
    DETECTORS,
    DetectorConfigError,
    DetectorOptions,
    check_detector_names,
    detector_class,
    detector_names,
    make_detector,
    register_detector,
)

__all__ = [
    "DEFAULT_COMPONENTS",
    "DETECTORS",
    "Attempt",
    "CombinedDetector",
    "ConfidenceDetector",
    "ConsistencyDetector",
    "DetectorConfigError",
    "DetectorOptions",
    "DetectorUnavailable",
    "Generation",
    "HeuristicDetector",
    "LeastConfidenceDetector",
    "LoopStuckDetector",
    "Samples",
    "StuckDetector",
    "StuckSignal",
    "ValidationDetector",
    "capture_generation",
    "check_detector_names",
    "decision_key",
    "detector_class",
    "detector_names",
    "make_detector",
    "make_sampler",
    "register_detector",
    "usage_totals",
]
