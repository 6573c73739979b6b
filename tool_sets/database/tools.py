"""The database tools: list the tables of a SQLite database, describe one, and run read-only SELECT queries.

The database file is opened read-only (SQLite URI ``mode=ro``) and queries run in ``tool_sets._sandbox.sql``:
one SELECT, allow-listed functions, and limits on rows, value sizes and time, in a worker process that is killed
if it outruns the time limit (``tool_sets._sandbox.sql_worker``); a query asked while others were running says
how long it waited (``queued_s``). The default database is a small lending library built from ``library.sql``
into a temporary file at first use; ``database=`` names another.
"""

from __future__ import annotations

import difflib
import sqlite3
import tempfile
import threading
import time
from contextlib import closing
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from tool_selection import BaseTool, register_tool
from tool_selection.tool import StrictArguments
from tool_selection.tool_failures import tool_failure
from tool_sets._sandbox.sql import MAX_RESULT_BYTES, MAX_VALUE_BYTES, QueryRefused
from tool_sets._sandbox.sql_worker import SqlSource, run_query, wait_details

__all__ = ["TOOLS", "DatabaseTool", "DescribeTable", "ListTables", "QueryDatabase", "sample_database"]

_SAMPLE_LOCK = threading.Lock()
_SAMPLE_ROWS = 3


@cache
def _built_sample() -> tuple[tempfile.TemporaryDirectory, Path]:
    directory = tempfile.TemporaryDirectory(prefix="tool-selection-db-")
    path = Path(directory.name, "library.db")
    with closing(sqlite3.connect(path)) as db:
        db.executescript(resources.files(__package__).joinpath("library.sql").read_text(encoding="utf-8"))
    return directory, path


def sample_database() -> Path:
    """The shipped library database (authors, books, members, loans), built once per process in a temporary
    directory that is removed when the interpreter exits."""
    with _SAMPLE_LOCK:
        return _built_sample()[1]


def _quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


class DatabaseTool(BaseTool, abstract=True):
    """Base of the database tools: the file they read and the limits of a query."""

    category = "database"
    database: Path = Field(default_factory=sample_database, exclude=True,
                           description="The SQLite file to read; it is never written.")
    timeout_s: float = Field(default=1.0, gt=0, description="Wall-clock limit of one query, in seconds.")
    max_rows: int = Field(default=100, ge=1, description="Most rows a query returns; more are cut off.")
    # Not above the default: replace() and instr() are quadratic (2 s at 1 MB), so such queries would only time out.
    max_value_bytes: int = Field(default=MAX_VALUE_BYTES, ge=1_000, le=MAX_VALUE_BYTES,
                                 description="Largest string or blob a query may build or return.")
    max_result_bytes: int = Field(default=MAX_RESULT_BYTES, ge=1_000, description="Most bytes of cells returned.")

    @field_validator("database")
    @classmethod
    def _existing_file(cls, database: Path) -> Path:
        resolved = database.resolve()
        if not resolved.is_file():
            raise ValueError(f"database {str(database)!r} is not an existing file; pass the path of a SQLite file")
        return resolved

    def _select(self, sql: str) -> dict[str, Any]:
        """Rows of one sandboxed SELECT, or a structured failure."""
        try:
            result = run_query(SqlSource.file(self.database), sql, timeout_s=self.timeout_s, max_rows=self.max_rows,
                               max_result_bytes=self.max_result_bytes, max_value_bytes=self.max_value_bytes)
        except QueryRefused as refusal:
            return tool_failure(refusal.code, refusal.message, suggestions=refusal.suggestions,
                                **wait_details(refusal))
        return {"ok": True, "columns": result.columns, "rows": result.rows, "row_count": len(result.rows),
                "truncated": result.truncated, **wait_details(result)}

    def _tables(self) -> dict[str, dict[str, Any]]:
        """Every table and view: ``{name: {"type", "columns": pragma table_info rows, "foreign_keys", "rows"}}``.
        Read over a trusted read-only connection (the sandbox refuses PRAGMA), within the time limit."""
        deadline = time.monotonic() + self.timeout_s
        uri = f"{self.database.as_uri()}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True)) as db:
            db.set_progress_handler(lambda: time.monotonic() > deadline, 1000)
            listed = db.execute("SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') "
                                "AND name NOT LIKE 'sqlite_%' ORDER BY name").fetchall()
            return {name: {
                "type": kind,
                "columns": db.execute("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?)",
                                      (name,)).fetchall(),
                "foreign_keys": db.execute('SELECT "from", "table", "to" FROM pragma_foreign_key_list(?)',
                                           (name,)).fetchall(),
                "rows": db.execute(f"SELECT count(*) FROM {_quoted(name)}").fetchone()[0],
            } for name, kind in listed}


def _schema_failure(error: sqlite3.DatabaseError) -> dict[str, Any]:
    if str(error) == "interrupted":
        return tool_failure("timeout", "Reading the database's schema took too long.")
    return tool_failure("sql_error", f"The database could not be read: {error}.")


@register_tool
class ListTables(DatabaseTool):
    NAME = "list_tables"
    description = ("List the tables of the database with their columns and row counts. The default database is a "
                   "small lending library (authors, books, members, loans). Call this before writing a query.")

    def execute(self) -> dict[str, Any]:
        try:
            tables = self._tables()
        except sqlite3.DatabaseError as error:
            return _schema_failure(error)
        return {"ok": True, "database": self.database.name, "tables": [
            {"name": name, "type": info["type"], "columns": [c[0] for c in info["columns"]], "rows": info["rows"]}
            for name, info in tables.items()]}


@register_tool
class DescribeTable(DatabaseTool):
    NAME = "describe_table"
    description = ("Describe one table of the database: each column's type, whether it is required or part of "
                   "the primary key, the foreign keys to other tables, the row count and a few sample rows.")

    class Arguments(StrictArguments):
        table: str = Field(min_length=1, max_length=128, description="The table's name, e.g. 'books'.")

    def execute(self, table: str) -> dict[str, Any]:
        try:
            tables = self._tables()
        except sqlite3.DatabaseError as error:
            return _schema_failure(error)
        name = next((t for t in tables if t.lower() == table.lower()), None)
        if name is None:
            return tool_failure("unknown_table", f"There is no table {table!r}.", table=table,
                                suggestions=difflib.get_close_matches(table, list(tables), n=3) or list(tables))
        info = tables[name]
        sample = self._select(f"SELECT * FROM {_quoted(name)} LIMIT {_SAMPLE_ROWS}")
        return {
            "ok": True, "table": name, "type": info["type"], "rows": info["rows"],
            "columns": [{"name": column, "type": kind, "required": bool(not_null), "primary_key": bool(key),
                         "default": default} for column, kind, not_null, default, key in info["columns"]],
            "foreign_keys": [{"column": column, "references": f"{other}.{target}" if target else other}
                             for column, other, target in info["foreign_keys"]],
            "sample_rows": sample.get("rows", []),
        }


@register_tool
class QueryDatabase(DatabaseTool):
    NAME = "query_database"
    description = ("Run one read-only SQLite SELECT query on the database and return the columns and rows. The "
                   "default database is a small lending library (authors, books, members, loans); use list_tables "
                   "or describe_table to see the columns.")

    class Arguments(StrictArguments):
        sql: str = Field(min_length=1, max_length=2000,
                         description="A single SELECT statement, e.g. \"SELECT genre, COUNT(*) FROM books GROUP BY "
                                     "genre\".")

    def execute(self, sql: str) -> dict[str, Any]:
        return self._select(sql)


TOOLS = (ListTables, DescribeTable, QueryDatabase)
