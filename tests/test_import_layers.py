"""The import graph of ``tool_selection`` and ``evals``: no circle, and every arrow pointing down the layers.

Every import statement counts, wherever it is: at module level, inside a function (an import tucked into a function
to dodge a circle is a circle all the same) and under ``if TYPE_CHECKING:`` (never run, so it cannot fail at import
time, but it says that one module is written against the other; counting it forces nothing odd: a type that two
layers share lives in the lower one). An import counts as the most specific module it names (``from evals.reports
import html`` is ``evals.reports.html``); a package's ``__init__`` only when it is imported itself. Names looked up
by string at run time (a registry's built-in modules, a package's lazy names) are not imports: they are how plugins
are found, and the registry that holds them is below the modules that register.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tool_selection", "evals")

LAYERS = ("core", "harness", "reports", "scripts", "commands")
"""From the bottom: a module imports modules of its own layer and of the layers before it, never after."""

LAYER_OF_PREFIX = {  # a module's layer: that of the longest prefix it starts with
    "tool_selection": "core",          # the library: never imports evals
    "evals": "harness",                # run, score, store: suites, evaluation, runner, metrics, runs, tracking,
                                       # BFCL loading and checking, sweeps, optimization
    "evals.reports": "reports",        # tables, figures, pages
    "evals.benchmarks": "scripts",     # benchmark scripts (python -m evals.benchmarks.NAME)
    "evals.stuck_bench": "scripts",    # the stuck-detection benchmark, with its own tables and plots
    "evals.suites": "scripts",         # the script that builds the mixed suite
    "evals.cli": "commands",           # toolsel's eval, optimize, suites, report, sweep and bench commands
    "evals.cli_experiment": "commands",
    "evals.loop_cli": "commands",
    "evals.suites_cli": "commands",
    "evals.eval_report": "commands",
    "evals.sweep_cli": "commands",
    "evals.bench_cli": "commands",
    "evals.reports.cli": "commands",
    "evals.__init__": "commands",      # the facade: see below
}
# evals/__init__.py maps public names lazily to the modules that define them (``from evals import evaluate,
# run_stuck_bench``), so it reaches the harness and a script, and stands on top with the commands: a module of evals
# imports the module that defines a name, never the facade (which would be an arrow upwards).

ALLOWED = {
    # The one accepted circle: a tool set's fluent methods build its wrappers (``ToolSet.filtered()`` returns a
    # ``FilteredToolSet``, which subclasses ``ToolSet``), as pydantic-ai's ``AbstractToolset.filtered()`` does.
    ("tool_selection.toolset.base", "tool_selection.toolset.described"),
    ("tool_selection.toolset.base", "tool_selection.toolset.filtered"),
    ("tool_selection.toolset.base", "tool_selection.toolset.merged"),
    ("tool_selection.toolset.base", "tool_selection.toolset.prefixed"),
    ("tool_selection.toolset.base", "tool_selection.toolset.renamed"),
}


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the packages by dotted name, with its file and whether it is a package's ``__init__``."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


MODULES = _modules()


def _named(name: str) -> str | None:
    """The module of ours that ``name`` is or lies in (None for another library's)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:  # relative: from the module's package, one level up per extra dot
            package = module.split(".") if is_package else module.split(".")[:-1]
            base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
    for name in names:
        target = _named(name)
        if target is not None and target != module:
            yield target


def _import_graph() -> dict[str, dict[str, int]]:
    """module -> {module it imports: the line of its first import}."""
    graph: dict[str, dict[str, int]] = {}
    for module, (path, is_package) in MODULES.items():
        edges = graph.setdefault(module, {})
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _targets(module, is_package, node):
                    edges.setdefault(target, node.lineno)
    return graph


GRAPH = _import_graph()


def layer_of(module: str) -> str:
    key = f"{module}.__init__" if MODULES[module][1] else module
    prefixes = [p for p in LAYER_OF_PREFIX if key == p or key.startswith(f"{p}.")]
    return LAYER_OF_PREFIX[max(prefixes, key=len)]


def _circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(graph[target])))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return sorted(circles)


def _describe(circle: list[str], graph: dict[str, dict[str, int]]) -> str:
    members = set(circle)
    lines = [f"  {len(circle)} modules: {', '.join(circle)}"]
    for module in circle:
        arrows = ", ".join(f"{t} (line {line})" for t, line in sorted(graph[module].items()) if t in members)
        lines.append(f"      {module} -> {arrows}")
    return "\n".join(lines)


def test_the_import_graph_has_no_circle():
    graph = {m: {t: line for t, line in edges.items() if (m, t) not in ALLOWED} for m, edges in GRAPH.items()}
    circles = _circles(graph)
    assert not circles, (f"{len(circles)} circle(s) in the import graph (an import inside a function or under "
                         "TYPE_CHECKING counts); break each by moving what both need below both:\n"
                         + "\n".join(_describe(c, graph) for c in circles))


def test_every_import_points_down_the_layers():
    rank = {layer: number for number, layer in enumerate(LAYERS)}
    upward = [f"  {module} ({layer_of(module)}) imports {target} ({layer_of(target)}), line {line}"
              for module, edges in sorted(GRAPH.items()) for target, line in sorted(edges.items())
              if rank[layer_of(target)] > rank[layer_of(module)]]
    assert not upward, (f"{len(upward)} import(s) against the layers ({' < '.join(LAYERS)}); move what is shared "
                        "to the lower layer:\n" + "\n".join(upward))


def test_the_allowed_imports_are_real_imports():
    """An allowed arrow that no module draws any more is taken off the list."""
    assert [edge for edge in sorted(ALLOWED) if edge[1] not in GRAPH.get(edge[0], {})] == []


def test_the_graph_reads_every_kind_of_import():
    """Function-level, TYPE_CHECKING and relative imports are all found (checked on modules that have them)."""
    assert "evals.reports.html" in GRAPH["evals.reports.cli"]  # inside a function
    assert "evals.evaluation" in GRAPH["evals"]  # under TYPE_CHECKING
    assert layer_of("evals") == "commands" and layer_of("evals.reports") == "reports"
    assert layer_of("evals.reports.cli") == "commands" and layer_of("evals.suite") == "harness"
