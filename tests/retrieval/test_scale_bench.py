"""The scale benchmark's model-free retrieval table, its paired rows and its plot."""

from types import SimpleNamespace

import pandas as pd
import pytest

from evals.benchmarks.scale import (
    _plot,
    _row,
    main,
    markdown_table,
    retrieval_markdown,
    retrieval_table,
    settings_across_sizes,
)
from evals.suite import Suite, load_suite
from tool_selection import load_tool_set


def test_the_retrieval_table_scores_every_retriever_at_every_size_that_holds_the_cases():
    needing = [case for case in load_suite("finance").split("test").cases if case.expected_calls][:4]
    table = retrieval_table(Suite("few", needing), sizes=[1, 50], ks=[1, 5], retrievers=["bm25"])
    assert list(table["registry_tools"]) == [50]  # one tool cannot hold the cases' tools: that size is left out
    row = table.iloc[0]
    assert row["cases"] == 4 and 0 <= row["recall@1"] <= row["recall@5"] <= 1 and 0 < row["mrr"] <= 1
    assert row["fit_s"] > 0 and 0 < row["query_ms"] <= row["query_ms_p95"] and pd.isna(row["index_mb"])


def test_the_retrieval_table_prints_its_cost_beside_recall():
    table = pd.DataFrame([{"registry_tools": 10000, "retriever": "dense-hnsw", "cases": 3, "recall@1": 0.5,
                           "recall@5": 0.8, "recall@10": 0.9, "mrr": 0.61, "fit_s": 1.234, "query_ms": 12.34,
                           "query_ms_p95": 20.0, "index_mb": 17.25}])
    assert retrieval_markdown(table).splitlines()[2] == (
        "| 10,000 | dense-hnsw | 0.500 | 0.800 | 0.900 | 0.610 | 1.23 | 12.3 (20.0) | 17.2 |")
    assert retrieval_markdown(table.drop(columns=["fit_s", "query_ms", "query_ms_p95", "index_mb"])).splitlines()[1] \
        == "|---|---|---|---|---|---|"


def _result(full_match, **columns):
    frame = pd.DataFrame({"id": [f"c{i}" for i in range(len(full_match))], "full_match": full_match,
                          "input_tokens": 100.0, "latency_s": 1.0, "error": 0.0, **columns})
    return SimpleNamespace(results=frame)


def test_a_row_is_paired_with_the_own_tool_set_on_the_same_cases():
    own = _result([1.0, 1.0, 1.0, 0.0])
    row = _row("1000 tools, top 5 of 20 re-ranked", 1000, 5, _result([1.0, 0.0, 0.0, 0.0], retrieval_recall=1.0), own)
    assert row["accuracy"] == 0.25 and row["recall_at_k"] == 1.0
    assert row["vs_own"] == -0.5 and row["vs_own_low"] <= -0.5 <= row["vs_own_high"] and row["vs_own_p"] == 0.5
    assert "vs_own" not in _row("own tool set", None, None, own)


def test_the_plot_draws_plain_and_re_ranked_retrieval(tmp_path):
    own = _result([1.0, 0.0])
    rows = [_row("own tool set", None, None, own)]
    for size in (100, 1000):
        rows.append(_row(f"{size} tools, top 5 (hybrid)", size, 5, _result([0.0, 0.0], retrieval_recall=0.5), own))
        rows.append(_row(f"{size} tools, top 5 of 20 re-ranked", size, 5, _result([1.0, 0.0], retrieval_recall=1.0),
                         own))
        rows.append(_row(f"{size} tools, top 20 (hybrid)", size, 20, _result([1.0, 1.0], retrieval_recall=1.0), own))
    _plot(pd.DataFrame(rows), tmp_path / "scale.png")
    assert (tmp_path / "scale.png").stat().st_size > 10_000


def test_each_setting_is_one_line_across_the_sizes():
    own = _result([1.0, 0.0])
    rows = [_row("own tool set", None, None, own)]
    for size in (100, 1000, 10000):
        rows.append(_row(f"{size} tools, top 5 (hybrid, train examples)", size, 5, _result([1.0, 0.0]), own))
        rows.append(_row(f"{size} tools, top 5 (hybrid, train examples, best catalog)", size, 5, _result([0.0, 0.0]),
                         own))
    lines = settings_across_sizes(pd.DataFrame(rows))
    assert list(lines) == ["top 5 (hybrid, train examples)", "top 5 (hybrid, train examples, best catalog)"]
    assert [list(line["registry_tools"]) for line in lines.values()] == [[100, 1000, 10000]] * 2
    assert list(lines["top 5 (hybrid, train examples, best catalog)"]["accuracy"]) == [0.0] * 3


def test_the_kept_table_prints_as_the_pages_markdown():
    own = _result([1.0, 1.0, 1.0, 0.0])
    table = pd.DataFrame([_row("own tool set", None, None, own),
                          _row("1000 tools, top 5 (hybrid)", 1000, 5, _result([1.0, 0.0, 0.0, 0.0], retrieval_recall=0.5),
                               own)])
    lines = markdown_table(table).splitlines()
    assert lines[2] == "| own tool set | 4 | - | 75.0 [25.0, 100.0] | - | 100 | 1.0 |"
    assert lines[3].startswith("| 1000 tools, top 5 (hybrid) | 4 | 0.500 | 25.0 [") and "| -50.0 [" in lines[3]
    assert "p=0.50" in lines[3]


def test_one_registry_size_is_drawn_as_a_bar_per_setting(tmp_path):
    own = _result([1.0, 0.0])
    rows = [_row("own tool set", None, None, own),
            _row("1000 tools, top 5 (hybrid)", 1000, 5, _result([0.0, 0.0], retrieval_recall=0.5), own)]
    _plot(pd.DataFrame(rows), tmp_path / "scale.png")
    assert (tmp_path / "scale.png").stat().st_size > 10_000


def test_the_retrieval_table_adds_each_retriever_routed_to_its_best_catalogs():
    needing = [case for case in load_suite("finance").split("test").cases if case.expected_calls][:4]
    table = retrieval_table(Suite("few", needing), sizes=[200], ks=[1, 5], retrievers=["bm25"], catalogs=1)
    assert list(table["retriever"]) == ["bm25", "bm25, best catalog"]
    plain, routed = table.iloc[0], table.iloc[1]
    assert routed["recall@1"] == plain["recall@1"]  # the best tool's catalog is kept: the first hit stays


@pytest.mark.parametrize(("only", "flag"), [(["--routed-only"], "--catalogs"), (["--only", "examples"], "--examples"),
                                           (["--shown-only"], "--show-catalogs"), (["--only", "written"], "--written")])
def test_only_one_kind_of_row_needs_the_flag_that_makes_them(only, flag):
    with pytest.raises(SystemExit, match=f"keeps the rows? .*: give {flag} too"):
        main([*only, "--sizes", "1000"])


def test_each_depth_measures_the_settings_asked_for_and_only_keeps_one_kind(tmp_path):
    from evals.benchmarks.scale import RetrievalRows
    from tool_selection.spec import SelectorSpec

    listed = SelectorSpec(strategy="json-cot", relevance="none")
    written = {"written examples": tmp_path / "written.json"}
    every = RetrievalRows(listed, "hybrid", tmp_path / "train.json", written, catalogs=1, rerank=20, groups=5)
    assert [(what, folder) for what, folder, _ in every.settings(10)] == [
        ("(hybrid)", ""), ("(hybrid, train examples)", "-examples"), ("(hybrid, written examples)", "-written"),
        ("(hybrid, train examples, best catalog)", "-examples-catalogs1"), ("of 20 re-ranked", "-of20"),
        ("in groups of 5", "-groups5")]
    assert "of 20 re-ranked" not in [what for what, _, _ in every.settings(30)]  # no re-ranking of 20 into 30
    only = RetrievalRows(listed, "hybrid", None, written, catalogs=1, only=["written"]).settings(5)
    assert [(what, selector.retrieval.examples) for what, _, selector in only] == [
        ("(hybrid, written examples)", str(tmp_path / "written.json"))]
    shown = RetrievalRows(listed, "hybrid", tmp_path / "train.json", {}, show_catalogs=True, only=["shown"]).settings(5)
    assert [(what, folder, selector.retrieval.show_catalogs, selector.retrieval.examples)
            for what, folder, selector in shown] == [
        ("(hybrid, train examples, catalogs shown)", "-examples-shown", True, str(tmp_path / "train.json"))]
    examples = RetrievalRows(listed, "hybrid", tmp_path / "train.json", {}, catalogs=1, only=["examples"]).settings(5)
    assert [what for what, _, _ in examples] == ["(hybrid, train examples)"]
    both = RetrievalRows(listed, "hybrid", tmp_path / "train.json", {}, catalogs=1, only=["examples", "routed"])
    assert [what for what, _, _ in both.settings(5)] == ["(hybrid, train examples)",
                                                         "(hybrid, train examples, best catalog)"]


def test_a_fusion_asked_for_reaches_every_row_and_its_label(tmp_path):
    from evals.benchmarks.scale import RetrievalRows
    from tool_selection.spec import SelectorSpec

    listed = SelectorSpec(strategy="json-cot", relevance="none")
    rows = RetrievalRows(listed, "hybrid-multi", tmp_path / "train.json", {}, catalogs=1, fusion="convex").settings(5)
    assert [(what, folder) for what, folder, _ in rows] == [
        ("(hybrid-multi/convex)", ""), ("(hybrid-multi/convex, train examples)", "-examples"),
        ("(hybrid-multi/convex, train examples, best catalog)", "-examples-catalogs1")]
    assert {selector.retrieval.fusion for _, _, selector in rows} == {"convex"}
    plain = RetrievalRows(listed, "hybrid", None, {}).settings(5)
    assert [(what, selector.retrieval.fusion) for what, _, selector in plain] == [("(hybrid)", None)]


def test_the_retrieval_table_adds_each_hybrid_once_per_fusion():
    needing = [case for case in load_suite("finance").split("test").cases if case.expected_calls][:4]
    table = retrieval_table(Suite("few", needing), sizes=[50], ks=[1, 5], retrievers=["bm25", "hybrid"],
                            fusions=["rrf", "convex"])
    assert list(table["retriever"]) == ["bm25", "hybrid", "hybrid/convex"]


def test_a_scored_run_takes_one_fusion_of_a_hybrid_that_scores_every_tool():
    with pytest.raises(SystemExit, match="^--fusion rrf convex: one fusion for every row of a scored run"):
        main(["--fusion", "rrf", "convex", "--sizes", "1000"])
    with pytest.raises(SystemExit, match="^--fusion convex fuses a hybrid retriever's scores, and --retriever bm25"):
        main(["--fusion", "convex", "--retriever", "bm25", "--sizes", "1000"])
    with pytest.raises(SystemExit, match="--retrievers lists none that scores every tool: add hybrid"):
        main(["--retrieval-only", "--fusion", "convex", "--retrievers", "bm25", "hybrid-hnsw", "--sizes", "1000"])


def test_the_retrieval_table_fuses_only_as_asked():
    needing = [case for case in load_suite("finance").split("test").cases if case.expected_calls][:4]
    table = retrieval_table(Suite("few", needing), sizes=[50], ks=[5], retrievers=["bm25", "hybrid"],
                            fusions=["convex"])
    assert list(table["retriever"]) == ["bm25", "hybrid/convex"]


def test_the_retrieval_step_benchmark_times_each_way_and_compares_the_tools_shown(tmp_path):
    from evals.benchmarks.retrieval_step import main as step_main
    from evals.benchmarks.retrieval_step import step_table

    table = step_table([50], cases=3, retriever="bm25", fusion=None, catalogs=[0, 1])
    assert list(table["routing"]) == ["none", "best 1"] and (table["tools"] == 50).all()
    assert table["same_tools_shown"].all()
    assert (table[["refit_ms", "kept_ms", "set_ms"]] > 0).all().all()
    assert step_main(["--sizes", "50", "--cases", "3", "--retriever", "bm25", "--fusion", "none", "--catalogs", "0",
                      "--out", str(tmp_path)]) == 0
    assert list(pd.read_csv(tmp_path / "retrieval_step.csv")["tools"]) == [50]


@pytest.mark.parametrize(("mode", "fits"), [("refit", 3), ("kept", 0), ("set", 0)])
def test_only_the_refit_baseline_fits_the_index_again(monkeypatch, mode, fits):
    from evals.benchmarks.retrieval_step import step_milliseconds
    from tool_selection.retrieval import BM25Retriever
    from tool_selection.selector import MultiToolSelector
    from tool_selection.spec import RetrievalSpec

    registry = load_tool_set("finance").registry()
    selector = MultiToolSelector(retrieval=RetrievalSpec(k=2, retriever="bm25"))
    counted, fit = [], BM25Retriever.fit
    monkeypatch.setattr(BM25Retriever, "fit", lambda self, *args: counted.append(1) or fit(self, *args))
    step_milliseconds(selector, registry, ["convert 5 dollars", "my balance", "stock price"], mode=mode)
    assert len(counted) == 1 + fits  # the warm-up fit, then one per request where refit
    with pytest.raises(ValueError, match="mode must be one of refit, kept, set"):
        step_milliseconds(selector, registry, [], mode="cold")


def test_cases_can_be_drawn_from_the_dev_splits_to_choose_a_setting():
    from evals.benchmarks.scale import sample_cases

    dev, test = sample_cases(12, split="dev"), sample_cases(12)
    assert dev.name.startswith("scale-dev~") and len(dev) == len(test) == 12
    assert not {case.id for case in dev} & {case.id for case in test}
    with pytest.raises(ValueError, match="split must be one of test, dev"):
        sample_cases(12, split="train")


@pytest.mark.parametrize(("setting", "label", "folder", "argv", "refusal"), [
    ({"catalog_margin": 0.25}, "best catalog where it leads by 0.25", "-lead0.25",
     ["--catalog-margin", "0.25", "--catalogs", "1"], "--catalog-margin 0.25 decides when --catalogs routes"),
    ({"catalog_others": 2}, "best catalog, 2 of the others' best beside", "-others2",
     ["--catalog-others", "2"], "--catalog-others 2 shows the other catalogs' best"),
])
def test_a_routing_setting_reaches_the_routed_row_and_its_label(tmp_path, setting, label, folder, argv, refusal):
    from evals.benchmarks.scale import RetrievalRows
    from tool_selection.spec import SelectorSpec

    listed = SelectorSpec(strategy="json-cot", relevance="none")
    rows = RetrievalRows(listed, "hybrid-multi", tmp_path / "train.json", {}, catalogs=1, fusion="convex-catalog",
                         only=["routed"], **setting).settings(5)
    (name, value), = setting.items()
    assert [(what, suffix, getattr(selector.retrieval, name)) for what, suffix, selector in rows] == [
        (f"(hybrid-multi/convex-catalog, train examples, {label})", f"-examples-catalogs1{folder}", value)]
    with pytest.raises(SystemExit, match=refusal):  # rrf: no scale to compare; no --catalogs to hedge
        main([*argv, "--sizes", "1000"])


def test_the_retrieval_table_routes_by_a_margin_only_the_rows_fused_by_score():
    needing = [case for case in load_suite("finance").split("test").cases if case.expected_calls][:4]
    table = retrieval_table(Suite("few", needing), sizes=[200], ks=[1, 5], retrievers=["bm25", "hybrid"],
                            fusions=["rrf", "convex"], catalogs=1, catalog_margin=10.0)
    assert list(table["retriever"]) == ["bm25", "hybrid", "hybrid/convex", "bm25, best catalog",
                                        "hybrid, best catalog", "hybrid/convex, best catalog",
                                        "hybrid/convex, best catalog, lead >= 10"]
    unrouted, never_routed = table.iloc[2], table.iloc[-1]  # no lead reaches 10: the top k of every catalog
    assert never_routed["recall@5"] == unrouted["recall@5"] and never_routed["mrr"] == unrouted["mrr"]
