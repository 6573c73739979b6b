"""The ``mixed`` tool set (every domain's tools in one registry) and its suite ``evals/suites/mixed.jsonl``, which
``evals/suites/build_mixed.py`` generates from the domain suites (sampling: ``evals/suites/mixed.card.md``)."""

import re
from collections import Counter

import pytest

from evals.suite import SUITES_DIR, load_suite
from tests.evals.suite_scripts import build_script
from tests.evals.test_domain_suites import DOMAINS, alternatives
from tool_selection import load_tool_set
from tool_sets.mixed import DOMAIN_SETS, TOOL_SET

SPLITS = ("test", "dev", "train")
MIN_SPLIT = {"test": 100, "dev": 60}
ID = re.compile(rf"^mixed-({'|'.join(DOMAINS)})-(\d{{3}})$")


BUILD = build_script("build_mixed")
MIXED = load_suite("mixed")


def source_id(case_id: str) -> tuple[str, str]:
    domain, number = ID.fullmatch(case_id).groups()
    return domain, f"{domain}-{number}"


# ------------------------------------------------------------------------------------------ the tool set
def test_mixed_tool_set_holds_every_domain_tool_once():
    assert [s.name for s in DOMAIN_SETS] == list(DOMAINS)
    names = [name for s in DOMAIN_SETS for name in s.names()]
    collisions = sorted(n for n, count in Counter(names).items() if count > 1)
    assert not collisions  # ToolSet.merged would refuse two different tools with one name anyway
    assert TOOL_SET.name == "mixed"
    assert TOOL_SET.names() == names
    assert set(TOOL_SET.tools) == {t for s in DOMAIN_SETS for t in s.tools}  # the same classes, not copies
    assert len(TOOL_SET.registry()) == len(names)


def test_mixed_is_registered_by_name():
    """``tool_set: "mixed"`` in a suite resolves through ``load_tool_set`` (its entry point)."""
    assert load_tool_set("mixed") is TOOL_SET


# ------------------------------------------------------------------------------------------ the suite
def test_mixed_files_are_what_the_script_writes():
    cases, _ = BUILD.build()
    stale = "out of date: run python evals/suites/build_mixed.py"
    assert (SUITES_DIR / "mixed.jsonl").read_text(encoding="utf-8") == BUILD.render(cases), stale
    card = (SUITES_DIR / "mixed.card.md").read_text(encoding="utf-8")
    assert BUILD.card_with_counts(card, cases) == card, stale  # the card's counts block


def test_mixed_build_is_deterministic():
    assert BUILD.render(BUILD.build()[0]) == BUILD.render(BUILD.build()[0])


@pytest.mark.parametrize(("available", "quota"), [({"single": 60, "multi": 15, "no_tool": 15}, 24),
                                                  ({"single": 30, "multi": 1, "no_tool": 2}, 14),
                                                  ({"single": 5, "no_tool": 3}, 16)])
def test_allocation_is_proportional_with_every_kind(available, quota):
    taken = BUILD.allocate(available, quota)
    assert sum(taken.values()) == min(quota, sum(available.values()))
    assert all(1 <= taken[k] <= n for k, n in available.items())
    total = sum(available.values())
    assert all(abs(taken[k] - quota * n / total) <= 1 for k, n in available.items() if total > quota)


def test_mixed_suite_shape_and_splits():
    splits = Counter(c.split for c in MIXED)
    assert set(splits) == set(SPLITS)
    for split, least in MIN_SPLIT.items():
        assert splits[split] >= least, splits
    per_split = {s: Counter(source_id(c.id)[0] for c in MIXED if c.split == s) for s in SPLITS}
    for split, domains in per_split.items():
        assert set(domains) == set(DOMAINS), (split, domains)
    for case in MIXED:
        domain, _ = source_id(case.id)
        assert case.tool_set == "mixed", case.id
        assert [t for t in case.tags if t in DOMAINS] == [domain], case.id
    assert not [c.id for c in MIXED if source_id(c.id)[1] in BUILD.EXCLUDED]


def test_mixed_cases_are_their_source_cases():
    sources = {name: {c.id: c for c in load_suite(name)} for name in DOMAINS}
    for case in MIXED:
        domain, original_id = source_id(case.id)
        original = sources[domain][original_id]
        assert case.split == original.split, case.id
        assert (case.request, case.messages) == (original.request, original.messages), case.id
        assert case.expected_calls == original.expected_calls, case.id
        assert case.strict_arguments == original.strict_arguments, case.id
        assert case.tags == [*original.tags, domain], case.id


def test_mixed_no_tool_cases_are_not_doable_with_another_domain():
    """The screen in build_mixed.py: no sampled no-tool case matches another domain's patterns."""
    for case in MIXED:
        if not case.expected_calls:
            domain, _ = source_id(case.id)
            raw = {"expected_calls": [], **({"request": case.request} if case.request is not None else
                                            {"messages": [m.model_dump() for m in case.messages]})}
            assert BUILD.other_domain(domain, raw) is None, case.id


@pytest.mark.parametrize("case", MIXED.cases, ids=lambda c: c.id)
def test_mixed_expected_calls_resolve_and_are_valid(case):
    for call in case.expected_calls:
        assert call.tool_name in TOOL_SET.names(), (case.id, call.tool_name)
        tool = TOOL_SET.get(call.tool_name)
        for arguments in alternatives(call):
            problems = tool.check_arguments(arguments)
            unexpected = [p for p in problems if p.field.split(".")[0] in arguments or p.field == "(arguments)"]
            assert not unexpected, (case.id, arguments, problems)
