"""The shop's state: an in-memory SQLite database built from the shipped seed, one per ``Shop``.

The seed (``schema.sql``, ``products.csv``, ``orders.json``) is only ever read. Every query is parameterised;
no caller-supplied text reaches SQL except as a bound value. Dates come from the seed's fixed ``today``, so
results never depend on the system clock. A request the shop refuses (an unknown order, an item out of stock, a
closed return window) returns the shared failure shape (``tool_selection.tool_failures``):
``{"ok": False, "error": <code>, "message", "suggestions", ...}``.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import threading
from contextlib import suppress
from datetime import date, timedelta
from functools import cache
from importlib import resources
from typing import Any

from tool_selection.tool_failures import tool_failure

__all__ = ["SEED_FILES", "SORT_ORDERS", "Shop", "seed_text"]

SEED_FILES = ("schema.sql", "products.csv", "orders.json")
SORT_ORDERS = {
    "best_rated": "rating DESC, review_count DESC",
    "most_reviewed": "review_count DESC",
    "price_low_to_high": "price_cents ASC",
    "price_high_to_low": "price_cents DESC",
}
SHIPPING_CENTS = {"standard": 599, "express": 1499}
FREE_STANDARD_SHIPPING_CENTS = 5000
DELIVERY_DAYS = {"standard": 5, "express": 2}
MAX_LINE_QUANTITY = 20
_STOPWORDS = {"a", "an", "and", "the", "for", "of", "with", "to", "in", "on", "me", "my", "some", "any"}


@cache
def seed_text(name: str) -> str:
    """The text of one shipped seed file (read-only)."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _cents(amount: float) -> int:
    return round(amount * 100)


def _money(cents: int) -> float:
    return round(cents / 100, 2)


def _search_terms(text: str) -> list[str]:
    """Lower-case keywords with punctuation and stopwords removed and a plural 's' dropped, for LIKE matching."""
    terms = []
    for word in text.lower().split():
        word = word.strip(".,;:!?\"'()[]{}")
        if word and word not in _STOPWORDS:
            terms.append(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return list(dict.fromkeys(terms))[:10]


def _like(term: str) -> str:
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class Shop:
    """One isolated shop (catalog, cart, orders, shipments, returns) in an in-memory SQLite database."""

    def __init__(self) -> None:
        seed = json.loads(seed_text("orders.json"))
        self.today = date.fromisoformat(seed["today"])
        self.return_window_days: int = seed["return_window_days"]
        self.customer: dict[str, str] = seed["customer"]
        self._lock = threading.RLock()
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA foreign_keys = ON")
        self.db.executescript(seed_text("schema.sql"))
        with self.db:
            self._load(seed)

    def _load(self, seed: dict[str, Any]) -> None:
        products = csv.DictReader(io.StringIO(seed_text("products.csv")))
        self.db.executemany(
            "INSERT INTO products VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(p["product_id"], p["name"], p["brand"], p["category"], _cents(float(p["price"])), int(p["stock"]),
              float(p["rating"]), int(p["review_count"]), int(p["final_sale"]), p["description"]) for p in products],
        )
        self.db.executemany("INSERT INTO cart_items VALUES (:product_id, :quantity)", seed["cart"])
        for order in seed["orders"]:
            self.db.execute(
                "INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?)",
                (order["order_id"], order["placed_on"], order["status"], order["shipping_method"],
                 order["payment_method"], _cents(order["shipping"]), order.get("cancelled_on")),
            )
            self.db.executemany(
                "INSERT INTO order_items VALUES (?, ?, ?, ?)",
                [(order["order_id"], i["product_id"], i["quantity"], _cents(i["unit_price"])) for i in order["items"]],
            )
            if shipment := order.get("shipment"):
                self.db.execute(
                    "INSERT INTO shipments VALUES (?, ?, ?, ?, ?, ?)",
                    (order["order_id"], shipment["carrier"], shipment["tracking_number"], shipment["shipped_on"],
                     shipment["estimated_delivery"], shipment["delivered_on"]),
                )
                self.db.executemany(
                    "INSERT INTO shipment_events VALUES (?, ?, ?, ?, ?)",
                    [(order["order_id"], seq, e["date"], e["location"], e["description"])
                     for seq, e in enumerate(shipment["events"], 1)],
                )
        self.db.executemany(
            "INSERT INTO returns VALUES (:return_id, :order_id, :product_id, :quantity, :reason, :resolution, "
            ":amount_cents, :requested_on, :status)",
            seed["returns"],
        )

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Shop:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        with suppress(Exception):
            self.db.close()

    # ------------------------------------------------------------------ helpers
    def _rows(self, sql: str, params: tuple | dict = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self.db.execute(sql, params).fetchall()

    def _row(self, sql: str, params: tuple | dict = ()) -> sqlite3.Row | None:
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    @staticmethod
    def _summary(row: sqlite3.Row) -> dict[str, Any]:
        return {"product_id": row["product_id"], "name": row["name"], "brand": row["brand"],
                "category": row["category"], "price": _money(row["price_cents"]), "rating": row["rating"],
                "in_stock": row["stock"] > 0}

    def _product(self, product_id: str) -> sqlite3.Row | None:
        return self._row("SELECT * FROM products WHERE product_id = ?", (product_id,))

    def _order(self, order_id: str) -> sqlite3.Row | None:
        return self._row("SELECT * FROM orders WHERE order_id = ?", (order_id,))

    def _order_lines(self, order_id: str) -> list[sqlite3.Row]:
        return self._rows(
            "SELECT oi.product_id, p.name, oi.quantity, oi.unit_price_cents FROM order_items oi "
            "JOIN products p USING (product_id) WHERE oi.order_id = ? ORDER BY oi.product_id", (order_id,))

    @staticmethod
    def _unknown_order(order_id: str) -> dict[str, Any]:
        return tool_failure("unknown_order", f"No order {order_id} exists for this customer.", order_id=order_id)

    @staticmethod
    def _unknown_product(product_id: str) -> dict[str, Any]:
        return tool_failure("unknown_product", f"No product {product_id} exists in the catalog.",
                            product_id=product_id)

    def _keyword_score(self, terms: list[str]) -> tuple[str, list[str]]:
        """SQL scoring expression (2 per term in the name, 1 per term elsewhere) and its bound values."""
        if not terms:
            return "0", []
        part = ("(CASE WHEN lower(name) LIKE ? ESCAPE '\\' THEN 2 "
                "WHEN lower(brand || ' ' || category || ' ' || description) LIKE ? ESCAPE '\\' THEN 1 ELSE 0 END)")
        return " + ".join([part] * len(terms)), [v for t in terms for v in (_like(t), _like(t))]

    # ------------------------------------------------------------------ catalog
    def _scored(self, terms: list[str]) -> tuple[str, list[str]]:
        """A subquery of products with a keyword ``score`` column, and its bound values."""
        score, params = self._keyword_score(terms)
        return f"(SELECT *, {score} AS score FROM products)", params

    def search_products(self, query: str, in_stock_only: bool = False, limit: int = 10) -> dict[str, Any]:
        scored, params = self._scored(_search_terms(query))
        rows = self._rows(
            f"SELECT * FROM {scored} WHERE score > 0 AND (? = 0 OR stock > 0) "
            "ORDER BY score DESC, rating DESC, product_id LIMIT ?",
            (*params, int(in_stock_only), limit),
        )
        return {"ok": True, "query": query, "count": len(rows), "products": [self._summary(r) for r in rows]}

    def search_category(self, category: str, keyword: str | None = None, min_price: float | None = None,
                        max_price: float | None = None, in_stock_only: bool = False, sort_by: str = "best_rated",
                        limit: int = 10) -> dict[str, Any]:
        terms = _search_terms(keyword or "")
        scored, params = self._scored(terms)
        low = None if min_price is None else _cents(min_price)
        high = None if max_price is None else _cents(max_price)
        rows = self._rows(
            f"SELECT * FROM {scored} WHERE category = ? AND (? = 0 OR score > 0) "
            "AND (? IS NULL OR price_cents >= ?) AND (? IS NULL OR price_cents <= ?) AND (? = 0 OR stock > 0) "
            f"ORDER BY {SORT_ORDERS[sort_by]}, product_id LIMIT ?",
            (*params, category, int(bool(terms)), low, low, high, high, int(in_stock_only), limit),
        )
        return {"ok": True, "category": category, "sort_by": sort_by, "count": len(rows),
                "products": [self._summary(r) for r in rows]}

    def product_details(self, product_id: str) -> dict[str, Any]:
        row = self._product(product_id)
        if row is None:
            return self._unknown_product(product_id)
        return {"ok": True, **self._summary(row), "description": row["description"], "stock": row["stock"],
                "review_count": row["review_count"], "returnable": not row["final_sale"],
                "return_window_days": 0 if row["final_sale"] else self.return_window_days}

    # --------------------------------------------------------------------- cart
    def view_cart(self) -> dict[str, Any]:
        return {"ok": True, **self._cart()}

    def _cart(self) -> dict[str, Any]:
        rows = self._rows("SELECT p.*, c.quantity FROM cart_items c JOIN products p USING (product_id) "
                          "ORDER BY p.product_id")
        subtotal = sum(r["price_cents"] * r["quantity"] for r in rows)
        items = [{"product_id": r["product_id"], "name": r["name"], "quantity": r["quantity"],
                  "unit_price": _money(r["price_cents"]), "line_total": _money(r["price_cents"] * r["quantity"]),
                  "in_stock": r["stock"] >= r["quantity"]} for r in rows]
        return {"items": items, "item_count": sum(r["quantity"] for r in rows),
                "subtotal": _money(subtotal),
                "free_standard_shipping": subtotal >= FREE_STANDARD_SHIPPING_CENTS}

    def add_to_cart(self, product_id: str, quantity: int = 1) -> dict[str, Any]:
        with self._lock, self.db:
            row = self._product(product_id)
            if row is None:
                return self._unknown_product(product_id)
            if row["stock"] == 0:
                return tool_failure("out_of_stock", f"{row['name']} is out of stock.", product_id=product_id)
            in_cart = self._row("SELECT quantity FROM cart_items WHERE product_id = ?", (product_id,))
            new_quantity = quantity + (in_cart["quantity"] if in_cart else 0)
            if new_quantity > row["stock"]:
                return tool_failure("insufficient_stock", f"Only {row['stock']} of {row['name']} are available.",
                                    product_id=product_id, available=row["stock"], requested=new_quantity)
            if new_quantity > MAX_LINE_QUANTITY:
                return tool_failure("quantity_limit", f"At most {MAX_LINE_QUANTITY} of one product per order.",
                                    product_id=product_id, requested=new_quantity)
            self.db.execute("INSERT INTO cart_items VALUES (?, ?) ON CONFLICT (product_id) "
                            "DO UPDATE SET quantity = excluded.quantity", (product_id, new_quantity))
        return {"ok": True, "added": {"product_id": product_id, "name": row["name"], "quantity": quantity},
                "cart": self._cart()}

    def remove_from_cart(self, product_id: str, quantity: int | None = None) -> dict[str, Any]:
        with self._lock, self.db:
            in_cart = self._row("SELECT quantity FROM cart_items WHERE product_id = ?", (product_id,))
            if in_cart is None:
                in_the_cart = [r["product_id"] for r in self._rows("SELECT product_id FROM cart_items "
                                                                   "ORDER BY product_id")]
                return tool_failure("not_in_cart", f"{product_id} is not in the cart.", suggestions=in_the_cart,
                                    product_id=product_id)
            removed = in_cart["quantity"] if quantity is None else min(quantity, in_cart["quantity"])
            if removed == in_cart["quantity"]:
                self.db.execute("DELETE FROM cart_items WHERE product_id = ?", (product_id,))
            else:
                self.db.execute("UPDATE cart_items SET quantity = quantity - ? WHERE product_id = ?",
                                (removed, product_id))
        return {"ok": True, "removed": {"product_id": product_id, "quantity": removed}, "cart": self._cart()}

    def checkout(self, shipping_method: str = "standard", payment_method: str = "saved_card") -> dict[str, Any]:
        with self._lock, self.db:
            lines = self._rows("SELECT p.*, c.quantity FROM cart_items c JOIN products p USING (product_id) "
                               "ORDER BY p.product_id")
            if not lines:
                return tool_failure("empty_cart", "The cart is empty; add products before checking out.")
            short = [{"product_id": r["product_id"], "requested": r["quantity"], "available": r["stock"]}
                     for r in lines if r["quantity"] > r["stock"]]
            if short:
                return tool_failure("insufficient_stock",
                                    "Some cart items are no longer available in that quantity.", items=short)
            subtotal = sum(r["price_cents"] * r["quantity"] for r in lines)
            free = shipping_method == "standard" and subtotal >= FREE_STANDARD_SHIPPING_CENTS
            shipping = 0 if free else SHIPPING_CENTS[shipping_method]
            last = self._row("SELECT max(CAST(substr(order_id, 5) AS INTEGER)) AS n FROM orders")["n"] or 10000
            order_id = f"ORD-{last + 1:05d}"
            self.db.execute("INSERT INTO orders VALUES (?, ?, 'processing', ?, ?, ?, NULL)",
                            (order_id, self.today.isoformat(), shipping_method, payment_method, shipping))
            self.db.executemany("INSERT INTO order_items VALUES (?, ?, ?, ?)",
                                [(order_id, r["product_id"], r["quantity"], r["price_cents"]) for r in lines])
            self.db.executemany("UPDATE products SET stock = stock - ? WHERE product_id = ?",
                                [(r["quantity"], r["product_id"]) for r in lines])
            self.db.execute("DELETE FROM cart_items")
        arrival = self.today + timedelta(days=DELIVERY_DAYS[shipping_method])
        return {"ok": True, "order_id": order_id, "status": "processing", "placed_on": self.today.isoformat(),
                "items": [{"product_id": r["product_id"], "name": r["name"], "quantity": r["quantity"]} for r in lines],
                "subtotal": _money(subtotal), "shipping": _money(shipping), "total": _money(subtotal + shipping),
                "shipping_method": shipping_method, "payment_method": payment_method,
                "shipping_address": self.customer["shipping_address"], "estimated_delivery": arrival.isoformat()}

    # ------------------------------------------------------------------- orders
    def list_orders(self, status: str = "any", limit: int = 10) -> dict[str, Any]:
        rows = self._rows(
            "SELECT o.order_id, o.placed_on, o.status, o.shipping_cents, "
            "sum(i.quantity) AS item_count, sum(i.quantity * i.unit_price_cents) AS subtotal "
            "FROM orders o JOIN order_items i USING (order_id) WHERE (? = 'any' OR o.status = ?) "
            "GROUP BY o.order_id ORDER BY o.placed_on DESC, o.order_id DESC LIMIT ?", (status, status, limit))
        orders = [{"order_id": r["order_id"], "placed_on": r["placed_on"], "status": r["status"],
                   "item_count": r["item_count"], "total": _money(r["subtotal"] + r["shipping_cents"])} for r in rows]
        return {"ok": True, "count": len(orders), "orders": orders}

    def order_status(self, order_id: str) -> dict[str, Any]:
        order = self._order(order_id)
        if order is None:
            return self._unknown_order(order_id)
        lines = self._order_lines(order_id)
        subtotal = sum(r["quantity"] * r["unit_price_cents"] for r in lines)
        shipment = self._row("SELECT * FROM shipments WHERE order_id = ?", (order_id,))
        returns = self._rows("SELECT return_id, product_id, quantity, status FROM returns WHERE order_id = ? "
                             "ORDER BY return_id", (order_id,))
        return {"ok": True, "order_id": order_id, "status": order["status"], "placed_on": order["placed_on"],
                "items": [{"product_id": r["product_id"], "name": r["name"], "quantity": r["quantity"],
                           "unit_price": _money(r["unit_price_cents"])} for r in lines],
                "subtotal": _money(subtotal), "shipping": _money(order["shipping_cents"]),
                "total": _money(subtotal + order["shipping_cents"]), "shipping_method": order["shipping_method"],
                "payment_method": order["payment_method"], "cancelled_on": order["cancelled_on"],
                "delivered_on": shipment["delivered_on"] if shipment else None,
                "can_cancel": order["status"] == "processing", "returns": [dict(r) for r in returns]}

    def track_shipment(self, order_id: str) -> dict[str, Any]:
        order = self._order(order_id)
        if order is None:
            return self._unknown_order(order_id)
        shipment = self._row("SELECT * FROM shipments WHERE order_id = ?", (order_id,))
        if shipment is None:
            error = "order_cancelled" if order["status"] == "cancelled" else "not_shipped_yet"
            return tool_failure(error, f"Order {order_id} has no shipment (status: {order['status']}).",
                                order_id=order_id, status=order["status"])
        events = self._rows("SELECT date, location, description FROM shipment_events WHERE order_id = ? "
                            "ORDER BY seq", (order_id,))
        return {"ok": True, "order_id": order_id, "carrier": shipment["carrier"],
                "tracking_number": shipment["tracking_number"], "shipped_on": shipment["shipped_on"],
                "estimated_delivery": shipment["estimated_delivery"], "delivered_on": shipment["delivered_on"],
                "latest": dict(events[-1]) if events else None, "events": [dict(e) for e in events]}

    def cancel_order(self, order_id: str) -> dict[str, Any]:
        with self._lock, self.db:
            order = self._order(order_id)
            if order is None:
                return self._unknown_order(order_id)
            if order["status"] != "processing":
                refusals = {
                    "shipped": ("already_shipped", "it has already shipped; request a return once it arrives"),
                    "delivered": ("already_delivered", "it was delivered; request a return instead"),
                    "cancelled": ("already_cancelled", "it was already cancelled"),
                }
                error, why = refusals[order["status"]]
                return tool_failure(error, f"Order {order_id} cannot be cancelled: {why}.", order_id=order_id,
                                    status=order["status"])
            lines = self._order_lines(order_id)
            self.db.execute("UPDATE orders SET status = 'cancelled', cancelled_on = ? WHERE order_id = ?",
                            (self.today.isoformat(), order_id))
            self.db.executemany("UPDATE products SET stock = stock + ? WHERE product_id = ?",
                                [(r["quantity"], r["product_id"]) for r in lines])
        refund = sum(r["quantity"] * r["unit_price_cents"] for r in lines) + order["shipping_cents"]
        return {"ok": True, "order_id": order_id, "status": "cancelled", "cancelled_on": self.today.isoformat(),
                "refund_amount": _money(refund), "refund_to": order["payment_method"]}

    def request_return(self, order_id: str, product_id: str, reason: str, quantity: int = 1,
                       resolution: str = "refund") -> dict[str, Any]:
        with self._lock, self.db:
            order = self._order(order_id)
            if order is None:
                return self._unknown_order(order_id)
            if order["status"] != "delivered":
                return tool_failure("not_delivered",
                                    f"Order {order_id} has not been delivered (status: {order['status']}).",
                                    order_id=order_id, status=order["status"])
            line = self._row("SELECT oi.*, p.name, p.final_sale FROM order_items oi JOIN products p "
                             "USING (product_id) WHERE order_id = ? AND product_id = ?", (order_id, product_id))
            if line is None:
                return tool_failure("not_in_order", f"{product_id} is not part of order {order_id}.",
                                    suggestions=[r["product_id"] for r in self._order_lines(order_id)],
                                    order_id=order_id, product_id=product_id)
            if line["final_sale"]:
                return tool_failure("final_sale", f"{line['name']} is a final-sale item and cannot be returned.",
                                    order_id=order_id, product_id=product_id)
            delivered = date.fromisoformat(self._row("SELECT delivered_on FROM shipments WHERE order_id = ?",
                                                     (order_id,))["delivered_on"])
            deadline = delivered + timedelta(days=self.return_window_days)
            if self.today > deadline:
                return tool_failure("return_window_closed", f"The return window closed on {deadline.isoformat()}.",
                                    order_id=order_id, delivered_on=delivered.isoformat(),
                                    deadline=deadline.isoformat())
            returned = self._row("SELECT coalesce(sum(quantity), 0) AS n FROM returns WHERE order_id = ? "
                                 "AND product_id = ?", (order_id, product_id))["n"]
            left = line["quantity"] - returned
            if quantity > left:
                return tool_failure("already_returned",
                                    f"{returned} of {line['quantity']} {line['name']} already returned; "
                                    f"{left} can still be returned.", order_id=order_id, product_id=product_id,
                                    returnable_quantity=left)
            count = self._row("SELECT count(*) AS n FROM returns")["n"]
            return_id = f"RMA-{count + 1:05d}"
            amount = quantity * line["unit_price_cents"]
            self.db.execute("INSERT INTO returns VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'approved')",
                            (return_id, order_id, product_id, quantity, reason, resolution, amount,
                             self.today.isoformat()))
        return {"ok": True, "return_id": return_id, "order_id": order_id, "product_id": product_id,
                "quantity": quantity, "reason": reason, "resolution": resolution, "status": "approved",
                "amount": _money(amount), "ship_back_by": (self.today + timedelta(days=14)).isoformat()}
