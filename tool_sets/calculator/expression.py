"""Safe arithmetic: an expression is parsed with ``ast`` and evaluated by walking a whitelist of node types.

Nothing is ever handed to ``eval`` or ``exec``. Before anything is computed the expression's length, node
count, nesting depth and node types are checked; while computing, every intermediate value is bounded in
magnitude, and a power is refused from its operands' magnitudes before it is computed, so ``10**10**10`` or
``round(1, -10**9)`` cost nothing.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tool_selection.errors import close_matches

__all__ = ["CONSTANTS", "FUNCTIONS", "MAX_DEPTH", "MAX_LENGTH", "MAX_MAGNITUDE", "MAX_NODES", "ExpressionError",
           "Function", "Number", "evaluate"]

MAX_LENGTH = 500
MAX_NODES = 200
MAX_DEPTH = 40
MAX_MAGNITUDE = 1e100
MAX_ROUND_DIGITS = 15

Number = int | float


class ExpressionError(ValueError):
    """An expression that cannot be evaluated: ``code`` says why, ``suggestions`` lists valid alternatives."""

    def __init__(self, code: str, message: str, suggestions: list[str] | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.suggestions = suggestions or []


@dataclass(frozen=True)
class Function:
    """A callable the expressions may use, with how many arguments it takes."""

    call: Callable[..., Number]
    min_args: int
    max_args: int | None  # None: any number


def _round(value: Number, digits: Number = 0) -> Number:
    if not isinstance(digits, int):
        raise ExpressionError("invalid_argument", "round's second argument (digits) must be a whole number.")
    if abs(digits) > MAX_ROUND_DIGITS:
        raise ExpressionError("invalid_argument",
                              f"round's digits must be between -{MAX_ROUND_DIGITS} and {MAX_ROUND_DIGITS}.")
    return round(value) if digits == 0 else round(value, digits)


CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}
FUNCTIONS: dict[str, Function] = {
    "sqrt": Function(math.sqrt, 1, 1),
    "abs": Function(abs, 1, 1),
    "round": Function(_round, 1, 2),
    "min": Function(lambda *values: min(values), 1, None),
    "max": Function(lambda *values: max(values), 1, None),
    "log": Function(math.log, 1, 2),
    "log10": Function(math.log10, 1, 1),
    "exp": Function(math.exp, 1, 1),
    "sin": Function(math.sin, 1, 1),
    "cos": Function(math.cos, 1, 1),
    "tan": Function(math.tan, 1, 1),
    "floor": Function(math.floor, 1, 1),
    "ceil": Function(math.ceil, 1, 1),
}


def _power(base: Number, exponent: Number) -> Number:
    shown = f"({base}) ** {exponent}" if base < 0 else f"{base} ** {exponent}"
    if base != 0 and exponent * math.log10(abs(base)) > math.log10(MAX_MAGNITUDE):
        raise ExpressionError("too_large", f"{shown} would exceed the limit of {MAX_MAGNITUDE:g} in magnitude.")
    result = base**exponent
    if isinstance(result, complex):
        raise ExpressionError("complex_result", f"{shown} is not a real number (a negative base with a "
                                                "fractional exponent).")
    return result


_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: _power,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_ALLOWED_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Call, ast.Name, ast.Load, ast.Constant,
                  *_BINARY, *_UNARY)
_DESCRIBED = {
    ast.Attribute: "attribute access ('.')", ast.Subscript: "indexing ('[...]')", ast.Lambda: "lambda",
    ast.ListComp: "a comprehension", ast.SetComp: "a comprehension", ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a comprehension", ast.List: "a list", ast.Tuple: "a tuple", ast.Set: "a set",
    ast.Dict: "a dict", ast.Compare: "a comparison", ast.BoolOp: "'and'/'or'", ast.IfExp: "'if ... else'",
    ast.NamedExpr: "':='", ast.Starred: "'*' unpacking", ast.keyword: "keyword arguments",
    ast.JoinedStr: "an f-string", ast.Not: "'not'", ast.Invert: "'~'", ast.BitXor: "'^' (use ** for powers)",
    ast.BitAnd: "'&'", ast.BitOr: "'|'", ast.LShift: "'<<'", ast.RShift: "'>>'", ast.MatMult: "'@'",
    ast.Await: "'await'", ast.Yield: "'yield'",
}
_HELP = ("Use numbers, + - * / // % **, parentheses, the constants pi and e, and the functions "
         f"{', '.join(FUNCTIONS)}.")


def _depth(tree: ast.AST) -> int:
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _parse(expression: str) -> ast.Expression:
    if len(expression) > MAX_LENGTH:
        raise ExpressionError("too_long", f"The expression has {len(expression)} characters; the limit is "
                                          f"{MAX_LENGTH}.")
    if not expression.strip():
        raise ExpressionError("syntax_error", "The expression is empty. " + _HELP)
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as error:
        raise ExpressionError("syntax_error", f"Not a valid expression: {error.msg}. {_HELP}") from None
    except (ValueError, RecursionError, MemoryError):  # null bytes; input the parser cannot nest
        raise ExpressionError("syntax_error", f"Not a valid expression. {_HELP}") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES or _depth(tree) > MAX_DEPTH:
        raise ExpressionError("too_complex", f"The expression is too complex (at most {MAX_NODES} syntax nodes "
                                             f"nested at most {MAX_DEPTH} deep); split it into smaller steps.")
    for node in nodes:
        if not isinstance(node, _ALLOWED_NODES):
            what = _DESCRIBED.get(type(node), type(node).__name__)
            raise ExpressionError("unsupported_syntax", f"{what} is not allowed. {_HELP}")
    return tree


def _checked(value: Any) -> Number:
    if isinstance(value, float) and not math.isfinite(value):
        raise ExpressionError("too_large", f"A value is not a finite number (limit {MAX_MAGNITUDE:g}).")
    if abs(value) > MAX_MAGNITUDE:
        raise ExpressionError("too_large", f"A value exceeds the limit of {MAX_MAGNITUDE:g} in magnitude.")
    return value


def _unknown_name(name: str) -> ExpressionError:
    return ExpressionError("unknown_name", f"Unknown name {name!r}. {_HELP}",
                           close_matches(name, [*CONSTANTS, *FUNCTIONS]))


def _call(node: ast.Call) -> Number:
    if not isinstance(node.func, ast.Name):
        raise ExpressionError("unsupported_syntax", f"Only the listed functions can be called, by name. {_HELP}")
    name = node.func.id
    function = FUNCTIONS.get(name)
    if function is None:
        raise _unknown_name(name)
    count = len(node.args)
    if count < function.min_args or (function.max_args is not None and count > function.max_args):
        expected = (f"{function.min_args}" if function.min_args == function.max_args
                    else f"{function.min_args} or more" if function.max_args is None
                    else f"{function.min_args} to {function.max_args}")
        raise ExpressionError("invalid_argument", f"{name}() takes {expected} argument(s), got {count}.")
    return function.call(*(_value(arg) for arg in node.args))


def _value(node: ast.AST) -> Number:
    if isinstance(node, ast.Constant):
        if type(node.value) not in (int, float):
            kind = "imaginary numbers" if isinstance(node.value, complex) else f"{type(node.value).__name__} values"
            raise ExpressionError("unsupported_syntax", f"{kind} are not allowed. {_HELP}")
        return _checked(node.value)
    if isinstance(node, ast.Name):
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        if node.id in FUNCTIONS:
            raise ExpressionError("unsupported_syntax", f"{node.id} is a function; call it, e.g. {node.id}(2).")
        raise _unknown_name(node.id)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_value(node.operand))
    if isinstance(node, ast.BinOp):
        return _checked(_BINARY[type(node.op)](_value(node.left), _value(node.right)))
    if isinstance(node, ast.Call):
        return _checked(_call(node))
    raise ExpressionError("unsupported_syntax", f"{type(node).__name__} is not allowed. {_HELP}")


def evaluate(expression: str) -> Number:
    """The value of an arithmetic ``expression``; raises ``ExpressionError`` for anything it refuses."""
    tree = _parse(expression)
    try:
        return _value(tree.body)
    except ExpressionError:
        raise
    except ZeroDivisionError:
        raise ExpressionError("division_by_zero", "Division by zero (or zero raised to a negative power).") from None
    except OverflowError:
        raise ExpressionError("too_large", f"A value exceeds the limit of {MAX_MAGNITUDE:g} in magnitude.") from None
    except ValueError as error:  # math domain errors: sqrt(-1), log(0)
        raise ExpressionError("math_domain_error", f"Outside the function's domain ({error}), e.g. sqrt of a "
                                                   "negative number or log of zero.") from None
