"""The ecommerce tool set: real work on an isolated in-memory shop, validation, the seed, and the eval suite."""

import csv
import hashlib
import io
import json
import math
import typing
from importlib import resources

import jsonschema
import pytest

from tests.evals.test_domain_suites import expected_arguments
from tests.tool_sets.test_calculator import assert_failure
from tool_selection import ToolArgumentError, load_tool_set
from tool_sets.ecommerce import TOOL_SET, Shop
from tool_sets.ecommerce.shop import SEED_FILES, SORT_ORDERS
from tool_sets.ecommerce.tools import Category, SortOrder

SEED = resources.files("tool_sets.ecommerce")
PRODUCTS = {row["product_id"]: row for row in csv.DictReader(io.StringIO(SEED.joinpath("products.csv").read_text()))}
ORDERS = {o["order_id"]: o for o in json.loads(SEED.joinpath("orders.json").read_text())["orders"]}


def first_order(status: str) -> dict:
    return next(o for o in ORDERS.values() if o["status"] == status)


@pytest.fixture
def shop():
    with Shop() as shop:
        yield shop


@pytest.fixture
def run(shop):
    """Execute a tool by name through the set's registry, against the test's shop."""
    registry = TOOL_SET.registry()

    def run(name: str, **arguments):
        result = registry.execute(name, arguments, shop=shop)
        json.dumps(result)  # every result is JSON-serialisable
        return result

    return run


# ------------------------------------------------------------------------------------------ the set
def test_loads_by_name_with_enough_tools():
    tool_set = load_tool_set("ecommerce")
    assert tool_set is TOOL_SET
    assert len(tool_set) >= 8
    assert {t.category for t in tool_set} == {"ecommerce"}


@pytest.mark.parametrize("tool", TOOL_SET.tools, ids=TOOL_SET.names())
def test_schema_is_valid_json_schema(tool):
    jsonschema.Draft202012Validator.check_schema(tool.input_schema())
    assert tool.input_schema().get("additionalProperties") is False


def test_enums_match_the_data():
    assert set(typing.get_args(Category)) == {p["category"] for p in PRODUCTS.values()}
    assert set(typing.get_args(SortOrder)) == set(SORT_ORDERS)


def test_tool_works_without_configuration():
    result = TOOL_SET.registry().execute("view_cart")
    assert result["ok"] and result["items"]


# ------------------------------------------------------------------------------------------ catalog
def test_search_products_matches_keywords_across_categories(run):
    result = run("search_products", query="Northpeak")
    expected = {pid for pid, p in PRODUCTS.items() if "northpeak" in (p["name"] + p["brand"]).lower()}
    assert {p["product_id"] for p in result["products"]} == expected
    assert len({p["category"] for p in result["products"]}) > 1


def test_search_products_ranks_name_matches_first_and_filters_stock(run):
    products = run("search_products", query="running shoes", in_stock_only=True)["products"]
    assert "running" in products[0]["name"].lower()
    assert all(p["in_stock"] for p in products)
    assert run("search_products", query="zzzqqq")["count"] == 0


def test_search_products_treats_wildcards_literally(run):
    assert run("search_products", query="50%")["count"] == 0
    assert run("search_products", query="15%")["products"][0]["product_id"] == "P6001"


def test_search_category_filters_and_sorts(run):
    result = run("search_category", category="electronics", max_price=100, sort_by="price_low_to_high")
    prices = [p["price"] for p in result["products"]]
    expected = sorted(float(p["price"]) for p in PRODUCTS.values()
                      if p["category"] == "electronics" and float(p["price"]) <= 100)
    assert prices == expected
    assert {p["category"] for p in result["products"]} == {"electronics"}


def test_search_category_keyword_price_range_and_stock(run):
    products = run("search_category", category="toys_games", min_price=20, max_price=50, in_stock_only=True)["products"]
    assert products and all(20 <= p["price"] <= 50 and p["in_stock"] for p in products)
    kettles = run("search_category", category="home_kitchen", keyword="kettle")["products"]
    assert [p["product_id"] for p in kettles] == ["P2006"]


def test_product_details_come_from_the_catalog(run):
    product = PRODUCTS["P6001"]
    details = run("get_product_details", product_id="P6001")
    assert details["name"] == product["name"] and details["price"] == float(product["price"])
    assert details["stock"] == int(product["stock"])
    assert details["returnable"] is (product["final_sale"] == "0")
    assert run("get_product_details", product_id="P9999") == {
        "ok": False, "error": "unknown_product", "message": "No product P9999 exists in the catalog.",
        "suggestions": [], "product_id": "P9999"}


# --------------------------------------------------------------------------------------------- cart
def test_add_view_and_remove(run):
    before = run("view_cart")
    added = run("add_to_cart", product_id="P5001", quantity=2)
    assert added["ok"] and added["added"]["quantity"] == 2
    cart = run("view_cart")
    lines = {i["product_id"]: i for i in cart["items"]}
    assert lines["P5001"]["quantity"] == 2
    assert cart["subtotal"] == pytest.approx(before["subtotal"] + 2 * float(PRODUCTS["P5001"]["price"]))
    assert cart["subtotal"] == pytest.approx(sum(i["line_total"] for i in cart["items"]))

    run("add_to_cart", product_id="P5001")
    assert run("remove_from_cart", product_id="P5001", quantity=1)["cart"]["item_count"] == cart["item_count"]
    assert run("remove_from_cart", product_id="P5001")["removed"]["quantity"] == 2
    assert "P5001" not in {i["product_id"] for i in run("view_cart")["items"]}
    not_in_cart = run("remove_from_cart", product_id="P5001")
    assert_failure(not_in_cart, "not_in_cart")
    assert not_in_cart["suggestions"] == [i["product_id"] for i in run("view_cart")["items"]]


def test_add_to_cart_respects_stock(run):
    sold_out = next(pid for pid, p in PRODUCTS.items() if p["stock"] == "0")
    assert_failure(run("add_to_cart", product_id=sold_out), "out_of_stock")
    scarce = next(pid for pid, p in PRODUCTS.items() if 0 < int(p["stock"]) < 20)
    stock = int(PRODUCTS[scarce]["stock"])
    refused = run("add_to_cart", product_id=scarce, quantity=stock + 1)
    assert_failure(refused, "insufficient_stock")
    assert refused["available"] == stock
    assert_failure(run("add_to_cart", product_id="P9999"), "unknown_product")


# ------------------------------------------------------------------------------------ orders
def test_checkout_creates_an_order_and_updates_stock(run):
    cart = run("view_cart")
    stock = {i["product_id"]: run("get_product_details", product_id=i["product_id"])["stock"] for i in cart["items"]}
    placed = run("checkout", shipping_method="express", payment_method="paypal")
    assert placed["ok"] and placed["order_id"] not in ORDERS
    assert placed["total"] == pytest.approx(cart["subtotal"] + placed["shipping"])
    assert run("view_cart")["items"] == []
    for item in cart["items"]:
        left = run("get_product_details", product_id=item["product_id"])["stock"]
        assert left == stock[item["product_id"]] - item["quantity"]
    status = run("get_order_status", order_id=placed["order_id"])
    assert status["status"] == "processing" and status["total"] == placed["total"]
    assert run("list_orders", limit=1)["orders"][0]["order_id"] == placed["order_id"]
    assert_failure(run("track_shipment", order_id=placed["order_id"]), "not_shipped_yet")
    assert_failure(run("checkout"), "empty_cart")


def test_list_orders_filters_by_status(run):
    delivered = run("list_orders", status="delivered")["orders"]
    assert {o["order_id"] for o in delivered} == {i for i, o in ORDERS.items() if o["status"] == "delivered"}
    dates = [o["placed_on"] for o in run("list_orders")["orders"]]
    assert dates == sorted(dates, reverse=True)


def test_order_status_and_tracking(run):
    order = first_order("shipped")
    status = run("get_order_status", order_id=order["order_id"])
    assert status["status"] == "shipped"
    assert {i["product_id"] for i in status["items"]} == {i["product_id"] for i in order["items"]}
    tracking = run("track_shipment", order_id=order["order_id"])
    assert tracking["tracking_number"] == order["shipment"]["tracking_number"]
    assert tracking["latest"] == order["shipment"]["events"][-1]
    assert_failure(run("get_order_status", order_id="ORD-99999"), "unknown_order")
    assert_failure(run("track_shipment", order_id=first_order("cancelled")["order_id"]), "order_cancelled")


def test_cancel_only_unshipped_orders(run):
    order = first_order("processing")
    item = order["items"][0]
    stock = run("get_product_details", product_id=item["product_id"])["stock"]
    cancelled = run("cancel_order", order_id=order["order_id"])
    assert cancelled["ok"] and cancelled["refund_amount"] == pytest.approx(
        sum(i["quantity"] * i["unit_price"] for i in order["items"]) + order["shipping"])
    assert run("get_product_details", product_id=item["product_id"])["stock"] == stock + item["quantity"]
    assert_failure(run("cancel_order", order_id=order["order_id"]), "already_cancelled")
    assert_failure(run("cancel_order", order_id=first_order("shipped")["order_id"]), "already_shipped")


def test_request_return_within_the_window(run):
    result = run("request_return", order_id="ORD-10388", product_id="P1003", reason="damaged", quantity=2,
                 resolution="store_credit")
    line = next(i for i in ORDERS["ORD-10388"]["items"] if i["product_id"] == "P1003")
    assert result["ok"] and result["amount"] == pytest.approx(2 * line["unit_price"])
    assert run("get_order_status", order_id="ORD-10388")["returns"][0]["return_id"] == result["return_id"]
    again = run("request_return", order_id="ORD-10388", product_id="P1003", reason="damaged")
    assert_failure(again, "already_returned")
    assert again["returnable_quantity"] == 0


@pytest.mark.parametrize(("order_id", "product_id", "error"), [
    ("ORD-10231", "P2001", "return_window_closed"),
    ("ORD-10412", "P6001", "final_sale"),
    ("ORD-10457", "P4003", "not_delivered"),
    ("ORD-10388", "P4003", "not_in_order"),
    ("ORD-99999", "P4003", "unknown_order"),
])
def test_request_return_refusals(run, order_id, product_id, error):
    result = run("request_return", order_id=order_id, product_id=product_id, reason="other")
    assert_failure(result, error)


def test_a_product_not_in_the_order_suggests_the_order_s_products(run):
    result = run("request_return", order_id="ORD-10388", product_id="P4003", reason="other")
    assert result["suggestions"] == sorted(i["product_id"] for i in ORDERS["ORD-10388"]["items"])


# ------------------------------------------------------------------------------------- validation
INVALID = [
    ("search_products", {"query": "   "}, "query"),
    ("search_products", {"query": "mat", "limit": 0}, "limit"),
    ("search_category", {"category": "garden"}, "category"),
    ("search_category", {"category": "books", "max_price": -1}, "max_price"),
    ("search_category", {"category": "books", "min_price": 50, "max_price": 10}, "max_price"),
    ("search_category", {"category": "books", "min_price": math.inf}, "min_price"),  # was an OverflowError
    ("search_category", {"category": "books", "max_price": math.nan}, "max_price"),
    ("search_category", {"category": "books", "max_price": 1e300}, "max_price"),
    ("search_category", {"category": "books", "sort_by": "cheapest"}, "sort_by"),
    ("get_product_details", {"product_id": "1001"}, "product_id"),
    ("add_to_cart", {"product_id": "P1001", "quantity": 0}, "quantity"),
    ("add_to_cart", {"product_id": "P1001", "quantity": 21}, "quantity"),
    ("view_cart", {"product_id": "P1001"}, "product_id"),
    ("remove_from_cart", {"product_id": "p-1"}, "product_id"),
    ("checkout", {"shipping_method": "drone"}, "shipping_method"),
    ("list_orders", {"status": "lost"}, "status"),
    ("get_order_status", {"order_id": "10388"}, "order_id"),
    ("track_shipment", {}, "order_id"),
    ("cancel_order", {"order_id": "ORD-1"}, "order_id"),
    ("request_return", {"order_id": "ORD-10388", "product_id": "P1001", "reason": "bored"}, "reason"),
]


@pytest.mark.parametrize(("name", "arguments", "field"), INVALID, ids=[f"{n}-{f}" for n, _, f in INVALID])
def test_invalid_arguments_name_the_field(run, shop, name, arguments, field):
    cart = shop.view_cart()
    with pytest.raises(ToolArgumentError) as info:
        run(name, **arguments)
    assert [p.field for p in info.value.problems] == [field]
    assert shop.view_cart() == cart


def test_every_tool_has_an_invalid_case():
    assert {name for name, _, _ in INVALID} == set(TOOL_SET.names())


# ------------------------------------------------------------------------------- isolation and seed
def seed_digest() -> str:
    return hashlib.sha256(b"".join(SEED.joinpath(name).read_bytes() for name in SEED_FILES)).hexdigest()


def test_shipped_seed_is_unchanged_after_checkout(run):
    before = seed_digest()
    assert run("checkout")["ok"]
    assert seed_digest() == before


def test_shops_are_isolated_and_deterministic():
    with Shop() as first, Shop() as second:
        registry = TOOL_SET.registry()
        placed = registry.execute("checkout", {}, shop=first)
        assert registry.execute("view_cart", shop=second)["items"]
        assert registry.execute("get_order_status", {"order_id": placed["order_id"]}, shop=second)["ok"] is False
        assert registry.execute("checkout", {}, shop=second) == placed


# ----------------------------------------------------------------------------------------- the suite
# The checks every domain suite must pass are in tests/evals/test_domain_suites.py; this one checks the seed.
def test_suite_ids_refer_to_seed_data():
    for case, _, arguments in expected_arguments("ecommerce"):
        assert arguments.get("product_id", "P1001") in PRODUCTS, case.id
        assert arguments.get("order_id", "ORD-10388") in ORDERS, case.id
