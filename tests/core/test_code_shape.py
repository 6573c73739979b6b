"""The code keeps a shape a reader can hold: no function of the core (``tool_selection/``) or the harness
(``evals/``, its benchmark scripts aside) runs over 60 lines or takes more than 8 parameters (``self`` and ``cls``
aside; ``*args`` and ``**kwargs`` count). Options that belong together travel as one value instead (``SelectorSpec``,
``RunConfig``, ``LoopLimits``, ``LoopEscalation``, ``EscalationPolicy``, ``LocalEngineOptions``, ...)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tool_selection", "evals")
MAX_LINES = 60
MAX_PARAMETERS = 8


def functions(root: Path = ROOT):
    """``(path, node)`` for every function and method of the checked packages, benchmark scripts left out."""
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            if "benchmarks" in relative.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(relative))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield relative, node


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = node.args
    named = [a for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.arg not in ("self", "cls")]
    return len(named) + (args.vararg is not None) + (args.kwarg is not None)


def lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    return node.end_lineno - node.lineno + 1


def test_no_function_runs_over_60_lines_or_takes_over_8_parameters():
    problems = [f"{path}:{node.lineno} {node.name}: {lines(node)} lines, {parameters(node)} parameters"
                for path, node in functions() if lines(node) > MAX_LINES or parameters(node) > MAX_PARAMETERS]
    assert not problems, (f"Over {MAX_LINES} lines or {MAX_PARAMETERS} parameters (split the function, or group "
                          "related options into one value):\n" + "\n".join(problems))


def test_the_count_leaves_out_self_and_counts_star_arguments():
    method = ast.parse("def f(self, a, /, b, *args, c, **kwargs):\n    pass\n").body[0]
    assert (parameters(method), lines(method)) == (5, 2)
