"""JSON from files the toolkit does not trust (suite lines, compiled programs), read strictly.

Python's ``json`` is lenient where such files must not be: it reads ``NaN`` and ``Infinity``, turns ``1e999`` into
infinity, keeps the last of two equal keys without a word, decodes ``"\\ud800"`` to a lone surrogate (a string that
no UTF-8 file, prompt or results row can hold) and needs a stack frame per nesting level. ``loads_strict`` refuses
each of these with a ``ValueError`` saying why (a ``json.JSONDecodeError`` for bad syntax), so that the loader can
name the file and line; its nesting is measured by a linear scan of the text (``json_depth``) before any parser
sees it. ``control_character_at`` finds the control characters no prompt should carry.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from collections.abc import Iterator
from itertools import accumulate
from typing import Any

__all__ = ["MAX_DEPTH", "control_character_at", "json_depth", "loads_strict", "lone_surrogate_at", "strings_in"]

MAX_DEPTH = 64  # a suite case or a program state nests a few levels; deeper is not one
_MAX_NUMBER_DIGITS = 400  # past 309 digits an integer is beyond a double's range anyway
_ESCAPE = re.compile(r"\\.", re.DOTALL)  # a backslash and the character it escapes
_STRING = re.compile(r'"[^"\n]*"')  # once escapes are gone, a JSON string ends at the next quote, on its line
_NOT_BRACKET = re.compile(r"[^][{}]+")
_BRACKET_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # +1 and -1 as signed bytes
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # Unicode's Cc but tab, line feed, return


def loads_strict(text: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of ``text``; refuses ``NaN``/``Infinity``, numbers beyond a double's range (JSON's
    interoperable numbers, RFC 8259), duplicate keys, lone surrogates and nesting deeper than ``max_depth`` (found
    by ``json_depth`` before parsing)."""
    if text.count("[") + text.count("{") > max_depth and json_depth(text)[0] > max_depth:
        raise ValueError(f"nested deeper than {max_depth} levels")
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_finite_int,
                           object_pairs_hook=_unique_keys)
    except RecursionError:  # not reached after the scan; kept so that no parser's limit ever escapes as a traceback
        raise ValueError(f"nested deeper than {max_depth} levels") from None
    where = lone_surrogate_at(value)
    if where is not None:
        raise ValueError(f"{where} holds a lone surrogate (an unpaired \\ud800-\\udfff escape), which is not text; "
                         "write the character itself or its surrogate pair")
    return value


def json_depth(text: str, start: int = 0) -> tuple[int, int]:
    """(deepest, final) bracket nesting of the JSON ``text`` outside its strings, counted from ``start`` (a line
    of a longer document continues its predecessor's nesting), in linear time and without parsing: exact for valid
    JSON, never less than a parser would reach in any text (a string is taken to end at its line's end)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", _ESCAPE.sub("", text)))
    steps = array("b", brackets.encode("ascii").translate(_BRACKET_STEP))
    return max(accumulate(steps, initial=start)), start + sum(steps)


def lone_surrogate_at(value: Any) -> str | None:
    """The path (``tags[0]``, ``tools[1].name``, ``(top)``) of the first string or key holding a lone surrogate."""
    return next((path for path, text in strings_in(value) if _has_lone_surrogate(text)), None)


def control_character_at(value: Any) -> tuple[str, str] | None:
    """The path and code point (``U+0000``) of the first string or key holding a control character other than tab,
    line feed and carriage return (a NUL, an escape, a C1 control), which no prompt or name should carry."""
    for path, text in strings_in(value):
        found = _CONTROL.search(text)
        if found:
            return path, f"U+{ord(found.group()):04X}"
    return None


def strings_in(value: Any) -> Iterator[tuple[str, str]]:
    """(path, text) of every string and key in ``value``, without recursion; a key's path ends ``key 'NAME'``."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            yield path or "(top)", node
        elif isinstance(node, dict):
            for key, child in node.items():
                if isinstance(key, str):
                    yield f"{path or '(top)'} key {key!r}", key
                stack.append((child, f"{path}.{key}" if path else str(key)))
        elif isinstance(node, list):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(node))


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

