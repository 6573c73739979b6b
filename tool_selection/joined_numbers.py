"""Numbers a request lists that a call holds joined: "the factorial of 5,10 and 15" answered with ``number=510``.

Under a grammar that allows one integer where the model began a list, a small model goes on writing digits: "5,10"
becomes 510, "15, 20 and 30" gives 1520, "1,5 and 10" gives 15. Where a call's integer argument holds a number
the request does not write, whose digits are those of two or more numbers the request lists one after the other
(between commas, "and" or "or"), ``numbers_apart`` makes that call once per listed number, its other arguments
unchanged, leaving out a number another call of the same tool already gives that argument. A number the request
writes itself is never taken apart ("15,000 miles" is 15000, not 15 and 000).
"""

from __future__ import annotations

import re
from typing import Literal

from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.lm.request_values import REQUEST_NUMBER, number_of
from tool_selection.registry import ToolRegistry

__all__ = ["LISTED_NUMBERS", "ListedNumbers", "listed_runs", "numbers_apart"]

ListedNumbers = Literal["apart", "as-written"]
LISTED_NUMBERS: tuple[str, ...] = ListedNumbers.__args__
_BETWEEN = re.compile(r"\s*(?:,\s*(?:(?:and|or)\s+)?|,?\s*(?:and|or)\s+)", re.IGNORECASE)


def listed_runs(request: str) -> list[list[int]]:
    """The runs of two or more whole numbers ``request`` lists one after the other ("5,10 and 15": [5, 10, 15])."""
    runs, run, end = [], [], None
    for match in REQUEST_NUMBER.finditer(request):
        text = match.group()
        if not text.isdigit():  # 3,000, 2.5, 7%, 5k: not an item of such a list
            run, end = [], None
            continue
        if end is None or not _BETWEEN.fullmatch(request[end:match.start()]):
            run = []
            runs.append(run)
        run.append(int(text))
        end = match.end()
    return [run for run in runs if len(run) > 1]


def _joined(value: int, runs: list[list[int]]) -> list[int] | None:
    """The listed numbers whose digits, one after the other, are ``value``'s; None if no such two or more."""
    digits = str(value)
    for run in runs:
        for start in range(len(run) - 1):
            written = str(run[start])
            for stop in range(start + 1, len(run)):
                written += str(run[stop])
                if written == digits:
                    return run[start:stop + 1]
                if not digits.startswith(written):
                    break
    return None


def numbers_apart(decision: MultiToolDecision, registry: ToolRegistry,
                  request: str) -> tuple[MultiToolDecision, int]:
    """``decision`` with each call that holds listed numbers joined made once per number (see the module), its
    calls checked again, and how many calls held them joined."""
    runs = listed_runs(request)
    if not runs:
        return decision, 0
    written = {meaning for match in REQUEST_NUMBER.finditer(request) for meaning in number_of(match.group())}
    calls, joined = [], 0
    for call in decision.tool_calls:
        found = None
        if call.tool_name in registry and isinstance(call.arguments, dict):
            found = next(((name, parts) for name, value in call.arguments.items()
                          if type(value) is int and value not in written and (parts := _joined(value, runs))), None)
        if found is None:
            calls.append(call)
            continue
        name, parts = found
        held = {other.arguments.get(name) for other in decision.tool_calls
                if other.tool_name == call.tool_name and isinstance(other.arguments, dict)}
        apart = [ToolCall(tool_name=call.tool_name, arguments={**call.arguments, name: part})
                 for part in parts if part not in held]
        calls += apart
        joined += 1
    if not joined:
        return decision, 0
    from tool_selection.strategies.base import check_decision  # DSPy: not while a command's parser is built

    return check_decision(decision.reasoning, calls, registry), joined
