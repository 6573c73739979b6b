"""The keyword forms ``evaluate``, ``optimize``, the stuck benchmark and the loop evaluation took before a
``SelectorSpec`` and a ``RunConfig`` (``strategy=``, ``threads=``, ``run_dir=``, ...): folded into the two values,
with a ``DeprecationWarning``. They go in the next release."""

from __future__ import annotations

import warnings
from typing import Any

from tool_selection.errors import ToolSelectionError
from tool_selection.run_config import RunConfig
from tool_selection.spec import SelectorSpec

__all__ = ["RUN_KEYWORDS", "SELECTOR_KEYWORDS", "fold_keywords"]

SELECTOR_KEYWORDS = ("program", "allow_tool_changes", "strategy", "gate_model", "gate_threshold", "retrieve",
                     "retriever", "rerank", "undeclared_arguments", "relevance", "relevance_signals", "constrain", "adapter")
RUN_KEYWORDS = ("threads", "serve", "ray", "cache", "max_tokens", "temperature", "mlflow", "tracking_uri",
                "experiment", "run_dir", "fresh", "limit", "sample", "seed", "progress", "out")


def fold_keywords(where: str, keywords: dict[str, Any], selector: Any, run: RunConfig | None, *,
                  run_keywords: tuple[str, ...] = RUN_KEYWORDS,
                  selector_defaults: dict[str, Any] | None = None) -> tuple[Any, RunConfig]:
    """``(selector, run)`` with the old ``keywords`` of ``where`` folded in (a warning says so). ``selector`` comes
    back as given, or as the spec the old keywords make (on ``selector_defaults``), or, for ``program=`` a selector
    object, as the pair ``(object, spec)``. ``out=`` is the run folder. The old and the new form of one thing
    together, or a keyword ``where`` never took, is a ``TypeError``."""
    unknown = sorted(set(keywords) - set(SELECTOR_KEYWORDS) - set(run_keywords))
    if unknown:
        raise TypeError(f"{where}() got unexpected keyword argument(s): {', '.join(unknown)}")
    if not keywords:
        return selector, run or RunConfig()
    warnings.warn(f"{where}({', '.join(f'{k}=' for k in keywords)}) is deprecated: pass selector=SelectorSpec(...) "
                  "and run=RunConfig(...) (tool_selection.spec, tool_selection.run_config).", DeprecationWarning,
                  stacklevel=3)
    selector_fields = {k: v for k, v in keywords.items() if k in SELECTOR_KEYWORDS}
    run_fields = {("run_dir" if k == "out" else k): v for k, v in keywords.items() if k in run_keywords}
    if selector_fields and selector is not None or run_fields and run is not None:
        raise TypeError(f"{where}(): give selector=/run= or the old keywords for the same settings, not both")
    if selector_fields:
        selector = _spec({**(selector_defaults or {}), **selector_fields})
    return selector, RunConfig.build(**run_fields) if run_fields else run or RunConfig()


def _spec(fields: dict[str, Any]) -> Any:
    """A spec from the old selector keywords; ``program=`` a selector object gives ``(object, spec)``."""
    program = fields.pop("program", None)
    adapter = fields.pop("adapter", "json")
    if adapter == "chat" and fields.get("strategy") is None:
        fields["strategy"] = "chat-cot"  # the former --adapter chat
    elif adapter not in ("json", "chat"):
        raise ValueError(f"Unknown adapter {adapter!r}: use 'json' or 'chat'")
    gate = {"model": fields.pop("gate_model", None), "threshold": fields.pop("gate_threshold", None)}
    retrieve, retriever, rerank = fields.pop("retrieve", None), fields.pop("retriever", "hybrid"), fields.pop("rerank", None)
    if rerank is not None and retrieve is None:
        raise ToolSelectionError("rerank (--rerank) orders the retriever's candidates: give retrieve (--retrieve) too.")
    if "relevance" in fields and fields["relevance"] is None:
        fields["relevance"] = "none"
    if fields.get("relevance_signals") is not None:
        fields["relevance_signals"] = tuple(fields["relevance_signals"])
    is_object = program is not None and not isinstance(program, str) and not hasattr(program, "__fspath__")
    spec = SelectorSpec.build(**fields, gate=gate, program=None if is_object else program,
                              retrieval={"k": retrieve, "retriever": retriever, "rerank": rerank} if retrieve is not None else None)
    return (program, spec) if is_object else spec
