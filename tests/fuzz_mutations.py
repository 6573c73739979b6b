"""Seeded mutations of JSON documents, for the loader fuzz tests: what a careless editor, a broken disk or a hostile
author does to a file (byte flips, truncation, bytes that are not UTF-8, values of the wrong type, deep nesting,
numbers beyond a double, NaN, lone surrogates, duplicate keys)."""

from __future__ import annotations

import json
import random
from typing import Any

DEEP = "__deep__"  # replaced, after dumping, by nesting no JSON parser should recurse into
NUMBERS = ("1e999", "-1e999", "NaN", "Infinity", "-Infinity", "1" * 400, "-0", "1e-400", "123456789012345678901234")
STRINGS = ("", "\ud800", "a\udfffb", "\x00", "\u202e", "é" * 3, "x" * 5000, "^(a|a)*$", "#/$defs/none", "dict")
ODD_BYTES = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"{", b"}", b"[", b"]", b'"', b"\\", b",", b":", b"\n",
             b"\\ud800", b"NaN", b"1e999", b"-Infinity", b"\r", b"\xef\xbb\xbf")


def weird_value(rng: random.Random, depth: int = 0) -> Any:
    """A JSON-ish value of any type, often one no schema expects."""
    kinds = [
        lambda: rng.randrange(-10**6, 10**6), lambda: rng.random() * rng.choice([1, 1e300]), lambda: float("nan"),
        lambda: rng.choice([True, False, None]), lambda: rng.choice(STRINGS), lambda: DEEP,
        lambda: [weird_value(rng, depth + 1) for _ in range(rng.randrange(3))],
        lambda: {rng.choice(["type", "properties", "$ref", "pattern", "one_of", "name", "x", "\ud800"]):
                 weird_value(rng, depth + 1) for _ in range(rng.randrange(3))},
        lambda: {"type": rng.choice(["string", "dict", "object", "integer", 7]), "pattern": "^(a+)+$",
                 "properties": {"a": {"$ref": rng.choice(["#/$defs/none", "#", "http://example.invalid/s"])}}},
    ]
    return rng.choice(kinds[:6] if depth > 2 else kinds)()


def _nodes(value: Any, path: tuple = ()) -> list[tuple]:
    """Every path into ``value`` (keys and indexes), the root included."""
    out = [path]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _nodes(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out += _nodes(child, (*path, index))
    return out


def _mutate_value(rng: random.Random, document: Any, focus: tuple[str, ...]) -> Any:
    paths = _nodes(document)
    focused = [p for p in paths if p and p[0] in focus]
    path = rng.choice(focused if focused and rng.random() < 0.6 else paths)
    if not path:
        return weird_value(rng) if rng.random() < 0.3 else document
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    key = path[-1]
    action = rng.randrange(4)
    if action == 0 or not isinstance(parent, dict):
        parent[key] = weird_value(rng)
    elif action == 1:
        del parent[key]
    elif action == 2:
        parent[rng.choice(["colour", "\ud800", "", key + "_"])] = parent.pop(key)
    else:
        parent[key] = [parent[key]]
    return document


def _dump(rng: random.Random, document: Any) -> bytes:
    text = json.dumps(document, ensure_ascii=rng.random() < 0.7)
    depth = rng.choice([70, 3000])
    text = text.replace(f'"{DEEP}"', "[" * depth + "]" * depth)
    for number in NUMBERS:  # a number written as text, where the mutation put its string
        if rng.random() < 0.3:
            text = text.replace(f'"{number}"', number)
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate raw: bytes that are not UTF-8


def mutate(rng: random.Random, text: str, focus: tuple[str, ...] = ()) -> bytes:
    """One to three mutations of the JSON document ``text``, as bytes; value mutations land more often under the
    top-level keys in ``focus``."""
    data = text.encode("utf-8")
    for _ in range(rng.randrange(1, 4)):
        kind = rng.randrange(7)
        if kind <= 2:
            try:
                document = json.loads(data.decode("utf-8"))
            except (ValueError, RecursionError):
                continue
            data = _dump(rng, _mutate_value(rng, document, focus))
        elif kind == 3 and data:
            flipped = bytearray(data)
            for _ in range(rng.randrange(1, 4)):
                flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
            data = bytes(flipped)
        elif kind == 4:
            data = data[:rng.randrange(len(data) + 1)]
        elif kind == 5:
            at = rng.randrange(len(data) + 1)
            data = data[:at] + rng.choice(ODD_BYTES) + data[at:]
        else:
            at = data.find(b"{") + 1
            key = rng.choice([b'"id": "dup", ', b'"x": 1, "x": 2, ', b'"tags": [], '])
            data = data[:at] + key + data[at:] if at else data
    return data
