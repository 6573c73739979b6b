"""Each case of an evaluation as an MLflow trace, so the MLflow UI shows one decision at a time.

A case's trace has one root span, named for the case: its input is the request (the expected calls and the tools'
names are its attributes); its outputs the parsed calls, the outcome, the scores and the latency. Under it, MLflow's DSPy
autologging (``mlflow.dspy.autolog``) records what the selector did: each module, the adapter's prompt and parse,
and each model call with its messages (the whole prompt) and its answer. Traces are written to the run's
experiment as cases finish; the run, logged at the end, links them (``link_traces``), resumed cases' included.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import dspy

from evals.metrics import outcome
from evals.suite import Case
from tool_selection.registry import ToolRegistry
from tool_selection.run_config import RunConfig
from tool_selection.tracking import tracking_uri

__all__ = ["TRACE_ID", "case_tracing", "link_traces", "traced_case"]

log = logging.getLogger(__name__)

TRACE_ID = "trace_id"  # the column of a case's row that names its trace
TRACE_OUTPUTS = ("predicted", "outcome", "full_match", "tool_exact", "args_correct", "parse_error", "error_message",
                 "latency_s", "input_tokens", "output_tokens")
MAX_LINKS = 100  # MLflow links at most this many traces to a run per request


@contextlib.contextmanager
def case_tracing(run: RunConfig) -> Iterator[None]:
    """Traces go to ``run``'s store and experiment, with DSPy's spans under each case's, for the block; DSPy's
    autologging is put back as it was after it, and every trace is written before the block ends."""
    import mlflow
    from mlflow.utils.autologging_utils import autologging_is_disabled

    mlflow.set_tracking_uri(tracking_uri(run.tracking_uri))
    mlflow.set_experiment(run.experiment)
    enable, track_usage = autologging_is_disabled("dspy"), dspy.settings.track_usage
    if enable:
        try:
            mlflow.dspy.autolog(silent=True)  # it also turns DSPy's usage tracking on, for good
        except RuntimeError as error:  # DSPy's settings belong to another thread: case spans only
            log.warning("Case traces without DSPy's spans (no prompts): %s", error)
            enable = False
    try:
        yield
    finally:
        if enable:
            mlflow.dspy.autolog(disable=True, silent=True)
            dspy.settings.configure(track_usage=track_usage)
        mlflow.flush_trace_async_logging()


def traced_case(case: Case, tools: ToolRegistry, run_case: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``run_case()``'s row, run inside the case's trace, with the trace's id added (``TRACE_ID``); ``tools``: the
    catalog the case is shown."""
    import mlflow
    from mlflow.entities import SpanType

    tags = ", ".join(case.tags)
    expected = [call.model_dump() for call in case.expected_calls]
    with mlflow.start_span(name=case.id, span_type=SpanType.CHAIN,
                           attributes={"case_id": case.id, "split": case.split, "tags": tags, "expected": expected,
                                       "tools": tools.names()}) as span:
        span.set_inputs(case.prompt)  # the trace list's request column (a preview set apart can be lost in MLflow)
        row = run_case()
        outputs = {**row, "outcome": outcome(row)}
        span.set_outputs({key: _decoded(outputs[key]) for key in TRACE_OUTPUTS if key in outputs})
        mlflow.update_current_trace(tags={"case_id": case.id, "outcome": outputs["outcome"], "split": case.split,
                                          "tags": tags})
    return {**row, TRACE_ID: span.trace_id}


def _decoded(value: Any) -> Any:
    """A row's JSON text (the calls) as the value it holds, so the UI shows it as data."""
    if isinstance(value, str) and value[:1] in "[{":
        with contextlib.suppress(ValueError):
            return json.loads(value)
    return value


def link_traces(run_id: str, trace_ids: list[str]) -> None:
    """Link the cases' traces to the run (``mlflow.search_traces(run_id=...)`` and the run's Traces tab find them)."""
    import mlflow
    from mlflow.exceptions import MlflowException

    client = mlflow.MlflowClient()
    try:
        for start in range(0, len(trace_ids), MAX_LINKS):
            client.link_traces_to_run(trace_ids[start:start + MAX_LINKS], run_id)
    except MlflowException as error:  # a store that cannot link (an older tracking server): the run stands
        log.warning("The cases' traces are in the experiment but not linked to run %s: %s", run_id,
                    str(error).splitlines()[0][:200])
