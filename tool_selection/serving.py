"""Log a selector as an MLflow model (the DSPy flavor) and serve it with MLflow's model server.

    from tool_selection.serving import log_selector
    info = log_selector("programs/finance-bootstrap-qwen2.5-coder-0.5b", model="local:qwen2.5-coder-0.5b")
    # mlflow models serve -m <info.model_uri> --env-manager local -p 5001
    # curl -s localhost:5001/invocations -H 'Content-Type: application/json' \
    #      -d '{"inputs": {"request": "What is my checking balance?"}}'

The served program is a ``ServedSelector``: a DSPy module whose answer is plain JSON (reasoning, the tool
calls, and the problems found when checking them against the tools), so the scoring server can return it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import dspy

from tool_selection.errors import ToolSelectionError
from tool_selection.selector import MultiToolSelector, ToolSelectionAdapter
from tool_selection.tracking import EXPERIMENT
from tool_selection.tracking import tracking_uri as resolve_tracking_uri

__all__ = ["ServedSelector", "log_selector", "load_served_selector"]


class ServedSelector(dspy.Module):
    """A ``MultiToolSelector`` over fixed tools whose prediction fields are JSON values."""

    def __init__(self, selector: MultiToolSelector):
        super().__init__()
        if selector.tools is None:
            raise ToolSelectionError("A served selector needs its tools: build it with MultiToolSelector(tools=...) "
                                     "or load a compiled one (MultiToolSelector.load(DIR)).")
        self.selector = selector

    def forward(self, request: str) -> dspy.Prediction:
        decision = self.selector(request=request).decision
        return dspy.Prediction(
            reasoning=decision.reasoning,
            tool_calls=[call.model_dump(mode="json") for call in decision.tool_calls],
            problems=[problem.model_dump(mode="json") for problem in decision.problems],
            parse_error=decision.parse_error,
        )


def log_selector(
    selector: MultiToolSelector | str | Path,
    model: str | dspy.BaseLM,
    *,
    name: str = "selector",
    registered_model_name: str | None = None,
    tracking_uri: str | None = None,
    allow_tool_changes: bool = False,
    pip_requirements: list[str] | None = None,
) -> Any:
    """Log ``selector`` (or a compiled selector directory) with ``model`` as an MLflow DSPy model.

    Logs into the active MLflow run, or a new one. Returns MLflow's ``ModelInfo`` (``.model_uri`` to load or
    serve). The LM is saved by reference: a local spec resolves (and assembles its file) where it is loaded.
    """
    import mlflow
    from mlflow.models import ModelSignature
    from mlflow.types.schema import ColSpec, DataType, Schema

    from tool_selection.lm import get_lm

    if not isinstance(selector, MultiToolSelector):
        selector = MultiToolSelector.load(selector, allow_tool_changes=allow_tool_changes)
    lm = get_lm(model, constrained=True) if isinstance(model, str) else model
    signature = ModelSignature(inputs=Schema([ColSpec(DataType.string, "request")]))
    requirements = pip_requirements or _requirements(model)
    mlflow.set_tracking_uri(resolve_tracking_uri(tracking_uri))
    mlflow.set_experiment(EXPERIMENT)
    with dspy.context(lm=lm, adapter=ToolSelectionAdapter()):
        active = mlflow.active_run()
        if active is None:
            mlflow.start_run(run_name=f"serve-{name}")
        try:
            mlflow.log_params({"kind": "served_selector", "model": getattr(lm, "model", str(model)),
                               "tools": ",".join(selector.tools.names())})
            with _keeping_active_model():
                return mlflow.dspy.log_model(ServedSelector(selector), name=name, signature=signature,
                                             registered_model_name=registered_model_name,
                                             pip_requirements=requirements)
        finally:
            if active is None:
                mlflow.end_run()


def load_served_selector(model_uri: str) -> Any:
    """The logged selector as an MLflow pyfunc model: ``.predict({"request": "..."})``."""
    import mlflow

    with _keeping_active_model():
        return mlflow.pyfunc.load_model(model_uri)


@contextmanager
def _keeping_active_model() -> Iterator[None]:
    """Logging or loading a model makes it the process's active model, to which MLflow then links every metric
    logged later (in any store); put back what was active before."""
    import mlflow

    previous = mlflow.get_active_model_id()
    try:
        yield
    finally:
        if mlflow.get_active_model_id() != previous:
            mlflow.clear_active_model()
            if previous is not None:
                with suppress(Exception):  # the previous model may live in a store no longer in use
                    mlflow.set_active_model(model_id=previous)


def _requirements(model: str | dspy.BaseLM) -> list[str]:
    from importlib.metadata import PackageNotFoundError, version

    packages = ["dspy", "mlflow", "pydantic", "jsonschema", "json-repair"]
    if isinstance(model, str) and model.startswith("local:"):
        packages.append("llama-cpp-python")
    pins = []
    for package in packages:
        try:
            pins.append(f"{package}=={version(package)}")
        except PackageNotFoundError:
            pins.append(package)
    return pins
