"""The examples and metrics DSPy's optimizers work with: one example per case, weighted for a balanced mean, and
the harness's own score (``evals.metrics.score_case``) as ``dspy.Evaluate``'s metric, the optimizers' metric and
GEPA's metric with textual feedback naming what was wrong."""

from __future__ import annotations

from typing import Any

import dspy

from evals.metrics import score_case
from evals.suite import Case, Suite, registry_for
from tool_selection.decision import MultiToolDecision, ToolCall

__all__ = ["accuracy_metric", "describe_errors", "feedback_metric", "gold_calls", "make_examples", "selection_metric"]


def _first_acceptable(values: list[Any]) -> Any:
    return next((v for v in values if v != ""), None)


def gold_calls(case: Case) -> list[ToolCall]:
    """The expected calls with one acceptable value per argument (used as labeled demonstrations)."""
    return [
        ToolCall(tool_name=c.tool_name, arguments={k: _first_acceptable(v) for k, v in c.acceptable().items()
                                                    if _first_acceptable(v) is not None})
        for c in case.expected_calls
    ]


def make_examples(cases: Suite | list[Case]) -> list[dspy.Example]:
    """One example per case, weighted for a balanced mean: ``n / (2 * n_class)`` for the cases that need a call
    and those that need none (1 each when the split holds only one kind)."""
    cases = list(cases)
    needs_call = [bool(gold_calls(case)) for case in cases]
    counts = {kind: needs_call.count(kind) for kind in (True, False)}
    both = all(counts.values())
    return [
        dspy.Example(request=case.prompt, tools=registry_for(case), tool_calls=gold_calls(case), case=case,
                     weight=len(cases) / (2 * counts[kind]) if both else 1.0)
        .with_inputs("request", "tools")
        for case, kind in zip(cases, needs_call, strict=True)
    ]


def accuracy_metric(example: dspy.Example, prediction: dspy.Prediction, trace: Any = None) -> float | bool:
    """The harness's accuracy, for ``dspy.Evaluate``: 1 when the tools and arguments are right (or the model
    abstained where no tool fits), else 0, so that the mean over ``make_examples(cases)`` is what ``evaluate``
    reports for a program answering the same cases."""
    score = score_case(example.case, prediction.decision)["full_match"]
    return score >= 1.0 if trace is not None else float(score)


def selection_metric(example: dspy.Example, prediction: dspy.Prediction, trace: Any = None) -> float | bool:
    """The optimizers' metric: the harness's accuracy (``accuracy_metric``) weighted so that a split's mean is its
    balanced accuracy (the cases that need a call and those that need none count half each, whatever the mix);
    while bootstrapping (``trace``), whether this answer was right."""
    score = score_case(example.case, prediction.decision)["full_match"]
    return score >= 1.0 if trace is not None else score * example.get("weight", 1.0)


def describe_errors(case: Case, decision: MultiToolDecision) -> str:
    """What was wrong with a decision, in words an optimizer's reflection model can act on."""
    if decision.parse_error:
        return f"The answer could not be parsed ({decision.parse_error[:200]}). Answer in the required format."
    expected = [c.tool_name for c in case.expected_calls]
    predicted = decision.tool_names
    notes = []
    if not expected and predicted:
        notes.append(f"No available tool fits this request; it should have abstained, but called {predicted}.")
    if expected and not predicted:
        notes.append(f"It abstained, but the request needs {expected}.")
    for problem in decision.problems:
        if problem.kind == "unknown_tool":
            notes.append(f"It called {problem.tool_name!r}, which is not an available tool.")
        else:
            notes.append(f"Bad arguments for {problem.tool_name}: {problem.detail}.")
    missing = [n for n in expected if n not in predicted]
    extra = [n for n in predicted if n not in expected]
    if expected and predicted:
        if missing and extra:
            notes.append(f"Wrong tool: called {extra} where {missing} was needed.")
        elif missing:
            notes.append(f"Missing tool call(s): {missing}.")
        elif extra:
            notes.append(f"Unneeded tool call(s): {extra}.")
    if not notes:
        for call in case.expected_calls:
            made = [c for c in decision.tool_calls if c.tool_name == call.tool_name]
            for name, values in call.acceptable().items():
                got = [c.arguments.get(name, "(omitted)") for c in made]
                notes.append(f"Argument {call.tool_name}.{name}: got {got}, expected one of {values}.")
    return " ".join(notes) or "Correct."


def feedback_metric(gold: dspy.Example, pred: dspy.Prediction, trace=None, pred_name=None, pred_trace=None):
    """GEPA's metric: the same score, with feedback naming what was wrong."""
    score = score_case(gold.case, pred.decision)["full_match"]
    return dspy.Prediction(score=score * gold.get("weight", 1.0), feedback="Correct." if score >= 1 else describe_errors(gold.case, pred.decision))
