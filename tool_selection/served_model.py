"""The loader module of a served selector (MLflow's ``loader_module`` workflow). ``log_selector`` stores only its
name in the model's MLmodel, and MLflow imports it from the installed package to load the model: the model's own
files are data (the selector's ``program.json`` and ``manifest.json``), never code."""

from __future__ import annotations

from typing import Any

from tool_selection.errors import ToolSelectionError
from tool_selection.serving import SelectorModel


def _load_pyfunc(data_path: str, model_config: dict[str, Any] | None = None) -> SelectorModel:
    """MLflow's entry point: the selector in ``data_path``, with the LM of the model spec in the model config."""
    model = (model_config or {}).get("model")
    if not isinstance(model, str):
        raise ToolSelectionError(f"A served selector's model config names its model spec ({{'model': SPEC}}), got "
                                 f"{model_config!r}: log the selector again with toolsel serve log.")
    return SelectorModel(data_path, model)
