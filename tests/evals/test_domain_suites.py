"""The checks every domain suite (``evals/suites/<name>.jsonl``, format in ``evals/suites/FORMAT.md``) must pass:
its shape, tag counts, fixed splits and valid expected calls. Checks of a suite against one domain's own data
(ids that exist, look-alike tools, calls that run) stay with that domain's tests in ``tests/tool_sets/``."""

import itertools
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evals.suite import Case, ExpectedCall, load_suite
from tool_selection import BaseTool, load_tool_set

DOMAINS = ("treasure_hunt", "events", "ecommerce", "finance", "language")
PRIMARY = ("single", "multi", "no_tool")
SHARES = {"train": 0.4, "dev": 0.2, "test": 0.4}
# Tags a split may lack: all six of finance's "parallel" cases are in train or test.
SPLIT_GAPS = {("finance", "dev"): {"parallel"}}

SUITES = {name: load_suite(name) for name in DOMAINS}
CASES = [pytest.param(name, case, id=case.id) for name, suite in SUITES.items() for case in suite]


def alternatives(call: ExpectedCall) -> list[dict[str, Any]]:
    """Every combination of the call's acceptable argument values (``ExpectedCall.acceptable``); an argument
    whose value is ``""`` ("may be omitted") is left out of that combination."""
    acceptable = call.acceptable()
    return [{name: value for name, value in zip(acceptable, combo) if value != ""}
            for combo in itertools.product(*acceptable.values())]


def expected_arguments(name: str) -> Iterator[tuple[Case, type[BaseTool], dict[str, Any]]]:
    """``(case, tool, arguments)`` for each acceptable combination of each expected call of suite ``name``."""
    tool_set = load_tool_set(name)
    for case in load_suite(name):
        for call in case.expected_calls:
            for arguments in alternatives(call):
                yield case, tool_set.get(call.tool_name), arguments


def raw_cases(name: str) -> list[dict[str, Any]]:
    """The suite's lines as plain JSON objects, as ``datasets.load_dataset("json", ...)`` would read them."""
    text = Path(SUITES[name].source).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def kind_of(case: Case) -> str:
    calls = len(case.expected_calls)
    return "no_tool" if calls == 0 else "single" if calls == 1 else "multi"


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_lines_are_what_the_loader_reads(name):
    raw = raw_cases(name)
    assert [c["id"] for c in raw] == [c.id for c in SUITES[name]]  # the project's loader accepts every line
    for case in raw:
        assert ("request" in case) != ("messages" in case), case["id"]
        for call in case["expected_calls"]:
            assert set(call) == {"tool_name", "arguments"}, case["id"]


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_shape(name):
    cases = SUITES[name].cases
    assert len(cases) >= 60
    assert [c.id for c in cases] == [f"{name}-{i:03d}" for i in range(1, len(cases) + 1)]
    assert len({c.prompt for c in cases}) == len(cases)
    for case in cases:
        assert case.tool_set == name and case.split in SHARES, case.id
        if case.messages is not None:
            assert case.messages[-1].role == "user", case.id
        assert [t for t in case.tags if t in PRIMARY] == [kind_of(case)], case.id
        if "similar_tools" in case.tags:
            assert case.expected_calls, case.id


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_tag_counts(name):
    suite = SUITES[name]
    tags = suite.tag_counts()
    assert tags["no_tool"] >= max(10, 0.15 * len(suite))
    assert tags["multi"] >= max(10, 0.15 * len(suite))
    assert tags["similar_tools"] >= 12


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_splits_are_fixed_proportions_covering_every_tag(name):
    cases = SUITES[name].cases
    splits = Counter(c.split for c in cases)
    assert set(splits) == set(SHARES)
    all_tags = {t for c in cases for t in c.tags}
    for split, share in SHARES.items():
        assert abs(splits[split] / len(cases) - share) < 0.05, splits
        missing = all_tags - {t for c in cases if c.split == split for t in c.tags}
        assert not missing & {*PRIMARY, "similar_tools"}, (split, missing)
        assert missing <= SPLIT_GAPS.get((name, split), set()), (split, missing)


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_uses_every_tool(name):
    used = {call.tool_name for case in SUITES[name] for call in case.expected_calls}
    assert used == set(load_tool_set(name).names())


@pytest.mark.parametrize(("name", "case"), CASES)
def test_suite_expected_calls_are_valid(name, case):
    tool_set = load_tool_set(name)
    for call in case.expected_calls:
        assert call.tool_name in tool_set.names(), (case.id, call.tool_name)
        tool = tool_set.get(call.tool_name)
        for arguments in alternatives(call):
            problems = tool.check_arguments(arguments)
            unexpected = [p for p in problems if p.field.split(".")[0] in arguments or p.field == "(arguments)"]
            assert not unexpected, (case.id, arguments, problems)
