"""The ``mixed`` tool set: every tool of the five domain sets (treasure hunt, events, e-commerce, finance,
language) in one registry, so that a request must be routed to the right domain as well as to the right tool.

The set is built with ``ToolSet.merged``, which refuses two different tools with one name
(``DuplicateToolError``): the domain sets share no tool name, and ``tests/evals/test_mixed_suite.py`` keeps it so.
Its suite, ``evals/suites/mixed.jsonl``, is generated from the domain suites by ``evals/suites/build_mixed.py``.
"""

from tool_selection import ToolSet
from tool_sets.ecommerce import TOOL_SET as ECOMMERCE
from tool_sets.events import TOOL_SET as EVENTS
from tool_sets.finance import TOOL_SET as FINANCE
from tool_sets.language import TOOL_SET as LANGUAGE
from tool_sets.treasure_hunt import TOOL_SET as TREASURE_HUNT

__all__ = ["DOMAIN_SETS", "TOOL_SET"]

DOMAIN_SETS = (TREASURE_HUNT, EVENTS, ECOMMERCE, FINANCE, LANGUAGE)

TOOL_SET = ToolSet(
    name="mixed",
    description="Every domain tool together: a treasure-hunt game, event tickets, an online shop, personal "
                "finance and language tools.",
    tools=TREASURE_HUNT.merged(EVENTS, ECOMMERCE, FINANCE, LANGUAGE, name="mixed").tools,
)
