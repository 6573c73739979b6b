"""A read-only SQLite sandbox: one SELECT per call, an allow-list of functions, and bounds on time and size.

The time limit here is a progress handler checked every ``PROGRESS_OPCODES`` virtual-machine steps. One step
that calls a function runs to completion, and some functions run for seconds on values of ``max_value_bytes``
(``GLOB`` and ``LIKE`` with many wildcards, ``instr``), so the tools run queries through ``sql_worker``, which
kills a query's process at the limit. The guards below still refuse what they can name: ``printf`` and
``format`` refuse widths and precisions beyond ``max_value_bytes`` (SQLite's own loops over them for seconds),
and two-argument ``trim``, ``ltrim`` and ``rtrim`` are replaced by linear versions (SQLite's are quadratic: 2 s
on 100 KB).
"""

from __future__ import annotations

import difflib
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "ALLOWED_FUNCTIONS", "MAX_RESULT_BYTES", "MAX_VALUE_BYTES", "PROGRESS_OPCODES", "QueryRefused", "QueryResult",
    "SqlSandbox", "connect", "open_read_only",
]

MAX_VALUE_BYTES = 100_000
MAX_RESULT_BYTES = 200_000
PROGRESS_OPCODES = 100

ALLOWED_FUNCTIONS = frozenset({
    # aggregates and window functions
    "avg", "count", "group_concat", "max", "min", "sum", "total",
    "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value",
    "last_value", "nth_value",
    # numbers (the math functions exist only where SQLite was built with them)
    "abs", "round", "sign", "random", "ceil", "ceiling", "floor", "trunc", "sqrt", "pow", "power", "exp", "ln",
    "log", "log10", "log2", "mod", "pi",
    # text
    "length", "lower", "upper", "substr", "substring", "trim", "ltrim", "rtrim", "replace", "instr", "like", "glob",
    "printf", "format", "hex", "quote", "char", "unicode",
    # NULLs, types and planner hints
    "coalesce", "ifnull", "nullif", "iif", "typeof", "likely", "unlikely", "likelihood",
    # dates
    "date", "time", "datetime", "julianday", "strftime", "unixepoch",
    # bounded by SQLITE_LIMIT_LENGTH
    "zeroblob",
})

_READ_ONLY_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE}
_ACTION_NAMES = {getattr(sqlite3, f"SQLITE_{name}"): name.replace("_", " ") for name in (
    "ALTER_TABLE", "ANALYZE", "ATTACH", "CREATE_INDEX", "CREATE_TABLE", "CREATE_TEMP_INDEX", "CREATE_TEMP_TABLE",
    "CREATE_TEMP_TRIGGER", "CREATE_TEMP_VIEW", "CREATE_TRIGGER", "CREATE_VIEW", "CREATE_VTABLE", "DELETE",
    "DETACH", "DROP_INDEX", "DROP_TABLE", "DROP_TEMP_INDEX", "DROP_TEMP_TABLE", "DROP_TEMP_TRIGGER",
    "DROP_TEMP_VIEW", "DROP_TRIGGER", "DROP_VIEW", "DROP_VTABLE", "INSERT", "PRAGMA", "REINDEX", "SAVEPOINT",
    "TRANSACTION", "UPDATE",
)}
_SCHEMA_TABLES = {"sqlite_master", "sqlite_temp_master", "sqlite_schema", "sqlite_temp_schema"}
_LEADING_COMMENTS = re.compile(r"^\s*(?:(?:--[^\n]*(?:\n|$))|(?:/\*.*?\*/)|\s)*", re.DOTALL)
# One printf conversion as SQLite parses it: flags, width, precision, length modifier, conversion character.
_PRINTF_SPEC = re.compile(r"%[-+ 0#,!]*(\*|[1-9]\d*)?(?:\.(\*|\d*))?(?:ll?)?(.)?", re.DOTALL)
_PRINTF_CONVERSIONS = frozenset("dsgzqQwcouxXfeEGinp%r")  # any other character ends SQLite's formatting


class QueryRefused(Exception):
    """A query the sandbox would not run, or stopped. ``code``: ``not_select``, ``one_statement_only``,
    ``not_allowed``, ``timeout``, ``sql_error`` or (in a worker, ``sql_worker``) ``busy``. The times are those of
    ``QueryResult``."""

    def __init__(self, code: str, message: str, suggestions: Sequence[str] = (), *, queued: bool = False,
                 queued_s: float = 0.0, run_s: float = 0.0):
        super().__init__(message)
        self.code, self.message, self.suggestions = code, message, list(suggestions)
        self.queued, self.queued_s, self.run_s = queued, queued_s, run_s


@dataclass(frozen=True)
class QueryResult:
    """Rows of a SELECT. Through a worker (``sql_worker.run_query``) also: ``queued_s``, the wait before the
    query ran (for a free slot and a worker to start), ``run_s``, from the query sent to its answer or its
    worker killed, and ``queued``, whether other queries were running when it was asked."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool
    queued_s: float = 0.0
    run_s: float = 0.0
    queued: bool = False


class SqlSandbox(sqlite3.Connection):
    """A connection that, once ``lock_down()`` has run, is read-only and answers only bounded SELECTs."""

    def lock_down(self, *, max_value_bytes: int = MAX_VALUE_BYTES) -> SqlSandbox:
        """Make this connection read-only and SELECT-only; load data first, since nothing can be written after."""
        self.max_value_bytes = max_value_bytes
        self._refusals: list[QueryRefused] = []  # why the guards below said no, for the failure message
        self._plain = sqlite3.connect(":memory:")  # SQLite's own printf and casts, for the bounded versions
        self._plain.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)
        self.execute("PRAGMA query_only = ON")
        self.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)
        self.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        for name in ("printf", "format"):
            self.create_function(name, -1, self._bounded_printf, deterministic=True)
        for name, left, right in (("trim", True, True), ("ltrim", True, False), ("rtrim", False, True)):
            self.create_function(name, 2, self._linear_trim(left, right), deterministic=True)
        self.set_authorizer(self._authorize)
        return self

    def close(self) -> None:
        if hasattr(self, "_plain"):
            self._plain.close()
        super().close()

    # ----------------------------------------------------------------- queries
    def select(self, sql: str, *, timeout_s: float, max_rows: int,
               max_result_bytes: int = MAX_RESULT_BYTES) -> QueryResult:
        """Run one SELECT (or WITH ... SELECT) within ``timeout_s``; raises ``QueryRefused``."""
        if not hasattr(self, "_plain"):
            raise RuntimeError("SqlSandbox.select() before lock_down(): call db.lock_down() once the data is loaded")
        body = _LEADING_COMMENTS.sub("", sql, count=1)
        if (body.split(None, 1) or [""])[0].lower() not in ("select", "with"):
            raise QueryRefused("not_select", "Only a single SELECT query (or WITH ... SELECT) is allowed; the data "
                                             "is read-only.")
        self._refusals.clear()
        deadline = time.monotonic() + timeout_s
        self.set_progress_handler(lambda: time.monotonic() > deadline, PROGRESS_OPCODES)
        try:
            cursor = self.execute(sql)
            columns = [d[0] for d in cursor.description or ()]
            rows, size = [], 0
            for row in cursor:
                cells = [_cell(value) for value in row]
                size += sum(len(c) if isinstance(c, str) else 8 for c in cells)
                if len(rows) == max_rows or size > max_result_bytes:
                    return QueryResult(columns, rows, truncated=True)
                rows.append(cells)
            return QueryResult(columns, rows, truncated=False)
        except (sqlite3.ProgrammingError, sqlite3.Warning) as error:  # the SQL text itself: statements, NULs, ?
            code = "one_statement_only" if "one statement" in str(error) else "sql_error"
            raise QueryRefused(code, str(error)) from None
        except UnicodeEncodeError:
            raise QueryRefused("sql_error", "The query is not valid Unicode text (it has a lone surrogate).") from None
        except sqlite3.DatabaseError as error:
            raise self._refusal(error, timeout_s) from None
        finally:
            self.set_progress_handler(None, 0)

    def _refusal(self, error: sqlite3.DatabaseError, timeout_s: float) -> QueryRefused:
        message = str(error)
        if self._refusals:
            return self._refusals[0]
        if message == "interrupted":
            return QueryRefused("timeout", f"The query ran longer than {timeout_s:g} s and was stopped.")
        if "not authorized" in message or "readonly" in message:
            return QueryRefused("not_allowed", message)
        if "too big" in message:
            return QueryRefused("sql_error", f"A value would be larger than {self.max_value_bytes:,} bytes, the "
                                             "most this sandbox holds.")
        return QueryRefused("sql_error", message)

    # ------------------------------------------------------------- the guards
    def _authorize(self, action: int, arg1: str | None, arg2: str | None, *_: Any) -> int:
        if action in _READ_ONLY_ACTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION:
            if arg2 and arg2.lower() in ALLOWED_FUNCTIONS:
                return sqlite3.SQLITE_OK
            self._refuse(f"{arg2}() is not allowed in this sandbox; use the usual aggregate, text, number and date "
                         "functions (count, sum, round, substr, lower, date, strftime, ...).",
                         difflib.get_close_matches(str(arg2).lower(), sorted(ALLOWED_FUNCTIONS), n=3))
        elif arg1 in _SCHEMA_TABLES:  # also what table-valued functions such as pragma_table_info() ask for
            self._refuse("Changing the schema, and table-valued functions such as pragma_table_info() or json_each(), "
                         "are not allowed: the database is read-only and only SELECT queries run.")
        else:
            kind = _ACTION_NAMES.get(action, f"action {action}")
            target = f" {arg1}" if arg1 and action in (sqlite3.SQLITE_PRAGMA, sqlite3.SQLITE_ATTACH) else ""
            self._refuse(f"{kind}{target} is not allowed: the database is read-only and only SELECT queries run.")
        return sqlite3.SQLITE_DENY

    def _refuse(self, message: str, suggestions: Sequence[str] = ()) -> None:
        self._refusals.append(QueryRefused("not_allowed", message, suggestions))

    def _bounded_printf(self, fmt: Any = None, *args: Any) -> Any:
        if isinstance(fmt, str):
            for size in _printf_sizes(fmt, args, self._integer):
                if abs(size) > self.max_value_bytes:
                    message = (f"printf()/format() width or precision {size} is larger than "
                               f"{self.max_value_bytes:,}, the longest value this sandbox holds.")
                    self._refuse(message)
                    raise ValueError(message)
        placeholders = ", ".join("?" * (1 + len(args)))
        return self._plain.execute(f"SELECT printf({placeholders})", (fmt, *args)).fetchone()[0]

    def _linear_trim(self, left: bool, right: bool) -> Callable[[Any, Any], str | None]:
        def trim(value: Any, characters: Any) -> str | None:
            if value is None or characters is None:
                return None
            text, drop = self._text(value), set(self._text(characters))
            start, end = 0, len(text)
            while left and start < end and text[start] in drop:
                start += 1
            while right and end > start and text[end - 1] in drop:
                end -= 1
            return text[start:end]

        return trim

    def _integer(self, value: Any) -> int:
        return self._plain.execute("SELECT CAST(? AS INTEGER)", (value,)).fetchone()[0] or 0

    def _text(self, value: Any) -> str:
        return value if isinstance(value, str) else self._plain.execute("SELECT CAST(? AS TEXT)", (value,)).fetchone()[0]


def _printf_sizes(fmt: str, args: Sequence[Any], integer: Callable[[Any], int]) -> Iterator[int]:
    """Every width and precision SQLite's printf would use for ``fmt`` and ``args``, in order."""
    remaining = iter(args)
    for spec in _PRINTF_SPEC.finditer(fmt):
        width, precision, conversion = spec.groups()
        for size in (width, precision):
            if size == "*":
                yield integer(next(remaining, 0))
            elif size:
                yield int(size)
        if conversion is None or conversion not in _PRINTF_CONVERSIONS:
            return
        if conversion not in "%n":
            next(remaining, None)


def _cell(value: Any) -> Any:
    return value.hex() if isinstance(value, bytes) else value


def connect(database: str = ":memory:", *, uri: bool = False) -> SqlSandbox:
    """A new connection to fill with data before calling ``lock_down()``."""
    return sqlite3.connect(database, uri=uri, factory=SqlSandbox)


def open_read_only(path: str | Path, *, max_value_bytes: int = MAX_VALUE_BYTES) -> SqlSandbox:
    """``path`` opened read-only (SQLite URI ``mode=ro``) and locked down."""
    db = connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    return db.lock_down(max_value_bytes=max_value_bytes)
