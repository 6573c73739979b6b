"""Divide and conquer over a long candidate list: the retrieved tools split by rank into groups, a decision in each
group, then one final decision among the tools the groups chose.

A small model shown twenty tools at once is fooled by look-alikes; shown five at a time it answers an easier
question each time. With ``RetrievalSpec(k=20, groups=5)`` the retriever's top 20 form four groups of five (the
first holds the five it ranks highest). Each group's decision is checked against its tools' schemas; the tools
named by its well-formed calls go on to the final decision, made over them alone (the last model call, the one
the relevance stage reads). No group with a well-formed call: the first group's answer that calls anything (its
calls are scored as made), else no call.
"""

from __future__ import annotations

from collections.abc import Callable

import dspy

from tool_selection.decision import MultiToolDecision
from tool_selection.registry import ToolRegistry

__all__ = ["decide_in_groups", "groups_of", "well_formed_tools"]


def groups_of(ranked: list[str], size: int) -> list[list[str]]:
    """``ranked`` in consecutive groups of ``size`` (the last may be smaller)."""
    if size < 1:
        raise ValueError(f"a group holds at least one tool, got {size}")
    return [ranked[start:start + size] for start in range(0, len(ranked), size)]


def well_formed_tools(decision: MultiToolDecision) -> list[str]:
    """The tools ``decision`` calls with arguments their schemas accept, in call order, each once."""
    if decision.parse_error is not None:
        return []
    faulty = {problem.call_index for problem in decision.problems}
    names = [call.tool_name for index, call in enumerate(decision.tool_calls) if index not in faulty]
    return list(dict.fromkeys(names))


def decide_in_groups(decide: Callable[[ToolRegistry], dspy.Prediction], registry: ToolRegistry,
                     ranked: list[str], size: int) -> tuple[dspy.Prediction, dict[str, float]]:
    """The decision ``decide`` makes over ``registry``'s tools ``ranked`` best first, taken group by group (see the
    module docstring), and the row's columns: groups asked, groups that called, tools in the final decision."""
    groups = groups_of(ranked, size)
    answers = [decide(registry.subset(names, name=f"{registry.name}-group{number}"))
               for number, names in enumerate(groups, 1)]
    chosen = [well_formed_tools(answer.decision) for answer in answers]
    finalists = list(dict.fromkeys(name for names in chosen for name in names))
    columns = {"groups": float(len(groups)), "finalists": float(len(finalists)),
               "groups_calling": float(sum(map(bool, chosen)))}
    if not finalists:
        return next((answer for answer in answers if answer.decision.tool_calls), answers[0]), columns
    return decide(registry.subset(finalists, name=f"{registry.name}-finalists")), columns
