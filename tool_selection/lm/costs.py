"""What a model call costs, from the catalog: the one place that knows both model specs and catalog prices."""

from __future__ import annotations

from pathlib import Path

from tool_selection.lm.catalog import CATALOG_ENV, CatalogError, load_catalog
from tool_selection.lm.specs import ModelSpec

__all__ = ["model_cost"]


def model_cost(spec: str | ModelSpec, input_tokens: int, output_tokens: int) -> float:
    """Relative cost of one call to the model ``spec`` (any spec ``get_lm`` takes) with these token counts.

    A ``local:/path/file.gguf`` spec is priced as the catalog model with the same file name, if there is one.
    """
    if input_tokens < 0 or output_tokens < 0:
        raise ValueError(f"token counts must be non-negative, got {input_tokens} and {output_tokens}")
    parsed = ModelSpec.of(spec)
    catalog = load_catalog()
    if parsed.kind == "catalog":
        return catalog.local_model(parsed.target).cost.of(input_tokens, output_tokens)
    if parsed.kind == "file":
        name = Path(parsed.target).name
        for entry in catalog.local.values():
            if entry.file == name:
                return entry.cost.of(input_tokens, output_tokens)
        raise CatalogError(f"No cost for GGUF file {name!r}: no catalog model has that file name. Add an entry "
                           f"under 'local:' in a catalog file named in {CATALOG_ENV}.")
    if parsed.kind == "served":
        raise CatalogError(f"{spec} is not priced: a served model's cost is the machine serving it.")
    return catalog.hosted_model(parsed.target).cost.of(input_tokens, output_tokens)
