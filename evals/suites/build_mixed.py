"""Build ``mixed.jsonl``: a deterministic sample of the five domain suites' cases, asked against every domain's
tools at once (the ``mixed`` tool set, ``tool_sets/mixed``). How the sample is drawn: ``mixed.card.md``.

    python evals/suites/build_mixed.py            # (re)write mixed.jsonl and the counts in mixed.card.md
    python evals/suites/build_mixed.py --check    # exit 1 if either is not what the script would write
    python evals/suites/build_mixed.py --review   # also list the sampled no-tool cases, to re-read by hand

Each sampled case is copied unchanged except: ``id`` becomes ``mixed-<source id>`` (``mixed-finance-017``),
``tool_set`` becomes ``"mixed"`` and the domain name is appended to ``tags``; the split stays the source case's.
The output depends only on the source suites' contents (no randomness, no clock), so re-running it after the
domain suites change is the way to refresh it. Standard library only, so it runs without the project installed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from evals.suite_file import suite_lines

SUITES_DIR = Path(__file__).resolve().parent
OUTPUT = SUITES_DIR / "mixed.jsonl"
CARD = SUITES_DIR / "mixed.card.md"  # its counts block is rewritten with the suite
COUNTS_START, COUNTS_END = "<!-- counts: written by build_mixed.py -->", "<!-- end of counts -->"
DOMAINS = ("treasure_hunt", "events", "ecommerce", "finance", "language")
SPLITS = ("test", "dev", "train")
KINDS = ("single", "multi", "no_tool")
SEED = "mixed-v1"
# Cases drawn per domain and split: 5 x 24 = 120 test, 5 x 14 = 70 dev, 5 x 16 = 80 train.
QUOTA = {"test": 24, "dev": 14, "train": 16}
# Source cases whose expected answer is no longer the unique right one once the other domains' tools are there,
# found by reading them; OTHER_DOMAIN below screens the rest.
EXCLUDED = {
    "treasure_hunt-027": "no tool in treasure_hunt, but translate_text (language) answers it",
    "language-229": "no tool in language, but an app recommendation could go to search_products (ecommerce)",
}
# A no-tool case of one domain may be doable with another domain's tools ("translate this" in the treasure hunt).
# Such a case is left out when one of these patterns of ANOTHER domain matches a user turn: cheap and deliberately
# broad, since a no-tool case left out of the sample costs nothing while one that has become doable is wrong.
OTHER_DOMAIN = {
    "language": [r"\btranslat", r"\b(syn|ant)onym", r"\bspell", r"\bdefin(e|ition)\b", r"\bmean(s|ing)?\b",
                 r"\bhow (do|would|to) (you|i) (say|write)\b", r"\b(what|which) language\b",
                 r"\bin (english|spanish|french|german|italian|portuguese)\b", r"\bhow many (words|characters)\b",
                 r"\b(word|character) count", r"\bsummar", r"\bkeywords?\b", r"\bread(ab|ing level)",
                 r"\bproofread", r"\btypos?\b", r"\b(upper|lower|title|sentence|camel|snake|kebab|pascal) ?case\b",
                 r"\bcaps\b"],
    "finance": [r"\bexchange rate", r"\bcurrenc", r"\b(usd|eur|gbp|jpy|cad|aud|chf|cny|inr|mxn|sek)\b",
                r"\b(dollars?|euros?|pounds?|yen)\b", r"\bworth\b", r"\bstocks\b", r"\b(stock|share) (price|market)",
                r"\bshares\b", r"\bticker", r"\bportfolio", r"\bloan", r"\bmortgage", r"\binterest\b",
                r"\bspen(d|t|ding)\b", r"\bbudget", r"\btransactions?\b", r"\bcharges?\b", r"\$"],
    "ecommerce": [r"\bcart\b", r"\bcheckout\b", r"\border", r"\bbuy", r"\bpurchase", r"\bproducts?\b",
                  r"\bship", r"\bdeliver", r"\bpackage", r"\btrack", r"\breturn", r"\brefund", r"\bin stock\b",
                  r"\bshop", r"\bstore\b", r"\bsell", r"\bprice"],
    "events": [r"\btickets?\b", r"\bconcerts?\b", r"\bfestivals?\b", r"\bvenues?\b", r"\bshows?\b", r"\bgigs?\b",
               r"\bevents?\b", r"\bbook(ing|ed)?\b", r"\bwaitlist", r"\bseats?\b", r"\bmatch(es)?\b"],
    "treasure_hunt": [r"\btreasure", r"\bdig", r"\binventory", r"\bhint", r"\bmap\b", r"\bclues?\b",
                      r"\bgo (north|south|east|west)\b", r"\bisland", r"\bpirate"],
}


def read_cases(path: Path) -> list[dict]:
    """A suite's lines as JSON objects, in file order."""
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                cases.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise SystemExit(f"{path}, line {number}: not valid JSON ({error.msg})") from None
    return cases


def kind(case: dict) -> str:
    calls = len(case["expected_calls"])
    return "no_tool" if calls == 0 else "single" if calls == 1 else "multi"


def rank(case: dict) -> str:
    """A case's fixed place in the draw: a hash of its id, so adding cases to a suite never reshuffles the rest."""
    return hashlib.sha256(f"{SEED}:{case['id']}".encode()).hexdigest()


def allocate(available: dict[str, int], quota: int) -> dict[str, int]:
    """How many of each kind to draw: proportional to what the split holds (largest remainder), at least one of
    each kind the split has, never more than it has."""
    total = sum(available.values())
    if total <= quota:
        return dict(available)
    exact = {k: quota * n / total for k, n in available.items()}
    taken = {k: max(int(exact[k]), 1 if n else 0) for k, n in available.items()}
    while sum(taken.values()) < quota:  # the largest shortfall first; ties in KINDS order
        k = max((k for k in KINDS if taken.get(k, 0) < available.get(k, 0)),
                key=lambda k: (exact[k] - taken[k], -KINDS.index(k)))
        taken[k] += 1
    while sum(taken.values()) > quota:  # only when the one-of-each floor overshot
        k = max((k for k in KINDS if taken.get(k, 0) > 1), key=lambda k: (taken[k] - exact[k], -KINDS.index(k)))
        taken[k] -= 1
    return taken


def other_domain(domain: str, case: dict) -> str | None:
    """For a no-tool case, the first other domain whose pattern matches one of its user turns, if any."""
    if case["expected_calls"]:
        return None
    turns = [case["request"]] if "request" in case else [m["content"] for m in case["messages"] if m["role"] == "user"]
    text = " ".join(turns).lower()
    for other, patterns in OTHER_DOMAIN.items():
        if other != domain and any(re.search(p, text) for p in patterns):
            return other
    return None


def sample(domain: str, cases: list[dict]) -> tuple[list[dict], list[str]]:
    """The drawn cases of one domain in file order, and warnings about splits smaller than their quota."""
    chosen, warnings = set(), []
    eligible = [c for c in cases if c["id"] not in EXCLUDED and other_domain(domain, c) is None]
    for split in SPLITS:
        pool = [c for c in eligible if c["split"] == split]
        if len(pool) < QUOTA[split]:
            warnings.append(f"{domain} {split}: only {len(pool)} cases for a quota of {QUOTA[split]}; took them all")
        by_kind = {k: sorted((c for c in pool if kind(c) == k), key=rank) for k in KINDS}
        counts = allocate({k: len(v) for k, v in by_kind.items() if v}, QUOTA[split])
        for k, n in counts.items():
            chosen.update(c["id"] for c in by_kind[k][:n])
    return [c for c in cases if c["id"] in chosen], warnings


def mixed_case(domain: str, case: dict) -> dict:
    out = {}
    for key, value in case.items():
        if key == "id":
            out[key] = f"mixed-{value}"
        elif key == "tool_set":
            out[key] = "mixed"
        elif key == "tags":
            out[key] = [*value, domain] if domain not in value else list(value)
        else:
            out[key] = value
    if case.get("tool_set") != domain:
        raise SystemExit(f"{case['id']}: tool_set {case.get('tool_set')!r}, expected {domain!r}")
    return out


def interleave(groups: Iterable[list[dict]]) -> list[dict]:
    """Round-robin over the domains, so that the first n cases of the suite span every domain."""
    groups = [list(g) for g in groups]
    out = []
    for i in range(max((len(g) for g in groups), default=0)):
        out += [g[i] for g in groups if i < len(g)]
    return out


def build(suites_dir: Path = SUITES_DIR) -> tuple[list[dict], list[str]]:
    """The mixed suite's cases (split by split: test, dev, train) and any warnings."""
    per_domain, warnings = {}, []
    for domain in DOMAINS:
        cases, notes = sample(domain, read_cases(suites_dir / f"{domain}.jsonl"))
        per_domain[domain] = [mixed_case(domain, c) for c in cases]
        warnings += notes
    ordered = []
    for split in SPLITS:
        ordered += interleave([c for c in per_domain[d] if c["split"] == split] for d in DOMAINS)
    return ordered, warnings


render = suite_lines


def counts_table(cases: list[dict]) -> str:
    """The card's table of cases per split, domain and tag."""
    def row(label: str, keep) -> str:
        per_split = [sum(1 for c in cases if c["split"] == s and keep(c)) for s in SPLITS]
        return f"| {label} | " + " | ".join(map(str, per_split)) + f" | {sum(per_split)} |"

    tags = sorted({t for c in cases for t in c["tags"]} - set(DOMAINS) - set(KINDS),
                  key=lambda t: (-sum(t in c["tags"] for c in cases), t))
    lines = ["| | " + " | ".join(SPLITS) + " | all |", "|---|" + "---:|" * (len(SPLITS) + 1),
             row("cases", lambda c: True)]
    lines += [row(f"`{d}`", lambda c, d=d: d in c["tags"]) for d in DOMAINS]
    lines += [row(f"`{t}`", lambda c, t=t: t in c["tags"]) for t in (*KINDS, *tags)]
    return "\n".join(lines) + "\n"


def card_with_counts(card: str, cases: list[dict]) -> str:
    """The card with the block between its COUNTS markers replaced by ``counts_table``."""
    head, start, rest = card.partition(COUNTS_START)
    _, end, tail = rest.partition(COUNTS_END)
    if not (start and end):
        raise SystemExit(f"{CARD.name} lacks the {COUNTS_START} ... {COUNTS_END} block")
    return f"{head}{start}\n{counts_table(cases)}{end}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="Only compare with the existing mixed.jsonl.")
    parser.add_argument("--review", action="store_true", help="List the sampled no-tool cases.")
    args = parser.parse_args(argv)
    cases, warnings = build()
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    text = render(cases)
    card = card_with_counts(CARD.read_text(encoding="utf-8"), cases)
    if args.review:
        for case in cases:
            if not case["expected_calls"]:
                turn = case.get("request") or case["messages"][-1]["content"]
                print(f"{case['id']:<24} {turn}")
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if (current, CARD.read_text(encoding="utf-8")) != (text, card):
            print(f"{OUTPUT.name} or {CARD.name} is out of date: run python evals/suites/build_mixed.py",
                  file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    CARD.write_text(card, encoding="utf-8")
    counts = {s: sum(c["split"] == s for c in cases) for s in SPLITS}
    print(f"wrote {OUTPUT.name}: {len(cases)} cases ({', '.join(f'{s} {n}' for s, n in counts.items())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
