"""Parse speed: how long each strategy takes to read pathological answers, up to the answer cap.

    python -m evals.benchmarks.parse_speed [--sizes 1000 4000 20000] [--strategies json native ...]
                                           [--shapes ...] [--give-up-after 30]

An answer is read end to end by a selector (the strategy's adapter, its salvage of rejected JSON, the checks of
the calls) from a model that always gives that answer, so no model runs. The shapes are the worst found for the
parsers: runs of characters that made a regular expression backtrack, or json_repair (which the JSON strategies
use on malformed JSON) rescan the rest of the answer. Prints the seconds of each shape and strategy at each size;
the target is under 1 s for any answer up to ``MAX_ANSWER_CHARS`` (20,000 characters). ``--give-up-after``: a
shape and strategy that took longer than that at one size is not run at the larger ones (for code that is still
slow).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import dspy
from dspy.clients.call_result import attributes

from tool_selection.parsing import MAX_ANSWER_CHARS
from tool_selection.selector import MultiToolSelector
from tool_selection.strategies import strategy_names
from tool_selection.strategies.json_strategies import _read_json
from tool_selection.toolset import load_tool_set

__all__ = ["SHAPES", "main", "seconds_to_read"]


def _repeat(unit: str, prefix: str = "", suffix: str = "") -> Callable[[int], str]:
    """An answer of ``size`` characters: ``prefix``, ``unit`` repeated, ``suffix``."""
    return lambda size: prefix + unit * ((size - len(prefix) - len(suffix)) // len(unit)) + suffix


SHAPES: dict[str, Callable[[int], str]] = {
    "}{a] repeated": _repeat("}{a]"),
    "{a] repeated": _repeat("{a]"),
    'quotes {"a"a"a': _repeat('a"', prefix='{"'),
    "tool_calls string of }{a]": _repeat("}{a]", prefix='{"reasoning": "r", "tool_calls": "', suffix='"}'),
    "chat tool_calls of {a]": _repeat("{a]", prefix="[[ ## reasoning ## ]]\nr\n\n[[ ## tool_calls ## ]]\n"),
    "spaces in a <tool_call>": _repeat(" ", prefix="<tool_call>{", suffix="x"),
    "spaces in a json fence": _repeat(" ", prefix="```json\n{", suffix="x"),
    "spaces in a <tool> tag": _repeat(" ", prefix="<tool>{", suffix="x"),
    "spaces in a tool fence": _repeat(" ", prefix="```tool\n{", suffix="x"),
    "newlines before TOOL_CALL": _repeat("\n", suffix="TOOL_CALL x"),
    "spaces in a TOOL_CALL": _repeat(" ", prefix="TOOL_CALL: f(", suffix="x"),
    "objects in a row": _repeat('{"name": "move", "arguments": {"direction": "north"}} '),
    "opened tags": _repeat("<tool_call>{"),
    "opened fences": _repeat("```json\n{"),
}


class FixedAnswerLM(dspy.BaseLM):
    """A model that gives one answer to every request."""

    def __init__(self, answer: str):
        super().__init__("fixed/answer", cache=False)
        self.answer = answer

    def forward(self, prompt=None, messages=None, **kwargs):
        message = {"role": "assistant", "content": self.answer}
        return attributes({"model": "fixed/answer", "usage": {},
                           "choices": [{"index": 0, "finish_reason": "stop", "message": message}]})


def seconds_to_read(strategy: str, answer: str) -> float:
    """Seconds a selector with ``strategy`` takes to turn ``answer`` into a decision (or a parse failure)."""
    selector = MultiToolSelector(load_tool_set("treasure_hunt"), strategy=strategy)
    _read_json.cache_clear()  # each strategy reads the answer afresh
    with dspy.context(lm=FixedAnswerLM(answer)):
        start = time.perf_counter()
        selector(request="Where is the treasure?")
        return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.parse_speed", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1_000, 4_000, MAX_ANSWER_CHARS])
    parser.add_argument("--strategies", nargs="+",
                        default=["json", "json-cot", "chat-cot", "native", "text:tags", "text:fenced", "text:call"])
    parser.add_argument("--shapes", nargs="+", choices=list(SHAPES), default=list(SHAPES), metavar="SHAPE")
    parser.add_argument("--give-up-after", type=float, default=30.0, metavar="SECONDS")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.strategies) - set(strategy_names()))
    if unknown:
        parser.error(f"unknown strategies {unknown}; known: {', '.join(strategy_names())}")
    seconds_to_read(args.strategies[0], "warm up")
    width = max(map(len, args.shapes))
    print(f"{'shape':{width}} {'size':>6} " + " ".join(f"{name:>11}" for name in args.strategies))
    too_slow: set[tuple[str, str]] = set()
    worst = 0.0
    for shape in args.shapes:
        for size in args.sizes:
            cells = []
            for strategy in args.strategies:
                if (shape, strategy) in too_slow:
                    cells.append(f"{'skipped':>11}")
                    continue
                seconds = seconds_to_read(strategy, SHAPES[shape](size))
                worst = max(worst, seconds)
                if seconds > args.give_up_after:
                    too_slow.add((shape, strategy))
                cells.append(f"{seconds:>10.3f}s")
            print(f"{shape:{width}} {size:>6} " + " ".join(cells), flush=True)
    print(f"slowest: {worst:.3f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
