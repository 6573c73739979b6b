"""JSON from files the toolkit does not trust (suite lines, compiled programs), read strictly.

Python's ``json`` is lenient where such files must not be: it reads ``NaN`` and ``Infinity``, turns ``1e999`` into
infinity, keeps the last of two equal keys without a word, decodes ``"\\ud800"`` to a lone surrogate (a string that
no UTF-8 file, prompt or results row can hold) and needs a stack frame per nesting level. ``loads_strict`` refuses
each of these with a ``ValueError`` saying why (a ``json.JSONDecodeError`` for bad syntax), so that the loader can
name the file and line.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["MAX_DEPTH", "loads_strict", "lone_surrogate_at"]

MAX_DEPTH = 64  # a suite case or a program state nests a few levels; deeper is not one
_MAX_NUMBER_DIGITS = 400  # past 309 digits an integer is beyond a double's range anyway


def loads_strict(text: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of ``text``; refuses ``NaN``/``Infinity``, numbers beyond a double's range (JSON's
    interoperable numbers, RFC 8259), duplicate keys, lone surrogates and nesting deeper than ``max_depth``."""
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_finite_int,
                           object_pairs_hook=_unique_keys)
    except RecursionError:
        raise ValueError(f"nested deeper than {max_depth} levels") from None
    if _depth(value) > max_depth:
        raise ValueError(f"nested deeper than {max_depth} levels")
    where = lone_surrogate_at(value)
    if where is not None:
        raise ValueError(f"{where} holds a lone surrogate (an unpaired \\ud800-\\udfff escape), which is not text; "
                         "write the character itself or its surrogate pair")
    return value


def lone_surrogate_at(value: Any) -> str | None:
    """The path (``tags[0]``, ``tools[1].name``, ``(top)``) of the first string or key holding a lone surrogate."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if _has_lone_surrogate(node):
                return path or "(top)"
        elif isinstance(node, dict):
            for key, child in node.items():
                child_path = f"{path}.{key}" if path else str(key)
                if _has_lone_surrogate(key):
                    return f"{path or '(top)'} key {key!r}"
                stack.append((child, child_path))
        elif isinstance(node, list):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(node))
    return None


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _no_constant(constant: str) -> None:
    raise ValueError(f"{constant} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]}{'...' if len(text) > 20 else ''} is beyond the range of a JSON number "
                         "(a double)")
    return value


def _finite_int(text: str) -> int:
    if len(text) > _MAX_NUMBER_DIGITS or not math.isfinite(float(text)):
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits is beyond the range of a JSON number "
                         "(a double)")
    return int(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise ValueError(f"duplicate key {duplicate!r} in one object (JSON keeps only one of them)")
    return value


def _depth(value: Any) -> int:
    """How many arrays and objects nest at the deepest point (0 for a scalar), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is not None:
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in children)
    return deepest
