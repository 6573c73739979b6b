"""Sweeps: suites x models x selector settings, one ``evaluate`` call per cell, then one table, paired
comparisons against a baseline cell and one figure (``toolsel sweep``).

    plan = SweepPlan.build(name="strategies", axes={"suite": ["treasure_hunt", "events"],
                                                    "strategy": ["native", "native-strict"]},
                           run=RunConfig(limit=5, mlflow=False))
    result = run_sweep(plan)            # runs/sweeps/strategies/{sweep.yaml, CELL/..., sweep.csv, sweep.md, sweep.png}
    result.cells, result.paired

A plan is a base ``SelectorSpec`` and ``RunConfig``, the split, and axes to vary: ``suite`` and ``model``, and the
selector's fields by their flat names (``strategy``, ``gate_threshold``, ``retrieve``, ...: every flag of the selector). Each cell runs in its
own folder under the sweep's, named for its values and a hash of what determines its rows, so a re-run reads the
finished cells back and resumes the unfinished ones (``evaluate``'s resumable runs). Paired comparisons are made
within a suite: each cell against the cell that has the baseline's values and the same values on every other axis.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.naming import slug
from evals.sweep_plan import (
    AXES,
    PLAN_FILE,
    SELECTOR_AXES,
    SWEEPS_DIR,
    Cell,
    SweepError,
    SweepPlan,
    parse_baseline,
)

if TYPE_CHECKING:
    import dspy
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["AXES", "Cell", "SELECTOR_AXES", "SweepError", "SweepPlan", "SweepResult", "parse_baseline", "run_sweep"]


@dataclass
class SweepResult:
    """A finished sweep: one row per cell, the paired comparisons, and where it all is."""

    plan: SweepPlan
    out_dir: Path
    cells: pd.DataFrame
    paired: pd.DataFrame
    rows: dict[str, pd.DataFrame] = field(default_factory=dict)  # cell folder -> per-case rows
    figure: Path | None = None

    def markdown(self) -> str:
        return sweep_markdown(self.plan, self.cells, self.paired)


def run_sweep(plan: SweepPlan, out_dir: str | Path | None = None, *, lms: Mapping[str, dspy.BaseLM] | None = None,
              progress: Callable[[str], None] = print) -> SweepResult:
    """Run every cell of ``plan`` (finished cells are read back; a cell that fails is reported and skipped), then
    write ``sweep.csv``, ``sweep.md`` and ``sweep.png`` in ``out_dir`` (default ``runs/sweeps/NAME``). ``lms``:
    LM objects to use for some model names (scripted LMs in tests) instead of loading them from their spec."""
    from evals.evaluation import evaluate
    from evals.runs import open_run

    cells = plan.cells()  # every problem of the plan, before any model loads
    out_dir = Path(out_dir) if out_dir is not None else SWEEPS_DIR / slug(plan.name)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / PLAN_FILE).write_text(plan.to_yaml(cells), encoding="utf-8")
    progress(f"sweep {plan.name}: {len(cells)} cells in {out_dir}")
    rows: dict[str, pd.DataFrame] = {}
    outcomes: dict[str, dict[str, Any]] = {}
    for number, cell in enumerate(cells, 1):
        run_dir = out_dir / cell.folder
        head = f"cell {number}/{len(cells)}: {cell.title}"
        if (run_dir / "summary.json").is_file() and not plan.run.fresh:
            rows[cell.folder] = open_run(run_dir).rows
            outcomes[cell.folder] = {"status": "done before"}
            progress(f"{head}: finished before, read from {run_dir}")
            continue
        progress(f"{head} ...")
        started = time.monotonic()
        try:
            result = evaluate(cell.suite, (lms or {}).get(cell.model, cell.model), selector=cell.spec,
                              run=plan.run.replace(run_dir=run_dir), split=None if plan.split == "all" else plan.split)
        except Exception as error:  # a bad model, a broken engine, a refused setting: the sweep goes on
            message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            outcomes[cell.folder] = {"status": "failed", "error": message}
            progress(f"{head}: failed ({type(error).__name__}: {message})")
            continue
        rows[cell.folder] = result.results
        outcomes[cell.folder] = {"status": "ran"}
        accuracy = result.summary.get("accuracy", math.nan)
        progress(f"{head}: accuracy {_pct(accuracy)}% over {len(result.results)} cases "
                 f"({time.monotonic() - started:.0f} s)")
    table = cell_table(cells, rows, outcomes)
    paired = paired_table(plan, cells, rows)
    result = SweepResult(plan, out_dir, table, paired, rows)
    table.to_csv(out_dir / "sweep.csv", index=False)
    paired.to_csv(out_dir / "sweep_paired.csv", index=False)
    (out_dir / "sweep.md").write_text(result.markdown() + "\n", encoding="utf-8")
    if rows:
        from evals.figure_files import save_figure

        result.figure = save_figure(sweep_figure(table), out_dir / "sweep.png")
    return result


def _mean(rows: pd.DataFrame, column: str) -> float:
    import pandas as pd

    if column not in rows:
        return math.nan
    values = pd.to_numeric(rows[column], errors="coerce").dropna()
    return float(values.mean()) if len(values) else math.nan


def cell_table(cells: list[Cell], rows: Mapping[str, pd.DataFrame],
               outcomes: Mapping[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per cell: suite, model, strategy, the other settings, cases, accuracy with its 95% interval,
    abstention and false abstention (where the cases define them), seconds and tokens per case, and status."""
    import pandas as pd

    from evals.metrics import bootstrap_ci, cached_mask, cost_figures

    records = []
    for cell in cells:
        record: dict[str, Any] = {"suite": cell.suite_name, "model": cell.model,
                                  "strategy": cell.spec.describe()["strategy"], "settings": cell.settings}
        cell_rows = rows.get(cell.folder)
        if cell_rows is not None and len(cell_rows):
            accuracy, low, high = bootstrap_ci(cell_rows["full_match"])
            cached = cached_mask(cell_rows)
            measured = cell_rows[~cached]  # time and tokens: DSPy's cached answers record neither
            spent = cost_figures(cell_rows)
            record.update(cases=len(cell_rows), accuracy=accuracy, accuracy_low=low, accuracy_high=high,
                          abstention=_mean(cell_rows, "abstention_correct"),
                          false_abstention=_mean(cell_rows, "false_abstention"),
                          seconds_per_case=_mean(measured, "latency_s"),
                          tokens_per_case=_mean(measured, "input_tokens") + _mean(measured, "output_tokens"),
                          tokens=spent.get("total_input_tokens", math.nan) + spent.get("total_output_tokens", math.nan),
                          cached=int(cached.sum()))
        record.update(outcomes.get(cell.folder, {}), folder=cell.folder)
        records.append(record)
    columns = ["suite", "model", "strategy", "settings", "cases", "accuracy", "accuracy_low", "accuracy_high",
               "abstention", "false_abstention", "seconds_per_case", "tokens_per_case", "tokens", "cached", "status",
               "error", "folder"]
    return pd.DataFrame(records).reindex(columns=columns)


def paired_table(plan: SweepPlan, cells: list[Cell], rows: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Accuracy of each cell against its baseline cell on the cases both scored: the difference in points with
    its 95% paired bootstrap interval and McNemar's exact p (``evals.stats.compare_paired``)."""
    import pandas as pd

    from evals.stats import compare_paired

    records = []
    for cell in cells:
        baseline = plan.baseline_of(cell, cells)
        if baseline is None or baseline is cell or cell.folder not in rows or baseline.folder not in rows:
            continue
        compared = compare_paired(rows[baseline.folder], rows[cell.folder], {"accuracy": "full_match"})
        if compared.empty:
            continue
        row = compared.iloc[0]
        varied = {axis: value for axis, value in cell.values.items() if value != baseline.values[axis]}
        records.append({
            "suite": cell.suite_name,
            "cell": ", ".join(f"{k}={v}" for k, v in cell.values.items() if k in plan.swept_axes) or cell.title,
            "baseline": ", ".join(f"{k}={v}" for k, v in baseline.values.items() if k in varied),
            "cases": int(row["n"]), "baseline_accuracy": row["a"], "accuracy": row["b"],
            "difference_points": 100 * row["difference"], "low_points": 100 * row["ci_low"],
            "high_points": 100 * row["ci_high"], "mcnemar_p": row["p_value"], "verdict": row["verdict"].replace(
                "B better", "better than baseline").replace("A better", "worse than baseline"),
        })
    columns = ["suite", "cell", "baseline", "cases", "baseline_accuracy", "accuracy", "difference_points",
               "low_points", "high_points", "mcnemar_p", "verdict"]
    return pd.DataFrame(records).reindex(columns=columns)


def _pct(value: Any) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.1f}"


def _number(value: Any, digits: int = 2) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _markdown(header: list[str], lines: list[list[str]]) -> str:
    rows = [header, ["---"] * len(header), *lines]
    return "\n".join("| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows)


def sweep_markdown(plan: SweepPlan, cells: pd.DataFrame, paired: pd.DataFrame) -> str:
    """The cell table and the paired table in markdown (rates in %, differences in points)."""
    lines = []
    for r in cells.to_dict("records"):
        ran = isinstance(r.get("cases"), (int, float)) and not math.isnan(r["cases"])
        status = r["status"] if r["status"] != "failed" else f"failed: {r['error']}"
        if ran and r["cached"]:  # DSPy's cache records neither time nor tokens
            status += f"; {int(r['cached'])} answers cached"
        lines.append([r["suite"], r["model"], r["strategy"], r["settings"],
                      str(int(r["cases"])) if ran else "-",
                      f"{_pct(r['accuracy'])} [{_pct(r['accuracy_low'])}, {_pct(r['accuracy_high'])}]" if ran else "-",
                      _pct(r["abstention"]), _pct(r["false_abstention"]), _number(r["seconds_per_case"]),
                      _number(r["tokens_per_case"], 0), status])
    text = f"## Sweep {plan.name} ({plan.split})\n\n" + _markdown(
        ["suite", "model", "strategy", "settings", "cases", "accuracy % [95% CI]", "abstention %",
         "false abstention %", "s/case", "tokens/case", "status"], lines)
    if "tokens" in cells and cells["tokens"].notna().any():
        text += (f"\n\nTokens spent by the sweep: {cells['tokens'].sum():,.0f} (prompt and completion, over the "
                 f"cases the models answered; {int(cells['cached'].fillna(0).sum())} cached answers left out).")
    baseline = ", ".join(f"{k}={v}" for k, v in plan.baseline_values.items() if k in plan.swept_axes)
    text += f"\n\n## Paired against the baseline ({baseline}; same suite, same cases)\n\n"
    if paired.empty:
        return text + "(no cell to compare: every axis but the suite has one value, or the baseline did not run)"
    return text + _markdown(
        ["suite", "cell", "vs", "cases", "baseline %", "cell %", "difference (points) [95% CI]", "McNemar p",
         "verdict"],
        [[r["suite"], r["cell"], r["baseline"], str(r["cases"]), _pct(r["baseline_accuracy"]), _pct(r["accuracy"]),
          f"{r['difference_points']:+.1f} [{r['low_points']:+.1f}, {r['high_points']:+.1f}]",
          _number(r["mcnemar_p"], 3), r["verdict"]] for r in paired.to_dict("records")])


def sweep_figure(cells: pd.DataFrame) -> Figure:
    """Accuracy with its 95% interval per cell, one panel per suite (cells that did not run are left out)."""
    from matplotlib.figure import Figure

    ran = cells[cells["accuracy"].notna()]
    suites = list(dict.fromkeys(ran["suite"]))
    heights = [max(len(ran[ran["suite"] == suite]), 1) for suite in suites]
    fig = Figure(figsize=(8, 0.35 * sum(heights) + 0.9 * len(suites) + 0.6))
    axes = fig.subplots(len(suites), 1, squeeze=False, sharex=True, gridspec_kw={"height_ratios": heights})[:, 0]
    models = list(dict.fromkeys(ran["model"]))
    shared_settings = ran["settings"].nunique() == 1  # said by every cell alike: left out of the labels
    for ax, suite in zip(axes, suites, strict=True):
        rows = ran[ran["suite"] == suite].iloc[::-1]
        for y, r in enumerate(rows.to_dict("records")):
            accuracy = 100 * r["accuracy"]
            ax.errorbar(accuracy, y, xerr=[[accuracy - 100 * r["accuracy_low"]], [100 * r["accuracy_high"] - accuracy]],
                        fmt="o", capsize=3, color=f"C{models.index(r['model']) % 10}")
        labels = [f"{r['strategy']}" + (f" ({r['model']})" if len(models) > 1 else "")
                  + (f", {r['settings']}" if r["settings"] and not shared_settings else "")
                  for r in rows.to_dict("records")]
        ax.set_yticks(range(len(rows)), labels, fontsize=7)
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_title(suite, fontsize=9, loc="left")
        ax.grid(axis="x", alpha=0.3)
    axes[-1].set(xlabel="accuracy (full match), % with 95% CI", xlim=(-3, 103))  # 0 and 100 drawn whole
    fig.tight_layout()
    return fig
