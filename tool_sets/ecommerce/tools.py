"""The ecommerce tools: browse the catalog, manage the cart, check out, and look after orders.

Every tool works on a ``Shop`` (its ``shop`` field). By default each tool instance gets a fresh shop built
from the shipped seed; pass one shared ``Shop`` (``registry.execute(name, args, shop=shop)``) to keep a cart
and orders across calls.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator

from tool_selection import BaseTool, StrictArguments, register_tool
from tool_sets.ecommerce.shop import Shop

Category = Literal["electronics", "home_kitchen", "clothing_shoes", "sports_outdoors", "books", "beauty", "toys_games"]
SortOrder = Literal["best_rated", "most_reviewed", "price_low_to_high", "price_high_to_low"]
OrderStatus = Literal["any", "processing", "shipped", "delivered", "cancelled"]
ReturnReason = Literal["damaged", "wrong_item", "not_as_described", "doesnt_fit", "no_longer_needed", "other"]

PRODUCT_ID = r"^P\d{4}$"
ORDER_ID = r"^ORD-\d{5}$"
MAX_PRICE = 100_000  # dollars; far above the catalog's dearest product, and finite


def _product_id(purpose: str) -> Any:
    return Field(pattern=PRODUCT_ID, max_length=5, description=f"{purpose} Catalog product id such as 'P1001'.")


def _order_id(purpose: str) -> Any:
    return Field(pattern=ORDER_ID, max_length=9, description=f"{purpose} Order number such as 'ORD-10388'.")


def _price(purpose: str) -> Any:
    return Field(default=None, ge=0, le=MAX_PRICE, allow_inf_nan=False,
                 description=f"{purpose} in dollars, inclusive.")


class _Arguments(StrictArguments):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class ShopTool(BaseTool, abstract=True):
    """Base of the ecommerce tools: holds the shop they act on."""

    category = "ecommerce"
    shop: Shop = Field(default_factory=Shop, exclude=True, repr=False,
                       description="The shop state; a fresh copy of the seed by default.")


@register_tool
class SearchProducts(ShopTool):
    NAME = "search_products"
    description = ("Search the whole catalog (every category) by keywords such as a product type, name or brand. "
                   "Has no price or category filters; use search_category to browse one category with filters.")

    class Arguments(_Arguments):
        query: str = Field(min_length=1, max_length=100,
                           description="Keywords, e.g. 'wireless earbuds' or 'Northpeak'.")
        in_stock_only: bool = Field(default=False, description="Only return products that are in stock.")
        limit: int = Field(default=10, ge=1, le=50, description="Maximum number of products to return.")

    def execute(self, query: str, in_stock_only: bool, limit: int) -> dict[str, Any]:
        return self.shop.search_products(query, in_stock_only, limit)


@register_tool
class SearchCategory(ShopTool):
    NAME = "search_category"
    description = ("Browse one product category, optionally narrowed by keyword, price range and stock, sorted by "
                   "price, rating or number of reviews.")

    class Arguments(_Arguments):
        category: Category = Field(description="The category to browse.")
        keyword: str | None = Field(default=None, max_length=100,
                                    description="Optional keywords to narrow results within the category.")
        min_price: float | None = _price("Lowest price")
        max_price: float | None = _price("Highest price")
        in_stock_only: bool = Field(default=False, description="Only return products that are in stock.")
        sort_by: SortOrder = Field(default="best_rated", description="Order of the results.")
        limit: int = Field(default=10, ge=1, le=50, description="Maximum number of products to return.")

        @field_validator("max_price")
        @classmethod
        def _not_below_min(cls, value: float | None, info: ValidationInfo) -> float | None:
            low = info.data.get("min_price")
            if value is not None and low is not None and value < low:
                raise ValueError(f"max_price must be at least min_price ({low})")
            return value

    def execute(self, **arguments: Any) -> dict[str, Any]:
        return self.shop.search_category(**arguments)


@register_tool
class GetProductDetails(ShopTool):
    NAME = "get_product_details"
    description = "Full details of one product: description, price, rating, stock level and return policy."

    class Arguments(_Arguments):
        product_id: str = _product_id("The product to describe.")

    def execute(self, product_id: str) -> dict[str, Any]:
        return self.shop.product_details(product_id)


@register_tool
class AddToCart(ShopTool):
    NAME = "add_to_cart"
    description = "Add a quantity of a product to the shopping cart (checks stock)."

    class Arguments(_Arguments):
        product_id: str = _product_id("The product to add.")
        quantity: int = Field(default=1, ge=1, le=20, description="How many to add (1-20).")

    def execute(self, product_id: str, quantity: int) -> dict[str, Any]:
        return self.shop.add_to_cart(product_id, quantity)


@register_tool
class ViewCart(ShopTool):
    NAME = "view_cart"
    description = "Show the shopping cart: items, quantities, prices and subtotal."

    def execute(self) -> dict[str, Any]:
        return self.shop.view_cart()


@register_tool
class RemoveFromCart(ShopTool):
    NAME = "remove_from_cart"
    description = "Remove a product from the shopping cart, or lower its quantity."

    class Arguments(_Arguments):
        product_id: str = _product_id("The product to remove.")
        quantity: int | None = Field(default=None, ge=1, le=20,
                                     description="How many to remove; omit to remove the product entirely.")

    def execute(self, product_id: str, quantity: int | None) -> dict[str, Any]:
        return self.shop.remove_from_cart(product_id, quantity)


@register_tool
class Checkout(ShopTool):
    NAME = "checkout"
    description = ("Place an order for everything in the cart, shipping to the customer's saved address. "
                   "Standard shipping is free from $50; express costs $14.99.")

    class Arguments(_Arguments):
        shipping_method: Literal["standard", "express"] = Field(
            default="standard", description="Standard (about 5 days) or express (about 2 days) delivery.")
        payment_method: Literal["saved_card", "paypal"] = Field(default="saved_card", description="How to pay.")

    def execute(self, shipping_method: str, payment_method: str) -> dict[str, Any]:
        return self.shop.checkout(shipping_method, payment_method)


@register_tool
class ListOrders(ShopTool):
    NAME = "list_orders"
    description = "List the customer's orders, newest first, optionally only those with a given status."

    class Arguments(_Arguments):
        status: OrderStatus = Field(default="any", description="Only orders with this status, or 'any'.")
        limit: int = Field(default=10, ge=1, le=50, description="Maximum number of orders to return.")

    def execute(self, status: str, limit: int) -> dict[str, Any]:
        return self.shop.list_orders(status, limit)


@register_tool
class GetOrderStatus(ShopTool):
    NAME = "get_order_status"
    description = ("Status and contents of one order: processing, shipped, delivered or cancelled, with items, "
                   "totals and any returns. For carrier tracking events use track_shipment.")

    class Arguments(_Arguments):
        order_id: str = _order_id("The order to look up.")

    def execute(self, order_id: str) -> dict[str, Any]:
        return self.shop.order_status(order_id)


@register_tool
class TrackShipment(ShopTool):
    NAME = "track_shipment"
    description = ("Carrier tracking for a shipped order: carrier, tracking number, estimated delivery date and "
                   "the scan history of the parcel.")

    class Arguments(_Arguments):
        order_id: str = _order_id("The order whose parcel to track.")

    def execute(self, order_id: str) -> dict[str, Any]:
        return self.shop.track_shipment(order_id)


@register_tool
class CancelOrder(ShopTool):
    NAME = "cancel_order"
    description = "Cancel an order that has not shipped yet and refund it in full."

    class Arguments(_Arguments):
        order_id: str = _order_id("The order to cancel.")

    def execute(self, order_id: str) -> dict[str, Any]:
        return self.shop.cancel_order(order_id)


@register_tool
class RequestReturn(ShopTool):
    NAME = "request_return"
    description = ("Return an item from a delivered order for a refund or store credit "
                   "(within 30 days of delivery; final-sale items excluded).")

    class Arguments(_Arguments):
        order_id: str = _order_id("The delivered order the item came from.")
        product_id: str = _product_id("The item to return.")
        reason: ReturnReason = Field(description="Why the item is being returned.")
        quantity: int = Field(default=1, ge=1, le=20, description="How many units to return.")
        resolution: Literal["refund", "store_credit"] = Field(
            default="refund", description="Refund to the original payment method, or store credit.")

    def execute(self, **arguments: Any) -> dict[str, Any]:
        return self.shop.request_return(**arguments)


TOOLS = (SearchProducts, SearchCategory, GetProductDetails, AddToCart, ViewCart, RemoveFromCart, Checkout,
         ListOrders, GetOrderStatus, TrackShipment, CancelOrder, RequestReturn)
