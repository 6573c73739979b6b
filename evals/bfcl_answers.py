"""Answers to BFCL cases built from BFCL's own possible answers, for checking a scorer against BFCL's checker.

Each case gets the answer made of every call's first acceptable values, each other acceptable value in turn, and
perturbations that each exercise one rule of BFCL's AST checker or of ours: a wrong value, a value of another type,
an integer for a float and a float for an integer, a string differing in case, spaces, punctuation or quotes, a
list in another order or with its items of another number type, a dictionary with a key missing or added, an
empty string, empty list or null for an argument, an argument missing or added, a call added, dropped or moved,
an unknown or another listed function, no call, and an answer that does not parse. No model is run.

In the Java and JavaScript categories every argument is then written as the string a function-calling model gives
there: a literal of the language for the type BFCL declares (``"true"``, ``"50L"``, ``"new String[]{a, b}"``,
``"[1.5, 2.5]"``), in the forms BFCL's type converters read (``_literal``); a null stays a null.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.bfcl import BFCL_CATEGORIES, bfcl_records
from evals.bfcl_checker import language_of
from evals.runner import RESULTS_FILE, load_rows

__all__ = ["Answer", "generated_answers", "run_answers"]

_UNKNOWN_FUNCTION = "unknown_function"
_UNDECLARED_ARGUMENT = "unexpected_argument"
_SAMPLE = {"string": "sample", "integer": 7, "float": 7.5, "boolean": True, "array": [], "tuple": [], "dict": {},
           "any": "sample"}


@dataclass(frozen=True)
class Answer:
    """One answer to a BFCL case: its calls as given (``{"tool_name", "arguments"}``), or one that did not parse."""

    case_id: str
    calls: tuple[dict[str, Any], ...]
    label: str = "row"  # where it comes from: a run's row, or how it was built from the possible answers
    parse_failure: bool = False


def run_answers(run_dir: str | Path) -> dict[str, list[Answer]]:
    """A finished run's answers to BFCL cases, by category (a row whose model call failed has none)."""
    by_category: dict[str, list[Answer]] = {}
    for case_id, row in load_rows(Path(run_dir) / RESULTS_FILE).items():
        category = next((t for t in row.get("tags") or [] if t in BFCL_CATEGORIES), None)
        if category is None or row.get("error_message"):
            continue
        calls = tuple(json.loads(row.get("predicted") or "[]"))
        by_category.setdefault(category, []).append(
            Answer(case_id, calls, parse_failure=bool(row.get("parse_failure"))))
    return by_category


def generated_answers(category: str, case_ids: Iterable[str] | None = None) -> list[Answer]:
    """Every answer built for every case of ``category`` (one BFCL category), or for the cases ``case_ids``,
    duplicates left out."""
    functions, truth = bfcl_records(category)
    language = language_of(category)
    answers: list[Answer] = []
    for case_id in functions if case_ids is None else case_ids:
        described = functions[case_id]
        built = _irrelevance_answers(described) if category == "irrelevance" else _answers(truth[case_id], described)
        if language != "python":
            built = ((label, _as_literals(calls, described, language)) for label, calls in built)
        seen = set()
        for label, calls in built:
            key = repr(calls)
            if key not in seen:
                seen.add(key)
                answers.append(Answer(case_id, tuple(calls), label))
        answers.append(Answer(case_id, (), "unparseable", parse_failure=True))
    return answers


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"tool_name": name, "arguments": arguments}


def _irrelevance_answers(described: list[dict]) -> Iterator[tuple[str, list[dict]]]:
    yield "no call", []
    first = described[0]
    params = first.get("parameters", {})
    required = {p: _SAMPLE.get(params["properties"][p].get("type"), "sample") for p in params.get("required", [])
                if p in params.get("properties", {})}
    yield "a listed function", [_call(first["name"], required)]
    yield "a listed function, no arguments", [_call(first["name"], {})]
    yield "unknown function", [_call(_UNKNOWN_FUNCTION, {})]


def _first_values(possible: dict[str, list]) -> dict[str, Any]:
    """Each argument's first acceptable value; an argument whose only acceptable value is "" is left out."""
    lists = {name: values if isinstance(values, list) else [values] for name, values in possible.items()}
    return {name: _concrete(next(v for v in values if v != "")) for name, values in lists.items()
            if any(v != "" for v in values)}


def _concrete(value: Any) -> Any:
    """A value as an answer gives it: BFCL writes a dictionary's values, at any depth, as lists of acceptable ones."""
    if isinstance(value, dict):
        return _first_values(value)
    if isinstance(value, list):
        return [_concrete(item) for item in value]
    return value


def _answers(truth: list[dict], described: list[dict]) -> Iterator[tuple[str, list[dict]]]:
    expected = [next(iter(entry.items())) for entry in truth]
    base = [_call(name, _first_values(possible)) for name, possible in expected]
    yield "first acceptable values", base
    properties = {f["name"]: f.get("parameters", {}).get("properties", {}) for f in described}
    for index, (name, possible) in enumerate(expected):
        # perturbing each function's first call is enough: the others vary in their acceptable values
        first_of_its_function = all(other != name for other, _ in expected[:index])
        variants = _argument_variants if first_of_its_function else _acceptable_variants
        for label, arguments in variants(base[index]["arguments"], possible, properties.get(name, {})):
            yield f"call {index}: {label}", base[:index] + [_call(name, arguments)] + base[index + 1:]
    yield "no call", []
    yield "a call added", base + [copy.deepcopy(base[0])]
    if len(base) > 1:
        yield "last call dropped", base[:-1]
        yield "calls reversed", base[::-1]
    yield "unknown function", [_call(_UNKNOWN_FUNCTION, base[0]["arguments"])] + base[1:]
    others = [f["name"] for f in described if f["name"] not in {n for n, _ in expected}]
    if others:
        yield "another listed function", [_call(others[0], base[0]["arguments"])] + base[1:]


def _acceptable_variants(arguments: dict[str, Any], possible: dict[str, list],
                         properties: dict[str, dict]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each other acceptable value of each argument in turn (``""``: the argument left out)."""
    for param, values in possible.items():
        for number, value in enumerate(values):
            if value == "":
                yield f"{param} omitted (\"\" acceptable)", _without(arguments, param)
            elif number:
                yield f"{param} acceptable #{number}", {**arguments, param: _concrete(value)}


def _argument_variants(arguments: dict[str, Any], possible: dict[str, list],
                       properties: dict[str, dict]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The acceptable variants, then each argument perturbed in turn, then arguments added."""
    yield from _acceptable_variants(arguments, possible, properties)
    for param, values in possible.items():
        declared = properties.get(param, {})
        kind = declared.get("type")
        yield f"{param} omitted", _without(arguments, param)
        yield f"{param} as empty string", {**arguments, param: ""}
        yield f"{param} as empty list", {**arguments, param: []}
        yield f"{param} as null", {**arguments, param: None}
        if param in arguments:
            for label, changed in _value_variants(arguments[param], values, kind, declared.get("items", {})):
                yield f"{param} {label}", {**arguments, param: changed}
    for param, declared in properties.items():
        if param not in possible:
            yield f"{param} added (declared, not expected)", {**arguments, param: _SAMPLE.get(declared.get("type"), 1)}
    yield "undeclared argument added", {**arguments, _UNDECLARED_ARGUMENT: 1}


def _without(arguments: dict[str, Any], param: str) -> dict[str, Any]:
    return {k: v for k, v in arguments.items() if k != param}


def _value_variants(value: Any, acceptable: list, kind: str | None, items: dict) -> Iterator[tuple[str, Any]]:
    """How one argument's value can differ: each variant with what it changes."""
    if isinstance(value, bool):
        yield "negated", not value
        yield "as string", str(value).lower()
        yield "as integer", int(value)
    elif isinstance(value, int):
        yield "wrong number", max(v for v in acceptable if isinstance(v, int | float) and not isinstance(v, bool)) + 1
        yield "as float", float(value)
        yield "as string", str(value)
    elif isinstance(value, float):
        yield "wrong number", value + 0.5
        yield "a hair off", value * (1 + 1e-12) if value else 1e-300
        yield "as string", repr(value)
        if value.is_integer():
            yield "as integer", int(value)
    elif isinstance(value, str):
        yield "wrong string", value + " other"
        yield "upper case", value.upper()
        yield "with spaces and punctuation", f" {value.replace(' ', '-')}."
        yield "with other punctuation", value + "!"
        if "'" in value or '"' in value:
            yield "quotes swapped", value.translate(str.maketrans({"'": '"', '"': "'"}))
        yield "as list", [value]
        if value.strip().lstrip("-").isdigit():
            yield "as integer", int(value)
    elif isinstance(value, list):
        yield from _list_variants(value, items)
    elif isinstance(value, dict):
        yield from _dict_variants(value)


def _list_variants(value: list, items: dict) -> Iterator[tuple[str, Any]]:
    if len(value) > 1 and value[::-1] != value:
        yield "in reverse order", value[::-1]
    if value:
        yield "last item dropped", value[:-1]
        yield "first item only, not in a list", value[0]
    yield "item added", [*value, copy.deepcopy(value[0]) if value else _SAMPLE.get(items.get("type"), "sample")]
    if any(isinstance(v, str) for v in value):
        yield "strings upper case", [v.upper() if isinstance(v, str) else v for v in value]
    if any(isinstance(v, int) and not isinstance(v, bool) for v in value):
        yield "integers as floats", [float(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value]
    if any(isinstance(v, float) and v.is_integer() for v in value):
        yield "whole floats as integers", [int(v) if isinstance(v, float) and v.is_integer() else v for v in value]
    if any(isinstance(v, dict) for v in value):
        first = next(i for i, v in enumerate(value) if isinstance(v, dict))
        for label, changed in _dict_variants(value[first]):
            yield f"item {first} {label}", value[:first] + [changed] + value[first + 1:]


def _dict_variants(value: dict) -> Iterator[tuple[str, Any]]:
    yield "key added", {**value, "unexpected_key": "x"}
    for key, item in value.items():
        yield f"key {key!r} dropped", _without(value, key)
        if isinstance(item, str):
            yield f"key {key!r} upper case", {**value, key: item.upper()}
        elif isinstance(item, int | float) and not isinstance(item, bool):
            yield f"key {key!r} as float", {**value, key: float(item)}
            yield f"key {key!r} as string", {**value, key: str(item)}
        elif isinstance(item, list) and any(isinstance(v, str) for v in item):
            yield f"key {key!r} strings upper case", {**value, key: [v.upper() if isinstance(v, str) else v
                                                                     for v in item]}


_JAVA_ELEMENTS = {"String": "String", "any": "Object", "char": "char", "boolean": "boolean", "integer": "int",
                  "long": "long", "float": "float", "double": "double", "byte": "byte", "short": "short"}


def _as_literals(calls: list[dict], described: list[dict], language: str) -> list[dict]:
    """``calls`` with each argument written as a Java or JavaScript literal of the type its function declares."""
    properties = {f["name"]: f.get("parameters", {}).get("properties", {}) for f in described}
    return [_call(call["tool_name"], {name: _literal(value, properties.get(call["tool_name"], {}).get(name, {}),
                                                     language)
                                      for name, value in call["arguments"].items()})
            for call in calls]


def _literal(value: Any, declared: dict, language: str) -> Any:
    """``value`` as the source literal BFCL's converters read for the ``declared`` type: a string is taken as
    written (BFCL's ``String``, ``any`` and ``char`` compare the text itself), a null is left a null."""
    if value is None or isinstance(value, str):
        return value
    kind = declared.get("type")
    item = (declared.get("items") or {}).get("type")
    if language == "java":
        if isinstance(value, list) and kind == "ArrayList":
            quote = '"' if item == "String" else "'" if item == "char" else ""
            items = ", ".join(quote + _scalar(v, item, language) + quote if isinstance(v, str) else
                              _scalar(v, item, language) for v in value)
            return f"new ArrayList<>(Arrays.asList({items}))" if value else "new ArrayList<>()"
        if isinstance(value, list):
            element = _JAVA_ELEMENTS.get(item, "Object")
            return f"new {element}[]{{{', '.join(_scalar(v, item, language) for v in value)}}}"
        if isinstance(value, dict):
            puts = " ".join(f'put("{k}", {_java_value(v)});' for k, v in value.items())
            return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
        return _scalar(value, kind, language)
    if isinstance(value, list):
        return "[" + ", ".join(_js_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_js_value(v)}" for k, v in value.items()) + "}"
    return _scalar(value, kind, language)


def _scalar(value: Any, kind: str | None, language: str) -> str:
    """A number or boolean (or a string, as written) as a literal of the declared ``kind``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        suffix = {("java", "long"): "L", ("java", "float"): "f", ("javascript", "Bigint"): "n"}.get((language, kind), "")
        return f"{value!r}{suffix}"
    return str(value)


def _java_value(value: Any) -> str:
    """A value inside a Java collection, as BFCL's ``parse_java_value`` reads it (a string in double quotes)."""
    return f'"{value}"' if isinstance(value, str) else _scalar(value, None, "java")


def _js_value(value: Any) -> str:
    """A value inside a JavaScript array or object literal."""
    if isinstance(value, list | dict):
        return _literal(value, {}, "javascript")
    return json.dumps(value) if isinstance(value, str) else _scalar(value, None, "javascript")
