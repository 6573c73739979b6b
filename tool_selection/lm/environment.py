"""Environment variables the model layer reads (in a module of their own, so that help text can name them
without loading the catalog or the engine)."""

from __future__ import annotations

__all__ = ["CATALOG_ENV", "MODEL_DIR_ENV"]

MODEL_DIR_ENV = "TOOLSEL_MODEL_DIR"
"""Where embedded models' GGUF files are kept (default: the user cache directory)."""

CATALOG_ENV = "TOOLSEL_MODEL_CATALOG"
"""A YAML file of models that extends the built-in catalog."""
