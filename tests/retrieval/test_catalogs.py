"""Catalog first: only the tools of the catalogs whose best tool ranks highest are shown, so that look-alikes from
another catalog are not."""

import dspy
import pytest

from tests.retrieval.conftest import function, needs_bm25s
from tool_selection.interop import from_openai
from tool_selection.registry import ToolRegistry
from tool_selection.retrieval import RetrievedTool, catalog_first

SHOP = [function("get_order_status", "Where an order of this shop is and when it arrives.", order_id="Order id."),
        function("cancel_order", "Cancel an order of this shop before it ships.", order_id="Order id."),
        function("list_orders", "The orders of this shop's customer, newest first.", customer="Customer id.")]
MARKET = [function("order_status_check", "Check the status of a marketplace order.", order="Order number."),
          function("stock_price", "Latest trading price of a stock.", symbol="Ticker symbol.")]


@pytest.fixture
def two_catalogs():
    tools = [*from_openai(SHOP, category="shop").tools(), *from_openai(MARKET, category="market").tools()]
    return ToolRegistry("two catalogs", tools)


def hits(*names):
    return [RetrievedTool(name, 1.0 - i / 10) for i, name in enumerate(names)]


def test_only_the_best_ranked_catalogs_tools_are_kept_in_rank_order(two_catalogs):
    ranked = hits("get_order_status", "order_status_check", "cancel_order", "stock_price", "list_orders")
    kept = catalog_first(ranked, two_catalogs, catalogs=1, k=5)
    assert [hit.name for hit in kept] == ["get_order_status", "cancel_order", "list_orders"]  # fewer than k
    assert [hit.name for hit in catalog_first(ranked, two_catalogs, catalogs=1, k=2)] == ["get_order_status",
                                                                                         "cancel_order"]


def test_the_catalog_of_the_first_hit_wins_and_two_catalogs_keep_both(two_catalogs):
    ranked = hits("order_status_check", "get_order_status", "stock_price", "cancel_order")
    assert [hit.name for hit in catalog_first(ranked, two_catalogs, 1, 4)] == ["order_status_check", "stock_price"]
    assert catalog_first(ranked, two_catalogs, 2, 4) == ranked


def test_the_counts_must_be_positive(two_catalogs):
    with pytest.raises(ValueError, match="catalogs must be a positive integer"):
        catalog_first(hits("cancel_order"), two_catalogs, 0, 5)


def test_catalogs_without_retrieve_names_the_missing_setting():
    from tool_selection.spec import RetrievalSpec

    with pytest.raises(ValueError, match=r"catalogs \(--retrieve-catalogs\) narrow .* give retrieve"):
        RetrievalSpec.model_validate({"catalogs": 1})


@needs_bm25s
def test_the_selector_is_shown_only_the_best_ranked_catalogs_tools(make_lm, two_catalogs):
    from tool_selection.retrieval import get_retriever
    from tool_selection.selector import MultiToolSelector
    from tool_selection.spec import RetrievalSpec

    request = "What is the status of my order 1234 from this shop?"
    ranked = [hit.name for hit in get_retriever("bm25").fit(two_catalogs).retrieve(request, 5)]
    best = two_catalogs.get(ranked[0]).category
    expected = [name for name in ranked if two_catalogs.get(name).category == best][:3]
    assert len(expected) < len(ranked[:3]) or ranked[:3] != expected  # without catalogs, another catalog is shown
    lm, llama = make_lm(['{"reasoning": "r", "tool_calls": []}'], cache=False)
    selector = MultiToolSelector(two_catalogs, strategy="json-cot", relevance=None,
                                 retrieval=RetrievalSpec(k=3, retriever="bm25", catalogs=1))
    with dspy.context(lm=lm):
        prediction = selector(request=request)
    assert prediction.row_extras["retrieved"] == expected
    listing = llama.calls[-1]["messages"][-1]["content"]
    assert not any(name in listing for name in two_catalogs.names() if name not in expected)


def test_with_catalogs_leads_each_description_with_its_catalog_and_keeps_the_rest(two_catalogs):
    from tool_selection.retrieval import with_catalogs
    from tool_selection.tool import BaseTool

    general = from_openai(MARKET[1:], category=BaseTool.category).get("stock_price")
    shown = with_catalogs(ToolRegistry("shown", [*two_catalogs.subset(["cancel_order", "order_status_check"]),
                                                 general]))
    assert shown.names() == ["cancel_order", "order_status_check", "stock_price"]
    assert shown.get("cancel_order").description == "[shop] Cancel an order of this shop before it ships."
    assert shown.get("order_status_check").description == "[market] Check the status of a marketplace order."
    assert shown.get("stock_price").description == "Latest trading price of a stock."  # the base category: as it is
    assert shown.get("cancel_order").arguments() == two_catalogs.get("cancel_order").arguments()
    assert two_catalogs.get("cancel_order").description == "Cancel an order of this shop before it ships."


@needs_bm25s
def test_the_selector_shows_each_retrieved_tools_catalog_when_asked(make_lm, two_catalogs):
    from tool_selection.selector import MultiToolSelector
    from tool_selection.spec import RetrievalSpec

    lm, llama = make_lm(['{"reasoning": "r", "tool_calls": []}'] * 2, cache=False)
    request = "What is the status of my order 1234?"
    listings = []
    for show in (False, True):
        selector = MultiToolSelector(two_catalogs, strategy="json-cot", relevance=None,
                                     retrieval=RetrievalSpec(k=3, retriever="bm25", show_catalogs=show))
        with dspy.context(lm=lm):
            selector(request=request)
        listings.append(llama.calls[-1]["messages"][-1]["content"])
    assert "[shop]" not in listings[0] and "[market]" not in listings[0]
    assert "[shop] Where an order of this shop is" in listings[1]
    assert "[market] Check the status of a marketplace order." in listings[1]


def test_show_catalogs_without_retrieve_names_the_missing_setting():
    from tool_selection.spec import RetrievalSpec

    with pytest.raises(ValueError, match=r"catalogs shown \(--retrieve-show-catalogs\) label .* give retrieve"):
        RetrievalSpec.model_validate({"show_catalogs": True})


class Ranked:
    """A retriever that ranks the given hits the same for every request."""

    def __init__(self, ranked):
        self.ranked = ranked

    def retrieve(self, request, k=5):
        return self.ranked[:k]


def test_the_lead_is_how_far_the_chosen_catalogs_best_tool_scores_above_the_next_catalogs(two_catalogs):
    from tool_selection.retrieval import catalog_lead

    ranked = [RetrievedTool("get_order_status", 0.9), RetrievedTool("cancel_order", 0.8),
              RetrievedTool("order_status_check", 0.6), RetrievedTool("stock_price", 0.1)]
    assert catalog_lead(ranked, two_catalogs, 1) == pytest.approx(0.3)
    assert catalog_lead(ranked[:2], two_catalogs, 1) == float("inf")  # no other catalog among the hits
    assert catalog_lead(ranked, two_catalogs, 2) == float("inf")


def test_a_catalog_that_leads_by_less_than_the_margin_is_not_routed_to(two_catalogs):
    from tool_selection.retrieval import route_by_catalog

    ranked = [RetrievedTool("get_order_status", 0.9), RetrievedTool("order_status_check", 0.85),
              RetrievedTool("cancel_order", 0.5), RetrievedTool("stock_price", 0.1)]
    kept, lead, routed = route_by_catalog(Ranked(ranked), two_catalogs, "order status", 1, 3, margin=0.1)
    assert not routed and lead == pytest.approx(0.05) and kept == ranked[:3]  # the look-alike stays in
    kept, _, routed = route_by_catalog(Ranked(ranked), two_catalogs, "order status", 1, 3, margin=0.05)
    assert routed and [hit.name for hit in kept] == ["get_order_status", "cancel_order"]
    assert route_by_catalog(Ranked(ranked), two_catalogs, "order status", 1, 3)[2]  # no margin: always routed


def test_a_catalog_margin_needs_routing_and_scores_on_one_scale():
    from tool_selection.spec import RetrievalSpec

    with pytest.raises(ValueError, match=r"give catalogs \(--retrieve-catalogs\) too"):
        RetrievalSpec(k=5, retriever="hybrid-multi", fusion="convex", catalog_margin=0.2)
    with pytest.raises(ValueError, match=r"give fusion \(--retrieve-fusion\) convex or convex-catalog"):
        RetrievalSpec(k=5, retriever="hybrid", catalogs=1, catalog_margin=0.2)
    with pytest.raises(ValueError, match="greater than 0"):
        RetrievalSpec(k=5, retriever="hybrid", fusion="convex", catalogs=1, catalog_margin=0)
    assert RetrievalSpec(k=5, retriever="hybrid", fusion="convex", catalogs=1, catalog_margin=0.2).catalog_margin == 0.2


@needs_bm25s
def test_the_selector_records_whether_it_routed_and_by_how_much(make_lm, two_catalogs):
    from tool_selection.selector import MultiToolSelector
    from tool_selection.spec import RetrievalSpec

    lm, _ = make_lm(['{"reasoning": "r", "tool_calls": []}'] * 2, cache=False)
    for margin, routed in ((None, 1.0), (5.0, 0.0)):  # convex scores lie in [0, 1]: no lead reaches 5
        selector = MultiToolSelector(two_catalogs, strategy="json-cot", relevance=None, retrieval=RetrievalSpec(
            k=3, retriever="hybrid", fusion="convex", catalogs=1, catalog_margin=margin))
        with dspy.context(lm=lm):
            extras = selector(request="What is the status of my order 1234 from this shop?").row_extras
        assert extras["catalog_routed"] == routed and 0 <= extras["catalog_lead"] <= 1
        shown = {two_catalogs.get(name).category for name in extras["retrieved"]}
        assert shown == ({"shop"} if routed else {"shop", "market"})  # not routed: the look-alike is shown too


def test_others_keeps_that_many_of_the_other_catalogs_best_beside_the_chosen_ones_in_rank_order(two_catalogs):
    ranked = hits("get_order_status", "order_status_check", "cancel_order", "stock_price", "list_orders")
    kept = catalog_first(ranked, two_catalogs, catalogs=1, k=3, others=1)
    assert [hit.name for hit in kept] == ["get_order_status", "order_status_check", "cancel_order"]
    kept = catalog_first(ranked, two_catalogs, catalogs=1, k=4, others=2)
    assert [hit.name for hit in kept] == ["get_order_status", "order_status_check", "cancel_order", "stock_price"]
    assert catalog_first(ranked, two_catalogs, 1, 3, others=0) == catalog_first(ranked, two_catalogs, 1, 3)
    with pytest.raises(ValueError, match="others=3 must be at least 0 and below k=3"):
        catalog_first(ranked, two_catalogs, 1, 3, others=3)


def test_catalog_others_needs_routing_and_fewer_than_the_tools_shown():
    from tool_selection.spec import RetrievalSpec

    with pytest.raises(ValueError, match=r"give catalogs \(--retrieve-catalogs\) too, and fewer than retrieve"):
        RetrievalSpec(k=5, retriever="hybrid", catalog_others=1)
    with pytest.raises(ValueError, match=r"catalog_others=5 .* fewer than retrieve"):
        RetrievalSpec(k=5, retriever="hybrid", catalogs=1, catalog_others=5)
    with pytest.raises(ValueError, match=r"the other catalogs' share \(--retrieve-catalog-others\) mixes .* give "
                                         r"retrieve"):
        RetrievalSpec.model_validate({"catalog_others": 1})
    assert RetrievalSpec(k=5, retriever="hybrid", catalogs=1, catalog_others=2).catalog_others == 2


@needs_bm25s
def test_the_selector_shows_the_other_catalogs_best_beside_the_routed_tools(two_catalogs):
    from tool_selection.retrieval import get_retriever
    from tool_selection.selector import MultiToolSelector
    from tool_selection.spec import RetrievalSpec

    request = "What is the status of my order 1234 from this shop?"
    ranked = [hit.name for hit in get_retriever("bm25").fit(two_catalogs).retrieve(request, 5)]
    best = two_catalogs.get(ranked[0]).category
    outside = next(name for name in ranked if two_catalogs.get(name).category != best)
    selector = MultiToolSelector(two_catalogs, strategy="json-cot", relevance=None,
                                 retrieval=RetrievalSpec(k=3, retriever="bm25", catalogs=1, catalog_others=1))
    shown = selector.shown_tools(request)
    assert len(shown) == 3 and outside in shown
    assert [name for name in shown if name != outside] == [name for name in ranked
                                                           if two_catalogs.get(name).category == best][:2]
