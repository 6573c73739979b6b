"""The finance tool set's shipped data (read-only) and the SQL sandbox over it.

Data files, produced once by ``_generate_data.py``: ``prices.csv`` (daily closes), ``companies.json``,
``fx_rates.json``, ``transactions.csv`` and ``budgets.json``. "Today" is the last trading day in the data;
nothing reads the system clock.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import threading
from collections.abc import Mapping
from contextlib import closing
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from tool_selection.tool_failures import tool_failure
from tool_sets._sandbox.sql import QueryRefused, SqlSandbox
from tool_sets._sandbox.sql_worker import SqlSource, open_image, run_query, wait_details

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
    """The failure for a ``kind`` ("symbol", "currency") valid in form but absent from the data: error
    ``unknown_<kind>``, the values the data has as suggestions, and the value asked for under ``kind``."""
    return tool_failure(f"unknown_{kind}", f"unknown {kind} {value!r}; not in the shipped data", suggestions=known,
                        **{kind: value})


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


_SOURCES: dict[int, tuple[FinanceData, SqlSource]] = {}  # id(data) -> (data, its database), for the few data sets
_SOURCES_LOCK = threading.Lock()
_MOST_SOURCES = 4


def _source(data: FinanceData) -> SqlSource:
    """The in-memory database of ``data``'s tables, built once per data set and queried in a worker."""
    with _SOURCES_LOCK:
        cached = _SOURCES.get(id(data))
        if cached is not None and cached[0] is data:
            return cached[1]
        with closing(sqlite3.connect(":memory:")) as db:
            _fill(db, data)
            source = SqlSource.image_of(db)
        if len(_SOURCES) >= _MOST_SOURCES:
            _SOURCES.pop(next(iter(_SOURCES)))
        _SOURCES[id(data)] = (data, source)
        return source


def _sandbox(data: FinanceData) -> SqlSandbox:
    """The locked-down database a worker queries for ``data``, opened here (``tool_sets._sandbox.sql``)."""
    return open_image(_source(data).image)


def _fill(db: sqlite3.Connection, data: FinanceData) -> None:
    for table, columns in SQL_TABLES.items():
        db.execute(f"CREATE TABLE {table} ({columns})")
    db.executemany("INSERT INTO transactions VALUES (:id, :date, :merchant, :category, :amount, :account)",
                   [dict(t) for t in data.transactions])
    db.executemany("INSERT INTO prices VALUES (?, ?, ?, ?)",
                   [(p.date.isoformat(), s, p.close, p.volume) for s, pts in data.prices.items() for p in pts])
    db.executemany("INSERT INTO companies VALUES (:symbol, :name, :sector, :exchange, :currency)",
                   [dict(c) for c in data.companies.values()])
    db.commit()


def run_select(data: FinanceData, sql: str, *, timeout_s: float, max_rows: int) -> dict[str, Any]:
    """Run one read-only SELECT over the shipped tables; every failure is a structured result, not an error:
    the shared failure shape with the sandbox's code (``not_select``, ``one_statement_only``, ``not_allowed``,
    ``timeout``, ``sql_error``, ``busy``) as ``error``. The query runs in a worker process
    (``tool_sets._sandbox.sql_worker``) that is killed if it outruns ``timeout_s``; a query asked while others
    were running says how long it waited (``queued_s``)."""
    try:
        result = run_query(_source(data), sql, timeout_s=timeout_s, max_rows=max_rows)
    except QueryRefused as refusal:
        return tool_failure(refusal.code, refusal.message, suggestions=refusal.suggestions, **wait_details(refusal))
    return {
        "ok": True,
        "columns": result.columns,
        "rows": [[round(v, 4) if isinstance(v, float) else v for v in row] for row in result.rows],
        "row_count": len(result.rows),
        "truncated": result.truncated,
        **wait_details(result),
    }
