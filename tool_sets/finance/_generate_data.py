"""Generate the finance tool set's shipped data (run once; the output is committed).

    python tool_sets/finance/_generate_data.py

Everything is derived from fixed seeds and constants, so re-running reproduces the files byte for byte
(``tests/tool_sets/test_finance.py`` checks this). Companies, merchants and prices are fictional.
"""

from __future__ import annotations

import csv
import io
import json
import random
from datetime import date, timedelta
from pathlib import Path

AS_OF = date(2025, 3, 28)
TRADING_DAYS = 59
MARKET_HOLIDAYS = {date(2025, 1, 1), date(2025, 1, 9), date(2025, 1, 20), date(2025, 2, 17)}

# symbol: (name, sector, first close, daily drift, daily volatility, typical volume)
COMPANIES = {
    "ACME": ("Acme Corporation", "industrials", 84.20, 0.0006, 0.012, 2_400_000),
    "GLBX": ("Globex Systems", "technology", 212.50, 0.0015, 0.021, 5_100_000),
    "INIT": ("Initech Software", "technology", 47.80, -0.0010, 0.018, 1_300_000),
    "UMBR": ("Umbrella Biotech", "healthcare", 133.10, 0.0004, 0.026, 3_200_000),
    "HOOLI": ("Hooli Inc.", "communication services", 318.75, 0.0009, 0.017, 7_800_000),
    "WAYN": ("Wayne Enterprises", "conglomerates", 158.40, 0.0003, 0.010, 1_900_000),
    "CYDN": ("Cyberdyne Robotics", "technology", 26.35, 0.0025, 0.034, 9_600_000),
    "SOYL": ("Soylent Foods", "consumer staples", 61.90, -0.0002, 0.008, 1_100_000),
}

# code: (name, units per 1 USD, minor-unit decimals); rates are fixed illustrative values.
CURRENCIES = {
    "USD": ("US dollar", 1.0, 2),
    "EUR": ("euro", 0.9251, 2),
    "GBP": ("pound sterling", 0.7726, 2),
    "JPY": ("Japanese yen", 150.72, 0),
    "CHF": ("Swiss franc", 0.8817, 2),
    "CAD": ("Canadian dollar", 1.4329, 2),
    "AUD": ("Australian dollar", 1.5893, 2),
    "CNY": ("Chinese yuan", 7.2604, 2),
    "INR": ("Indian rupee", 85.61, 2),
    "MXN": ("Mexican peso", 20.187, 2),
    "SEK": ("Swedish krona", 10.034, 2),
}

BUDGETS = {"housing": 1850, "groceries": 600, "dining": 450, "transport": 200, "utilities": 300,
           "entertainment": 120, "shopping": 300, "health": 150}

# category: (merchants, low, high, expected purchases per week); recurring bills are added separately.
VARIABLE_SPENDING = {
    "groceries": (["Green Basket Market", "FreshWay Grocers", "Corner Pantry"], 18, 130, 2.2),
    "dining": (["Corner Cafe", "Noodle House", "Bella Forno", "Taco Loco", "Sunrise Bakery"], 9, 88, 2.5),
    "transport": (["RideNow", "Metro Fuel"], 11, 58, 1.1),
    "shopping": (["Northwind Outfitters", "ShopMart", "PageTurner Books", "Gadget Hub"], 14, 240, 0.8),
    "entertainment": (["CinemaPlex", "Riverside Arcade"], 12, 60, 0.6),
    "health": (["WellRx Pharmacy"], 8, 70, 0.3),
}
RECURRING = [  # (day of month, merchant, category, amount, account)
    (1, "Parkview Apartments", "housing", 1850.00, "checking"),
    (3, "Streamly", "entertainment", 15.99, "credit_card"),
    (5, "FitLife Gym", "health", 45.00, "credit_card"),
    (6, "Metro Transit", "transport", 98.00, "checking"),
    (12, "Skyline Internet", "utilities", 65.00, "checking"),
    (18, "Mobi Wireless", "utilities", 45.00, "checking"),
]


def trading_days() -> list[date]:
    days, day = [], AS_OF
    while len(days) < TRADING_DAYS:
        if day.weekday() < 5 and day not in MARKET_HOLIDAYS:
            days.append(day)
        day -= timedelta(days=1)
    return days[::-1]


def prices_csv() -> str:
    rng = random.Random(20250328)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["date", "symbol", "close", "volume"])
    rows = []
    for symbol, (_, _, first, drift, vol, volume) in COMPANIES.items():
        close = first
        for i, day in enumerate(trading_days()):
            if i:
                close = max(1.0, close * (1 + rng.gauss(drift, vol)))
            rows.append((day.isoformat(), symbol, f"{close:.2f}", int(volume * rng.uniform(0.6, 1.5))))
    writer.writerows(sorted(rows))
    return out.getvalue()


def companies_json() -> str:
    companies = [{"symbol": s, "name": n, "sector": sector, "exchange": "NXSE", "currency": "USD"}
                 for s, (n, sector, *_) in COMPANIES.items()]
    return json.dumps({"as_of": AS_OF.isoformat(), "companies": companies}, indent=2) + "\n"


def fx_rates_json() -> str:
    currencies = {c: {"name": n, "per_usd": r, "decimals": d} for c, (n, r, d) in CURRENCIES.items()}
    return json.dumps({"as_of": AS_OF.isoformat(), "base": "USD", "currencies": currencies}, indent=2) + "\n"


def budgets_json() -> str:
    return json.dumps({"currency": "USD", "monthly_budgets": BUDGETS}, indent=2) + "\n"


def transactions_csv() -> str:
    rng = random.Random(1234)
    rows = []
    day = date(2025, 1, 1)
    while day <= AS_OF:
        for dom, merchant, category, amount, account in RECURRING:
            if day.day == dom:
                rows.append((day, merchant, category, -amount, account))
        if day.month != 1 and day.day == 9:  # electricity, billed monthly from February
            rows.append((day, "City Power & Light", "utilities", -round(rng.uniform(85, 135), 2), "checking"))
        if day.day in (15, 28):
            rows.append((day, "Contoso Ltd Payroll", "income", 3150.00, "checking"))
        for category, (merchants, low, high, per_week) in VARIABLE_SPENDING.items():
            if rng.random() < per_week / 7:
                amount = round(rng.uniform(low, high), 2)
                account = "credit_card" if rng.random() < 0.7 else "checking"
                rows.append((day, rng.choice(merchants), category, -amount, account))
        day += timedelta(days=1)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "date", "merchant", "category", "amount", "account"])
    for i, (day, merchant, category, amount, account) in enumerate(rows, start=1):
        writer.writerow([f"T{i:04d}", day.isoformat(), merchant, category, f"{amount:.2f}", account])
    return out.getvalue()


def build_files() -> dict[str, str]:
    """Every shipped data file, by name."""
    return {
        "prices.csv": prices_csv(),
        "companies.json": companies_json(),
        "fx_rates.json": fx_rates_json(),
        "transactions.csv": transactions_csv(),
        "budgets.json": budgets_json(),
    }


def main() -> None:
    here = Path(__file__).parent
    for name, text in build_files().items():
        (here / name).write_text(text, encoding="utf-8")
        print(f"wrote {name} ({text.count(chr(10)) - 1} records)" if name.endswith(".csv") else f"wrote {name}")


if __name__ == "__main__":
    main()
