"""The finance tools: quotes and price history, portfolio value, currency conversion, loan and savings math,
and spending summaries or read-only SQL over the shipped transactions.

All tools compute offline over the shipped data (``data.py``); results are JSON-serialisable and rounded.
A request the data cannot answer gives the shared failure shape (``tool_selection.tool_failures``):
``{"ok": False, "error", "message", "suggestions", ...}``. A symbol or currency that is well formed but not in the
data gives ``unknown_symbol`` or ``unknown_currency`` with the known ones as suggestions; a SQL query the sandbox
refuses gives its code (``not_select``, ``not_allowed``, ``timeout``...).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any, Literal

from pydantic import (
    Field,
    InstanceOf,
    model_validator,
)

from tool_selection import BaseTool, register_tool
from tool_selection.argtypes import IsoDate, end_not_before_start
from tool_selection.tool import StrictArguments
from tool_selection.tool_failures import tool_failure
from tool_sets.finance.data import SQL_TABLES, FinanceData, load_data, money, run_select, significant, unknown

SpendingCategory = Literal["housing", "groceries", "dining", "transport", "utilities", "entertainment", "shopping",
                           "health"]
CompoundsPerYear = Literal[1, 2, 4, 12, 365]

SYMBOL = r"^[A-Z]{1,5}$"
CURRENCY = r"^[A-Z]{3}$"
MONTH = r"^\d{4}-(0[1-9]|1[0-2])$"

_DATA = load_data()
_FIRST, _AS_OF = _DATA.first_day.isoformat(), _DATA.as_of.isoformat()


def _symbol(purpose: str) -> Any:
    return Field(pattern=SYMBOL, max_length=5, description=f"{purpose} Ticker symbol in capitals, e.g. 'ACME'.")


def _currency(purpose: str) -> Any:
    return Field(pattern=CURRENCY, max_length=3,
                 description=f"{purpose} ISO 4217 code in capitals, e.g. 'USD' or 'EUR'.")


def _rate() -> Any:
    return Field(ge=0, le=100, description="Annual interest rate in percent, e.g. 6.5 for 6.5%.")


def _years(purpose: str) -> Any:
    return Field(ge=1, le=50, description=f"{purpose} in whole years (1-50).")


class FinanceTool(BaseTool, abstract=True):
    """Base of the finance tools: the read-only data they compute over."""

    category = "finance"
    data: InstanceOf[FinanceData] = Field(default_factory=load_data, exclude=True, repr=False,
                                          description="The shipped market, currency and transaction data.")

    def _company(self, symbol: str) -> dict[str, Any]:
        c = self.data.companies[symbol]
        return {"symbol": symbol, "name": c["name"], "currency": c["currency"]}

    def _unknown_currencies(self, *codes: str) -> dict[str, Any] | None:
        missing = [c for c in codes if c not in self.data.currencies]
        return unknown("currency", missing[0], self.data.currency_codes()) if missing else None


# ------------------------------------------------------------------------------------------ stocks
@register_tool
class GetStockPrice(FinanceTool):
    NAME = "get_stock_price"
    description = ("Latest quote for one stock: the most recent closing price, with the change from the previous "
                   "close and the day's volume. For prices over a period use get_price_history.")

    class Arguments(StrictArguments):
        symbol: str = _symbol("The stock to quote.")

    def execute(self, symbol: str) -> dict[str, Any]:
        series = self.data.prices.get(symbol)
        if series is None:
            return unknown("symbol", symbol, self.data.symbols())
        last, previous = series[-1], series[-2]
        change = last.close - previous.close
        return {"ok": True, **self._company(symbol), "price": last.close, "as_of": last.date.isoformat(),
                "previous_close": previous.close, "change": money(change),
                "change_percent": money(100 * change / previous.close), "volume": last.volume}


@register_tool
class GetPriceHistory(FinanceTool):
    NAME = "get_price_history"
    description = ("Daily closing prices of one stock over a date range, with the lowest and highest close, the "
                   f"average and the percent return over the range. Data covers {_FIRST} to {_AS_OF}. For just "
                   "the current price use get_stock_price.")

    class Arguments(StrictArguments):
        symbol: str = _symbol("The stock.")
        start_date: IsoDate | None = Field(default=None,
                                           description="First day of the range (YYYY-MM-DD); omit for the earliest.")
        end_date: IsoDate | None = Field(default=None,
                                         description="Last day, inclusive (YYYY-MM-DD); omit for the latest.")

        _dates_in_order = end_not_before_start()

    def execute(self, symbol: str, start_date: dt.date | None, end_date: dt.date | None) -> dict[str, Any]:
        series = self.data.prices.get(symbol)
        if series is None:
            return unknown("symbol", symbol, self.data.symbols())
        points = [p for p in series if (start_date is None or p.date >= start_date)
                  and (end_date is None or p.date <= end_date)]
        if not points:
            return tool_failure("no_trading_days", "no trading days in the requested range", symbol=symbol,
                                available_from=series[0].date.isoformat(), available_to=series[-1].date.isoformat())
        low = min(points, key=lambda p: p.close)
        high = max(points, key=lambda p: p.close)
        first, last = points[0], points[-1]
        return {
            "ok": True, **self._company(symbol),
            "start_date": first.date.isoformat(), "end_date": last.date.isoformat(), "trading_days": len(points),
            "first_close": first.close, "last_close": last.close,
            "min": {"date": low.date.isoformat(), "close": low.close},
            "max": {"date": high.date.isoformat(), "close": high.close},
            "mean_close": money(sum(p.close for p in points) / len(points)),
            "return_percent": money(100 * (last.close - first.close) / first.close),
            "closes": [{"date": p.date.isoformat(), "close": p.close} for p in points],
        }


@register_tool
class SearchTicker(FinanceTool):
    NAME = "search_ticker"
    description = ("Find ticker symbols by company name, symbol or sector (e.g. 'Globex' or 'healthcare'). "
                   "Returns matching companies without prices.")

    class Arguments(StrictArguments):
        query: str = Field(min_length=1, max_length=100,
                           description="Part of a company name, a symbol or a sector, e.g. 'Umbrella'.")

    def execute(self, query: str) -> dict[str, Any]:
        words = re.findall(r"[a-z0-9]+", query.lower())
        matches = []
        for symbol, company in sorted(self.data.companies.items()):
            text = " ".join([symbol, company["name"], company["sector"]]).lower()
            if words and all(w in text for w in words):
                matches.append({"symbol": symbol, **{k: company[k] for k in ("name", "sector", "exchange")}})
        result: dict[str, Any] = {"ok": True, "query": query, "count": len(matches), "matches": matches}
        if not matches:
            result["known"] = self.data.symbols()
        return result


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its local ``$ref``s replaced by the ``$defs`` they name (the defs must not recurse)."""
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, list):
            return [inline(n) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref", "")
        if ref.startswith("#/$defs/"):
            return inline({**defs[ref.removeprefix("#/$defs/")], **{k: v for k, v in node.items() if k != "$ref"}})
        return {k: inline(v) for k, v in node.items()}

    return inline(schema)


class Holding(StrictArguments):
    symbol: str = _symbol("The stock held.")
    shares: float = Field(gt=0, le=1e9, description="Number of shares held (fractions allowed).")


@register_tool
class ValuePortfolio(FinanceTool):
    NAME = "value_portfolio"
    description = ("Value a stock portfolio at the latest closing prices: each holding's value and weight, the "
                   "total, and the change since the previous close. Values are in USD.")

    class Arguments(StrictArguments):
        holdings: list[Holding] = Field(min_length=1, max_length=20,
                                        description="The positions, e.g. [{\"symbol\": \"ACME\", \"shares\": 10}].")

    @classmethod
    def input_schema(cls) -> dict[str, Any]:
        """Self-contained (no ``$defs``): the selector nests argument schemas, where a root ``$ref`` would dangle."""
        return _inline_refs(super().input_schema())

    def execute(self, holdings: list[dict[str, Any]]) -> dict[str, Any]:
        shares: dict[str, float] = {}
        for holding in holdings:
            shares[holding["symbol"]] = shares.get(holding["symbol"], 0) + holding["shares"]
        missing = [s for s in shares if s not in self.data.prices]
        if missing:
            return {**unknown("symbol", missing[0], self.data.symbols()), "unknown": missing}
        positions, total, previous_total = [], 0.0, 0.0
        for symbol, count in shares.items():
            last, previous = self.data.prices[symbol][-1], self.data.prices[symbol][-2]
            positions.append({"symbol": symbol, "shares": count, "price": last.close,
                              "value": money(count * last.close)})
            total += count * last.close
            previous_total += count * previous.close
        for position in positions:
            position["weight_percent"] = money(100 * position["shares"] * position["price"] / total)
        return {"ok": True, "currency": "USD", "as_of": self.data.as_of.isoformat(), "positions": positions,
                "total_value": money(total), "day_change": money(total - previous_total),
                "day_change_percent": money(100 * (total - previous_total) / previous_total)}


# ------------------------------------------------------------------------------------------ currency
@register_tool
class ConvertCurrency(FinanceTool):
    NAME = "convert_currency"
    description = ("Convert an amount of money from one currency to another at the current exchange rate; "
                   "returns the converted amount. For the rate alone use get_exchange_rate.")

    class Arguments(StrictArguments):
        amount: float = Field(gt=0, le=1e12, description="The amount to convert, in from_currency.")
        from_currency: str = _currency("Currency of the amount.")
        to_currency: str = _currency("Currency to convert into.")

    def execute(self, amount: float, from_currency: str, to_currency: str) -> dict[str, Any]:
        if failure := self._unknown_currencies(from_currency, to_currency):
            return failure
        rate = self.data.rate(from_currency, to_currency)
        decimals = self.data.currencies[to_currency]["decimals"]
        return {"ok": True, "amount": amount, "from_currency": from_currency, "to_currency": to_currency,
                "rate": significant(rate), "converted_amount": money(amount * rate, decimals),
                "as_of": self.data.fx_as_of.isoformat()}


@register_tool
class GetExchangeRate(FinanceTool):
    NAME = "get_exchange_rate"
    description = ("The current exchange rate between two currencies (units of to_currency per one from_currency) "
                   "and its inverse. To convert a specific amount use convert_currency.")

    class Arguments(StrictArguments):
        from_currency: str = _currency("Base currency.")
        to_currency: str = _currency("Quote currency.")

    def execute(self, from_currency: str, to_currency: str) -> dict[str, Any]:
        if failure := self._unknown_currencies(from_currency, to_currency):
            return failure
        rate = self.data.rate(from_currency, to_currency)
        return {"ok": True, "from_currency": from_currency, "to_currency": to_currency, "rate": significant(rate),
                "inverse_rate": significant(1 / rate), "as_of": self.data.fx_as_of.isoformat()}


# ------------------------------------------------------------------------------------------ loans and savings
@register_tool
class CalculateLoanPayment(FinanceTool):
    NAME = "calculate_loan_payment"
    description = ("Monthly payment of a fixed-rate amortizing loan or mortgage, with the total paid and the total "
                   "interest over its term.")

    class Arguments(StrictArguments):
        principal: float = Field(gt=0, le=1e9, description="Amount borrowed.")
        annual_rate_percent: float = _rate()
        years: int = _years("Loan term")

    def execute(self, principal: float, annual_rate_percent: float, years: int) -> dict[str, Any]:
        n, r = 12 * years, annual_rate_percent / 100 / 12
        # annuity factor (1 - (1 + r)^-n) / r, in a form that stays exact for rates near zero
        factor = -math.expm1(-n * math.log1p(r)) / r if r else float(n)
        payment = principal / factor
        return {"ok": True, "principal": principal, "annual_rate_percent": annual_rate_percent, "years": years,
                "number_of_payments": n, "monthly_payment": money(payment), "total_paid": money(payment * n),
                "total_interest": money(payment * n - principal)}


@register_tool
class CalculateCompoundInterest(FinanceTool):
    NAME = "calculate_compound_interest"
    description = ("Future value of savings or an investment with compound interest: a starting balance plus "
                   "optional monthly contributions, with the interest earned and the balance at each year's end.")

    class Arguments(StrictArguments):
        principal: float = Field(ge=0, le=1e9, description="Starting balance (0 if only contributing monthly).")
        annual_rate_percent: float = _rate()
        years: int = _years("How long the money grows")
        compounds_per_year: CompoundsPerYear = Field(
            default=12, description="Compounding periods per year: 1 yearly, 4 quarterly, 12 monthly, 365 daily.")
        monthly_contribution: float = Field(default=0, ge=0, le=1e7,
                                            description="Amount added at the end of every month.")

        @model_validator(mode="after")
        def _something_to_grow(self) -> Any:
            if self.principal == 0 and self.monthly_contribution == 0:
                raise ValueError("give a principal or a monthly_contribution greater than 0")
            return self

    def execute(self, principal: float, annual_rate_percent: float, years: int, compounds_per_year: int,
                monthly_contribution: float) -> dict[str, Any]:
        r, n = annual_rate_percent / 100, compounds_per_year
        log_growth = (n / 12) * math.log1p(r / n)  # the same compounding, expressed per month (log of growth)

        def balance(months: int) -> float:
            step = math.expm1(log_growth)
            saved = monthly_contribution * (math.expm1(months * log_growth) / step if step else months)
            return principal * math.exp(months * log_growth) + saved

        future = balance(12 * years)
        contributed = principal + monthly_contribution * 12 * years
        return {"ok": True, "principal": principal, "annual_rate_percent": annual_rate_percent, "years": years,
                "compounds_per_year": n, "monthly_contribution": monthly_contribution,
                "future_value": money(future), "total_contributed": money(contributed),
                "interest_earned": money(future - contributed),
                "effective_annual_rate_percent": round(100 * math.expm1(n * math.log1p(r / n)), 4),
                "balance_by_year": [money(balance(12 * y)) for y in range(1, years + 1)]}


# ------------------------------------------------------------------------------------------ spending
@register_tool
class SummarizeSpending(FinanceTool):
    NAME = "summarize_spending"
    description = ("Summarize my spending for one month by category against my monthly budgets (spent, budget, "
                   "remaining, over budget), with income and net; give a category to also list its transactions.")

    class Arguments(StrictArguments):
        month: str = Field(pattern=MONTH, max_length=7, description="The month, YYYY-MM, e.g. '2025-02'.")
        category: SpendingCategory | None = Field(default=None, description="Only this spending category.")

    def execute(self, month: str, category: str | None) -> dict[str, Any]:
        in_month = [t for t in self.data.transactions if t["date"].startswith(month)]
        if not in_month:
            return tool_failure("no_transactions", f"no transactions in {month}", suggestions=self.data.months(),
                                month=month)
        categories = [category] if category else list(self.data.budgets)
        rows = []
        for name in categories:
            items = [t for t in in_month if t["category"] == name]
            spent = -sum(t["amount"] for t in items)
            budget = self.data.budgets[name]
            rows.append({"category": name, "spent": money(spent), "budget": budget,
                         "remaining": money(budget - spent), "over_budget": spent > budget,
                         "transactions": len(items)})
        result: dict[str, Any] = {
            "ok": True, "month": month, "currency": "USD", "last_transaction_date": max(t["date"] for t in in_month),
            "categories": rows, "total_spent": money(sum(r["spent"] for r in rows)),
            "total_budget": money(sum(r["budget"] for r in rows)),
        }
        if category:
            result["items"] = [{k: t[k] for k in ("id", "date", "merchant", "amount", "account")}
                               for t in in_month if t["category"] == category]
        else:
            income = sum(t["amount"] for t in in_month if t["category"] == "income")
            result.update(income=money(income), net=money(income - result["total_spent"]))
        return result


_SCHEMA_TEXT = "; ".join(f"{table}({cols})" for table, cols in SQL_TABLES.items())


@register_tool
class QueryTransactions(FinanceTool):
    NAME = "query_transactions"
    description = ("Run one read-only SQLite SELECT over my bank and card transactions (spending negative, income "
                   f"positive) and the stock data, for questions the other tools don't answer. Tables: {_SCHEMA_TEXT}.")

    timeout_s: float = Field(default=1.0, gt=0, description="Wall-clock limit of one query, in seconds.")
    max_rows: int = Field(default=100, ge=1, description="Most rows returned; more are cut off.")

    class Arguments(StrictArguments):
        sql: str = Field(min_length=1, max_length=2000,
                         description="A single SELECT statement, e.g. \"SELECT merchant, SUM(amount) FROM "
                                     "transactions GROUP BY merchant\".")

    def execute(self, sql: str) -> dict[str, Any]:
        return run_select(self.data, sql, timeout_s=self.timeout_s, max_rows=self.max_rows)


TOOLS = (GetStockPrice, GetPriceHistory, SearchTicker, ValuePortfolio, ConvertCurrency, GetExchangeRate,
         CalculateLoanPayment, CalculateCompoundInterest, SummarizeSpending, QueryTransactions)
