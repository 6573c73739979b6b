"""Domain tool sets. Each module defines its tools with ``@register_tool`` and exposes ``TOOL_SET``.

Load one by name with ``tool_selection.load_tool_set("finance")``.
"""
