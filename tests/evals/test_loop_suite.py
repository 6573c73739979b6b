"""The ``multistep`` loop suite (``evals/suites/loop/multistep.jsonl``, card ``multistep.card.md``): its size, splits
and tags, unique ids and requests, tools that exist, oracle calls with valid arguments, and oracles that solve their
task while their first call alone does not. No model runs here; every check executes the shipped offline tools."""

import functools
from collections import Counter

import pytest

from evals.loop_eval import LoopTask, load_loop_suite, run_oracle, score_task
from tool_selection.agent import ToolSession
from tool_selection.decision import ToolCall

SPLITS = ("train", "dev", "test")
MIN_TASKS = 48
MIN_SPLIT = {"test": 32, "dev": 8}  # train holds the rest
ORACLE_CALLS = (2, 6)
GAME = "treasure_hunt"
DOMAIN_SETS = ("events", "ecommerce", "finance")
GENERAL_SETS = ("calculator", "datetime", "files", "code", "database", "web_search", "context_search")
KINDS = ("chain", "state", "recovery", "mixed_sets", "stop_when_known")
MIN_KIND = {"recovery": 5, "mixed_sets": 8, "stop_when_known": 3}
MIN_DOMAIN = {GAME: 16}
MIN_DOMAIN_SETS = 10  # tasks over events, ecommerce or finance, at least two of them with 3+ tasks
MIN_GENERAL = 12

TASKS = load_loop_suite("multistep")
IDS = [t.id for t in TASKS]


def by_id(task_id: str) -> LoopTask:
    return next(t for t in TASKS if t.id == task_id)


@functools.cache
def tool_names(task_id: str) -> frozenset[str]:
    return frozenset(by_id(task_id).tools().names())


def first_call_alone(task: LoopTask) -> dict[str, bool]:
    """The task scored after only its oracle's first call, the final answer counting as given (as ``run_oracle``)."""
    session = ToolSession(task.tools())
    record = session.execute(task.oracle[0], "first")
    made = [ToolCall(tool_name=record.tool_name, arguments=record.arguments)] if record.ok else []
    answer = " ".join(task.success.answer["any_of"]) if task.success.answer else None
    return score_task(task, made, session.shared, answer)


# ------------------------------------------------------------------------------------------ the suite as a whole
def test_size_and_splits():
    splits = Counter(t.split for t in TASKS)
    assert len(TASKS) >= MIN_TASKS
    assert set(splits) == set(SPLITS)
    for split, least in MIN_SPLIT.items():
        assert splits[split] >= least, (split, splits)


def test_ids_and_requests_are_unique():
    assert len(set(IDS)) == len(IDS)
    requests = [" ".join(t.request.lower().split()) for t in TASKS]
    assert len(set(requests)) == len(requests)


def test_domain_coverage():
    tagged = Counter(tag for t in TASKS for tag in t.tags)
    for domain, least in MIN_DOMAIN.items():
        assert tagged[domain] >= least, domain
    domain_tasks = [t for t in TASKS if set(t.tool_sets) & set(DOMAIN_SETS)]
    assert len(domain_tasks) >= MIN_DOMAIN_SETS
    assert sum(tagged[name] >= 3 for name in DOMAIN_SETS) >= 2
    general = [t for t in TASKS if set(t.tool_sets) & set(GENERAL_SETS) and GAME not in t.tool_sets
               and not set(t.tool_sets) & set(DOMAIN_SETS)]
    assert len(general) >= MIN_GENERAL
    assert {name for t in general for name in t.tool_sets} == set(GENERAL_SETS)  # every general set is used


def test_kind_coverage():
    tagged = Counter(tag for t in TASKS for tag in t.tags)
    for kind, least in MIN_KIND.items():
        assert tagged[kind] >= least, kind
    assert any(GAME in t.tool_sets and "mixed_sets" in t.tags for t in TASKS)


def test_every_split_has_each_kind_of_task():
    for split in ("test", "dev"):
        tags = {tag for t in TASKS if t.split == split for tag in t.tags}
        assert {GAME, "chain", "state", "mixed_sets"} <= tags, split
        assert tags & set(DOMAIN_SETS) and tags & set(GENERAL_SETS), split
    assert {tag for t in TASKS if t.split == "test" for tag in t.tags} >= {"recovery", "stop_when_known"}


# ------------------------------------------------------------------------------------------ each task
@pytest.mark.parametrize("task_id", IDS)
def test_tags_name_the_tool_sets_and_a_kind(task_id):
    task = by_id(task_id)
    assert set(task.tool_sets) <= set(task.tags), "every tool set is a domain tag"
    assert set(task.tags) <= {GAME, *DOMAIN_SETS, *GENERAL_SETS, *KINDS}, "unknown tag"
    assert set(task.tags) & set(KINDS), "at least one kind"
    assert ("mixed_sets" in task.tags) == (len(task.tool_sets) > 1)
    assert len(set(task.tool_sets)) == len(task.tool_sets)


@pytest.mark.parametrize("task_id", IDS)
def test_tools_exist_and_oracle_arguments_are_valid(task_id):
    task = by_id(task_id)
    names = tool_names(task_id)
    registry = task.tools().registry()
    assert ORACLE_CALLS[0] <= len(task.oracle) <= ORACLE_CALLS[1]
    assert task.max_tool_calls >= len(task.oracle)
    for call in [*task.success.calls, *task.oracle]:
        assert call.tool_name in names, call.tool_name
    for call in task.oracle:
        assert registry.get(call.tool_name).check_arguments(call.arguments) == [], str(call)
    for expected in task.success.calls:  # the arguments a criterion names are the tool's own
        assert set(expected.arguments) <= set(registry.get(expected.tool_name).Arguments.model_fields)


@pytest.mark.parametrize("task_id", IDS)
def test_criteria_are_well_formed(task_id):
    task = by_id(task_id)
    fields = {f for cls in task.tools().tools for f in cls.model_fields}
    for check in task.success.state:
        assert check.path.split(".")[0] in fields, check.path  # a configuration field the tools share
    if task.success.answer:
        assert task.success.answer["any_of"] and all(s.strip() for s in task.success.answer["any_of"])
    if "stop_when_known" in task.tags:
        assert task.success.answer, "a task that ends on an answer checks the answer"


@pytest.mark.parametrize("task_id", IDS)
def test_oracle_solves_the_task(task_id):
    verdict = run_oracle(by_id(task_id))
    assert verdict["success"], verdict


@pytest.mark.parametrize("task_id", IDS)
def test_first_call_alone_does_not(task_id):
    verdict = first_call_alone(by_id(task_id))
    assert not verdict["success"], verdict


@pytest.mark.parametrize("task_id", IDS)
def test_recovery_oracles_recover_from_a_failed_call(task_id):
    """A recovery task's oracle holds a call that fails and is then put right; every other oracle runs clean."""
    task = by_id(task_id)
    session = ToolSession(task.tools())
    records = [session.execute(call, f"oracle_{i}") for i, call in enumerate(task.oracle)]
    failed = [i for i, record in enumerate(records) if not record.ok]
    if "recovery" in task.tags:
        assert failed and failed[-1] < len(records) - 1 and records[-1].ok, [r.message for r in records]
    else:
        assert not failed, [records[i].message for i in failed]
