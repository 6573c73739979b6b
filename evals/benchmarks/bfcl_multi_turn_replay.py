"""BFCL's multi-turn ground truth replayed through the loop's tools and scored by BFCL's checker: how far the
wiring (function docs as tool schemas, back ends, argument validation, call strings, the checker) agrees with
BFCL, entry by entry, with no model.

    python -m evals.benchmarks.bfcl_multi_turn_replay [CATEGORY ...]

Every ground-truth call goes through the tool's validation and its back end, as a model's call would; the calls
that reached a back end are scored as a run's are. An entry that does not pass is listed with the reason: a
ground-truth call that the function's own doc refuses, or one of a function BFCL has not offered yet.
"""

from __future__ import annotations

import argparse

from evals.bfcl_multi_turn import (
    MULTI_TURN_CATEGORIES,
    BfclBackends,
    MultiTurnTask,
    call_string,
    check_multi_turn,
    function_registry,
    load_multi_turn,
    parse_call_string,
)
from tool_selection.agent import ToolSession

__all__ = ["main", "replay"]


def replay(task: MultiTurnTask) -> tuple[dict, list[str]]:
    """BFCL's verdict on the ground truth run through the loop's tools, and the refusals on the way."""
    backends = BfclBackends(task)
    functions = list(task.functions)
    result, refusals = [], []
    for turn_index, turn in enumerate(task.ground_truth):
        functions += task.added_functions.get(turn_index, [])
        session = ToolSession(function_registry(functions), backends=backends)
        steps = []
        for number, text in enumerate(turn):
            call = parse_call_string(text, backends)
            record = session.execute(call, f"call_{number}")
            if record.error in ("unknown_tool", "invalid_arguments"):
                reason = record.message.splitlines()[-1].strip(" -").split(". Known tools")[0]
                refusals.append(f"turn {turn_index}: {text}: {reason}")
            else:
                steps.append([call_string(call.tool_name, call.arguments)])
        result.append(steps)
    return check_multi_turn(task, result), refusals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.bfcl_multi_turn_replay", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("categories", nargs="*", default=list(MULTI_TURN_CATEGORIES))
    args = parser.parse_args(argv)
    print("| category | entries | ground truth passes | entries that do not pass |\n|---|---|---|---|")
    for category in args.categories:
        tasks = load_multi_turn([category])
        failing = []
        for task in tasks:
            verdict, refusals = replay(task)
            if not verdict["valid"]:
                failing.append(f"`{task.id}` ({'; '.join(refusals) or verdict['error_type']})")
        print(f"| {category} | {len(tasks)} | {len(tasks) - len(failing)} | {', '.join(failing) or '-'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
