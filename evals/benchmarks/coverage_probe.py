"""How often native-strict-cover's coverage check would open another call, read from BFCL's own answers (no model).

For each case of a single-turn category, the check is asked with the case's first expected call made (its first
allowed value per argument): does the request hold a number or a capitalised name that the call does not use?
On categories that expect several calls, "yes" is the chance to make the next one; on single-call categories it
is the share of requests where an extra call is attempted (and must be refused by the rule that a forced call
adds something new). Asked with every expected call but the last made, "yes" is the chance to make the last one. Asked again with every expected call made, "yes" is a call opened that nothing asks for.
Last, for requests that expect several calls: would every expected call after the first pass the check that a
forced call writes only values the request (or an earlier call) holds, with some allowed value per argument? A
"no" is a right call that the strategy would refuse as made up. The pairing check (``unpaired``: two lists the
request writes, paired by the calls only in part) is read the same two ways: before the last expected call (the
chance to make it) and after all of them (a call opened that nothing asks for).

    python -m evals.benchmarks.coverage_probe
"""

from __future__ import annotations

from evals.bfcl import BFCL_CATEGORIES, bfcl_records, load_bfcl
from tool_selection.decision import ToolCall
from tool_selection.lm.strict_calls import _grounded, uncovered, unpaired

__all__ = ["expected_calls", "first_expected_call", "later_calls_grounded", "main"]


def first_expected_call(ground_truth: list[dict]) -> ToolCall:
    """BFCL's first expected call, each argument at its first allowed value."""
    (name, arguments), = ground_truth[0].items()
    return ToolCall(tool_name=name, arguments={key: values[0] for key, values in arguments.items() if values})


def expected_calls(ground_truth: list[dict]) -> list[ToolCall]:
    """Every expected call, each argument at its first allowed value."""
    return [first_expected_call([call]) for call in ground_truth]


def later_calls_grounded(request: str, ground_truth: list[dict]) -> bool:
    """Whether each expected call after the first passes the grounding check given the calls before it, each
    argument at the first of its allowed values that passes (an argument that may be left out is left out)."""
    made: list[ToolCall] = []
    for index, expected in enumerate(ground_truth):
        (name, arguments), = expected.items()
        chosen = {}
        for key, values in arguments.items():
            values = [value for value in values if value != ""]
            passing = [value for value in values
                       if _grounded(ToolCall(tool_name=name, arguments={key: value}), request, made)]
            if values and not passing and index > 0:
                return False
            if values:
                chosen[key] = (passing or values)[0]
        made.append(ToolCall(tool_name=name, arguments=chosen))
    return True


def main() -> int:
    print("| category | cases | expects several calls | another call opened after the first | "
          "the last call opened after the others | a call still opened after all of them | "
          "later expected calls pass the grounding check | a pairing left out before the last call | "
          "a pairing left out after all of them |")
    print("|---|---|---|---|---|---|---|---|---|")
    for category in BFCL_CATEGORIES:
        _, truth = bfcl_records(category)
        if not truth:
            continue
        requests = {case.id: case.messages[-1].content for case in load_bfcl([category]).cases}
        opened = sum(bool(uncovered(requests[key], [first_expected_call(calls)])) for key, calls in truth.items())
        after_all = sum(bool(uncovered(requests[key], expected_calls(calls))) for key, calls in truth.items())
        several = sum(len(calls) > 1 for calls in truth.values())
        before_last = sum(bool(uncovered(requests[key], expected_calls(calls)[:-1]))
                          for key, calls in truth.items() if len(calls) > 1)
        grounded = sum(later_calls_grounded(requests[key], calls) for key, calls in truth.items() if len(calls) > 1)
        paired_last = sum(bool(unpaired(requests[key], expected_calls(calls)[:-1]))
                          for key, calls in truth.items() if len(calls) > 1)
        paired_after = sum(bool(unpaired(requests[key], expected_calls(calls))) for key, calls in truth.items())
        print(f"| {category} | {len(truth)} | {several} | {100 * opened / len(truth):.0f}% | "
              f"{_share(before_last, several)} | {100 * after_all / len(truth):.0f}% | {_share(grounded, several)} | "
              f"{_share(paired_last, several)} | {100 * paired_after / len(truth):.0f}% |")
    return 0


def _share(count: int, total: int) -> str:
    return f"{100 * count / total:.0f}%" if total else "-"


if __name__ == "__main__":
    raise SystemExit(main())
