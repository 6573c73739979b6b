"""A self-contained HTML report: the summary per run, the figures (embedded PNG), the report's tables, and every
case with its request, expected and parsed calls, outcome and score, filtered by run, tag and outcome in the page
(inline CSS and JavaScript; it opens from a file, with no server and no network). Rendered with Jinja2."""

from __future__ import annotations

import base64
import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals.metrics import OUTCOMES, outcome
from evals.reports.collect import Collected
from evals.runs import program_label

__all__ = ["OUTCOMES", "outcome", "render_html", "write_html"]  # a case's outcome is the harness's (evals.metrics)

MAX_TEXT = 4000  # characters of one field shown per case


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, str):
        try:  # calls are kept as JSON text: shown indented
            value = json.dumps(json.loads(value), indent=1, ensure_ascii=False)
        except ValueError:
            pass
    else:
        value = str(value)
    return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + f" ... ({len(value) - MAX_TEXT} more characters)"


def _pct(value: float) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.1f}"


def _tags(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [str(tag) for tag in value] if value is not None and not isinstance(value, float) else []


def _details(row: dict[str, Any]) -> str:
    parts = [(name, _text(row.get(name))) for name in ("reasoning", "raw_response", "parse_error", "problems",
                                                       "error_message")]
    return "\n\n".join(f"{name}:\n{text}" for name, text in parts if text and text != "[]")


def _case_rows(index: int, rows) -> list[dict[str, Any]]:
    cases = []
    for row in rows.to_dict("records"):
        latency = row.get("latency_s")
        cases.append({
            "run": index, "id": str(row.get("id", "")), "tags": _tags(row.get("tags")), "outcome": outcome(row),
            "request": _text(row.get("request")), "expected": _text(row.get("expected")),
            "predicted": _text(row.get("predicted")), "details": _details(row),
            "score": f"full {_pct(row.get('full_match'))}, tools {_pct(row.get('tool_exact'))}",
            "latency": "" if latency is None or latency != latency else f"{latency:.2f}",
        })
    return cases


def render_html(collected: Collected, *, title: str = "tool-selection report",
                figures: list[tuple[str, bytes]] = (), sections: list[tuple[str, str]] = ()) -> str:
    """The page: ``figures`` as (title, PNG bytes), ``sections`` as (title, markdown table text)."""
    import jinja2

    from evals.reports.strategies import figures as headline

    runs, cases, tags = [], [], set()
    for index, ((model, strategy, suite), run) in enumerate(collected.runs.items()):
        f = headline(run.rows)
        runs.append({"label": run.label, "suite": suite, "model": model, "strategy": strategy,
                     "program": program_label(run.params.get("program")), "split": run.params.get("split", ""),
                     "cases": f["cases"], "accuracy": f"{_pct(f['accuracy'])} [{_pct(f['low'])}, {_pct(f['high'])}]",
                     "tool_exact": _pct(f["tool_exact"]), "abstention": _pct(f["abstention"]),
                     "false_abstention": _pct(f["false_abstention"]), "parse": _pct(f["parse"]),
                     "seconds": f"{f['seconds']:.2f}", "output_tokens": f"{f['output_tokens']:.0f}",
                     "cached": run.cached})
        rows = _case_rows(index, run.rows)
        tags.update(tag for row in rows for tag in row["tags"])
        cases += rows
    environment = jinja2.Environment(loader=jinja2.PackageLoader("evals.reports", "templates"),
                                     autoescape=True, undefined=jinja2.StrictUndefined)
    return environment.get_template("report.html.j2").render(
        title=title, generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), runs=runs,
        run_labels=[run["label"] for run in runs], loops=collected.loops, cases=cases, tags=sorted(tags),
        outcomes=OUTCOMES,
        figures=[{"title": name, "png": base64.b64encode(png).decode("ascii")} for name, png in figures],
        sections=[{"title": name, "html": _markdown_table_html(text)} for name, text in sections],
    )


def _markdown_table_html(text: str) -> Any:
    """A markdown section (pipe tables and plain lines) as HTML, escaped."""
    from html import escape

    from markupsafe import Markup

    out, table = [], []

    def flush() -> None:
        if table:
            head, *body = table
            out.append("<table><thead><tr>" + "".join(f"<th>{escape(c)}</th>" for c in head) + "</tr></thead><tbody>"
                       + "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in body)
                       + "</tbody></table>")
            table.clear()

    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= set("-: ") for c in cells):
                table.append(cells)
            continue
        flush()
        if line.strip():
            out.append(f"<p>{escape(line.lstrip('- '))}</p>")
    flush()
    return Markup("\n".join(out))


def write_html(path: str | Path, page: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path
