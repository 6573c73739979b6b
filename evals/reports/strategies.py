"""The strategy report's tables and figure, from per-case rows keyed by (model, strategy, suite): for every run,
cases, accuracy (full match) with its 95% interval, tool-set exact match, abstention accuracy, false abstention,
parse failures, seconds and output tokens per case, and seconds per correct decision. ``gate+native`` runs were made
with the gate open: their selection rows are the ``native`` rows (the gate's own time and tokens are kept apart),
and the gate at the threshold chosen on the BFCL dev rows is reported on the test rows. Paired differences
(bootstrap interval, McNemar's exact p) compare strategies on the cases both ran. ``toolsel report`` and the script
``evals.benchmarks.strategy_report`` print them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from evals.gate import choose_threshold, gated_results
from evals.metrics import bootstrap_ci, cached_mask
from evals.stats import compare_paired
from tool_selection.spec import SelectorSpec, SpecError
from tool_selection.strategies import GATE_PREFIX, STRUCTURED_STRATEGY, UNDECLARED_ARGUMENTS
from tool_selection.strategies.native import Native, NativeStrict

__all__ = [
    "NAMED_PAIRS",
    "accuracy_figure",
    "fastest_per_correct",
    "figures",
    "gate_table",
    "pair_heading",
    "paired_table",
    "plot_accuracy",
    "run_spec",
    "run_strategy",
    "safe_name",
    "strategy_pairs",
    "strategy_sections",
    "strategy_table",
]

DEFAULT_UNDECLARED = SelectorSpec.model_fields["undeclared_arguments"].default


def run_spec(strategy: str) -> SelectorSpec | None:
    """The selector a run's strategy directory stands for: a strategy name (``gate+NAME`` too), or a name with
    the undeclared-argument handling appended (``native-drop``); None for a name no registered strategy has."""
    for handling in UNDECLARED_ARGUMENTS:
        base = strategy.removesuffix(f"-{handling}")
        if handling != DEFAULT_UNDECLARED and base != strategy:
            try:
                return SelectorSpec.build(strategy=base, undeclared_arguments=handling)
            except SpecError:
                break
    try:
        return SelectorSpec.build(strategy=strategy)
    except SpecError:
        return None


def spec_label(spec: SelectorSpec, *, gate: bool = True) -> str:
    """A spec's directory name (``run_spec``'s inverse), without the gate unless ``gate``."""
    described = spec.describe()
    name = described["strategy"] if gate else spec.base_strategy
    handling = described.get("undeclared_arguments")
    return f"{name}-{handling}" if handling else name


def pair_title(strategy: str) -> str:
    """A strategy as the paired tables' titles name it, the undeclared-argument handling spelled out."""
    spec = run_spec(strategy)
    handling = spec.describe().get("undeclared_arguments") if spec is not None else None
    return f"{spec.strategy}, undeclared arguments: {handling}" if handling else strategy


def pair_heading(a: str, b: str) -> str:
    """The title of the paired table of ``a`` and ``b``."""
    return f"{pair_title(a)} (A) vs {pair_title(b)} (B)"


def safe_name(strategy: str) -> str:
    """A strategy's name as a directory name every file system takes (``text:call`` -> ``text_call``)."""
    return strategy.replace(":", "_")


def run_strategy(run: Path) -> str:
    """The strategy a run directory holds: its directory name, or the run's own strategy where the name is that
    strategy's safe form (``text_call``); a name of its own (``native-drop``) stays as it is."""
    try:
        ran = json.loads((run / "summary.json").read_text(encoding="utf-8"))["params"]["strategy"]
    except (OSError, ValueError, KeyError, TypeError):
        return run.parent.name
    return ran if isinstance(ran, str) and safe_name(ran) == run.parent.name else run.parent.name


def _pct(value: float) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.1f}"


def _mean(frame: pd.DataFrame, column: str) -> float:
    return float(pd.to_numeric(frame[column], errors="coerce").mean()) if column in frame else math.nan


def figures(frame: pd.DataFrame) -> dict[str, float]:
    """Headline figures of a set of per-case rows (selection only: the gate's time is taken out)."""
    accuracy, low, high = bootstrap_ci(frame["full_match"])
    measured = frame[~cached_mask(frame)]  # DSPy's cached answers record neither time nor tokens
    seconds = pd.to_numeric(measured["latency_s"], errors="coerce")
    if "gate_seconds" in measured:
        seconds = seconds - pd.to_numeric(measured["gate_seconds"], errors="coerce").fillna(0)
    return {"cases": len(frame), "accuracy": accuracy, "low": low, "high": high,
            "tool_exact": _mean(frame, "tool_exact"), "abstention": _mean(frame, "abstention_correct"),
            "false_abstention": _mean(frame, "false_abstention"), "parse": _mean(frame, "parse_failure"),
            "seconds": float(seconds.mean()), "output_tokens": _mean(measured, "output_tokens"),
            "per_correct": float(seconds.mean()) / accuracy if accuracy else math.inf}


def _row(model: str, strategy: str, suite: str, f: dict[str, float], note: str = "") -> str:
    return (f"| {suite} | {model.removeprefix('qwen2.5-coder-')} | {strategy}{note} | {f['cases']} | "
            f"{_pct(f['accuracy'])} [{_pct(f['low'])}, {_pct(f['high'])}] | {_pct(f['tool_exact'])} | "
            f"{_pct(f['abstention'])} | {_pct(f['false_abstention'])} | {_pct(f['parse'])} | {f['seconds']:.2f} | "
            f"{f['output_tokens']:.0f} | {f['per_correct']:.1f} |")


HEADER = ("| suite | model | strategy | cases | accuracy % [95% CI] | tool-set exact % | abstention % | "
          "false abstention % | parse failures % | s/case | output tok/case | s per correct |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")


def _gated(strategy: str) -> bool:
    spec = run_spec(strategy)
    return spec is not None and spec.gated


def _shown(strategy: str) -> str:
    """The strategy a run's rows stand for: ``gate+NAME`` runs were made with the gate open, so they stand for
    ``NAME``."""
    spec = run_spec(strategy)
    return strategy if spec is None else spec_label(spec, gate=False)


def strategy_table(runs: dict) -> str:
    lines = [HEADER]
    for (model, strategy, label), frame in sorted(runs.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1])):
        note = " (gate open)" if _gated(strategy) else ""
        lines.append(_row(model, _shown(strategy), label, figures(frame), note))
    return "\n".join(lines)


def gate_table(runs: dict) -> str:
    """The gate at the threshold chosen on the BFCL dev rows (both categories), on the test rows."""
    lines = ["| model | gate model threshold (dev) | split | cases | accuracy % [95% CI] | abstention % (irrelevance) | "
             "false abstention % (multiple) | gate closed % | native alone, same cases % | paired B-A [95% CI], p |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for model, gated in sorted({(m, s) for m, s, _ in runs if _gated(s)}):
        parts = [runs.get((model, gated, f"bfcl_{c}")) for c in ("multiple", "irrelevance")]
        if any(p is None or "gate_score" not in p for p in parts):
            continue
        both = pd.concat(parts, ignore_index=True)
        choice = choose_threshold(both[both["split"] == "dev"].reset_index(drop=True))
        test = both[both["split"] == "test"].reset_index(drop=True)
        gated = gated_results(test, choice.threshold)
        f = figures(gated)
        paired = compare_paired(test, gated, {"accuracy": "full_match"}).iloc[0]
        lines.append(f"| {model.removeprefix('qwen2.5-coder-')} | {choice.threshold:.2f} | test | {len(test)} | "
                     f"{_pct(f['accuracy'])} [{_pct(f['low'])}, {_pct(f['high'])}] | {_pct(f['abstention'])} | "
                     f"{_pct(f['false_abstention'])} | {_pct(gated['gate_closed'].mean())} | "
                     f"{_pct(_mean(test, 'full_match'))} | {100 * paired['difference']:+.1f} "
                     f"[{100 * paired['ci_low']:+.1f}, {100 * paired['ci_high']:+.1f}], p={paired['p_value']:.3g} |")
    return "\n".join(lines)


DOMAIN_SUITES = ("treasure_hunt", "events", "ecommerce", "finance", "language")


def _run(runs: dict, model: str, strategy: str, label: str) -> pd.DataFrame | None:
    """A strategy's rows; ``gate+NAME`` runs made with the gate open stand for ``NAME``."""
    frame = runs.get((model, strategy, label))
    return frame if frame is not None else runs.get((model, f"{GATE_PREFIX}{strategy}", label))


def paired_table(runs: dict, a: str = STRUCTURED_STRATEGY, b: str = Native.name) -> str:
    """Per suite and model, B - A on the cases both ran; the domain suites also pooled (case ids are unique)."""
    lines = [f"| suite | model | cases | {a} % | {b} % | B-A points [95% CI] | McNemar p | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    pooled: dict[str, list[tuple[pd.DataFrame, pd.DataFrame]]] = {}
    pairs = []
    for model, label in sorted({(model, label) for model, _, label in runs}):
        frame_a, frame_b = _run(runs, model, a, label), _run(runs, model, b, label)
        if frame_a is None or frame_b is None:
            continue
        pairs.append((label, model, frame_a, frame_b))
        if label in DOMAIN_SUITES:
            pooled.setdefault(model, []).append((frame_a, frame_b))
    for model, frames in pooled.items():
        if len(frames) > 1:
            pairs.append((f"{len(frames)} domain suites pooled", model, pd.concat(f[0] for f in frames),
                          pd.concat(f[1] for f in frames)))
    for label, model, frame_a, frame_b in pairs:
        row = compare_paired(frame_a, frame_b, {"accuracy": "full_match"}).iloc[0]
        lines.append(f"| {label} | {model.removeprefix('qwen2.5-coder-')} | {row['n']} | {_pct(row['a'])} | "
                     f"{_pct(row['b'])} | {100 * row['difference']:+.1f} [{100 * row['ci_low']:+.1f}, "
                     f"{100 * row['ci_high']:+.1f}] | {row['p_value']:.3g} | {row['verdict']} |")
    return "\n".join(lines)


NATIVE_DROPPING = spec_label(SelectorSpec(strategy=Native.name, undeclared_arguments="drop"))
NAMED_PAIRS = ((STRUCTURED_STRATEGY, Native.name), (Native.name, NativeStrict.name),
               (NATIVE_DROPPING, NativeStrict.name))
"""The paired comparisons always made: the structured answer against the model's own format, and the two ways
of keeping calls valid (a grammar, or dropping undeclared arguments) against each other."""


def strategy_pairs(runs: dict) -> list[tuple[str, str]]:
    """The pairs the report compares: the named ones, then native (the hosted default) against every other
    strategy present (``text:*``, ``native-cot``, ...), each pair once."""
    present = {_shown(strategy) for _, strategy, _ in runs}
    pairs = list(NAMED_PAIRS)
    seen = {frozenset(pair) for pair in pairs}
    for strategy in sorted(present - {Native.name, NATIVE_DROPPING}):
        if frozenset((Native.name, strategy)) not in seen:
            pairs.append((Native.name, strategy))
    return pairs


def fastest_per_correct(runs: dict) -> str:
    """Per suite and model: the strategy with the fewest seconds per correct decision."""
    best: dict[tuple[str, str], tuple[float, str]] = {}
    for (model, strategy, label), frame in runs.items():
        f = figures(frame)
        key = (label, model)
        name = _shown(strategy)
        if np.isfinite(f["per_correct"]) and (key not in best or f["per_correct"] < best[key][0]):
            best[key] = (f["per_correct"], name)
    return "\n".join(f"- {label}, {model.removeprefix('qwen2.5-coder-')}: {name} ({value:.1f} s per correct decision)"
                     for (label, model), (value, name) in sorted(best.items()))


def accuracy_figure(runs: dict):
    """Accuracy with its 95% interval per suite (rows) and strategy (colours), one panel per model; a bare
    matplotlib ``Figure`` (rendered by Agg), so that no global pyplot backend is touched."""
    from matplotlib.figure import Figure

    models = sorted({model for model, _, _ in runs})
    suites = sorted({label for _, _, label in runs}, reverse=True)
    strategies = sorted({_shown(strategy) for _, strategy, _ in runs})
    step = 0.7 / len(strategies)
    fig = Figure(figsize=(6.5 * len(models), max(3.0, 0.14 * len(suites) * (len(strategies) + 1) + 1.2)))
    axes = fig.subplots(1, len(models), sharey=True, squeeze=False)[0]
    for ax, model in zip(axes, models, strict=True):
        for (_, strategy, label), frame in sorted((k, v) for k, v in runs.items() if k[0] == model):
            f, name = figures(frame), _shown(strategy)
            y = suites.index(label) + (strategies.index(name) - (len(strategies) - 1) / 2) * step
            spread = [[100 * (f["accuracy"] - f["low"])], [100 * (f["high"] - f["accuracy"])]]
            ax.errorbar(100 * f["accuracy"], y, xerr=spread, fmt="o", ms=4, capsize=2,
                        color=f"C{strategies.index(name)}", label=name)
        handles = dict(zip(*reversed(ax.get_legend_handles_labels()), strict=True))
        ax.legend(handles.values(), handles.keys(), fontsize=8, loc="lower right")
        ax.set(title=model, xlabel="accuracy (full match), % with 95% CI", xlim=(0, 100))
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(suites)), suites)
    fig.tight_layout()
    return fig


def strategy_sections(runs: dict) -> list[str]:
    """The strategy report's sections in markdown, each under its heading: every run's figures, the relevance gate
    (when a gated run has BFCL dev and test rows), each pair of strategies on the cases both ran, and the fastest
    strategy per correct decision."""
    sections = ["## Strategies\n\n" + strategy_table(runs)]
    gate = gate_table(runs)
    if gate.count("\n") > 1:
        sections.append("## Relevance gate (threshold chosen on BFCL dev, reported on BFCL test)\n\n" + gate)
    for a, b in strategy_pairs(runs):
        table = paired_table(runs, a, b)
        if table.count("\n") > 1:  # more than the header: the two ran some of the same cases
            sections.append(f"## Paired: {pair_heading(a, b)}, same cases\n\n{table}")
    sections.append("## Fastest per correct decision\n\n" + fastest_per_correct(runs))
    return sections


def plot_accuracy(runs: dict, path: Path) -> Path:
    """``accuracy_figure`` saved as a PNG file at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    accuracy_figure(runs).savefig(path, dpi=120)
    return path
