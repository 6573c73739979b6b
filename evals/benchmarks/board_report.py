"""The BFCL board page (``docs/results/board.md``) from kept rows: our selector per single-turn category beside the
published models of the same size, and each multi-call strategy paired against the default.

    toolsel sweep evals/sweeps/board.yaml                                      # the rows (resumable)
    python -m evals.benchmarks.keep_results runs/sweeps/board results/board/qwen2.5-coder-0.5b
    python -m evals.benchmarks.board_report --runs results/board --out docs/results/board.md

Every run folder under ``--runs`` (``summary.json`` and ``results.jsonl``) is one (model, strategy, category).
Accuracy is BFCL's full match as ``score_case`` reads it (irrelevance: no call). "Mean 4" is the plain mean of
the four call categories, computed alike for every row; it is shown only where all four were measured on the
same cases. A run of a seeded sample says so in its cases column.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from evals.benchmarks.provenance import provenance_table
from evals.bfcl import non_live_ast, non_live_simple_ast
from evals.metrics import bootstrap_ci
from evals.runner import load_results
from evals.runs import find_run_dirs
from evals.stats import mcnemar_exact, paired_bootstrap_ci

__all__ = ["CATEGORIES", "PUBLISHED", "board_page", "load_board", "main", "method_of"]

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
CALL_CATEGORIES = CATEGORIES[:4]
OTHER_LANGUAGES = ("simple_java", "simple_javascript")  # scored by bfcl-eval's checker; they enter Non-Live AST
SINGLE_CALL = "native-strict"  # what the default (auto) ran as with the local models before several calls
DEFAULT = "native-strict-cover"  # what it runs as now
PUBLISHED_SOURCE = ("BFCL v4 board of 2025-12-16 (Python `simple`), Qwen2.5 rows from the v3 board of 2025-04-30, "
                    "the last that lists them; function-calling mode")
PUBLISHED = {  # model: simple, multiple, parallel, parallel_multiple, irrelevance
    "Qwen2.5-0.5B-Instruct": (81.5, 78.0, 60.0, 50.0, 39.2),
    "Hammer2.1-0.5b (fine-tuned for calling)": (83.3, 81.0, 69.0, 51.5, 85.0),
    "Qwen3-0.6B": (86.5, 86.0, 67.5, 69.5, 82.5),
    "Qwen2.5-1.5B-Instruct": (92.3, 87.0, 81.5, 75.5, 64.6),
    "Hammer2.1-1.5b": (89.8, 92.0, 85.5, 80.5, 87.1),
    "Arch-Agent-1.5B": (89.5, 92.0, 85.5, 81.0, 76.3),
    "Qwen3-1.7B": (91.0, 92.5, 88.5, 80.0, 80.0),
}
SAME_SIZE = {  # embedded model: the published rows of its size
    "qwen2.5-coder-0.5b": ("Qwen2.5-0.5B-Instruct", "Hammer2.1-0.5b (fine-tuned for calling)", "Qwen3-0.6B"),
    "qwen2.5-coder-1.5b": ("Qwen2.5-1.5B-Instruct", "Hammer2.1-1.5b", "Arch-Agent-1.5B", "Qwen3-1.7B"),
}
NON_LIVE_SOURCE = ("BFCL's simple (the mean of Python, Java and JavaScript) and Non-Live AST (the mean of that "
                   "simple, multiple, parallel and parallel_multiple): the v4 board's page as last updated "
                   "2026-04-12; for the two Qwen2.5 rows, which it no longer lists, computed the same way from the "
                   "BFCL paper's table (ICML 2025; simple 61.2 and 72.4)")
PUBLISHED_NON_LIVE = {  # model: BFCL's simple (three languages), Non-Live AST
    "Qwen2.5-0.5B-Instruct": (61.2, 62.3),
    "Hammer2.1-0.5b (fine-tuned for calling)": (62.42, 65.98),
    "Qwen3-0.6B": (64.17, 71.79),
    "Qwen2.5-1.5B-Instruct": (72.4, 79.1),
    "Hammer2.1-1.5b": (73.92, 82.98),
    "Arch-Agent-1.5B": (72.17, 82.67),
    "Qwen3-1.7B": (70.67, 82.92),
}


def method_of(params: dict) -> str:
    """A run's method as its rows are labelled: the strategy, and the knobs set beside it (``--demos K``)."""
    demos = params.get("demos")
    return f"{params['strategy']} + demos {demos}" if demos not in (None, "", "None") else str(params["strategy"])


EARLIER = "earlier"
"""The folder under the board's root that keeps runs of an earlier default, paired against today's on the page."""


def _board_runs(root: Path) -> list[Path]:
    return [folder for folder in find_run_dirs(root) if EARLIER not in folder.relative_to(root).parts]


def _latest(folders: list[Path]) -> list[tuple[Path, dict]]:
    """Each of ``folders`` with its params, but those another of them was made from (``toolsel eval rescore --into``
    records ``derived_from``, ``toolsel eval splice`` ``spliced_from``): of a run read again or spliced, the last
    copy."""
    runs = [(folder, json.loads((folder / "summary.json").read_text(encoding="utf-8"))["params"]) for folder in folders]
    sources = {Path(str(params[key])).name for _, params in runs for key in ("derived_from", "spliced_from")
               if params.get(key)}
    return [(folder, params) for folder, params in runs if folder.name not in sources]


def load_board(root: Path) -> dict[tuple[str, str, str], pd.DataFrame]:
    """``{(model, method, category): rows}`` for every run folder under ``root`` (but ``EARLIER``) that ran one BFCL
    category; of two runs of the same cell (a seeded sample and the whole category), the one with more cases, and of
    a run and a copy made from it, the copy.
    The rows carry the run's commit as ``attrs["commit"]`` ("... read again" for a run ``toolsel eval rescore``
    read again with later rules)."""
    runs: dict[tuple[str, str, str], pd.DataFrame] = {}
    for folder, params in _latest(_board_runs(root)):
        category = str(params.get("suite_ref", "")).removeprefix("bfcl:")
        if category in CATEGORIES + OTHER_LANGUAGES:
            key = (str(params["model"]).removeprefix("local:"), method_of(params), category)
            rows = load_results(folder).set_index("id")
            rows.attrs["commit"] = str(params.get("git_commit") or "?")[:7] + (" read again" if params.get("rescored")
                                                                               else "")
            if key not in runs or len(rows) > len(runs[key]):
                runs[key] = rows
    return runs


def _accuracy(rows: pd.DataFrame) -> np.ndarray:
    return rows["full_match"].fillna(0.0).to_numpy(dtype=float)


def _cell(rows: pd.DataFrame | None) -> str:
    if rows is None:
        return "-"
    _, low, high = bootstrap_ci(_accuracy(rows))
    return f"{100 * _accuracy(rows).mean():.1f} [{100 * low:.1f}, {100 * high:.1f}] (n={len(rows)})"


def _mean4(runs: dict, model: str, strategy: str) -> str:
    cells = [runs.get((model, strategy, c)) for c in CALL_CATEGORIES]
    if any(c is None for c in cells):
        return "-"
    return f"{np.mean([100 * _accuracy(c).mean() for c in cells]):.1f}"


def _non_live(runs: dict, model: str, strategy: str) -> tuple[str, str]:
    """BFCL's simple (three languages) and Non-Live AST for one row of ours, where every category in them ran."""
    accuracies = {c: 100 * _accuracy(rows).mean() for (m, s, c), rows in runs.items() if (m, s) == (model, strategy)}
    simple, overall = non_live_simple_ast(accuracies), non_live_ast(accuracies)
    return tuple("-" if math.isnan(value) else f"{value:.1f}" for value in (simple, overall))


def _published_cells(scores: tuple[float, ...]) -> str:
    """A published row's five categories and its mean 4, as table cells."""
    return " | ".join(f"{s:.1f}" for s in scores) + f" | {sum(scores[:4]) / 4:.1f}"


def board_table(runs: dict) -> str:
    """Published rows, then ours, per category."""
    head = ["model", *CATEGORIES, "mean 4", *OTHER_LANGUAGES, "simple (3 languages)", "Non-Live AST"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for model, scores in PUBLISHED.items():
        simple, overall = PUBLISHED_NON_LIVE[model]
        lines.append(f"| {model} | {_published_cells(scores)} | - | - | {simple:.1f} | {overall:.1f} |")
    for model, strategy in sorted({(m, s) for m, s, _ in runs}):
        cells = [_cell(runs.get((model, strategy, c))) for c in CATEGORIES + OTHER_LANGUAGES]
        lines.append(f"| **this toolkit, {model}, {strategy}** | " + " | ".join(cells[:len(CATEGORIES)])
                     + f" | {_mean4(runs, model, strategy)} | " + " | ".join(cells[len(CATEGORIES):])
                     + " | " + " | ".join(_non_live(runs, model, strategy)) + " |")
    return "\n".join(lines)


def headline_table(runs: dict, method: str = DEFAULT) -> str:
    """The README's table: the board's five categories and mean 4, each embedded model's ``method`` after the
    published models of its size (point estimates; the page holds the intervals)."""
    head = ["model", *CATEGORIES, "mean 4"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for model, published in SAME_SIZE.items():
        for name in published:
            lines.append(f"| {name} | {_published_cells(PUBLISHED[name])} |")
        cells = [runs.get((model, method, c)) for c in CATEGORIES]
        if any(c is not None for c in cells):
            shown = ["-" if c is None else f"{100 * _accuracy(c).mean():.1f}" for c in cells]
            lines.append(f"| **this toolkit, {model}, {method}** | " + " | ".join(shown)
                         + f" | {_mean4(runs, model, method)} |")
    return "\n".join(lines)


def _seconds(rows: pd.DataFrame) -> tuple[float, float]:
    seconds = rows["latency_s"].astype(float)
    right = _accuracy(rows).sum()
    return float(seconds.mean()), float(seconds.sum() / right) if right else math.inf


def _change(a: np.ndarray, b: np.ndarray) -> str:
    """The paired change from ``a`` to ``b`` in points with its bootstrap interval, and McNemar's exact p: two cells."""
    low, high = paired_bootstrap_ci(b - a)
    p, _, _ = mcnemar_exact(a, b)
    return f"{100 * (b - a).mean():+.1f} [{100 * low:+.1f}, {100 * high:+.1f}] | {p:.3g}"


def _paired_here(method: str, baseline: str, built_on: str | None) -> bool:
    """Whether a table pairing against ``baseline`` shows ``method``: any other method, or with ``built_on`` only
    those that add a knob to that strategy."""
    return method != baseline and (built_on is None or method.startswith(f"{built_on} + "))


def paired_table(runs: dict, baseline: str = SINGLE_CALL, *, built_on: str | None = None) -> str:
    """Each strategy against ``baseline`` on the cases both ran: points, interval, McNemar's p, seconds.
    ``built_on``: only the methods that add a knob to that strategy."""
    head = ["model", "category", "strategy", "cases", "baseline %", "strategy %", "change, points [95% CI]",
            "McNemar p", "s/case (x baseline)", "s/correct", "false abstention"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (model, strategy, category), rows in sorted(runs.items()):
        base = runs.get((model, baseline, category))
        if base is None or not _paired_here(strategy, baseline, built_on):
            continue
        shared = base.index.intersection(rows.index)
        a, b = _accuracy(base.loc[shared]), _accuracy(rows.loc[shared])
        change = _change(a, b)
        (sa, _), (sb, per_right) = _seconds(base.loc[shared]), _seconds(rows.loc[shared])
        costly = " **over 2x**" if sb > 2 * sa else ""
        abstained = rows.loc[shared, "false_abstention"].mean()
        lines.append(f"| {model} | {category} | {strategy} | {len(shared)} | {100 * a.mean():.1f} | "
                     f"{100 * b.mean():.1f} | {change} | {sb:.2f} ({sb / sa:.2f}x){costly} | {per_right:.1f} | "
                     f"{'-' if math.isnan(abstained) else f'{100 * abstained:.1f}%'} |")
    return "\n".join(lines)


def earlier_table(runs: dict, earlier: dict) -> str:
    """Each cell kept from an earlier default against the same cell today, on the cases both ran."""
    head = ["model", "category", "method", "cases", "commits (earlier -> now)", "earlier %", "now %",
            "change, points [95% CI]", "McNemar p", "s/case (earlier -> now)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, before in sorted(earlier.items()):
        now = runs.get(key)
        if now is None:
            continue
        shared = before.index.intersection(now.index)
        a, b = _accuracy(before.loc[shared]), _accuracy(now.loc[shared])
        (sa, _), (sb, _) = _seconds(before.loc[shared]), _seconds(now.loc[shared])
        model, method, category = key
        lines.append(f"| {model} | {category} | {method} | {len(shared)} | {before.attrs.get('commit')} -> "
                     f"{now.attrs.get('commit')} | {100 * a.mean():.1f} | {100 * b.mean():.1f} | {_change(a, b)} | "
                     f"{sa:.2f} -> {sb:.2f} |")
    return "\n".join(lines)


def relevance_table(runs: dict) -> str:
    """Per row and call category: how often no call was made where one was needed, and how many of those the
    relevance stage made (it overruled the selector's call)."""
    head = ["model", "strategy", "category", "cases", "false abstention", "of which the relevance stage's"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (model, strategy, category), rows in sorted(runs.items()):
        if category == "irrelevance":
            continue
        abstained = rows["false_abstention"].fillna(0.0).astype(float)
        overruled = rows.get("relevance_overruled", pd.Series(0.0, index=rows.index)).fillna(0.0).astype(float)
        gate = int(((abstained > 0) & (overruled > 0)).sum())
        lines.append(f"| {model} | {strategy} | {category} | {len(rows)} | {100 * abstained.mean():.1f}% "
                     f"({int(abstained.sum())}) | {gate} |")
    return "\n".join(lines)


DOMAIN_TAGS = ("multi", "parallel", "single", "no_tool")


def load_domain(root: Path) -> dict[tuple[str, str], pd.DataFrame]:
    """``{(model, strategy): rows}`` for every run folder under ``root`` of domain-suite cases (not BFCL); of a run
    and a copy made from it, the copy."""
    runs = {}
    for folder, params in _latest(find_run_dirs(root)) if root.is_dir() else []:
        if not str(params.get("suite_ref", "")).startswith("bfcl:"):
            runs[(str(params["model"]).removeprefix("local:"), method_of(params))] = (
                load_results(folder).set_index("id"))
    return runs


def domain_table(runs: dict, baseline: str = SINGLE_CALL, *, built_on: str | None = None) -> str:
    """Each strategy against ``baseline`` on the domain cases both ran, per tag: accuracy, change, McNemar's p.
    ``built_on``: only the methods that add a knob to that strategy."""
    head = ["model", "strategy", "tag", "cases", "baseline %", "strategy %", "change, points [95% CI]", "McNemar p"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (model, strategy), rows in sorted(runs.items()):
        base = runs.get((model, baseline))
        if base is None or not _paired_here(strategy, baseline, built_on):
            continue
        shared = base.index.intersection(rows.index)
        for tag in DOMAIN_TAGS:
            ids = [i for i in shared if tag in list(base.loc[i, "tags"])]
            if not ids:
                continue
            a, b = _accuracy(base.loc[ids]), _accuracy(rows.loc[ids])
            lines.append(f"| {model} | {strategy} | {tag} | {len(ids)} | {100 * a.mean():.1f} | {100 * b.mean():.1f} "
                         f"| {_change(a, b)} |")
    return "\n".join(lines)


def domain_models_table(runs: dict, method: str = DEFAULT) -> str:
    """``method`` for each model that ran it on the domain cases, per tag: accuracy with its bootstrap interval, and
    where two models ran the same cases, the larger against the smaller (paired)."""
    models = sorted(model for model, strategy in runs if strategy == method)
    pairs = list(zip(models, models[1:], strict=False))
    head = ["tag", *(f"{model} % [95% CI]" for model in models)]
    head += [cell for a, b in pairs for cell in (f"{b} - {a}, points [95% CI]", "McNemar p")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    frames = {model: runs[(model, method)] for model in models}
    for tag in DOMAIN_TAGS:
        tagged = {model: frame[[tag in list(tags) for tags in frame["tags"]]] for model, frame in frames.items()}
        cells = [_cell(tagged[model]) if len(tagged[model]) else "-" for model in models]
        for a, b in pairs:
            shared = tagged[a].index.intersection(tagged[b].index)
            cells.append(_change(_accuracy(tagged[a].loc[shared]), _accuracy(tagged[b].loc[shared]))
                         if len(shared) else "- | -")
        lines.append("| " + " | ".join([tag, *cells]) + " |")
    return "\n".join(lines)


def board_page(runs: dict, root: Path) -> str:
    provenance = root / "provenance.json"
    parts = [
        "# The BFCL board: single-turn categories",
        "",
        "Generated by `python -m evals.benchmarks.board_report --runs results/board --out docs/results/board.md` "
        "from the kept rows in `results/board/` (two CPU cores; see each row's provenance). Accuracy is BFCL's full "
        "match as this toolkit scores it (`irrelevance`: no call), with its 95% bootstrap interval and the number "
        "of cases; a seeded sample is marked by its n below the category's size (simple_python 400, multiple "
        "200, parallel 200, parallel_multiple 200, irrelevance 240, simple_java 100, simple_javascript 50). "
        "\"Mean 4\" is the plain mean of the four call categories.",
        "",
        f"Published rows: {PUBLISHED_SOURCE}. {NON_LIVE_SOURCE[0].upper()}{NON_LIVE_SOURCE[1:]}. Java and "
        "JavaScript are scored by bfcl-eval's own checker; the published pages list them only inside simple.",
        "",
        board_table(runs),
        "",
        "## Several calls: each strategy paired against the default",
        "",
        f"On the same cases as {SINGLE_CALL} (what the default, `auto`, ran as locally before it made several calls; "
        "it now runs as native-strict-cover): the change in points with its "
        "paired bootstrap interval, McNemar's exact p, seconds per case (a strategy over twice the default's "
        "says so) and per fully right decision, and false abstention (no call where one was needed). "
        "Rows made in different runs (the provenance below) time different machine states: where the answers are "
        "the same and the seconds are not, the ratio measures the machine, not the strategy. "
        "The strategies are described in the [strategies guide](../guide/strategies.md#requests-that-ask-for-"
        "several-things).",
        "",
        paired_table(runs),
        "",
        f"Methods that add a knob to the default ({DEFAULT}), paired against it on the same cases:",
        "",
        paired_table(runs, DEFAULT, built_on=DEFAULT),
        "",
        "## What the relevance stage costs on requests that need a call",
        "",
        "The relevance stage may turn a call into no call when it judges that no listed tool fits. On the call "
        "categories every such turn is a false abstention: the share of cases answered with no call, and how "
        "many of them the relevance stage made (the rest the selector made itself).",
        "",
        relevance_table(runs),
    ]
    domain = load_domain(root / "domain")
    if domain:
        parts += [
            "",
            "## The domain suites: requests that need several calls",
            "",
            "The test-split cases of the five domain suites tagged `multi` (several calls; `parallel`: the same tool "
            "several times, a subset) with a seeded sample of 40 single-call and 20 no-tool cases, so that a gain "
            "on the first shows beside any loss on the others (`python -m evals.benchmarks.domain_calls` writes "
            f"the case file). Paired against {SINGLE_CALL} (the default before) on the same cases, per tag.",
            "",
            domain_table(domain),
            "",
            f"Methods that add a knob to the default ({DEFAULT}), paired against it:",
            "",
            domain_table(domain, DEFAULT, built_on=DEFAULT),
            "",
            f"The default ({DEFAULT}) of each model on these cases:",
            "",
            domain_models_table(domain),
        ]
    earlier = load_board(root / EARLIER) if (root / EARLIER).is_dir() else {}
    earlier_domain = load_domain(root / EARLIER / "domain")
    if earlier or earlier_domain:
        parts += [
            "",
            "## The default against its earlier self",
            "",
            f"Cells of an earlier default kept in `results/board/{EARLIER}/`, paired with today's rows on the same "
            "cases (the commits each ran at; a later row may be an earlier run read again by `toolsel eval rescore`, "
            "see the provenance).",
            "",
            earlier_table(runs, earlier),
        ]
        if earlier_domain:
            paired = {}
            for (model, method), rows in earlier_domain.items():
                if (model, method) in domain:
                    paired[(model, f"{method} (earlier)")], paired[(model, method)] = rows, domain[(model, method)]
            parts += ["", "The domain suites' cases, per tag:", "", domain_table(paired, f"{DEFAULT} (earlier)")]
    if provenance.is_file():
        parts += ["", "## Provenance", "", provenance_table(provenance)]
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=Path("results/board"), help="Kept run folders.")
    parser.add_argument("--out", type=Path, help="Write the page here (default: print it).")
    parser.add_argument("--headline", action="store_true",
                        help="Print the README's table instead (the default beside the published rows).")
    args = parser.parse_args(argv)
    if args.headline:
        print(headline_table(load_board(args.runs)))
        return 0
    page = board_page(load_board(args.runs), args.runs)
    if args.out is None:
        print(page, end="")
    else:
        args.out.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
