"""Log a selector as an MLflow model and serve it with MLflow's model server, with no pickle anywhere.

    from tool_selection.serving import log_selector
    info = log_selector("programs/finance-bootstrap-qwen2.5-coder-0.5b", model="local:qwen2.5-coder-0.5b")
    # toolsel serve selector <info.model_uri> --port 5001   (or: mlflow models serve -m <info.model_uri> ...)
    # curl -s localhost:5001/invocations -H 'Content-Type: application/json' \
    #      -d '{"inputs": {"request": "What is my checking balance?"}}'

The selector is logged with MLflow's ``loader_module`` workflow: the model's files are data only (the selector's
``program.json`` and ``manifest.json``) and its model config holds the model spec. Its MLmodel names the loader,
``tool_selection.served_model``, which MLflow imports from the installed package by name; no code is stored with
the model, so editing the store cannot change what runs when the model loads (``mlflow models serve`` included).
The loader builds a ``SelectorModel``: the program through ``load_compiled`` (its state checked against what a
selector's state may hold, its hash verified, its tools compared with the tool set's) and the LM from its spec.
Nothing is unpickled, so serving needs no ``MLFLOW_ALLOW_PICKLE_DESERIALIZATION``, and no LM object (nor an API
key) is stored with the model. ``load_served_selector`` and ``scoring_app`` also refuse an MLmodel edited to load
anything else (``mlflow models serve`` reads the MLmodel itself, so it trusts that one file). The answer is plain JSON: reasoning, the tool calls, the problems found when checking them against the tools, and
any parse error.
"""

from __future__ import annotations

import tempfile
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import dspy

from tool_selection.compiled import Manifest, save_compiled, tool_fingerprint
from tool_selection.errors import ToolSelectionError
from tool_selection.selector import MultiToolSelector
from tool_selection.strict_files import read_yaml
from tool_selection.tracking import EXPERIMENT
from tool_selection.tracking import tracking_uri as resolve_tracking_uri

__all__ = ["SelectorModel", "ServedSelector", "check_served_model", "load_served_selector", "log_selector",
           "scoring_app"]

LOADER_MODULE = "tool_selection.served_model"
PROGRAM_DATA = "program"


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


class SelectorModel:
    """What MLflow serves: a compiled selector read from the model's data, the LM built from the model spec.

    Loading reads files only: the spec is parsed (a bad one fails here), and the LM is built at the first request,
    so that loading a logged model contacts no address its spec names (a ``served:`` spec asks its server for its
    model when the LM is built)."""

    def __init__(self, program_dir: str | Path, model: str):
        from tool_selection.lm import ModelSpec

        ModelSpec.parse(model)
        self.served = ServedSelector(MultiToolSelector.load(program_dir))
        self.model = model
        self._lm: dspy.BaseLM | None = None
        self._building = threading.Lock()

    @property
    def lm(self) -> dspy.BaseLM:
        """The LM of the model spec, built on first use (once, whichever request comes first)."""
        with self._building:
            if self._lm is None:
                from tool_selection.lm import get_lm

                self._lm = get_lm(self.model, constrained=True)
        return self._lm

    def predict(self, model_input: Any, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request = _one_request(model_input)
        with dspy.context(lm=self.lm):
            return self.served(request=request).toDict()

    def get_raw_model(self) -> ServedSelector:
        """The served selector (MLflow's ``PyFuncModel.get_raw_model()``)."""
        return self.served


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
        program_dir = _stage_program(selector, model, Path(staging) / PROGRAM_DATA)
        active = mlflow.active_run()
        if active is None:
            mlflow.start_run(run_name=f"serve-{name}")
        try:
            mlflow.log_params({"kind": "served_selector", "model": model, "tools": ",".join(selector.tools.names())})
            with _keeping_active_model(), warnings.catch_warnings():
                # an input example would make MLflow run the selector, and so call the model, while logging
                warnings.filterwarnings("ignore", message=".*input example was not provided")
                return mlflow.pyfunc.log_model(
                    name=name, loader_module=LOADER_MODULE, data_path=str(program_dir),
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
    """The logged selector as an MLflow pyfunc model: ``.predict({"request": "..."})``. Its MLmodel is checked
    first: a served selector loads with this package's loader and no code of its own."""
    import mlflow

    with tempfile.TemporaryDirectory() as download, _keeping_active_model():
        local = mlflow.artifacts.download_artifacts(model_uri, dst_path=download)
        check_served_model(local, source=model_uri)
        return mlflow.pyfunc.load_model(local)


def scoring_app(model_uri: str, *, timeout: int | None = None) -> Any:
    """MLflow's scoring server app (``POST /invocations``, ``GET /ping``) for the logged selector, as ``mlflow
    models serve --env-manager local`` builds it, after ``load_served_selector``'s checks; run it with uvicorn.
    ``timeout``: seconds one request may take (MLflow's ``MLFLOW_SCORING_SERVER_REQUEST_TIMEOUT``)."""
    from mlflow.environment_variables import MLFLOW_SCORING_SERVER_REQUEST_TIMEOUT
    from mlflow.pyfunc import scoring_server

    if timeout is not None:
        MLFLOW_SCORING_SERVER_REQUEST_TIMEOUT.set(timeout)
    return scoring_server.init(load_served_selector(model_uri))


def check_served_model(model_dir: str | Path, *, source: str | None = None) -> None:
    """Refuse a model directory whose MLmodel would make MLflow run anything but this package's loader: stored
    code (``code``, ``model_code_path``), a pickled ``python_model``, another loader module, or no data. The MLmodel
    is read strictly first (``strict_files.read_yaml``: no tags, anchors, duplicate keys or deep nesting)."""
    mlmodel = read_yaml(Path(model_dir) / "MLmodel", what="MLmodel", fix="Log the selector again: toolsel serve log.")
    flavors = mlmodel.get("flavors") if isinstance(mlmodel, dict) else None
    flavors = flavors if isinstance(flavors, dict) else {}
    pyfunc = flavors.get("python_function") if isinstance(flavors.get("python_function"), dict) else {}
    problems = [f"{key} is set to {pyfunc[key]!r}" for key in ("code", "model_code_path", "python_model", "artifacts")
                if pyfunc.get(key)]
    if pyfunc.get("loader_module") != LOADER_MODULE:
        problems.insert(0, f"loader_module is {pyfunc.get('loader_module')!r}, not {LOADER_MODULE!r}")
    if pyfunc.get("data") != f"data/{PROGRAM_DATA}":  # where MLflow copies data_path
        problems.append(f"data is {pyfunc.get('data')!r}, not 'data/{PROGRAM_DATA}'")
    if other := sorted(set(flavors) - {"python_function"}):
        problems.append(f"it has other flavors ({', '.join(other)})")
    if problems:
        raise ToolSelectionError(
            f"The model {source or model_dir} is not a served selector as log_selector writes it: "
            f"{'; '.join(problems)}. Its MLmodel was edited or the model was logged otherwise (selectors logged "
            "before the loader module stored their code); log the selector again: toolsel serve log.")


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
