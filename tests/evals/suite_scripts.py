"""The suites' build scripts (``evals/suites/build_*.py``), loaded as modules: they are scripts, not a package."""

import importlib.util

from evals.suite import SUITES_DIR


def build_script(name: str):
    """``evals/suites/<name>.py`` as a module."""
    spec = importlib.util.spec_from_file_location(name, SUITES_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
