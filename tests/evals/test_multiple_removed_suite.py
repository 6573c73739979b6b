"""The ``multiple_removed`` suite: BFCL ``multiple`` with the answer's functions taken out of the list, written by
``evals/suites/build_multiple_removed.py``."""

from collections import Counter

import pytest

from evals.suite import SUITES_DIR, load_suite
from tests.evals.suite_scripts import build_script

pytest.importorskip("bfcl_eval", reason="the suite is built from bfcl-eval's data")

BUILD = build_script("build_multiple_removed")
REMOVED = load_suite("multiple_removed")


def test_the_file_is_what_the_script_writes():
    assert (SUITES_DIR / "multiple_removed.jsonl").read_text(encoding="utf-8") == BUILD.render(BUILD.build()), \
        "out of date: run python evals/suites/build_multiple_removed.py"


def test_each_case_lists_its_sources_other_functions_and_expects_no_call():
    sources = {case.id: case for case in load_suite("bfcl:multiple")}
    assert len(REMOVED) == len(sources)
    for case in REMOVED:
        source = sources[case.id.replace("multiple_removed_", "multiple_")]
        called = {call.tool_name for call in source.expected_calls}
        assert [t["name"] for t in case.tools] == [t["name"] for t in source.tools if t["name"] not in called]
        assert case.expected_calls == [] and case.split == source.split and case.request == source.messages[-1].content
    assert Counter(len(case.tools) for case in REMOVED) == {1: 79, 2: 85, 3: 36}
