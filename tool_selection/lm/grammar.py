"""The llama.cpp grammar that enforces a ``response_format``, and what had to give way to get one: llama.cpp
refuses (or crashes on) grammars with large length bounds and some regex classes, so a schema is relaxed step by
step, down to plain JSON; each step taken is reported as an ``Adaptation``."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from dspy.lm15 import Adaptation

__all__ = ["MAX_GRAMMAR_BOUND", "narrowed_grammar", "response_grammar"]

MAX_GRAMMAR_BOUND = 500  # larger length/size bounds make llama.cpp grammars huge (and crash it past a few thousand)
_BOUNDS = frozenset({"maxLength", "minLength", "maxItems", "minItems", "pattern"})
_NAMED_SCHEMAS = frozenset({"properties", "patternProperties", "$defs", "definitions"})  # name -> schema maps
_VALUES = frozenset({"const", "enum", "default", "examples"})  # data, not schemas


def response_grammar(llama, response_format: dict[str, Any], *, padded: bool = False) -> tuple[Any, list[Adaptation]]:
    """The grammar enforcing ``response_format`` that ``llama`` accepts, and what had to give way to get it
    (``padded``: whitespace may come before and after, as around a tool call).

    llama.cpp unrolls length and size bounds into repetitions, so large ones are dropped up front (a grammar
    with ``maxLength: 100000`` crashes it) and ``\\d`` is spelled ``[0-9]``; then patterns go (the converter lacks
    some regex classes), then all bounds.
    """
    if response_format.get("type") != "json_schema":
        return _compiled_grammar(None, padded), []
    schema = response_format["schema"]
    bound = MAX_GRAMMAR_BOUND
    candidates = [
        (_without_bounds(schema, keep_upto=bound, keep_patterns=True), f"json_schema without bounds above {bound}"),
        (_without_bounds(schema, keep_upto=bound), f"json_schema without patterns or bounds above {bound}"),
        (_without_bounds(schema), "json_schema without length, size and pattern constraints"),
    ]
    tried = []
    for candidate, substitute in candidates:
        if candidate in tried:
            continue
        tried.append(candidate)
        grammar = _compiled_grammar(json.dumps(candidate), padded)
        if grammar is not None and llama.accepts_grammar(grammar):
            return grammar, [_substituted(substitute)] if candidate != schema else []
    return _compiled_grammar(None, padded), [_substituted("json_object")]


def narrowed_grammar(llama, response_format: dict[str, Any], names) -> Any | None:
    """The grammar of ``response_format``, a schema of one call to any of several functions (an ``anyOf`` of
    ``{"name": {"const": ...}, "arguments": ...}``, as ``strategies.native.call_schema`` writes it), that admits
    only the calls to ``names`` (padded, as around a tool call); None where no listed function is among them."""
    schema = response_format.get("schema") or {}
    kept = [alternative for alternative in schema.get("anyOf", [])
            if ((alternative.get("properties") or {}).get("name") or {}).get("const") in set(names)]
    if not kept:
        return None
    narrowed = kept[0] if len(kept) == 1 else {"anyOf": kept}
    if "$defs" in schema:
        narrowed = {**narrowed, "$defs": schema["$defs"]}
    return response_grammar(llama, {**response_format, "schema": narrowed}, padded=True)[0]


def _substituted(applied: str) -> Adaptation:
    return Adaptation(field="config.response_format", action="substituted", asked="json_schema", applied=applied,
                      reason="llama.cpp cannot build a grammar for this JSON schema; the output is constrained "
                             f"to {applied}.")


def _without_bounds(schema: Any, *, keep_upto: int = -1, keep_patterns: bool = False) -> Any:
    """``schema`` without length and size bounds above ``keep_upto`` (all, by default) and, unless
    ``keep_patterns``, without pattern keywords (a property *named* "pattern" stays)."""
    if isinstance(schema, list):
        return [_without_bounds(item, keep_upto=keep_upto, keep_patterns=keep_patterns) for item in schema]
    if not isinstance(schema, dict):
        return schema
    relaxed = {}
    for key, value in schema.items():
        if key == "pattern" and isinstance(value, str):
            if keep_patterns:
                relaxed[key] = _grammar_pattern(value)
            continue
        if key in _BOUNDS and key != "pattern" and not (isinstance(value, int) and value <= keep_upto):
            continue
        if key in _NAMED_SCHEMAS and isinstance(value, dict):
            relaxed[key] = {name: _without_bounds(sub, keep_upto=keep_upto, keep_patterns=keep_patterns)
                            for name, sub in value.items()}
        else:
            relaxed[key] = value if key in _VALUES else _without_bounds(value, keep_upto=keep_upto, keep_patterns=keep_patterns)
    return relaxed


def _grammar_pattern(pattern: str) -> str:
    """``pattern`` with ``\\d`` spelled as a digit range: llama-cpp-python's converter does not know ``\\d``."""
    out, in_class, i = [], False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            pair = pattern[i:i + 2]
            out.append(("0-9" if in_class else "[0-9]") if pair == "\\d" else pair)
            i += 2
            continue
        in_class = (in_class and char != "]") or (not in_class and char == "[")
        out.append(char)
        i += 1
    return "".join(out)


@lru_cache(maxsize=64)
def _compiled_grammar(schema_json: str | None, padded: bool = False) -> Any:
    """A llama.cpp grammar for a JSON schema, or for any JSON when ``schema_json`` is None; None if the schema
    has no grammar (llama-cpp-python's converter does not cover every keyword)."""
    from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar, json_schema_to_gbnf  # lazy: llama-cpp loads in ~1 s

    try:
        gbnf = JSON_GBNF if schema_json is None else json_schema_to_gbnf(schema_json)
    except Exception:
        return None
    if padded:  # up to two whitespace characters either side, so tokens such as "}}\n" stay open to the model;
        # and the doubled braces of Qwen2.5's template example ({{...}}), which models copy and the parser reads
        gbnf = re.sub(r"^root\s*::=", "padded-value ::=", gbnf, count=1, flags=re.MULTILINE)
        gbnf += ('\ncall-pad ::= [ \\t\\n]?\nroot ::= call-pad call-pad (padded-value | "{" padded-value "}") '
                 'call-pad call-pad\n')
    return LlamaGrammar.from_string(gbnf, verbose=False)
