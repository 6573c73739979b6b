"""Every tool of the domain sets, called with arguments drawn from its own JSON schema, answers with a
JSON-serialisable result or a structured failure, quickly, and never raises."""

import datetime as dt
import json
import math
import time
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tool_selection import load_tool_set

DOMAIN_SETS = ("treasure_hunt", "events", "ecommerce", "finance", "language")
BOUNDED_SETS = DOMAIN_SETS
TIME_BOUND_S = 2.0
TOOLS = [(set_name, tool.NAME) for set_name in DOMAIN_SETS for tool in load_tool_set(set_name)]
KNOWN_FAILURES: dict = {}


def from_schema(schema: dict[str, Any]) -> st.SearchStrategy:
    """Values valid under ``schema``, for the JSON Schema keywords the tool models produce."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    if "anyOf" in schema or "oneOf" in schema:
        return st.one_of([from_schema(option) for option in schema.get("anyOf", schema.get("oneOf"))])
    kind = schema.get("type")
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        low, high = _bound(schema, "minimum", "exclusiveMinimum", 1), _bound(schema, "maximum", "exclusiveMaximum", -1)
        return st.integers(min_value=None if low is None else math.ceil(low),
                           max_value=None if high is None else math.floor(high))
    if kind == "number":
        return st.floats(min_value=schema.get("minimum", schema.get("exclusiveMinimum")),
                         max_value=schema.get("maximum", schema.get("exclusiveMaximum")),
                         exclude_min="exclusiveMinimum" in schema, exclude_max="exclusiveMaximum" in schema,
                         allow_nan=False, allow_infinity=False)
    if kind == "string":
        return _strings(schema)
    if kind == "array":
        return st.lists(from_schema(schema.get("items", {"type": "string"})), min_size=schema.get("minItems", 0),
                        max_size=schema.get("maxItems"))
    if kind == "object":
        properties = schema.get("properties", {})
        required = set(schema.get("required", ()))
        return st.fixed_dictionaries(
            {name: from_schema(sub) for name, sub in properties.items() if name in required},
            optional={name: from_schema(sub) for name, sub in properties.items() if name not in required},
        )
    raise NotImplementedError(f"no strategy for the schema {schema}")


def _bound(schema: dict[str, Any], inclusive: str, exclusive: str, step: int) -> float | None:
    if inclusive in schema:
        return schema[inclusive]
    return schema[exclusive] + step if exclusive in schema else None


def _strings(schema: dict[str, Any]) -> st.SearchStrategy:
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    if schema.get("format") == "date":
        return st.dates().map(dt.date.isoformat)
    if "pattern" in schema:
        return st.from_regex(schema["pattern"], fullmatch=True).filter(
            lambda text: low <= len(text) and (high is None or len(text) <= high))
    return st.text(min_size=low, max_size=high)


@cache
def _registry(set_name):
    return load_tool_set(set_name).registry()


@cache
def _arguments(set_name, tool_name):
    return from_schema(_registry(set_name).get(tool_name).input_schema())


def _subschemas(schema: dict[str, Any], path: str):
    """``(path, schema)`` for every value a tool's arguments hold, nested ones included."""
    for option in schema.get("anyOf", schema.get("oneOf", [])):
        yield from _subschemas(option, path)
    if schema.get("type") == "object":
        for name, sub in schema.get("properties", {}).items():
            yield from _subschemas(sub, f"{path}.{name}" if path else name)
    elif schema.get("type") == "array":
        yield path, schema
        yield from _subschemas(schema.get("items", {}), f"{path}[]")
    elif "type" in schema or "enum" in schema:
        yield path, schema


def _unbounded(schema: dict[str, Any]) -> str | None:
    kind = schema.get("type")
    if "enum" in schema or "const" in schema or kind in ("boolean", "null"):
        return None
    if kind in ("integer", "number"):
        low = "minimum" in schema or "exclusiveMinimum" in schema
        high = "maximum" in schema or "exclusiveMaximum" in schema
        return None if low and high else "no minimum and maximum"
    if kind == "string":
        return None if "maxLength" in schema or schema.get("format") == "date" else "no maxLength"
    if kind == "array":
        return None if "maxItems" in schema else "no maxItems"
    return f"type {kind!r}"


@pytest.mark.parametrize("set_name", BOUNDED_SETS)
def test_every_argument_is_bounded(set_name):
    unbounded = [f"{tool.NAME}.{path}: {problem}" for tool in load_tool_set(set_name)
                 for path, sub in _subschemas(tool.input_schema(), "")
                 if (problem := _unbounded(sub)) is not None]
    assert unbounded == []


NUMBER_ARGUMENTS = [(set_name, tool.NAME, name) for set_name in BOUNDED_SETS for tool in load_tool_set(set_name)
                    for name, sub in tool.input_schema()["properties"].items()
                    if any(s.get("type") == "number" for _, s in _subschemas(sub, name))]


@pytest.mark.parametrize(("set_name", "tool_name", "argument"), NUMBER_ARGUMENTS,
                         ids=[f"{t}.{a}" for _, t, a in NUMBER_ARGUMENTS])
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan], ids=["inf", "-inf", "nan"])
@settings(max_examples=5, deadline=dt.timedelta(seconds=5), database=None)
@given(data=st.data())
def test_non_finite_numbers_are_refused_naming_the_argument(set_name, tool_name, argument, value, data):
    arguments = {**data.draw(_arguments(set_name, tool_name)), argument: value}  # Python's json reads Infinity
    outcome = _registry(set_name).try_execute(tool_name, arguments)
    assert outcome["ok"] is False and outcome["error"] == "invalid_arguments"
    assert argument in [problem["field"] for problem in outcome["problems"]]


@pytest.mark.parametrize(("set_name", "tool_name"),
                         [pytest.param(*key, marks=KNOWN_FAILURES.get(key, ())) for key in TOOLS],
                         ids=[f"{s}.{t}" for s, t in TOOLS])
@settings(max_examples=40, deadline=dt.timedelta(seconds=5), database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_schema_drawn_arguments_give_a_structured_answer_in_time(set_name, tool_name, data):
    arguments = data.draw(_arguments(set_name, tool_name), label="arguments")
    start = time.perf_counter()
    outcome = _registry(set_name).try_execute(tool_name, arguments)
    elapsed = time.perf_counter() - start
    assert isinstance(outcome, dict) and isinstance(outcome.get("ok"), bool)
    json.dumps(outcome, allow_nan=False)
    assert elapsed < TIME_BOUND_S, f"{tool_name} took {elapsed:.2f} s"
