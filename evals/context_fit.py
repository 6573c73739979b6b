"""Before a run: the cases whose prompt cannot fit in a local model's context, refused before the first case.

A local model's context grows, on a prompt that outgrows it, up to the length the model was trained for
(``LocalEngine.context_limit``); a longer prompt fails. A case's request and its tools as the selector lists them
(``render_tools``: name, description and one line per argument) are counted with the model's own tokenizer, each
distinct tool once. That leaves out the instructions and the answer, and the native strategies send each tool as
JSON, which is longer: a case refused here cannot fit, and one let through may still fail at its model call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from evals.suite import Case, Suite, registry_for
from tool_selection.errors import ToolSelectionError
from tool_selection.interop import to_text
from tool_selection.registry import ToolRegistry

__all__ = ["Oversized", "check_context_fit", "context_error", "oversized_cases"]

TokenCounter = Callable[[str], int]


@dataclass(frozen=True)
class Oversized:
    """A case whose request and tool listing come to ``tokens``, over its ``tools`` tools."""

    case_id: str
    tokens: int
    tools: int
    tool_tokens: int  # the listing's share


def oversized_cases(cases: Iterable[Case], *, count: TokenCounter, limit: int,
                    tools: ToolRegistry | None = None) -> list[Oversized]:
    """The cases whose request and tool listing alone come to ``limit`` tokens or more (``tools``: one catalog for
    every case, instead of each case's own)."""
    per_tool: dict[str, int] = {}
    per_catalog: dict[int, int] = {}  # cases share catalogs (registry_for keeps one per catalog)
    over = []
    for case in cases:
        registry = tools if tools is not None else registry_for(case)
        if id(registry) not in per_catalog:
            texts = [to_text(tool) for tool in registry]
            per_tool.update((text, count(text)) for text in texts if text not in per_tool)
            per_catalog[id(registry)] = sum(per_tool[text] for text in texts)
        tool_tokens = per_catalog[id(registry)]
        tokens = count(case.prompt) + tool_tokens
        if tokens >= limit:
            over.append(Oversized(case.id, tokens, len(registry), tool_tokens))
    return over


def context_error(over: list[Oversized], *, limit: int, cases: int, model: str) -> ToolSelectionError:
    """What to do about cases that cannot fit: show the selector fewer tools, with a retrieval depth that would."""
    worst = max(over, key=lambda case: case.tokens)
    per_tool = max(1, round(sum(case.tool_tokens for case in over) / sum(case.tools for case in over)))
    fits = max(1, limit // 2 // per_tool)
    listed = ", ".join(case.case_id for case in over[:5]) + (f" and {len(over) - 5} more" if len(over) > 5 else "")
    return ToolSelectionError(
        f"{len(over)} of {cases} cases cannot fit in the {limit:,} tokens of context {model} can take (the length "
        f"it was trained for): their requests and tool listings alone come to up to {worst.tokens:,} tokens ({worst.case_id}: "
        f"{worst.tools:,} tools). Cases: {listed}. Show the selector fewer tools with --retrieve K (retrieve=K in "
        f"Python): at about {per_tool:,} tokens a tool, K={fits:,} keeps the listing within half the context.")


def check_context_fit(cases: Suite, lm: object, *, tools: ToolRegistry | None = None) -> None:
    """Refuse, before any case runs, the cases that cannot fit in ``lm``'s context, where ``lm`` runs a model in
    this process whose trained length is known; other models (hosted, served) are not checked."""
    from tool_selection.lm.engine import local_engine

    engine = local_engine(lm)
    limit = engine.context_limit() if engine is not None else None
    if limit is None:
        return
    over = oversized_cases(cases, count=engine.count_tokens, limit=limit, tools=tools)
    if over:
        raise context_error(over, limit=limit, cases=len(cases), model=engine.spec)
