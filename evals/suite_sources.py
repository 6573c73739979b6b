"""The built-in suite sources, each registered once in ``evals.suite.SUITE_SOURCES``: what a ``--suite`` names.

    finance, path/to/suite.jsonl        file: a built-in suite's name or a JSON Lines file (evals.suite_file)
    bfcl:multiple[+irrelevance]         bfcl: BFCL's categories, '+' joins several (evals.bfcl)
    hf:FOLDER, hf:NAME                  hf: a Hugging Face dataset (evals.hf_suite)
    multistep, path/to/tasks.jsonl      loop: a loop suite's tasks (evals.loop_eval), for 'toolsel eval loop'
    bfcl:multi_turn_base[+...]          bfcl-multi-turn: BFCL's multi-turn tasks (evals.bfcl_multi_turn), likewise

The loop's loaders import their modules when they run, so that finding a reference's source loads nothing heavy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals.bfcl import BFCL_CATEGORIES, load_bfcl
from evals.hf_suite import HF_PREFIX, load_hf_suite
from evals.suite import LOOP_SUITES, SUITE_SOURCES, Suite, SuiteSource
from evals.suite_file import built_in_suites, file_reference, load_suite_file

__all__ = ["BFCL_PREFIX", "MULTI_TURN_PREFIX"]

BFCL_PREFIX = "bfcl:"
MULTI_TURN_PREFIX = "bfcl:multi_turn"


def _categories(reference: str) -> list[str]:
    return reference.removeprefix(BFCL_PREFIX).split("+")


def _load_bfcl(reference: str) -> Suite:
    return load_bfcl(_categories(reference))


def _bfcl_reference(reference: str) -> str:
    """BFCL's categories, a JSON file among them given by its absolute path."""
    return BFCL_PREFIX + "+".join(str(Path(p).resolve()) if Path(p).suffix == ".json" and Path(p).exists() else p
                                  for p in _categories(reference))


def _bfcl_names() -> list[str]:
    return [f"{BFCL_PREFIX}{c}" for c in BFCL_CATEGORIES]


def _hf_reference(reference: str) -> str:
    """A dataset folder by its absolute path; a name in the Hugging Face cache as it is."""
    folder = Path(reference.removeprefix(HF_PREFIX))
    return f"{HF_PREFIX}{folder.resolve()}" if folder.exists() else reference


def _is_loop_suite(reference: str) -> bool:
    return (LOOP_SUITES / f"{reference}.jsonl").is_file()


def _load_loop(reference: str) -> list[Any]:
    from evals.loop_eval import load_loop_suite

    return load_loop_suite(reference)


def _load_multi_turn(reference: str) -> list[Any]:
    from evals.bfcl_multi_turn import load_multi_turn

    return load_multi_turn(_categories(reference))


SUITE_SOURCES.register(SuiteSource("file", load_suite_file, fallback=True, reference=file_reference,
                                   names=built_in_suites, light=True))
SUITE_SOURCES.register(SuiteSource("bfcl", _load_bfcl, prefix=BFCL_PREFIX, reference=_bfcl_reference,
                                   names=_bfcl_names))
SUITE_SOURCES.register(SuiteSource("hf", load_hf_suite, prefix=HF_PREFIX, reference=_hf_reference))
SUITE_SOURCES.register(SuiteSource("loop", _load_loop, claims=_is_loop_suite, form="tasks", fallback=True))
SUITE_SOURCES.register(SuiteSource("bfcl-multi-turn", _load_multi_turn, prefix=MULTI_TURN_PREFIX, form="tasks"))
