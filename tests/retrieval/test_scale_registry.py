import json
from importlib import metadata

import pytest

from evals import scale_registry
from evals.scale_registry import (
    DOMAIN_TOOL_SETS,
    NameCollision,
    bfcl_function_docs,
    catalog_examples,
    deduplicate_function_docs,
    domain_cases,
    format_table,
    load_catalog,
    measure,
    registry_of_size,
)
from tests.retrieval.conftest import needs_bm25s
from tool_selection.errors import UnknownToolError
from tool_selection.interop import schema_only_tool
from tool_selection.toolset import load_tool_set

try:
    metadata.distribution("bfcl-eval")
    HAS_BFCL = True
except metadata.PackageNotFoundError:
    HAS_BFCL = False
needs_bfcl = pytest.mark.skipif(not HAS_BFCL, reason="the BFCL data package bfcl-eval is not installed")


def doc(name, description="Does a thing.", **properties):
    return {"name": name, "description": description, "parameters": {"type": "dict", "properties": properties}}


# ------------------------------------------------------------------------ reading and deduplicating BFCL docs
def write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_function_docs_come_from_every_question_file_and_the_multi_turn_docs(tmp_path):
    write_jsonl(tmp_path / "BFCL_v4_simple.json", [{"id": "s0", "function": [doc("a")]}, {"id": "s1", "function": [doc("b")]}])
    write_jsonl(tmp_path / "unused_datasets/question/BFCL_v4_exec.json", [{"id": "e0", "function": [doc("c")]}])
    write_jsonl(tmp_path / "possible_answer/BFCL_v4_simple.json", [{"id": "s0", "ground_truth": []}])
    (tmp_path / "BFCL_v4_format_sensitivity.json").write_text('{\n  "simple": ["s0"]\n}\n')
    write_jsonl(tmp_path / "multi_turn_func_doc/math_api.json", [doc("add"), doc("sub")])
    assert [(source, fn["name"]) for source, fn in bfcl_function_docs(tmp_path)] == [
        ("simple", "a"), ("simple", "b"), ("unused:exec", "c"), ("multi_turn:math_api", "add"),
        ("multi_turn:math_api", "sub"),
    ]


def test_the_most_frequent_schema_of_a_name_wins_and_the_collision_is_reported():
    common, rare = doc("f", "Common."), doc("f", "Rare.")
    kept, collisions = deduplicate_function_docs([("one", rare), ("two", common), ("three", common), ("four", doc("g"))], {})
    assert kept == [("two", common), ("four", doc("g"))]
    assert collisions == [NameCollision("f", kept="three, two", dropped=("one",))]


def test_equally_frequent_schemas_go_to_the_first_seen():
    first, second = doc("f", "First."), doc("f", "Second.")
    kept, collisions = deduplicate_function_docs([("a", first), ("b", second)], {})
    assert kept == [("a", first)] and collisions == [NameCollision("f", kept="a", dropped=("b",))]


def test_identical_docs_are_no_collision_and_whitespace_in_descriptions_is_ignored():
    kept, collisions = deduplicate_function_docs([("a", doc("f", "Same.")), ("b", doc("f", " Same.\n"))], {})
    assert kept == [("a", doc("f", "Same."))] and collisions == []


def test_reserved_names_keep_their_owner():
    kept, collisions = deduplicate_function_docs([("simple", doc("get_stock_price"))], {"get_stock_price": "tool set finance"})
    assert kept == [] and collisions == [NameCollision("get_stock_price", "tool set finance", ("simple",))]


# ------------------------------------------------------------------------ the real catalog
@needs_bfcl
def test_the_catalog_holds_the_domain_tools_and_over_a_thousand_bfcl_tools():
    catalog = load_catalog()
    domain = {name for tool_set in DOMAIN_TOOL_SETS for name in load_tool_set(tool_set).names()}
    assert catalog.domain_names == domain
    assert domain <= set(catalog.registry.names())
    assert len(catalog.registry) > 2000
    assert catalog.invalid == ()
    finance_clash = next(c for c in catalog.collisions if c.name == "get_stock_price")
    assert finance_clash.kept == "tool set finance"
    assert catalog.registry.get("get_stock_price").MODULE.startswith("tool_sets.finance")
    assert "distinct tools" in catalog.summary()


@needs_bfcl
def test_registry_of_size_is_deterministic_by_seed_and_holds_the_required_tools():
    required = ["get_stock_price", "translate_text", "dig"]
    first = registry_of_size(100, required, seed=3)
    assert len(first) == 100 and set(required) <= set(first.names())
    assert first.names() == registry_of_size(100, reversed(required), seed=3).names()
    assert first.names() != registry_of_size(100, required, seed=4).names()


@needs_bfcl
def test_smaller_registries_are_subsets_of_larger_ones():
    small, large = registry_of_size(10, seed=1), registry_of_size(1000, seed=1)
    assert len(small) == 10 and set(small.names()) < set(large.names())


@needs_bfcl
def test_none_gives_every_tool():
    assert len(registry_of_size(None)) == len(load_catalog().registry)


def _web_tools(count):
    return tuple(schema_only_tool(f"web_api_{i}", f"Operation {i} of a web API.", None, source="openapi")
                 for i in range(count))


@needs_bfcl
def test_past_the_catalog_web_api_operations_fill_the_registry(monkeypatch):
    monkeypatch.setattr(scale_registry, "web_api_tools", lambda: _web_tools(40))
    total = len(load_catalog().registry)
    larger = registry_of_size(total + 3, ["dig"], seed=2)
    assert len(larger) == total + 3 and set(load_catalog().registry.names()) < set(larger.names())
    assert larger.names() == registry_of_size(total + 3, seed=2).names()
    assert set(larger.names()) < set(registry_of_size(total + 4, seed=2).names())
    assert set(larger.names()) != set(registry_of_size(total + 3, seed=5).names())


@needs_bfcl
def test_impossible_sizes_are_refused(monkeypatch):
    monkeypatch.setattr(scale_registry, "web_api_tools", lambda: _web_tools(2))
    total = len(load_catalog().registry)
    with pytest.raises(ValueError, match=f"^n={total + 3} is more than the {total + 2} distinct tools available "
                                         f"\\(the catalog's {total} and 2 web-API operations\\); "):
        registry_of_size(total + 3)
    with pytest.raises(ValueError, match="^n=1 cannot hold the 2 required tools; ask for at least 2$"):
        registry_of_size(1, ["dig", "move"])
    with pytest.raises(ValueError, match="^n must be a positive number of tools or None for all, got 0$"):
        registry_of_size(0)
    with pytest.raises(UnknownToolError, match="Did you mean 'get_stock_price'"):
        registry_of_size(10, ["get_stock_pric"])


@needs_bfcl
@needs_bm25s
def test_measure_scores_every_case_and_prints_a_table():
    rows = measure(["bm25"], [100], suites=["finance"])
    assert [(r.retriever, r.tools, r.suite) for r in rows] == [("bm25", 100, "all"), ("bm25", 100, "finance")]
    overall = rows[0]
    assert 0 < overall.cases and 0.0 <= overall.recall_at_5 <= overall.recall_at_10 <= 1.0
    table = format_table(rows).splitlines()
    assert table[0].split() == ["retriever", "tools", "suite", "cases", "R@5", "R@10", "MRR@10", "fit", "s", "refit",
                                "s", "query", "ms"]
    assert table[2].split()[:3] == ["bm25", "100", "all"]


@needs_bfcl
def test_catalog_examples_come_from_single_turn_train_cases_no_other_split_asks():
    examples = catalog_examples("train")
    requests = {request for found in examples.requests.values() for request in found}
    held_out = {case.prompt for cases in domain_cases().values() for case in cases if case.split != "train"}
    train = {case.request for cases in domain_cases().values() for case in cases
             if case.split == "train" and case.request is not None and case.expected_calls}
    assert train - held_out <= requests
    assert not held_out & requests  # not even a train request that a dev or test case asks too
    assert examples.source["left_out_asked_in_another_split"] > 0  # BFCL asks some requests in several categories
    assert not any(request.startswith("user: ") for request in requests)  # no multi-turn conversations
    assert set(examples.requests) <= set(load_catalog().registry.names())


@needs_bfcl
@needs_bm25s
def test_measure_with_examples_scores_held_out_cases():
    (overall, _) = measure(["bm25"], [100], suites=["finance"], examples=True)
    held_out = [c for c in domain_cases(["finance"])["finance"] if c.split != "train" and c.expected_calls]
    assert overall.retriever == "bm25+examples" and overall.cases == len(held_out)
