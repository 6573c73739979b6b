"""The calculator tool set: arithmetic checked against Python's own maths, every refusal in the tool-failure
shape, attacks refused quickly without eval, and unit conversions against their exact definitions."""

import builtins
import json
import math
import time

import jsonschema
import pytest

from tool_selection import ToolArgumentError, ToolSet, load_tool_set, toolset
from tool_selection.tool_failures import is_failure
from tool_sets.calculator import TOOL_SET, Calculate, ExpressionError, evaluate
from tool_sets.calculator.expression import MAX_LENGTH
from tool_sets.calculator.units import UNITS, lookup_unit

FAILURE_KEYS = {"ok", "error", "message", "suggestions"}


def unbounded_arguments(schema: dict) -> list[str]:
    """Arguments whose schema lets a value grow without limit (strings without maxLength, numbers without both
    bounds, arrays without maxItems); shared by the general-purpose tool sets' tests."""

    def bounded(prop: dict) -> bool:
        if "enum" in prop or "const" in prop:
            return True
        if "anyOf" in prop:
            return all(bounded(p) for p in prop["anyOf"] if p.get("type") != "null")
        kind = prop.get("type")
        if kind == "string":
            return "maxLength" in prop
        if kind in ("integer", "number"):
            keys = set(prop)
            return bool(keys & {"minimum", "exclusiveMinimum"}) and bool(keys & {"maximum", "exclusiveMaximum"})
        if kind == "array":
            return "maxItems" in prop and bounded(prop.get("items", {}))
        return kind == "boolean"

    return [name for name, prop in schema["properties"].items() if not bounded(prop)]


def check_tool_set(tool_set: ToolSet, monkeypatch: pytest.MonkeyPatch) -> None:
    """A general-purpose set loads by name, gives a registry of its tools, and every schema is valid and bounded."""
    assert tool_set.name in toolset.available_tool_sets()  # registered as an entry point
    assert load_tool_set(tool_set.name) is tool_set
    registry = tool_set.registry()
    assert registry.names() == sorted(tool_set.names()) and len(registry) == len(tool_set) >= 1
    for tool in tool_set:
        schema = tool.input_schema()
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["additionalProperties"] is False, tool.NAME
        assert unbounded_arguments(schema) == [], tool.NAME
        assert registry.get(tool.NAME) is tool and tool.category == tool_set.name


def assert_failure(result: dict, error: str) -> None:
    assert is_failure(result) and FAILURE_KEYS <= set(result), result
    assert result["error"] == error, result
    assert isinstance(result["message"], str) and result["message"]
    assert isinstance(result["suggestions"], list)
    assert json.loads(json.dumps(result)) == result


def calculate(expression: str) -> dict:
    result = TOOL_SET.registry().execute("calculate", {"expression": expression})
    assert json.loads(json.dumps(result)) == result
    return result


def convert(value: float, from_unit: str, to_unit: str) -> dict:
    return TOOL_SET.registry().execute("convert_units", {"value": value, "from_unit": from_unit, "to_unit": to_unit})


# ------------------------------------------------------------------------------------------ the set
def test_tool_set_loads_and_every_schema_is_bounded(monkeypatch):
    check_tool_set(TOOL_SET, monkeypatch)
    assert TOOL_SET.names() == ["calculate", "convert_units"]


def test_the_bounds_check_catches_an_unbounded_argument():
    schema = {"properties": {"a": {"type": "string"}, "b": {"type": "integer", "minimum": 0},
                             "c": {"anyOf": [{"type": "number", "minimum": 0, "maximum": 1}, {"type": "null"}]},
                             "d": {"type": "array", "maxItems": 3, "items": {"type": "string"}}}}
    assert unbounded_arguments(schema) == ["a", "b", "d"]


# ------------------------------------------------------------------------------------------ arithmetic
@pytest.mark.parametrize("expression, expected", [
    ("2 * (3 + 4) ** 2", 98),
    ("7 // 2", 3),
    ("-7 // 2", -4),
    ("7 % 3", 1),
    ("-3 ** 2", -9),
    ("2 ** -1", 0.5),
    ("+5 - -5", 10),
    ("0.1 + 0.2", 0.3),
    ("1_000 * 3", 3000),
    ("  1 + 1  ", 2),
    ("2 ** 64", 2**64),
    ("10 ** 100", 10**100),
    ("max(1, 5, 3) - min(4, 2)", 3),
    ("abs(-7.5)", 7.5),
    ("round(3.14159, 2)", 3.14),
    ("round(1234, -2)", 1200),
    ("round(2.5)", 2),
    ("floor(-2.5) + ceil(2.1)", 0),
    ("log(8, 2)", 3.0),
    ("log10(1000)", 3.0),
    ("log(e)", 1.0),
    ("exp(0)", 1.0),
    ("sin(pi / 2) + cos(0)", 2.0),
    ("tan(pi / 4)", 1.0),
    ("sqrt(16)", 4.0),
])
def test_arithmetic(expression, expected):
    result = calculate(expression)
    assert result == {"ok": True, "expression": expression, "result": expected}
    assert type(result["result"]) is type(expected)


def test_float_results_keep_twelve_significant_digits():
    assert calculate("sqrt(2)")["result"] == float(f"{math.sqrt(2):.12g}") == 1.41421356237
    assert calculate("pi * 1e6")["result"] == 3141592.65359
    assert calculate("1 / 3")["result"] == 0.333333333333
    assert calculate("2 ** -1100")["result"] == 0.0


@pytest.mark.parametrize("expression, error", [
    ("1 / 0", "division_by_zero"),
    ("5 % 0", "division_by_zero"),
    ("5 // 0.0", "division_by_zero"),
    ("0 ** -1", "division_by_zero"),
    ("sqrt(-1)", "math_domain_error"),
    ("log(0)", "math_domain_error"),
    ("log10(-5)", "math_domain_error"),
    ("(-8) ** 0.5", "complex_result"),
    ("exp(1000)", "too_large"),
    ("exp(231)", "too_large"),
    ("10 ** 101", "too_large"),
    ("1e308 * 10", "too_large"),
    ("1e999", "too_large"),
    ("0.001 ** -40", "too_large"),
    ("min()", "invalid_argument"),
    ("sqrt(1, 2)", "invalid_argument"),
    ("round(1.5, 0.5)", "invalid_argument"),
    ("round(1, 16)", "invalid_argument"),
    ("2 +", "syntax_error"),
    ("   ", "syntax_error"),
    ("2 x 3", "syntax_error"),
    ("1 < 2", "unsupported_syntax"),
    ("1 if 1 else 2", "unsupported_syntax"),
    ("1 and 2", "unsupported_syntax"),
    ("not 1", "unsupported_syntax"),
    ("~1", "unsupported_syntax"),
    ("1j", "unsupported_syntax"),
    ("True + 1", "unsupported_syntax"),
    ("sqrt", "unsupported_syntax"),
    ("max(*[1, 2])", "unsupported_syntax"),
    ("round(2.5, ndigits=1)", "unsupported_syntax"),
    ("x + 1", "unknown_name"),
    ("tau", "unknown_name"),
])
def test_refusals_are_tool_failures(expression, error):
    assert_failure(calculate(expression), error)


def test_power_sign_is_explained_and_unknown_names_get_suggestions():
    caret = calculate("2 ^ 3")
    assert_failure(caret, "unsupported_syntax")
    assert "**" in caret["message"]
    typo = calculate("sqr(2)")
    assert_failure(typo, "unknown_name")
    assert "sqrt" in typo["suggestions"] and "'sqr'" in typo["message"]
    assert calculate("lg10(100)")["suggestions"][0] == "log10"
    assert calculate("zzz")["suggestions"] == []


def test_failure_names_the_expression_it_refused():
    assert calculate("1 / 0")["expression"] == "1 / 0"


# ------------------------------------------------------------------------------------------ attacks
ATTACKS = [
    "__import__('os').system('x')",
    "__import__('os')",
    "().__class__.__bases__[0].__subclasses__()",
    "(1).__class__",
    "open('/etc/passwd').read()",
    "eval('1 + 1')",
    "exec('x = 1')",
    "globals()",
    "getattr(1, 'real')",
    "lambda: 0",
    "(lambda: 0)()",
    "[x for x in range(10**9)]",
    "sum(x for x in range(10**9))",
    "{x: x for x in range(9)}",
    "(x := 10)",
    "f'{1}'",
    "b'x'",
    "{}",
    "'a' * 10**9",
    "[0] * 10**9",
    "(0,) * 10**9",
    "10**10**10",
    "9**9**9**9",
    "2**2**2**2**2**2",
    "(10**100) ** (10**100)",
    "10**100 * 10**100 * 10**100",
    "1 << 10**9",
    "round(1, -10**9)",
    "factorial(10**6)",
    "max(range(10**9))",
    "(" * 240 + "1" + ")" * 240,
    "-" * 499 + "1",
    "+".join(["1"] * 250),
    "sqrt(" * 50 + "1" + ")" * 50,
    "9" * MAX_LENGTH,
    "1\x002",
]


@pytest.mark.parametrize("expression", ATTACKS, ids=[a[:40] for a in ATTACKS])
def test_attacks_are_refused_quickly(expression):
    assert len(expression) <= MAX_LENGTH
    started = time.monotonic()
    result = Calculate().validate_and_execute(expression=expression)
    assert time.monotonic() - started < 1.0
    assert is_failure(result) and FAILURE_KEYS <= set(result), result


def test_overlong_input_is_refused_by_the_schema_and_by_the_evaluator():
    long = "1+" * 10**6 + "1"
    started = time.monotonic()
    with pytest.raises(ToolArgumentError) as caught:
        TOOL_SET.registry().execute("calculate", {"expression": long})
    assert [p.field for p in caught.value.problems] == ["expression"]
    assert_failure(Calculate().execute(expression=long), "too_long")  # past the schema, the evaluator refuses too
    with pytest.raises(ExpressionError, match="limit is 500"):
        evaluate("1" * (MAX_LENGTH + 1))
    assert time.monotonic() - started < 1.0


def test_evaluation_never_uses_eval_or_exec(monkeypatch):
    def forbidden(*_args, **_kwargs):
        raise AssertionError("eval/exec must not be called")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)  # (ast.parse compiles to a syntax tree only; it stays)
    assert evaluate("sqrt(2) ** 2 + max(1, 2) * pi") == pytest.approx(2 + 2 * math.pi)
    assert_failure(calculate("__import__('os').system('x')"), "unsupported_syntax")


# ------------------------------------------------------------------------------------------ units
@pytest.mark.parametrize("value, from_unit, to_unit, expected", [
    (100, "km", "mi", 100_000 / 1609.344),
    (5, "feet", "in", 60),
    (1, "nmi", "m", 1852),
    (3, "yd", "cm", 274.32),
    (1, "lb", "g", 453.59237),
    (16, "oz", "lb", 1),
    (14, "lb", "st", 1),
    (2.5, "t", "kg", 2500),
    (1, "gal", "l", 3.785411784),
    (1, "imp_gal", "ml", 4546.09),
    (3, "tsp", "tbsp", 1),
    (2, "cups", "fl_oz", 16),
    (1, "m3", "l", 1000),
    (212, "F", "C", 100),
    (-40, "celsius", "fahrenheit", -40),
    (0, "K", "C", -273.15),
    (37, "°C", "F", 98.6),
    (300, "kelvin", "F", 80.33),
])
def test_unit_conversions(value, from_unit, to_unit, expected):
    result = convert(value, from_unit, to_unit)
    assert result["ok"] and result["result"] == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert result["from_unit"] == lookup_unit(from_unit).symbol and result["to_unit"] == lookup_unit(to_unit).symbol
    back = convert(result["result"], to_unit, from_unit)
    assert back["result"] == pytest.approx(value, rel=1e-8, abs=1e-8)


def test_each_spelling_names_one_unit():
    spellings = [s.lower() for u in UNITS for s in (u.symbol, u.name, *u.aliases)]
    assert len(spellings) == len(set(spellings))
    assert lookup_unit("  Fluid_Ounces ").symbol == "fl_oz"


def test_unit_failures():
    typo = convert(1, "kilometr", "m")
    assert_failure(typo, "unknown_unit")
    assert typo["suggestions"][0] == "km" and typo["unit"] == "kilometr"
    assert_failure(convert(1, "m", "furlong"), "unknown_unit")
    assert convert(1, "m", "furlong")["suggestions"] == []
    mixed = convert(1, "kg", "m")
    assert_failure(mixed, "incompatible_units")
    assert mixed["suggestions"] == ["kg", "g", "mg", "t", "lb", "oz", "st"] and mixed["to_dimension"] == "length"
    assert_failure(convert(-300, "C", "K"), "below_absolute_zero")
    assert_failure(convert(-1, "K", "F"), "below_absolute_zero")


# ------------------------------------------------------------------------------------------ validation
INVALID = [
    ("calculate", {"expression": ""}, "expression"),
    ("calculate", {"expression": "1" * (MAX_LENGTH + 1)}, "expression"),
    ("calculate", {"expression": "1", "mode": "python"}, "mode"),
    ("convert_units", {"value": 1e13, "from_unit": "m", "to_unit": "km"}, "value"),
    ("convert_units", {"value": float("nan"), "from_unit": "m", "to_unit": "km"}, "value"),
    ("convert_units", {"value": 1, "from_unit": "m" * 33, "to_unit": "km"}, "from_unit"),
    ("convert_units", {"value": 1, "from_unit": "m"}, "to_unit"),
]


@pytest.mark.parametrize("name, arguments, field", INVALID, ids=[f"{n}-{f}" for n, _, f in INVALID])
def test_invalid_arguments_raise_naming_the_field(name, arguments, field):
    with pytest.raises(ToolArgumentError) as caught:
        TOOL_SET.registry().execute(name, arguments)
    assert field in [p.field for p in caught.value.problems]
