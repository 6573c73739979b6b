"""BFCL's own AST checker, called as BFCL's evaluation runner calls it, for scoring and for checking our scorer.

``bfcl-eval``'s ``ast_checker`` (``bfcl_eval/eval_checker/ast_eval/ast_checker.py``) takes a case's function docs
(BFCL's, before the language hint its generation step adds), the answer's calls as ``[{name: arguments}]``, the
possible answer, the language (``Language.PYTHON``, ``JAVA`` or ``JAVASCRIPT``: its runner picks it from the
category name, ``eval_runner.ast_file_runner``) and the category (``parallel`` or ``multiple`` in its name picks
that checker, any other the simple one). In Java and JavaScript every argument is a string holding a source literal
(``"50L"``, ``"new ArrayList<>(Arrays.asList(...))"``, ``"[1, 2]"``), which BFCL's type converters read; no other
scorer does, which is why ``evals.metrics.score_case`` hands such cases to it (``Case.bfcl_checker``).
"""

from __future__ import annotations

import json
import sys
import threading
import types
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import Any

__all__ = ["CHECKER_MODEL", "LANGUAGES", "check", "error_text", "language_of"]

# The model name handed to BFCL's checker: function names are compared as written (a model that cannot write
# dots would have them turned into underscores); our answers keep BFCL's dotted names.
CHECKER_MODEL = "toolsel-names-as-written"
LANGUAGES = ("python", "java", "javascript")  # the values of bfcl_eval.constants.enums.Language
_IMPORT_LOCK = threading.Lock()  # a run scores cases on several threads; the stand-in below is swapped in once


def language_of(category: str) -> str:
    """The language BFCL's runner checks a category's answers in: ``javascript`` if the name says so, else ``java``
    if it says that, else ``python`` (``bfcl_eval.utils.is_js`` and ``is_java``)."""
    return "javascript" if "javascript" in category else "java" if "java" in category else "python"


@cache
def _ast_checker() -> Callable[..., dict[str, Any]]:
    """BFCL's ``ast_checker``. Its module imports ``bfcl_eval.constants.model_config`` only to ask whether a model
    writes dots in function names; that module imports every provider's SDK (``bfcl-eval`` is installed without
    them) and creates folders beside the package, so while the checker is imported a stand-in takes its place
    that answers "as written" for ``CHECKER_MODEL``."""
    name = "bfcl_eval.constants.model_config"
    config = types.SimpleNamespace(underscore_to_dot=False)
    real = sys.modules.get(name)
    if real is not None:
        real.MODEL_CONFIG_MAPPING.setdefault(CHECKER_MODEL, config)
    else:
        stand_in = types.ModuleType(name)
        stand_in.MODEL_CONFIG_MAPPING = {CHECKER_MODEL: config}
        sys.modules[name] = stand_in
    try:
        from bfcl_eval.constants.enums import Language
        from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
    except ModuleNotFoundError as error:
        from evals.suite import SuiteError

        raise SuiteError(f"Scoring this case needs BFCL's checker, from the package 'bfcl-eval' ({error}). Install "
                         "it with: pip install --no-deps bfcl-eval==2026.3.23") from None
    finally:
        if real is None:
            del sys.modules[name]
    return lambda functions, output, truth, language, category: ast_checker(
        functions, output, truth, Language(language), category, CHECKER_MODEL)


def _checker() -> Callable[..., dict[str, Any]]:
    with _IMPORT_LOCK:
        return _ast_checker()


def check(functions: list[dict[str, Any]], calls: Iterable[Mapping[str, Any]], truth: list[dict[str, Any]], *,
          language: str, category: str) -> tuple[bool, str]:
    """(valid, error) of BFCL's ``ast_checker`` on ``calls`` (``{"tool_name", "arguments"}`` each). BFCL's runner
    lets an exception of the checker stop the whole evaluation; here an answer it cannot check (a converter that
    raises on an odd literal, a malformed call) is simply wrong, with the exception as its error."""
    if language not in LANGUAGES:
        raise ValueError(f"BFCL's checker has no language {language!r}; it knows {', '.join(LANGUAGES)}")
    checker = _checker()
    try:
        output = [{call["tool_name"]: call["arguments"]} for call in calls]
        result = checker(functions, output, truth, language, category)
    except Exception as error:  # any failure of BFCL's code on an answer is that answer's failure
        return False, f"checker_error:{type(error).__name__}: {error}"[:1000]
    return (True, "") if result["valid"] else (False, error_text(result))


def error_text(result: dict[str, Any]) -> str:
    """BFCL's error type and messages, as one line."""
    errors = result.get("error") or []
    detail = "; ".join(e if isinstance(e, str) else json.dumps(e, default=str) for e in errors)
    return f"{result.get('error_type', '')}: {detail}"
