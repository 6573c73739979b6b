"""``toolsel report``: the strategy tables from run folders as the strategy report prints them, a figure, and a
self-contained HTML page with every case."""

import json
import re

import pytest

from evals.benchmarks import strategy_report
from evals.reports.collect import collect
from evals.reports.html import OUTCOMES, outcome, render_html
from evals.reports.tables import markdown_report
from tool_selection.cli import main
from tool_selection.errors import ToolSelectionError


def test_the_report_prints_the_strategy_tables_of_the_kept_rows(strategy_runs, capsys):
    assert strategy_report.main(["--runs", str(strategy_runs)]) == 0
    expected = capsys.readouterr().out.strip()
    assert markdown_report(collect([strategy_runs])).strip() == expected
    assert "| treasure_hunt | 0.5b | native-strict | 105 | 21.0 [13.3, 28.6] |" in expected


def test_runs_outside_the_layout_are_keyed_by_their_params(strategy_runs):
    run = strategy_runs / "qwen2.5-coder-0.5b" / "native" / "treasure_hunt"
    assert list(collect([run]).runs) == [("qwen2.5-coder-0.5b", "native", "treasure_hunt")]


def test_report_writes_a_figure_and_an_html_page(strategy_runs, tmp_path, capsys):
    plot, page = tmp_path / "acc.png", tmp_path / "report.html"
    assert main(["report", str(strategy_runs), "--plot", str(plot), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "## Strategies" in out and f"figure: {plot}" in out and f"HTML report: {page}" in out
    assert plot.read_bytes().startswith(b"\x89PNG")
    html = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing fetched: it opens from a file
    assert "data:image/png;base64," in html and "treasure-hunt-test-local-qwen2.5-coder-0.5b-native-strict" in html
    data = json.loads(re.search(r'<script type="application/json" id="case-data">(.*?)</script>', html, re.S)[1])
    assert len(data) == 210 and {row["outcome"] for row in data} <= set(OUTCOMES)
    assert {"id", "request", "expected", "predicted", "score", "tags"} <= set(data[0])


def test_case_text_cannot_break_out_of_the_page(strategy_runs):
    collected = collect([strategy_runs])
    run = next(iter(collected.runs.values()))
    run.rows.loc[0, "request"] = "</script><script>alert(1)</script>"
    html = render_html(collected)
    assert "<script>alert(1)" not in html and "\\u003c/script\\u003e" in html


def test_outcomes():
    assert outcome({"error": 1, "full_match": 0}) == "error"
    assert outcome({"error": 0, "parse_failure": 1, "full_match": 0}) == "parse failure"
    assert outcome({"error": 0, "parse_failure": 0, "full_match": 1}) == "right"
    assert outcome({"error": 0, "parse_failure": 0, "full_match": 0}) == "wrong"


def test_report_refuses_what_it_cannot_read(tmp_path, capsys):
    with pytest.raises(ToolSelectionError, match="No runs under"):
        collect([tmp_path])
    assert main(["report", str(tmp_path / "none")]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert main(["report", str(tmp_path), "--plot", "figure.jpeg"]) == 2
    assert "Cannot write a figure as 'figure.jpeg'" in capsys.readouterr().err
