"""The finance tool set's shipped data (read-only) and the SQL sandbox over it.

Data files, produced once by ``_generate_data.py``: ``prices.csv`` (daily closes), ``companies.json``,
``fx_rates.json``, ``transactions.csv`` and ``budgets.json``. "Today" is the last trading day in the data;
nothing reads the system clock.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

__all__ = ["DATA_FILES", "FinanceData", "PricePoint", "load_data", "money", "run_select", "significant", "unknown"]

DATA_FILES = ("prices.csv", "companies.json", "fx_rates.json", "transactions.csv", "budgets.json")


def _text(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def money(value: float, decimals: int = 2) -> float | int:
    """``value`` rounded to ``decimals`` places (an int when there are none, as for yen)."""
    return round(value) if decimals == 0 else round(value, decimals)


def significant(value: float, digits: int = 6) -> float:
    """``value`` rounded to ``digits`` significant digits (for exchange rates of any size)."""
    return float(f"{value:.{digits}g}")


def unknown(kind: str, value: str, known: list[str]) -> dict[str, Any]:
    """The structured result for a symbol or code that is valid in form but absent from the data."""
    return {"ok": False, "reason": f"unknown {kind} {value!r}; not in the shipped data", "known": known}


@dataclass(frozen=True)
class PricePoint:
    date: date
    close: float
    volume: int


@dataclass(frozen=True)
class FinanceData:
    """Everything the tools read: companies, price series, currencies, transactions and budgets."""

    companies: Mapping[str, dict[str, str]]
    prices: Mapping[str, tuple[PricePoint, ...]]
    currencies: Mapping[str, dict[str, Any]]
    fx_as_of: date
    transactions: tuple[dict[str, Any], ...]
    budgets: Mapping[str, float]

    @property
    def as_of(self) -> date:
        """The last trading day in the data: the tools' "today"."""
        return max(series[-1].date for series in self.prices.values())

    @property
    def first_day(self) -> date:
        return min(series[0].date for series in self.prices.values())

    def symbols(self) -> list[str]:
        return sorted(self.companies)

    def currency_codes(self) -> list[str]:
        return sorted(self.currencies)

    def per_usd(self, code: str) -> float:
        return self.currencies[code]["per_usd"]

    def rate(self, base: str, quote: str) -> float:
        """Units of ``quote`` per one unit of ``base`` (cross rate through USD)."""
        return self.per_usd(quote) / self.per_usd(base)

    def months(self) -> list[str]:
        return sorted({t["date"][:7] for t in self.transactions})


@cache
def load_data() -> FinanceData:
    """The shipped data, parsed once and shared (its containers are read-only)."""
    series: dict[str, list[PricePoint]] = {}
    for row in csv.DictReader(io.StringIO(_text("prices.csv"))):
        point = PricePoint(date.fromisoformat(row["date"]), float(row["close"]), int(row["volume"]))
        series.setdefault(row["symbol"], []).append(point)
    companies = {c["symbol"]: MappingProxyType(c) for c in json.loads(_text("companies.json"))["companies"]}
    fx = json.loads(_text("fx_rates.json"))
    transactions = tuple(
        MappingProxyType({**row, "amount": float(row["amount"])})
        for row in csv.DictReader(io.StringIO(_text("transactions.csv")))
    )
    return FinanceData(
        companies=MappingProxyType(companies),
        prices=MappingProxyType({s: tuple(sorted(points, key=lambda p: p.date)) for s, points in series.items()}),
        currencies=MappingProxyType({c: MappingProxyType(v) for c, v in fx["currencies"].items()}),
        fx_as_of=date.fromisoformat(fx["as_of"]),
        transactions=transactions,
        budgets=MappingProxyType(json.loads(_text("budgets.json"))["monthly_budgets"]),
    )


# --------------------------------------------------------------------------------------- SQL sandbox
SQL_TABLES = {
    "transactions": "id TEXT PRIMARY KEY, date TEXT, merchant TEXT, category TEXT, amount REAL, account TEXT",
    "prices": "date TEXT, symbol TEXT, close REAL, volume INTEGER",
    "companies": "symbol TEXT PRIMARY KEY, name TEXT, sector TEXT, exchange TEXT, currency TEXT",
}
# Everything else (writes, PRAGMA, ATTACH, DDL, transactions) is denied by the authorizer.
_ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
_LEADING_COMMENTS = re.compile(r"^\s*(?:(?:--[^\n]*(?:\n|$))|(?:/\*.*?\*/)|\s)*", re.DOTALL)
_MAX_VALUE_BYTES = 100_000


def _sandbox(data: FinanceData) -> sqlite3.Connection:
    """A private in-memory database with the shipped tables, then locked down: read-only, SELECT-only."""
    db = sqlite3.connect(":memory:")
    for table, columns in SQL_TABLES.items():
        db.execute(f"CREATE TABLE {table} ({columns})")
    db.executemany("INSERT INTO transactions VALUES (:id, :date, :merchant, :category, :amount, :account)",
                   [dict(t) for t in data.transactions])
    db.executemany("INSERT INTO prices VALUES (?, ?, ?, ?)",
                   [(p.date.isoformat(), s, p.close, p.volume) for s, pts in data.prices.items() for p in pts])
    db.executemany("INSERT INTO companies VALUES (:symbol, :name, :sector, :exchange, :currency)",
                   [dict(c) for c in data.companies.values()])
    db.commit()
    db.execute("PRAGMA query_only = ON")
    db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, _MAX_VALUE_BYTES)
    db.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    db.set_authorizer(lambda action, *_: sqlite3.SQLITE_OK if action in _ALLOWED_ACTIONS else sqlite3.SQLITE_DENY)
    return db


def _cell(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, bytes):
        return value.hex()
    return value


def run_select(data: FinanceData, sql: str, *, timeout_s: float, max_rows: int) -> dict[str, Any]:
    """Run one read-only SELECT over the shipped tables; every failure is a structured result, not an error."""
    body = _LEADING_COMMENTS.sub("", sql, count=1)
    first_word = body.split(None, 1)[0].lower() if body.split() else ""
    if first_word not in ("select", "with"):
        return {"ok": False, "reason": "not_select", "message": "Only a single SELECT query (or WITH ... SELECT) "
                "is allowed; the data is read-only."}
    db = _sandbox(data)
    deadline = time.monotonic() + timeout_s
    db.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
    try:
        cursor = db.execute(sql)
        rows = cursor.fetchmany(max_rows + 1)
        columns = [d[0] for d in cursor.description or ()]
    except (sqlite3.ProgrammingError, sqlite3.Warning) as error:  # more than one statement
        return {"ok": False, "reason": "one_statement_only", "message": str(error)}
    except sqlite3.DatabaseError as error:
        message = str(error)
        if "interrupted" in message:
            return {"ok": False, "reason": "timeout",
                    "message": f"The query ran longer than {timeout_s:g} s and was stopped."}
        reason = "not_allowed" if "not authorized" in message or "readonly" in message else "sql_error"
        return {"ok": False, "reason": reason, "message": message}
    finally:
        db.close()
    return {
        "ok": True,
        "columns": columns,
        "rows": [[_cell(v) for v in row] for row in rows[:max_rows]],
        "row_count": min(len(rows), max_rows),
        "truncated": len(rows) > max_rows,
    }
