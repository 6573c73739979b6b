"""The domain cases of the board page's several-calls table: every test-split case of the five domain suites tagged
``multi`` or ``parallel``, and a seeded sample of 40 single-call and 20 no-tool test cases (seed 0).

    python -m evals.benchmarks.domain_calls runs/domain_calls.jsonl
    toolsel sweep --suite runs/domain_calls.jsonl --split all --strategy auto,native-strict-cover --no-cache

With ``--train`` the five suites' train cases follow, as the pool of ``--demos`` (evaluate with ``--split test``:
the same cases as above).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from evals.suite import SUITES_DIR

__all__ = ["DOMAINS", "domain_calls"]

DOMAINS = ("ecommerce", "events", "finance", "language", "treasure_hunt")


def domain_calls(*, single: int = 40, no_tool: int = 20, seed: int = 0, train: bool = False) -> list[dict]:
    """The cases, as the suite files hold them: those that need several calls, then the two samples; with ``train``,
    then every train case of the five suites."""
    every = [json.loads(line) for domain in DOMAINS
             for line in (SUITES_DIR / f"{domain}.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [row for row in every if row["split"] == "test"]
    several = [row for row in rows if {"multi", "parallel"} & set(row["tags"])]
    rng = random.Random(seed)
    singles = rng.sample([r for r in rows if "single" in r["tags"] and r not in several], single)
    chosen = several + singles + rng.sample([r for r in rows if "no_tool" in r["tags"]], no_tool)
    return chosen + [row for row in every if row["split"] == "train"] if train else chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="The JSON Lines file to write.")
    parser.add_argument("--train", action="store_true", help="Add the five suites' train cases (the --demos pool).")
    args = parser.parse_args(argv)
    cases = domain_calls(train=args.train)
    args.out.write_text("".join(json.dumps(case) + "\n" for case in cases), encoding="utf-8")
    print(f"{len(cases)} cases -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
