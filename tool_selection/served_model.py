"""The model file of a served selector (MLflow models from code): ``log_selector`` logs this file, and MLflow runs
it to load the model. It builds a ``SelectorModel``, which reads the selector from the logged artifacts."""

import mlflow

from tool_selection.serving import SelectorModel

mlflow.models.set_model(SelectorModel())
