"""Scoring a decision against a case, and aggregating per-case scores with bootstrap confidence intervals.

Argument matching follows BFCL's AST checker: each expected argument lists acceptable values (``""`` marks an
optional argument that may be omitted, or given as an empty string or an empty list); strings compare
case-insensitively without spaces and punctuation; numbers compare exactly, an integer matching the equal float;
lists compare element-wise and dicts key-wise. On BFCL cases (``strict_arguments``) the tool's declaration counts
as in BFCL's checker: every argument it requires given, none it does not declare, and each of its declared type
(so a float is no integer). Tool names compare as multisets, so call order never matters. Where we still read an
answer otherwise than BFCL, ``docs/bfcl-agreement.md`` says why (``evals.bfcl_agreement`` measures it).

One case reads arguments otherwise: a case with ``bfcl_checker`` (BFCL's Java and JavaScript categories, whose
arguments are source literals in strings) has them judged by ``bfcl-eval``'s own AST checker in its language, and
its full match is that checker's verdict (``score_case``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from evals.bfcl_checker import check as bfcl_check
from evals.suite import Case, registry_for
from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.tool import BaseTool

__all__ = [
    "HEADLINE_METRICS",
    "LOWER_IS_BETTER",
    "OUTCOMES",
    "balanced_accuracy",
    "bootstrap_ci",
    "cached_mask",
    "cost_figures",
    "outcome",
    "per_correct",
    "score_case",
    "summarize",
    "summarize_by_tag",
    "value_matches",
]

OUTCOMES = ("right", "wrong", "parse failure", "error")


def outcome(row: dict[str, Any]) -> str:
    """A case's outcome: an error (the model call failed), a parse failure, right (a full match) or wrong."""
    if row.get("error") == 1:
        return "error"
    if row.get("parse_failure") == 1:
        return "parse failure"
    return "right" if row.get("full_match") == 1 else "wrong"


# name -> (column, description); means over the cases where the column is defined.
METRICS = {
    "accuracy": ("full_match", "tools and arguments all correct (BFCL-style), no-tool cases abstained"),
    "tool_exact_match": ("tool_exact", "predicted tool names equal the expected multiset"),
    "tool_precision": ("precision", "precision over tool names"),
    "tool_recall": ("recall", "recall over tool names"),
    "tool_f1": ("f1", "F1 over tool names"),
    "argument_accuracy": ("args_correct", "arguments correct among calls whose tool is right"),
    "abstention_accuracy": ("abstention_correct", "no call made, on cases where no tool fits"),
    "false_abstention_rate": ("false_abstention", "no call made, on cases that need a tool"),
    "unknown_tool_rate": ("unknown_tool", "decision names a tool that is not available"),
    "invalid_argument_rate": ("invalid_arguments", "a call's arguments fail the tool's validation"),
    "parse_failure_rate": ("parse_failure", "the answer could not be parsed"),
    "error_rate": ("error", "the model call failed"),
    "retrieval_recall": ("retrieval_recall", "expected tools among those retrieved for the selector (--retrieve)"),
    "escalation_rate": ("cascade_escalated", "requests the router handed to the larger model (--cascade)"),
    "latency_s": ("latency_s", "seconds per case"),
    "input_tokens": ("input_tokens", "prompt tokens per case"),
    "output_tokens": ("output_tokens", "completion tokens per case"),
}
HEADLINE_METRICS = ("accuracy", "tool_exact_match", "tool_f1", "abstention_accuracy")
# metrics where less is better (errors, time, tokens); every other one is better higher
LOWER_IS_BETTER = frozenset({"false_abstention_rate", "unknown_tool_rate", "invalid_argument_rate", "parse_failure_rate",
                             "error_rate", "latency_s", "input_tokens", "output_tokens"})

_STRIP = re.compile(r"[ \,\.\/\-\_\*\^]")


def _norm(text: str) -> str:
    return _STRIP.sub("", text).lower().replace("'", '"')


def _equal(predicted: Any, expected: Any) -> bool:
    if isinstance(expected, bool) or isinstance(predicted, bool):
        return isinstance(expected, bool) and isinstance(predicted, bool) and predicted == expected
    if isinstance(expected, int | float) and isinstance(predicted, int | float):
        return predicted == expected
    if isinstance(expected, str) and isinstance(predicted, str):
        return _norm(predicted) == _norm(expected)
    if isinstance(expected, list | tuple) and isinstance(predicted, list | tuple):
        return len(expected) == len(predicted) and all(_equal(p, e) for p, e in zip(predicted, expected))
    if isinstance(expected, dict) and isinstance(predicted, dict):
        for key, exp_value in expected.items():
            if key not in predicted:
                if isinstance(exp_value, list) and "" in exp_value:
                    continue
                return False
            if not _nested_match(predicted[key], exp_value):
                return False
        return set(predicted) <= set(expected)
    return predicted == expected


def _nested_match(predicted: Any, expected: Any) -> bool:
    # Inside BFCL dicts a value is usually itself a list of acceptable values.
    if _equal(predicted, expected):
        return True
    return isinstance(expected, list) and _one_of(predicted, expected)


def _one_of(predicted: Any, acceptable: list[Any]) -> bool:
    if isinstance(predicted, str) and "" in acceptable and not _norm(predicted):
        return True
    return any(_equal(predicted, value) for value in acceptable if not (isinstance(value, str) and value == ""))


# JSON Schema types BFCL's checker tells apart, as Python types (a bool is no integer)
_TYPES: dict[str, tuple[type, ...]] = {"integer": (int,), "number": (int, float), "string": (str,),
                                       "boolean": (bool,), "array": (list, tuple), "object": (dict,)}


def _has_type(value: Any, kind: str, *, item: bool = False) -> bool:
    if kind == "number" and item:
        return type(value) is float  # BFCL turns an integer into a float only for the argument itself
    return isinstance(value, _TYPES[kind]) and (kind == "boolean" or not isinstance(value, bool))


def _first_answer(acceptable: list[Any]) -> Any:
    return next((value for value in acceptable if value != ""), None)


def _items_fit(value: list, kind: str, acceptable: list[Any]) -> bool:
    """BFCL's check of an array's items: all of the declared item type, or of the type of the items of one
    acceptable list; an acceptable value that is no list (``""``) waives the check."""
    for answer in acceptable:
        if not isinstance(answer, list):
            return True
        first = _first_answer(answer)
        if all(_has_type(item, kind, item=True) or (first is not None and type(item) is type(first))
               for item in value):
            return True
    return False


def _type_fit(value: Any, declared: dict[str, Any], acceptable: list[Any]) -> str | None:
    """BFCL's type rule for one argument: ``"declared"`` when the value has the type its tool declares (array
    items included), ``"variable"`` when it has instead the type of the acceptable values (BFCL lists a variable's
    name where the type differs, and compares such a value exactly), None when neither."""
    kind = declared.get("type")
    if kind not in _TYPES:
        return "declared"  # no single declared type (BFCL's "any"): nothing to check
    if _has_type(value, kind):
        items = declared.get("items")
        item_kind = items.get("type") if kind == "array" and isinstance(items, dict) else None
        return "declared" if item_kind not in _TYPES or _items_fit(value, item_kind, acceptable) else None
    first = _first_answer(acceptable)
    return "variable" if first is not None and type(value) is type(first) else None


def value_matches(predicted: Any, acceptable: list[Any], declared: dict[str, Any] | None = None) -> bool:
    """Whether ``predicted`` equals one of the ``acceptable`` values (BFCL normalisation). An empty string, or an
    empty list, given for an argument that may be omitted matches, as BFCL's string and list checkers read them.
    ``declared``: the argument's JSON Schema, to apply BFCL's type rule first (``_type_fit``)."""
    if declared is not None:
        fit = _type_fit(predicted, declared, acceptable)
        if fit is None:
            return False
        if fit == "variable":
            return predicted in acceptable
    if isinstance(predicted, list) and not predicted and "" in acceptable:
        return True
    return _one_of(predicted, acceptable)


def arguments_match(predicted: dict[str, Any], acceptable: dict[str, list[Any]], *, strict: bool,
                    schema: dict[str, Any] | None = None) -> bool:
    """Whether a call's arguments match the expected ones. ``schema`` (the tool's JSON Schema, given for BFCL's
    rules) adds them: every argument the tool requires given, none it does not declare, each of its declared type."""
    declared = (schema or {}).get("properties", {})
    if schema is not None and (any(name not in predicted for name in schema.get("required", []))
                               or any(name not in declared for name in predicted)):
        return False
    for name, values in acceptable.items():
        if name not in predicted:
            if "" not in values:
                return False
        elif not value_matches(predicted[name], values, declared.get(name, {}) if schema is not None else None):
            return False
    return not strict or set(predicted) <= set(acceptable)


def _best_pairing(expected: list[tuple[str, dict]], predicted: list[ToolCall], strict: bool,
                  rejected: frozenset[int] = frozenset(), schemas: dict[str, dict] | None = None) -> tuple[int, int]:
    """(pairs with the same tool, of which arguments match), maximising name pairs, then argument matches; a
    predicted call whose index is in ``rejected`` (its tool refused the arguments) matches no arguments.
    ``schemas``: each tool's JSON Schema, for BFCL's rules (``arguments_match``).

    Within one tool name any expected call may pair with any predicted one, so the most pairs is the smaller
    count, and every set of argument-matching pairs extends to that many: the most matches is a maximum
    bipartite matching over the argument-matching pairs (polynomial, unlike trying every pairing)."""
    named = matched = 0
    for name in dict.fromkeys(n for n, _ in expected):
        wanted = [acceptable for n, acceptable in expected if n == name]
        calls = [(index, call) for index, call in enumerate(predicted) if call.tool_name == name]
        named += min(len(wanted), len(calls))
        fitting = [[j for j, (index, call) in enumerate(calls)
                    if index not in rejected and arguments_match(call.arguments, acceptable, strict=strict,
                                                                 schema=(schemas or {}).get(name))]
                   for acceptable in wanted]
        matched += _maximum_matching(fitting, len(calls))
    return named, matched


def _maximum_matching(edges: list[list[int]], right: int) -> int:
    """The size of a maximum matching of a bipartite graph, by augmenting paths (Kuhn); ``edges[i]`` lists the
    right-hand vertices (``0..right-1``) that left-hand vertex ``i`` may pair with."""
    owner = [-1] * right

    def augment(i: int, seen: list[bool]) -> bool:
        for j in edges[i]:
            if not seen[j]:
                seen[j] = True
                if owner[j] < 0 or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return sum(augment(i, [False] * right) for i in range(len(edges)))


def _schemas(case: Case, names: set[str]) -> dict[str, dict]:
    """The JSON Schema of each named tool the case offers."""
    registry = registry_for(case)
    return {name: _input_schema(registry.get(name)) for name in names if name in registry}


@cache
def _input_schema(tool: type[BaseTool]) -> dict[str, Any]:
    return tool.input_schema()  # read, never changed: one copy per tool class


def _checker_pairing(case: Case, expected: list[tuple[str, dict]], predicted: list[ToolCall]) -> tuple[int, int]:
    """``_best_pairing`` with BFCL's checker as the judge of arguments (``case.bfcl_checker``): a call matches an
    expected one when the checker, in the case's language, accepts it alone as the answer to that call alone."""
    checker = case.bfcl_checker
    docs = {doc.get("name"): doc for doc in checker.functions}
    named = matched = 0
    for name in dict.fromkeys(n for n, _ in expected):
        wanted = [acceptable for n, acceptable in expected if n == name]
        calls = [call for call in predicted if call.tool_name == name]
        named += min(len(wanted), len(calls))
        fitting = [[j for j, call in enumerate(calls) if name in docs and bfcl_check(
                        [docs[name]], [{"tool_name": name, "arguments": call.arguments}], [{name: acceptable}],
                        language=checker.language, category="simple")[0]]
                   for acceptable in wanted]
        matched += _maximum_matching(fitting, len(calls))
    return named, matched


def score_case(case: Case, decision: MultiToolDecision) -> dict[str, Any]:
    """Per-case scores. Conditional metrics are NaN where they do not apply.

    Tool names (``tool_exact``, precision, recall, F1) are compared alike for every case. Arguments are read by one
    of two judges: ours (the module's rules), or, for a case with ``bfcl_checker``, BFCL's own AST checker in the
    case's language. Then ``full_match`` is BFCL's verdict on the whole answer, as its runner gives it (an answer
    that does not parse, or that the checker cannot read, is wrong), and ``args_correct`` counts the calls the
    checker accepts, each alone, against the expected call it is paired with."""
    expected = [(c.tool_name, c.acceptable()) for c in case.expected_calls]
    predicted = decision.tool_calls
    parsed = decision.parse_error is None
    exp_names, pred_names = Counter(n for n, _ in expected), Counter(c.tool_name for c in predicted)
    overlap = sum((exp_names & pred_names).values())
    if not expected and not predicted:
        precision = recall = 1.0
    else:
        precision = overlap / len(predicted) if predicted else 0.0
        recall = overlap / len(expected) if expected else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    tool_exact = parsed and exp_names == pred_names
    if case.bfcl_checker is not None:  # BFCL's checker judges (see the docstring)
        named, matched = _checker_pairing(case, expected, predicted)
        full_match = tool_exact and (not expected or bfcl_check(
            case.bfcl_checker.functions, [{"tool_name": c.tool_name, "arguments": c.arguments} for c in predicted],
            [{name: acceptable} for name, acceptable in expected], language=case.bfcl_checker.language,
            category=case.bfcl_checker.category)[0])  # BFCL checks no AST where no call is expected
    else:
        # Non-strict cases ignore arguments beyond the expected ones, but only those the tool itself accepts: a call
        # its tool would refuse (an echoed schema key, say) is not right. BFCL cases keep BFCL's own rules.
        rejected = frozenset() if case.strict_arguments else frozenset(
            p.call_index for p in decision.problems if p.kind == "invalid_arguments")
        schemas = _schemas(case, {n for n, _ in expected}) if case.strict_arguments else None
        named, matched = _best_pairing(expected, predicted, case.strict_arguments, rejected, schemas)
        full_match = tool_exact and matched == len(expected)
    return {
        "tool_exact": float(tool_exact),
        "precision": precision if parsed else 0.0,
        "recall": recall if parsed else 0.0,
        "f1": f1 if parsed else 0.0,
        "args_correct": matched / named if named else math.nan,
        "full_match": float(full_match),
        "abstention_correct": float(parsed and not predicted) if not expected else math.nan,
        "false_abstention": float(parsed and not predicted) if expected else math.nan,
        "unknown_tool": float(decision.has_unknown_tool),
        "invalid_arguments": float(decision.has_invalid_arguments),
        "parse_failure": float(not parsed),
    }


def bootstrap_ci(values: pd.Series | np.ndarray, *, n_resamples: int = 2000, confidence: float = 0.95,
                 seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high): the mean and its percentile-bootstrap interval; NaNs are ignored."""
    data = np.asarray(values, dtype=float)
    data = data[~np.isnan(data)]
    if data.size == 0:
        return (math.nan, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(n_resamples, data.size))].mean(axis=1)
    alpha = (1 - confidence) / 2
    return (float(data.mean()), float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha)))


MEASURED_COLUMNS = ("latency_s", "input_tokens", "output_tokens", "cost")  # what a cached answer does not have


def cached_mask(rows: pd.DataFrame) -> pd.Series:
    """The cases DSPy answered from its cache: answered (no error), the selection asked (not stopped by the gate),
    and no token usage at all, since a cached answer records neither time nor tokens."""
    if "input_tokens" not in rows or "output_tokens" not in rows:
        return pd.Series(False, index=rows.index)
    mask = (pd.to_numeric(rows["input_tokens"], errors="coerce") == 0) & (
        pd.to_numeric(rows["output_tokens"], errors="coerce") == 0)
    if "error" in rows:
        mask &= rows["error"] == 0
    if "gate_passed" in rows:
        mask &= rows["gate_passed"] != 0
    return mask


def summarize(results: pd.DataFrame, *, with_ci: bool = True) -> dict[str, float]:
    """Aggregate metrics over per-case rows; headline metrics get ``_ci_low``/``_ci_high`` bounds. Time, tokens and
    cost are measured over the cases answered by the model, not from DSPy's cache (``cached``: how many were, when
    any)."""
    summary: dict[str, float] = {"cases": float(len(results))}
    cached = cached_mask(results)
    measured = results[~cached]
    for name, (column, _) in METRICS.items():
        if column not in results:
            continue
        series = pd.to_numeric((measured if column in MEASURED_COLUMNS else results)[column], errors="coerce")
        if name in HEADLINE_METRICS and with_ci:
            mean, low, high = bootstrap_ci(series)
            summary.update({name: mean, f"{name}_ci_low": low, f"{name}_ci_high": high})
        else:
            summary[name] = float(series.mean()) if series.notna().any() else math.nan
    summary.update(cost_figures(results))
    if cached.any():
        summary["cached"] = float(cached.sum())
    return summary


def cost_figures(results: pd.DataFrame) -> dict[str, float]:
    """What the run cost, over the cases the model answered (not DSPy's cache): per correct decision
    (``per_correct``), and in all (``total_input_tokens``, ``total_output_tokens``, ``total_cost`` where priced)."""
    measured = results[~cached_mask(results)]
    figures = per_correct(measured)
    for name, column in (("total_input_tokens", "input_tokens"), ("total_output_tokens", "output_tokens"),
                         ("total_cost", "cost")):
        if column in measured:
            figures[name] = float(pd.to_numeric(measured[column], errors="coerce").fillna(0).sum())
    return figures


def balanced_accuracy(results: pd.DataFrame) -> float:
    """The mean of the accuracy on cases that need a call and on cases that need none, each class counting half
    whatever the mix (a class the rows lack is left out): a selector cannot raise it by refusing everything."""
    needs_none = results["abstention_correct"].notna()
    full = pd.to_numeric(results["full_match"], errors="coerce")
    parts = [float(full[mask].mean()) for mask in (~needs_none, needs_none) if mask.any()]
    return float(np.mean(parts)) if parts else math.nan


def per_correct(results: pd.DataFrame) -> dict[str, float]:
    """What one correct decision costs: seconds, tokens and (where priced) catalog cost, summed over every case and
    divided by the cases fully right (infinite when none is)."""
    if "full_match" not in results or not len(results):
        return {}
    correct = float(pd.to_numeric(results["full_match"], errors="coerce").fillna(0).sum())
    totals = {"seconds_per_correct": ("latency_s",), "tokens_per_correct": ("input_tokens", "output_tokens"),
              "cost_per_correct": ("cost",)}
    out = {}
    for name, columns in totals.items():
        if all(c in results for c in columns):
            total = float(sum(pd.to_numeric(results[c], errors="coerce").fillna(0).sum() for c in columns))
            out[name] = total / correct if correct else math.inf
    return out


def summarize_by_tag(results: pd.DataFrame) -> pd.DataFrame:
    """One row per tag (and ``all``): case count and the headline metrics."""
    rows = [{"tag": "all", **summarize(results, with_ci=False)}]
    tags = sorted({t for tags in results["tags"] for t in tags})
    for tag in tags:
        subset = results[results["tags"].apply(lambda ts, tag=tag: tag in ts)]
        rows.append({"tag": tag, **summarize(subset, with_ci=False)})
    columns = ["tag", "cases", "accuracy", "tool_exact_match", "tool_f1", "argument_accuracy",
               "abstention_accuracy", "parse_failure_rate", "seconds_per_correct"]
    table = pd.DataFrame(rows)
    return table[[c for c in columns if c in table]]
