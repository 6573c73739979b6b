"""``toolsel report`` (the tables, a figure and a self-contained HTML page from finished runs) and ``toolsel
view`` (the MLflow UI on the project's tracking store, at a run's page)."""

from __future__ import annotations

import argparse

from tool_selection.run_config import add_tracking_flag

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    report = subparsers.add_parser(
        "report", help="Tables, a figure and an HTML page from finished runs.",
        description="Read finished runs (run directories of 'toolsel eval' or 'toolsel eval loop', or folders that "
                    "hold them, such as results/strategies) and print their tables in markdown: accuracy with its "
                    "95% interval per suite, model and strategy, the relevance gate, paired differences and the "
                    "loop table. --plot draws accuracy per run; --html writes one self-contained page (summary, "
                    "figure, every case with filters by run, tag and outcome) that opens from a file.",
        epilog="examples:\n  toolsel report results/strategies --plot strategies.png\n"
               "  toolsel report runs/RUN_A runs/RUN_B --html report.html",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    report.add_argument("runs", nargs="+", metavar="RUN", help="Run directories, or folders that hold them.")
    report.add_argument("--plot", metavar="FILE", help="Also draw accuracy with its interval (PNG, SVG or PDF).")
    report.add_argument("--html", metavar="FILE", help="Also write a self-contained HTML report.")
    report.add_argument("--title", default="tool-selection report", help="The HTML report's title.")
    report.set_defaults(handler=_report)

    view = subparsers.add_parser(
        "view", help="Open the MLflow UI on the project's tracking store (localhost only).",
        description="Start the MLflow UI on the tracking store (bound to 127.0.0.1), wait until it answers, and "
                    "print the address of a run's page, its per-case table (Artifacts: cases.json) and its traces "
                    "(one per case: the prompt, the answer, the parsed calls, the score), or of the experiments. "
                    "Stops with Ctrl-C.")
    view.add_argument("run", nargs="?", help="A run directory of 'toolsel eval' (logged to MLflow) or an MLflow run id.")
    add_tracking_flag(view)
    view.add_argument("--port", type=int, default=5000, help="Port on 127.0.0.1 (default: 5000).")
    view.add_argument("--wait", type=float, default=300, metavar="SECONDS",
                      help="How long to wait for the UI to start (default: 300).")
    view.set_defaults(handler=_view)


def _report(args: argparse.Namespace) -> int:
    from evals.reports.collect import collect
    from evals.reports.figures import check_figure_path, save_figure

    if args.plot:
        check_figure_path(args.plot)
    collected = collect(args.runs)  # a missing folder answers here, before the tables' libraries load (a second)
    from evals.reports.tables import markdown_report

    text = markdown_report(collected)
    print(text)
    figure = _figure(collected) if (args.plot or args.html) and collected.runs else None
    if args.plot and figure is not None:
        print(f"\nfigure: {save_figure(figure, args.plot)}")
    if args.html:
        from evals.reports.figures import figure_png
        from evals.reports.html import render_html, write_html

        sections = [(part.split("\n", 1)[0].lstrip("# "), part.split("\n", 1)[1]) for part in text.split("\n\n## ")]
        page = render_html(collected, title=args.title,
                           figures=[("Accuracy per run", figure_png(figure))] if figure is not None else [],
                           sections=sections)
        print(f"HTML report: {write_html(args.html, page)}")
    return 0


def _figure(collected):
    """Per model, accuracy per suite (rows) and strategy (colours); one row per run for a single run."""
    from evals.reports.figures import accuracy_figure
    from evals.reports.strategies import accuracy_figure as grid_figure

    if len(collected.runs) == 1:
        return accuracy_figure(list(collected.runs.values()))
    return grid_figure(collected.frames)


def _view(args: argparse.Namespace) -> int:
    from evals.reports.view import serve_ui

    return serve_ui(args.run, tracking_uri=args.tracking_uri, port=args.port, wait_s=args.wait)

