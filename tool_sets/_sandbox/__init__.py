"""Shared sandboxes for tools that touch the machine: SQL (``sql``), file paths (``paths``) and processes
(``process``). They bound what a model's call can do; none is a security boundary against hostile code."""
