"""The checks every domain suite (``evals/suites/<name>.jsonl``, format in ``evals/suites/FORMAT.md``) must pass:
its shape and size, tag counts and tag rules, fixed splits (the splits of the cases that existed before the suites
were grown are pinned in ``domain_suite_splits.json``), no repeated texts, conversations, and valid expected
calls. Checks of a suite against one domain's own data (ids that exist, look-alike tools, calls that run) stay
with that domain's tests in ``tests/tool_sets/``."""

import functools
import itertools
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evals.suite import Case, ExpectedCall, Suite, load_suite
from tool_selection import BaseTool, load_tool_set

DOMAINS = ("treasure_hunt", "events", "ecommerce", "finance", "language")
PRIMARY = ("single", "multi", "no_tool")
SPLITS = ("train", "dev", "test")
MIN_CASES = 240
MIN_SPLIT = {"test": 100, "dev": 60}  # train holds the rest
MIN_SHARE = {"no_tool": 0.15, "multi": 0.15}  # of the suite
MIN_SPLIT_SHARE = 0.10  # of each split: the mix holds roughly per split too
MIN_SIMILAR_TOOLS = 12
MIN_MULTI_TURN = 40
TURNS = (2, 6)  # user and assistant turns of a multi_turn conversation
# Request styles and hard kinds every suite has (definitions: evals/suites/language.card.md).
KIND_TAGS = ("terse", "chatty", "typo", "non_native", "conversion", "near_neighbour", "near_miss")
# Tags a split may lack: all six of finance's original "parallel" cases are in train or test.
SPLIT_GAPS = {("finance", "dev"): {"parallel"}}
PINNED_SPLITS = json.loads((Path(__file__).parent / "domain_suite_splits.json").read_text(encoding="utf-8"))


@functools.cache
def suite(name: str) -> Suite:
    return load_suite(name)


def _cases() -> list:
    params = []
    for name in DOMAINS:
        try:
            params += [pytest.param(name, case, id=case.id) for case in suite(name)]
        except Exception:  # reported by test_suite_loads; the other suites still run
            continue
    return params


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
    text = Path(suite(name).source).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def kind_of(case: Case) -> str:
    calls = len(case.expected_calls)
    return "no_tool" if calls == 0 else "single" if calls == 1 else "multi"


def normalised(text: str) -> str:
    """Lowercase, punctuation stripped, whitespace collapsed: texts equal under this are near-duplicates."""
    return " ".join(re.sub(r"[^\w\s]", "", text.lower()).split())


def turns(case: Case) -> list:
    return [m for m in case.messages or [] if m.role != "system"]


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_loads(name):
    assert len(suite(name)) > 0


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_lines_are_what_the_loader_reads(name):
    raw = raw_cases(name)
    assert [c["id"] for c in raw] == [c.id for c in suite(name)]  # the project's loader accepts every line
    for case in raw:
        assert ("request" in case) != ("messages" in case), case["id"]
        for call in case["expected_calls"]:
            assert set(call) == {"tool_name", "arguments"}, case["id"]


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_shape(name):
    cases = suite(name).cases
    assert len(cases) >= MIN_CASES
    assert [c.id for c in cases] == [f"{name}-{i:03d}" for i in range(1, len(cases) + 1)]
    for case in cases:
        assert case.tool_set == name and case.split in SPLITS, case.id
        if case.messages is not None:
            assert case.messages[-1].role == "user", case.id
        assert [t for t in case.tags if t in PRIMARY] == [kind_of(case)], case.id
        assert len(case.tags) == len(set(case.tags)), case.id


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_tags_agree_with_the_calls(name):
    for case in suite(name):
        names = [call.tool_name for call in case.expected_calls]
        if {"similar_tools", "near_neighbour", "conversion"} & set(case.tags):
            assert case.expected_calls, case.id
        if "near_miss" in case.tags:
            assert "no_tool" in case.tags, case.id
        # "parallel": a multi case that calls one tool more than once, and every such case says so
        assert ("parallel" in case.tags) == (len(names) != len(set(names))), case.id


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_split_sizes(name):
    splits = Counter(c.split for c in suite(name))
    assert set(splits) == set(SPLITS), splits
    for split, least in MIN_SPLIT.items():
        assert splits[split] >= least, splits


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_tag_counts(name):
    tags = suite(name).tag_counts()
    for tag, share in MIN_SHARE.items():
        assert tags[tag] >= share * len(suite(name)), (tag, tags[tag])
    assert tags["similar_tools"] >= MIN_SIMILAR_TOOLS
    assert tags["multi_turn"] >= MIN_MULTI_TURN
    assert not [t for t in KIND_TAGS if not tags[t]], tags


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_mix_holds_in_every_split(name):
    for split in SPLITS:
        part = suite(name).split(split)
        tags = part.tag_counts()
        for tag in MIN_SHARE:
            assert tags[tag] >= MIN_SPLIT_SHARE * len(part), (split, tag, tags[tag], len(part))


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_multi_turn_cases_are_conversations(name):
    for case in suite(name):
        if "multi_turn" in case.tags:
            assert case.messages is not None, case.id
            assert TURNS[0] <= len(turns(case)) <= TURNS[1], (case.id, len(turns(case)))
            assert turns(case)[-1].role == "user", case.id


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_has_no_repeated_texts(name):
    """No two cases share a text, within a split or across splits, once case, whitespace and punctuation are
    ignored (a conversation's text is its rendered turns)."""
    seen: dict[str, str] = {}
    for case in suite(name):
        key = normalised(case.prompt)
        assert key not in seen, (case.id, seen.get(key))
        seen[key] = case.id


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_splits_cover_every_tag(name):
    cases = suite(name).cases
    all_tags = {t for c in cases for t in c.tags}
    for split in SPLITS:
        missing = all_tags - {t for c in cases if c.split == split for t in c.tags}
        assert not missing & {*PRIMARY, "similar_tools"}, (split, missing)
        assert missing <= SPLIT_GAPS.get((name, split), set()), (split, missing)


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_keeps_the_splits_of_earlier_cases(name):
    """Growing a suite never moves a case between splits: every id that existed before keeps its split."""
    now = {c.id: c.split for c in suite(name)}
    moved = {i: (split, now.get(i)) for i, split in PINNED_SPLITS[name].items() if now.get(i) != split}
    assert not moved


@pytest.mark.parametrize("name", DOMAINS)
def test_suite_uses_every_tool(name):
    used = {call.tool_name for case in suite(name) for call in case.expected_calls}
    assert used == set(load_tool_set(name).names())


@pytest.mark.parametrize(("name", "case"), _cases())
def test_suite_expected_calls_are_valid(name, case):
    tool_set = load_tool_set(name)
    for call in case.expected_calls:
        assert call.tool_name in tool_set.names(), (case.id, call.tool_name)
        tool = tool_set.get(call.tool_name)
        for arguments in alternatives(call):
            problems = tool.check_arguments(arguments)
            unexpected = [p for p in problems if p.field.split(".")[0] in arguments or p.field == "(arguments)"]
            assert not unexpected, (case.id, arguments, problems)
