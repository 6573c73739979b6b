"""Building the ``toolsel`` parser (``--help``, any command's help) loads none of the heavy libraries: each is
imported by the command that runs. An import test, not a timed one (``toolsel --help`` measured: docs/guide/reports.md)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("dspy", "pandas", "mlflow", "mcp", "scipy", "litellm", "llama_cpp", "matplotlib")


def _loaded_after(code: str) -> list[str]:
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_building_the_parser_imports_no_heavy_library():
    assert _loaded_after("from tool_selection.cli import build_parser\nbuild_parser()") == []


def test_a_commands_help_imports_no_heavy_library():
    code = ("import contextlib, io\nfrom tool_selection.cli import main\n"
            "for argv in (['--help'], ['eval', '--help'], ['eval', 'compare', '--help'], ['report', '--help'], "
            "['view', '--help'], ['models', 'pull', '--help'], ['bench', 'stuck', '--help'], ['optimize', '--help'], ['sweep', '--help']):\n"
            "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "        main(argv)")
    assert _loaded_after(code) == []


def test_import_tool_selection_loads_no_heavy_library():
    assert _loaded_after("import tool_selection, evals, tool_selection.lm, tool_selection.mcp, "
                         "tool_selection.strategies") == []


def test_the_live_strategies_of_bench_stuck_are_the_collaboration_strategies():
    from evals.bench_cli import LIVE_STRATEGIES
    from tool_selection.collaboration import COLLABORATION_STRATEGIES

    assert LIVE_STRATEGIES == COLLABORATION_STRATEGIES


def test_checking_a_commands_arguments_loads_no_heavy_library():
    """A misspelt strategy, a missing suite and a bad tracking URI are answered before DSPy or MLflow load."""
    code = ("from tool_selection.spec import SelectorSpec\nfrom tool_selection.tracking import check_scheme\n"
            "from evals.cli import check_before_loading\n"
            "for attempt in (lambda: SelectorSpec.build(strategy='nativ'), lambda: check_scheme('bogus://x'),\n"
            "                lambda: check_before_loading('tresure_hunt')):\n"
            "    try:\n        attempt()\n    except Exception as error:\n        assert 'did you mean' in str(error) "
            "or 'bogus' in str(error), error\n    else:\n        raise AssertionError('accepted')\n"
            "SelectorSpec.build(strategy='gate+native-strict-cover')\ncheck_before_loading('finance')")
    assert _loaded_after(code) == []


def test_a_report_on_a_missing_folder_is_answered_before_the_tables_libraries_load(tmp_path):
    code = ("import contextlib, io\nfrom tool_selection.cli import main\n"
            "with contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):\n"
            f"    main(['report', {str(tmp_path / 'nope')!r}])")
    assert _loaded_after(code) == []


def test_the_declared_strategy_names_are_the_built_in_strategies():
    from tool_selection.strategies.registry import BUILT_IN_STRATEGIES, STRATEGIES

    built_in = [name for name in STRATEGIES.names()
                if STRATEGIES.get(name).__module__.startswith("tool_selection.strategies.")]
    assert sorted(built_in) == sorted(BUILT_IN_STRATEGIES)  # registration order follows import order


def test_the_tracking_schemes_are_mlflows_own():
    from mlflow.tracking._tracking_service.utils import _tracking_store_registry

    from tool_selection.tracking import MLFLOW_SCHEMES

    assert sorted(_tracking_store_registry._registry) == sorted(MLFLOW_SCHEMES)
