"""The finance tool set: real computations checked against the shipped data and independent formulas,
argument validation, the SQL sandbox, the data generator, and the eval suite."""

import csv
import io
import json
import math
import sqlite3
import time
import typing
from collections import Counter, defaultdict
from importlib import resources

import jsonschema
import pytest

from evals.suite import load_suite
from tests.evals.test_domain_suites import expected_arguments
from tests.tool_sets.test_calculator import assert_failure
from tool_selection import ToolArgumentError, load_tool_set
from tool_selection.selector import response_schema
from tool_selection.tool_failures import is_failure
from tool_sets.finance import AS_OF, DATA_FILES, TOOL_SET, QueryTransactions, _generate_data, load_data
from tool_sets.finance.data import _sandbox
from tool_sets.finance.tools import SpendingCategory

SHIPPED = resources.files("tool_sets.finance")


def read_csv(name: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(SHIPPED.joinpath(name).read_text(encoding="utf-8"))))


def read_json(name: str) -> dict:
    return json.loads(SHIPPED.joinpath(name).read_text(encoding="utf-8"))


CLOSES: dict[str, list[tuple[str, float]]] = defaultdict(list)
for _row in read_csv("prices.csv"):
    CLOSES[_row["symbol"]].append((_row["date"], float(_row["close"])))
for _series in CLOSES.values():
    _series.sort()
PER_USD = {code: c["per_usd"] for code, c in read_json("fx_rates.json")["currencies"].items()}
TRANSACTIONS = read_csv("transactions.csv")
BUDGETS = read_json("budgets.json")["monthly_budgets"]


def run(name: str, **arguments):
    """Execute a tool through the set's registry; every result must be JSON-serialisable."""
    result = TOOL_SET.registry().execute(name, arguments)
    assert json.loads(json.dumps(result)) == result
    return result


# ------------------------------------------------------------------------------------------ the set and data
def test_loads_by_name_with_enough_tools():
    tool_set = load_tool_set("finance")
    assert tool_set is TOOL_SET
    assert len(tool_set) >= 8
    assert {t.category for t in tool_set} == {"finance"}


@pytest.mark.parametrize("tool", TOOL_SET.tools, ids=TOOL_SET.names())
def test_schema_is_valid_json_schema(tool):
    schema = tool.input_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema.get("additionalProperties") is False


def test_schemas_are_self_contained_for_the_selector():
    """Argument schemas are nested in the selector's response schema, so none may hold a root $ref."""
    assert "$ref" not in json.dumps([tool.input_schema() for tool in TOOL_SET])
    validator = jsonschema.Draft202012Validator(response_schema(TOOL_SET.registry()))
    call = {"tool_name": "value_portfolio", "arguments": {"holdings": [{"symbol": "ACME", "shares": 2}]}}
    assert validator.is_valid({"reasoning": "r", "tool_calls": [call]})
    call["arguments"]["holdings"][0]["shares"] = 0
    assert not validator.is_valid({"reasoning": "r", "tool_calls": [call]})


def test_shipped_data_is_what_the_generator_makes():
    built = _generate_data.build_files()
    assert set(built) == set(DATA_FILES)
    for name, text in built.items():
        assert SHIPPED.joinpath(name).read_text(encoding="utf-8") == text, name


def test_data_shape_and_fixed_as_of():
    assert len(CLOSES) == 8
    assert {len(s) for s in CLOSES.values()} == {len(CLOSES["ACME"])} and 55 <= len(CLOSES["ACME"]) <= 65
    assert set(CLOSES) == {c["symbol"] for c in read_json("companies.json")["companies"]}
    assert AS_OF.isoformat() == max(d for s in CLOSES.values() for d, _ in s) == read_json("companies.json")["as_of"]
    assert "USD" in PER_USD and len(PER_USD) >= 8


def test_spending_categories_match_the_data():
    assert set(typing.get_args(SpendingCategory)) == set(BUDGETS)
    assert {t["category"] for t in TRANSACTIONS} == set(BUDGETS) | {"income"}


# ------------------------------------------------------------------------------------------ stocks
def test_stock_price_is_the_latest_close():
    (prev_day, prev), (day, close) = CLOSES["INIT"][-2:]
    result = run("get_stock_price", symbol="INIT")
    assert result["ok"] and result["price"] == close and result["as_of"] == day
    assert result["previous_close"] == prev
    assert result["change"] == pytest.approx(close - prev, abs=0.005)
    assert result["change_percent"] == pytest.approx(100 * (close - prev) / prev, abs=0.005)


def test_unknown_symbol_is_a_structured_result():
    result = run("get_stock_price", symbol="TSLA")
    assert_failure(result, "unknown_symbol")
    assert "TSLA" in result["message"] and result["suggestions"] == sorted(CLOSES) and result["symbol"] == "TSLA"


def test_price_history_summarises_the_range():
    start, end = "2025-02-03", "2025-03-14"
    closes = [(d, c) for d, c in CLOSES["GLBX"] if start <= d <= end]
    result = run("get_price_history", symbol="GLBX", start_date=start, end_date=end)
    assert result["ok"] and result["trading_days"] == len(closes)
    assert [(p["date"], p["close"]) for p in result["closes"]] == closes
    values = [c for _, c in closes]
    assert result["min"]["close"] == min(values) and result["max"]["close"] == max(values)
    assert result["mean_close"] == pytest.approx(sum(values) / len(values), abs=0.005)
    assert result["return_percent"] == pytest.approx(100 * (values[-1] / values[0] - 1), abs=0.005)


def test_price_history_defaults_to_all_data_and_reports_empty_ranges():
    assert run("get_price_history", symbol="SOYL")["trading_days"] == len(CLOSES["SOYL"])
    weekend = run("get_price_history", symbol="SOYL", start_date="2025-03-01", end_date="2025-03-02")
    assert_failure(weekend, "no_trading_days")
    assert weekend["available_to"] == AS_OF.isoformat()
    assert_failure(run("get_price_history", symbol="ZZZ"), "unknown_symbol")


def test_search_ticker_by_name_and_sector():
    by_name = run("search_ticker", query="umbrella")
    assert [m["symbol"] for m in by_name["matches"]] == ["UMBR"]
    companies = read_json("companies.json")["companies"]
    healthcare = {c["symbol"] for c in companies if c["sector"] == "healthcare"}
    assert {m["symbol"] for m in run("search_ticker", query="Healthcare")["matches"]} == healthcare
    nothing = run("search_ticker", query="Tesla")
    assert nothing["count"] == 0 and nothing["known"] == sorted(CLOSES)


def test_value_portfolio_uses_latest_closes_and_merges_duplicates():
    holdings = [{"symbol": "ACME", "shares": 10}, {"symbol": "GLBX", "shares": 2.5}, {"symbol": "ACME", "shares": 5}]
    result = run("value_portfolio", holdings=holdings)
    latest = {s: CLOSES[s][-1][1] for s in ("ACME", "GLBX")}
    expected_total = 15 * latest["ACME"] + 2.5 * latest["GLBX"]
    assert result["ok"] and result["total_value"] == pytest.approx(expected_total, abs=0.005)
    assert {p["symbol"]: p["shares"] for p in result["positions"]} == {"ACME": 15, "GLBX": 2.5}
    assert sum(p["weight_percent"] for p in result["positions"]) == pytest.approx(100, abs=0.02)
    previous = 15 * CLOSES["ACME"][-2][1] + 2.5 * CLOSES["GLBX"][-2][1]
    assert result["day_change"] == pytest.approx(expected_total - previous, abs=0.005)


def test_value_portfolio_names_unknown_symbols():
    result = run("value_portfolio", holdings=[{"symbol": "ACME", "shares": 1}, {"symbol": "NOPE", "shares": 1}])
    assert_failure(result, "unknown_symbol")
    assert result["unknown"] == ["NOPE"] and "ACME" in result["suggestions"]


# ------------------------------------------------------------------------------------------ currency
def test_convert_currency_uses_the_cross_rate():
    result = run("convert_currency", amount=2500, from_currency="EUR", to_currency="GBP")
    assert result["ok"]
    assert result["converted_amount"] == pytest.approx(2500 * PER_USD["GBP"] / PER_USD["EUR"], abs=0.005)


def test_convert_to_yen_has_no_minor_units_and_round_trips():
    yen = run("convert_currency", amount=100, from_currency="USD", to_currency="JPY")["converted_amount"]
    assert yen == round(100 * PER_USD["JPY"]) and isinstance(yen, int)
    back = run("convert_currency", amount=yen, from_currency="JPY", to_currency="USD")["converted_amount"]
    assert back == pytest.approx(100, abs=0.01)


def test_exchange_rate_and_inverse():
    result = run("get_exchange_rate", from_currency="CHF", to_currency="JPY")
    assert result["rate"] == pytest.approx(PER_USD["JPY"] / PER_USD["CHF"], rel=1e-5)
    assert result["rate"] * result["inverse_rate"] == pytest.approx(1, rel=1e-5)
    assert run("get_exchange_rate", from_currency="SEK", to_currency="SEK")["rate"] == 1


@pytest.mark.parametrize("name, extra", [("convert_currency", {"amount": 10}), ("get_exchange_rate", {})])
def test_unknown_currency_is_a_structured_result(name, extra):
    result = run(name, from_currency="USD", to_currency="BRL", **extra)
    assert_failure(result, "unknown_currency")
    assert "BRL" in result["message"] and result["suggestions"] == sorted(PER_USD) and result["currency"] == "BRL"


# ------------------------------------------------------------------------------------------ loans and savings
@pytest.mark.parametrize("principal, rate, years", [(300_000, 6.5, 30), (18_000, 6.9, 4), (1_000, 100, 1)])
def test_loan_payment_matches_the_amortization_formula(principal, rate, years):
    i, n = rate / 1200, 12 * years
    payment = principal * i * (1 + i) ** n / ((1 + i) ** n - 1)
    result = run("calculate_loan_payment", principal=principal, annual_rate_percent=rate, years=years)
    assert result["monthly_payment"] == pytest.approx(payment, abs=0.005)
    assert result["number_of_payments"] == n
    assert result["total_interest"] == pytest.approx(payment * n - principal, abs=0.01)


def test_loan_payment_at_zero_interest_is_principal_over_months():
    result = run("calculate_loan_payment", principal=12_000, annual_rate_percent=0, years=2)
    assert result["monthly_payment"] == 500 and result["total_interest"] == 0


@pytest.mark.parametrize("n", [1, 4, 365])
def test_compound_interest_without_contributions(n):
    result = run("calculate_compound_interest", principal=10_000, annual_rate_percent=4.5, years=5,
                 compounds_per_year=n)
    assert result["future_value"] == pytest.approx(10_000 * (1 + 0.045 / n) ** (5 * n), abs=0.005)
    assert len(result["balance_by_year"]) == 5 and result["balance_by_year"][-1] == result["future_value"]


def test_compound_interest_with_monthly_contributions_matches_a_simulation():
    balance = 2_000.0
    for _ in range(12 * 10):
        balance = balance * (1 + 0.05 / 12) + 300
    result = run("calculate_compound_interest", principal=2_000, annual_rate_percent=5, years=10,
                 monthly_contribution=300)
    assert result["future_value"] == pytest.approx(balance, abs=0.01)
    assert result["total_contributed"] == 2_000 + 300 * 120
    assert result["interest_earned"] == pytest.approx(balance - 38_000, abs=0.01)
    flat = run("calculate_compound_interest", principal=0, annual_rate_percent=0, years=3, monthly_contribution=100)
    assert flat["future_value"] == 3_600 and flat["interest_earned"] == 0


# ------------------------------------------------------------------------------------------ spending
def test_summarize_spending_totals_each_category_against_budget():
    month = "2025-02"
    spent = Counter()
    for t in TRANSACTIONS:
        if t["date"].startswith(month):
            spent[t["category"]] -= float(t["amount"])
    result = run("summarize_spending", month=month)
    rows = {r["category"]: r for r in result["categories"]}
    assert set(rows) == set(BUDGETS)
    for category, row in rows.items():
        assert row["spent"] == pytest.approx(spent[category], abs=0.005)
        assert row["remaining"] == pytest.approx(BUDGETS[category] - spent[category], abs=0.005)
        assert row["over_budget"] == (spent[category] > BUDGETS[category])
    assert result["income"] == pytest.approx(-spent["income"], abs=0.005)
    assert any(r["over_budget"] for r in rows.values()) and not all(r["over_budget"] for r in rows.values())


def test_summarize_spending_for_one_category_lists_its_items():
    result = run("summarize_spending", month="2025-03", category="groceries")
    expected = [t["id"] for t in TRANSACTIONS if t["date"].startswith("2025-03") and t["category"] == "groceries"]
    assert [r["category"] for r in result["categories"]] == ["groceries"]
    assert [i["id"] for i in result["items"]] == expected and expected


def test_summarize_spending_for_a_month_without_data():
    result = run("summarize_spending", month="2024-12")
    assert_failure(result, "no_transactions")
    assert result["suggestions"] == ["2025-01", "2025-02", "2025-03"]


# ------------------------------------------------------------------------------------------ SQL sandbox
def test_query_transactions_answers_a_select():
    result = run("query_transactions", sql="SELECT category, ROUND(SUM(amount), 2) FROM transactions "
                                           "GROUP BY category ORDER BY category")
    totals = Counter()
    for t in TRANSACTIONS:
        totals[t["category"]] += float(t["amount"])
    assert result["ok"] and result["columns"][0] == "category"
    assert {c: v for c, v in result["rows"]} == pytest.approx({c: round(v, 2) for c, v in totals.items()})
    joined = run("query_transactions", sql="-- latest close per sector\nSELECT c.sector, COUNT(*) FROM prices p "
                                           "JOIN companies c USING (symbol) GROUP BY c.sector")
    assert joined["ok"] and sum(n for _, n in joined["rows"]) == sum(len(s) for s in CLOSES.values())


@pytest.mark.parametrize("sql", [
    "DELETE FROM transactions",
    "UPDATE transactions SET amount = 0",
    "INSERT INTO transactions (id) VALUES ('T9999')",
    "DROP TABLE prices",
    "  -- looks harmless\n  DELETE FROM transactions",
    "WITH doomed AS (SELECT id FROM transactions) DELETE FROM transactions WHERE id IN (SELECT id FROM doomed)",
    "WITH x AS (SELECT 1) INSERT INTO companies (symbol) SELECT * FROM x",
])
def test_sql_refuses_writes(sql):
    result = run("query_transactions", sql=sql)
    assert is_failure(result) and result["error"] in {"not_select", "not_allowed"}
    count = run("query_transactions", sql="SELECT COUNT(*) FROM transactions")["rows"][0][0]
    assert count == len(TRANSACTIONS)


@pytest.mark.parametrize("sql, error", [
    ("PRAGMA query_only = OFF", "not_select"),
    ("ATTACH DATABASE 'x.db' AS x", "not_select"),
    ("CREATE TABLE t (x)", "not_select"),
    ("VACUUM", "not_select"),
    ("SELECT * FROM pragma_table_info('prices')", "not_allowed"),
    ("SELECT 1; DROP TABLE prices", "one_statement_only"),
])
def test_sql_refuses_everything_but_one_select(sql, error):
    assert_failure(run("query_transactions", sql=sql), error)


def test_sandbox_itself_is_read_only_and_select_only():
    """The authorizer and query_only hold even without the tool's own first-word check."""
    db = _sandbox(load_data())
    for statement in ("DELETE FROM transactions", "PRAGMA query_only = OFF", "CREATE TABLE t (x)"):
        with pytest.raises(sqlite3.DatabaseError):
            db.execute(statement)
    assert db.execute("SELECT COUNT(*) FROM transactions").fetchone()[0] == len(TRANSACTIONS)
    db.close()


def test_sql_stops_a_runaway_query_within_its_time_limit():
    tool = QueryTransactions(timeout_s=0.2)
    started = time.monotonic()
    result = tool.validate_and_execute(
        sql="WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000000) SELECT MAX(i) FROM n")
    assert_failure(result, "timeout")
    assert time.monotonic() - started < 2


def test_sql_bounds_rows_and_value_size():
    result = QueryTransactions(max_rows=5).validate_and_execute(sql="SELECT * FROM prices")
    assert result["row_count"] == 5 and len(result["rows"]) == 5 and result["truncated"] is True
    big = run("query_transactions", sql="SELECT zeroblob(1000000000)")
    assert_failure(big, "sql_error")


@pytest.mark.parametrize("sql", [
    "SELECT printf('%.*c', 2147483647, 'x')",  # ran 6.8 s past a 1 s limit: one opcode, no progress check
    "SELECT length(printf('%.*c', 2147483647, 'x')) FROM transactions LIMIT 3",  # ran 21 s
])
def test_sql_printf_cannot_outrun_the_time_limit(sql):
    started = time.monotonic()
    result = run("query_transactions", sql=sql)
    assert_failure(result, "not_allowed")
    assert "width or precision" in result["message"]
    assert time.monotonic() - started < 0.5
    assert run("query_transactions", sql="SELECT printf('%.2f', 1234.5)")["rows"] == [["1234.50"]]


def test_sql_refuses_functions_off_the_allow_list():
    result = run("query_transactions", sql="SELECT fts3_tokenizer('simple')")  # returned a native pointer
    assert_failure(result, "not_allowed")
    assert "fts3_tokenizer()" in result["message"]


def test_sql_runaway_recursion_stops_within_ten_percent_of_its_limit():
    tool = QueryTransactions(timeout_s=0.5)
    started = time.monotonic()
    result = tool.validate_and_execute(sql="WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
                                           "SELECT count(*) FROM n")
    elapsed = time.monotonic() - started
    assert result["error"] == "timeout" and elapsed < 0.5 * 1.1 + 0.1  # + starting a query worker if none is idle


def test_sandbox_refuses_vacuum_into_and_attach(tmp_path):
    db = _sandbox(load_data())
    for statement in (f"VACUUM INTO '{tmp_path / 'copy.db'}'", f"ATTACH DATABASE '{tmp_path / 'x.db'}' AS x"):
        with pytest.raises(sqlite3.DatabaseError):
            db.execute(statement)
    db.close()
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------ validation
INVALID = [
    ("get_stock_price", {"symbol": "acme"}, "symbol"),
    ("get_stock_price", {"symbol": "TOOLONG"}, "symbol"),
    ("get_stock_price", {}, "symbol"),
    ("get_stock_price", {"symbol": "ACME", "exchange": "NYSE"}, "exchange"),
    ("get_price_history", {"symbol": "ACME", "start_date": "03/01/2025"}, "start_date"),
    ("get_price_history", {"symbol": "ACME", "start_date": "2025-03-10", "end_date": "2025-03-01"}, "end_date"),
    ("search_ticker", {"query": ""}, "query"),
    ("value_portfolio", {"holdings": []}, "holdings"),
    ("value_portfolio", {"holdings": [{"symbol": "ACME", "shares": -3}]}, "holdings.0.shares"),
    ("value_portfolio", {"holdings": [{"symbol": "acme", "shares": 3}]}, "holdings.0.symbol"),
    ("convert_currency", {"amount": 0, "from_currency": "USD", "to_currency": "EUR"}, "amount"),
    ("convert_currency", {"amount": 10, "from_currency": "usd", "to_currency": "EUR"}, "from_currency"),
    ("convert_currency", {"amount": 10, "from_currency": "USD", "to_currency": "EURO"}, "to_currency"),
    ("get_exchange_rate", {"from_currency": "US$", "to_currency": "EUR"}, "from_currency"),
    ("calculate_loan_payment", {"principal": -5, "annual_rate_percent": 5, "years": 10}, "principal"),
    ("calculate_loan_payment", {"principal": 1000, "annual_rate_percent": 101, "years": 10}, "annual_rate_percent"),
    ("calculate_loan_payment", {"principal": 1000, "annual_rate_percent": 5, "years": 51}, "years"),
    ("calculate_loan_payment", {"principal": 1000, "annual_rate_percent": 5, "years": 0}, "years"),
    ("calculate_compound_interest", {"principal": 1000, "annual_rate_percent": -1, "years": 5}, "annual_rate_percent"),
    ("calculate_compound_interest", {"principal": 1000, "annual_rate_percent": 5, "years": 5,
                                     "compounds_per_year": 3}, "compounds_per_year"),
    ("calculate_compound_interest", {"principal": 0, "annual_rate_percent": 5, "years": 5}, "(arguments)"),
    ("summarize_spending", {"month": "2025-13"}, "month"),
    ("summarize_spending", {"month": "2025-02", "category": "rent"}, "category"),
    ("query_transactions", {"sql": ""}, "sql"),
    ("query_transactions", {"sql": "SELECT 1" + " " * 2000}, "sql"),
]


@pytest.mark.parametrize("name, arguments, field", INVALID, ids=[f"{n}-{f}" for n, _, f in INVALID])
def test_invalid_arguments_raise_naming_the_field(name, arguments, field):
    with pytest.raises(ToolArgumentError) as caught:
        TOOL_SET.registry().execute(name, arguments)
    assert field in [p.field for p in caught.value.problems]
    assert caught.value.tool == name


def test_every_tool_is_exercised_by_the_invalid_cases():
    assert {name for name, _, _ in INVALID} == set(TOOL_SET.names())


# ------------------------------------------------------------------------------------------ the suite
# The checks every domain suite must pass are in tests/evals/test_domain_suites.py; these are finance's own.
def test_suite_similar_tools_cases_use_a_tool_with_a_look_alike():
    look_alikes = {"get_stock_price", "get_price_history", "convert_currency", "get_exchange_rate",
                   "calculate_loan_payment", "calculate_compound_interest", "summarize_spending",
                   "query_transactions", "value_portfolio"}
    for case in load_suite("finance"):
        if "similar_tools" in case.tags:
            assert {c.tool_name for c in case.expected_calls} & look_alikes, case.id


def test_suite_complete_calls_succeed_on_the_data():
    """Expected calls that give every required argument run and find their symbols, currencies and dates."""
    for case, tool, arguments in expected_arguments("finance"):
        if {a.name for a in tool.arguments() if a.required} <= set(arguments):
            result = TOOL_SET.registry().execute(tool.NAME, arguments)
            assert result["ok"], (case.id, arguments, result)
            assert all(math.isfinite(v) for v in result.values() if isinstance(v, float))


def test_rates_near_zero_give_the_zero_rate_figures_not_a_division_by_zero():
    from tool_sets.finance import CalculateCompoundInterest, CalculateLoanPayment

    tiny = CalculateLoanPayment().validate_and_execute(principal=1200, annual_rate_percent=1.4e-45, years=1)
    assert tiny["monthly_payment"] == 100.0 and tiny["total_interest"] == 0.0
    usual = CalculateLoanPayment().validate_and_execute(principal=200000, annual_rate_percent=6.5, years=30)
    assert usual["monthly_payment"] == 1264.14  # the standard annuity figure
    savings = CalculateCompoundInterest().validate_and_execute(principal=1000, annual_rate_percent=1e-300, years=2,
                                                               monthly_contribution=10)
    assert savings["future_value"] == 1240.0 and savings["interest_earned"] == 0.0
