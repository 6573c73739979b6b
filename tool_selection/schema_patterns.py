"""JSON Schema validation whose regular expressions run with a time limit.

A schema-only tool (imported from a suite, an MCP server, an OpenAI or BFCL definition) validates arguments with
its JSON Schema, and ``jsonschema`` matches ``pattern`` and ``patternProperties`` with Python's backtracking ``re``,
which has no time limit: ``^(a+)+$`` against thirty ``a``s and a ``!`` runs for minutes, so one hostile definition
(or a model's answer against it) would hang an evaluation. ``ArgumentValidator`` matches those keywords with the
``regex`` package, whose matching stops after ``PATTERN_TIMEOUT_S``; a value that takes longer counts as not
matching, with a message that says so. Patterns are still checked for syntax when the schema is (``re``). Left
to ``jsonschema``'s own matching: ``unevaluatedProperties`` in a schema that also has ``patternProperties`` (rare in
tool schemas).
"""

from __future__ import annotations

import functools
from typing import Any

import jsonschema
import regex
from jsonschema.exceptions import ValidationError

__all__ = ["PATTERN_TIMEOUT_S", "ArgumentValidator", "search_bounded"]

PATTERN_TIMEOUT_S = 0.1  # a pattern a tool can use matches an argument in microseconds


class PatternTimeout(Exception):
    """Matching a pattern took longer than ``PATTERN_TIMEOUT_S``."""


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> regex.Pattern:
    return regex.compile(pattern)


def search_bounded(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text`` (JSON Schema's reading of ``pattern``); raises
    ``PatternTimeout`` past ``PATTERN_TIMEOUT_S`` and ``regex.error`` for a pattern it cannot compile."""
    try:
        return _compiled(pattern).search(text, timeout=PATTERN_TIMEOUT_S) is not None
    except TimeoutError:
        raise PatternTimeout(pattern) from None


def _too_slow(pattern: str) -> str:
    return (f"takes longer than {PATTERN_TIMEOUT_S} s to match against {pattern!r} (a pattern that backtracks "
            "catastrophically); refused as not matching")


def _pattern(validator, pattern: str, instance: Any, schema: dict) -> Any:
    if not validator.is_type(instance, "string"):
        return
    try:
        if not search_bounded(pattern, instance):
            yield ValidationError(f"{instance!r} does not match {pattern!r}")
    except PatternTimeout:
        yield ValidationError(f"{instance[:40]!r}{'...' if len(instance) > 40 else ''} {_too_slow(pattern)}")
    except regex.error as error:
        yield ValidationError(f"the schema's pattern {pattern!r} cannot be used: {error}")


def _matching_keys(instance: dict, pattern: str) -> tuple[list[str], list[str]]:
    """The keys ``pattern`` matches, and those it could not be matched against in time or at all."""
    matched, failed = [], []
    for key in instance:
        try:
            if search_bounded(pattern, key):
                matched.append(key)
        except (PatternTimeout, regex.error):
            failed.append(key)
    return matched, failed


def _pattern_properties(validator, pattern_properties: dict, instance: Any, schema: dict) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        matched, failed = _matching_keys(instance, pattern)
        for key in failed:
            yield ValidationError(f"argument name {key[:40]!r} {_too_slow(pattern)}")
        for key in matched:
            yield from validator.descend(instance[key], subschema, path=key, schema_path=pattern)


def _additional_properties(validator, additional: Any, instance: Any, schema: dict) -> Any:
    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    extras = [key for key in instance if key not in declared]
    for pattern in schema.get("patternProperties", {}):  # keys it fails to match in time stay extras
        matched = set(_matching_keys({key: None for key in extras}, pattern)[0])
        extras = [key for key in extras if key not in matched]
    if validator.is_type(additional, "object"):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)
    elif additional is False and extras:
        listed = ", ".join(repr(key) for key in sorted(extras))
        yield ValidationError(f"Additional properties are not allowed ({listed} {'was' if len(extras) == 1 else 'were'}"
                              " unexpected)")


ArgumentValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    {"pattern": _pattern, "patternProperties": _pattern_properties, "additionalProperties": _additional_properties},
)
