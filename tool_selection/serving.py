"""Log a selector as an MLflow model and serve it with MLflow's model server, with no pickle anywhere.

    from tool_selection.serving import log_selector
    info = log_selector("programs/finance-bootstrap-qwen2.5-coder-0.5b", model="local:qwen2.5-coder-0.5b")
    # mlflow models serve -m <info.model_uri> --env-manager local -p 5001
    # curl -s localhost:5001/invocations -H 'Content-Type: application/json' \
    #      -d '{"inputs": {"request": "What is my checking balance?"}}'

The selector is logged as MLflow "models from code": the model is the short file ``served_model.py``, its
artifacts the selector's ``program.json`` and ``manifest.json``, and its model config the model spec. Loading
runs that file, which builds a ``SelectorModel``; it loads the program with ``load_compiled`` (its state checked
against what a selector's state may hold, its hash verified, its tools compared with the tool set's) and the LM
from its spec. Nothing is unpickled, so serving needs no ``MLFLOW_ALLOW_PICKLE_DESERIALIZATION``, and no LM
object (nor an API key) is stored with the model. The answer is plain JSON: reasoning, the tool calls, the
problems found when checking them against the tools, and any parse error.
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import dspy
from mlflow.pyfunc import PythonModel

from tool_selection.compiled import Manifest, save_compiled, tool_fingerprint
from tool_selection.errors import ToolSelectionError
from tool_selection.selector import MultiToolSelector
from tool_selection.tracking import EXPERIMENT
from tool_selection.tracking import tracking_uri as resolve_tracking_uri

__all__ = ["SelectorModel", "ServedSelector", "load_served_selector", "log_selector"]

SERVED_MODEL_FILE = Path(__file__).with_name("served_model.py")
PROGRAM_ARTIFACT = "program"


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


class SelectorModel(PythonModel):
    """The MLflow model ``served_model.py`` sets: a compiled selector from the artifacts, the LM from its spec."""

    # The logged signature ({"request": string}) checks inputs. MLflow reads predict's type hints as a schema (and
    # would refuse the single-request dict), so predict has none, and MLflow's warning about that is turned off.
    _skip_type_hint_validation = True

    def load_context(self, context: Any) -> None:
        from tool_selection.lm import get_lm

        self.served = ServedSelector(MultiToolSelector.load(context.artifacts[PROGRAM_ARTIFACT]))
        self.lm = get_lm(context.model_config["model"], constrained=True)

    def predict(self, context, model_input, params=None):
        with dspy.context(lm=self.lm):
            return self.served(request=_one_request(model_input)).toDict()


def _one_request(model_input: Any) -> str:
    """The request of a single-row input (a DataFrame as the scoring server sends it, a dict, or the text)."""
    if isinstance(model_input, str):
        return model_input
    rows = model_input.to_dict(orient="records") if hasattr(model_input, "to_dict") else [model_input]
    if len(rows) != 1 or not isinstance(rows[0], dict) or not isinstance(rows[0].get("request"), str):
        raise ToolSelectionError('A served selector answers one request per call: {"inputs": {"request": "..."}}.')
    return rows[0]["request"]


def log_selector(
    selector: MultiToolSelector | str | Path,
    model: str,
    *,
    name: str = "selector",
    registered_model_name: str | None = None,
    tracking_uri: str | None = None,
    allow_tool_changes: bool = False,
    pip_requirements: list[str] | None = None,
) -> Any:
    """Log ``selector`` (or a compiled selector directory) with the model spec ``model`` as an MLflow model.

    The selector's tools must be a tool set that ``load_tool_set`` finds by name where the model is served.
    Logs into the active MLflow run, or a new one. Returns MLflow's ``ModelInfo`` (``.model_uri`` to load or
    serve). The LM is saved by its spec: a local spec resolves (and assembles its file) where it is loaded.
    """
    import mlflow
    from mlflow.models import ModelSignature
    from mlflow.types.schema import ColSpec, DataType, Schema

    from tool_selection.lm import ModelSpec

    if not isinstance(model, str):
        raise TypeError(f"model must be a model spec such as 'local:qwen2.5-coder-0.5b' or 'openai/gpt-4o-mini', "
                        f"got {type(model).__name__}: a served selector stores its model by spec, never an LM object.")
    ModelSpec.parse(model)  # a bad spec fails here rather than where the model is served
    if not isinstance(selector, MultiToolSelector):
        selector = MultiToolSelector.load(selector, allow_tool_changes=allow_tool_changes)
    signature = ModelSignature(inputs=Schema([ColSpec(DataType.string, "request")]))
    mlflow.set_tracking_uri(resolve_tracking_uri(tracking_uri))
    mlflow.set_experiment(EXPERIMENT)
    with tempfile.TemporaryDirectory() as staging:
        program_dir = _stage_program(selector, model, Path(staging) / PROGRAM_ARTIFACT)
        active = mlflow.active_run()
        if active is None:
            mlflow.start_run(run_name=f"serve-{name}")
        try:
            mlflow.log_params({"kind": "served_selector", "model": model, "tools": ",".join(selector.tools.names())})
            with _keeping_active_model(), warnings.catch_warnings():
                # an input example would make MLflow run the selector, and so call the model, while logging
                warnings.filterwarnings("ignore", message=".*input example was not provided")
                return mlflow.pyfunc.log_model(
                    name=name, python_model=str(SERVED_MODEL_FILE), artifacts={PROGRAM_ARTIFACT: str(program_dir)},
                    model_config={"model": model}, signature=signature, registered_model_name=registered_model_name,
                    pip_requirements=pip_requirements or _requirements(model),
                )
        finally:
            if active is None:
                mlflow.end_run()


def _stage_program(selector: MultiToolSelector, model: str, directory: Path) -> Path:
    """Save ``selector`` as a compiled selector whose manifest names its tool set, as loading needs."""
    from tool_selection.toolset import load_tool_set

    ServedSelector(selector)  # refuses a selector without tools
    tools = tool_fingerprint(selector.tools)
    try:
        named = tool_fingerprint(load_tool_set(selector.tools.name).registry())
    except ToolSelectionError:
        named = None
    if named != tools:
        raise ToolSelectionError(
            f"A served selector rebuilds its tools from a tool set name, and {selector.tools.name!r} "
            f"{'is not a tool set' if named is None else 'names a tool set with other tools'}: build the selector "
            "over a named set (MultiToolSelector(load_tool_set(NAME))), or register the set as an entry point.")
    compiled = getattr(selector, "manifest", None)
    carried = compiled.model_dump(include={"optimizer", "optimizer_args", "teacher", "suite", "scores"}) \
        if isinstance(compiled, Manifest) else {}
    manifest = Manifest(tool_set=selector.tools.name, tools=tools, model=model,
                        strategy=getattr(selector, "strategy_name", None), **carried)
    return save_compiled(selector, directory, manifest)


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


def _requirements(model: str) -> list[str]:
    from importlib.metadata import PackageNotFoundError, version

    packages = ["dspy", "mlflow", "pydantic", "jsonschema", "json-repair"]
    if model.startswith("local:"):
        packages.append("llama-cpp-python")
    pins = []
    for package in packages:
        try:
            pins.append(f"{package}=={version(package)}")
        except PackageNotFoundError:
            pins.append(package)
    return pins
