"""The ``database`` tool set: list tables, describe a table, and run read-only SELECT queries on a SQLite file.

The file is opened read-only and queries run in the shared SQL sandbox (``tool_sets._sandbox.sql``). By
default the tools read a small lending library built from ``library.sql``; pass ``database=`` for another.
"""

from tool_selection import ToolSet
from tool_sets.database.tools import TOOLS, DatabaseTool, DescribeTable, ListTables, QueryDatabase, sample_database

__all__ = ["TOOLS", "TOOL_SET", "DatabaseTool", "DescribeTable", "ListTables", "QueryDatabase", "sample_database"]

TOOL_SET = ToolSet(
    name="database",
    description="A SQLite database (by default a small lending library): list its tables, describe one, and run "
                "read-only SELECT queries.",
    tools=TOOLS,
)
