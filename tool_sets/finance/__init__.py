"""The ``finance`` tool set: stock quotes and history, portfolio value, currency conversion, loan and savings
calculators, and spending summaries or read-only SQL over a shipped ledger.

Everything is computed offline from the shipped data (``prices.csv``, ``companies.json``, ``fx_rates.json``,
``transactions.csv``, ``budgets.json``; regenerate with ``_generate_data.py``). "Today" is the last trading day
in the data (``AS_OF``), never the system clock.
"""

from tool_selection import ToolSet
from tool_sets.finance.data import DATA_FILES, FinanceData, load_data, run_select
from tool_sets.finance.tools import (
    TOOLS,
    CalculateCompoundInterest,
    CalculateLoanPayment,
    ConvertCurrency,
    FinanceTool,
    GetExchangeRate,
    GetPriceHistory,
    GetStockPrice,
    QueryTransactions,
    SearchTicker,
    SummarizeSpending,
    ValuePortfolio,
)

__all__ = [
    "AS_OF", "DATA_FILES", "TOOL_SET", "TOOLS", "CalculateCompoundInterest", "CalculateLoanPayment",
    "ConvertCurrency", "FinanceData", "FinanceTool", "GetExchangeRate", "GetPriceHistory", "GetStockPrice",
    "QueryTransactions", "SearchTicker", "SummarizeSpending", "ValuePortfolio", "load_data", "run_select",
]

AS_OF = load_data().as_of

TOOL_SET = ToolSet(
    name="finance",
    description="Personal finance and markets: stock quotes and price history, portfolio value, currency "
                "conversion and exchange rates, loan and compound-interest calculators, and spending analysis.",
    tools=TOOLS,
)
