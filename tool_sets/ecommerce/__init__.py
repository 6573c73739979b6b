"""The ``ecommerce`` tool set: an online shop with a catalog, a cart, orders, shipments and returns.

Each tool acts on a ``Shop``, an in-memory SQLite database built from the shipped seed (``schema.sql``,
``products.csv``, ``orders.json``); the seed files are never written. "Today" is fixed in ``orders.json``.
"""

from tool_selection import ToolSet
from tool_sets.ecommerce.shop import Shop
from tool_sets.ecommerce.tools import TOOLS

__all__ = ["TOOL_SET", "Shop"]

TOOL_SET = ToolSet(
    name="ecommerce",
    description="An online shop: search and browse products, manage the cart, check out, and track, cancel "
                "or return orders.",
    tools=TOOLS,
)
