"""``toolsel serve log``: log a compiled selector as an MLflow model, ready for ``mlflow models serve``."""

from __future__ import annotations

import argparse

from tool_selection.errors import ToolSelectionError

EXAMPLE_REQUEST = '{"inputs": {"request": "REQUEST"}}'


def register(subparsers: argparse._SubParsersAction) -> None:
    serve = subparsers.add_parser("serve", help="Log a selector as an MLflow model for MLflow's model server.",
                                  description="Log a selector as an MLflow model for MLflow's model server.")
    sub = serve.add_subparsers(dest="serve_command", metavar="SUBCOMMAND")
    serve.set_defaults(handler=lambda args: serve.print_help() or 0)

    log = sub.add_parser(
        "log", help="Log a compiled selector (or a zero-shot one over a tool set) with its model.",
        description="Log a compiled selector directory, or a zero-shot selector over a tool set, as an MLflow "
                    "model (from code: a model file, the program's JSON state and manifest; no pickle), and print "
                    "how to serve and query it.",
        epilog="example: toolsel serve log --program programs/finance-bootstrap-qwen2.5-coder-0.5b "
               "--model local:qwen2.5-coder-0.5b")
    source = log.add_mutually_exclusive_group(required=True)
    source.add_argument("--program", help="Compiled selector directory (from 'toolsel optimize').")
    source.add_argument("--tool-set", help="A tool set, for a zero-shot selector.")
    log.add_argument("--model", required=True, help="Model spec the served selector calls.")
    log.add_argument("--name", default="selector", help="Model name inside the MLflow run (default: selector).")
    log.add_argument("--registered-model-name", help="Also register it in the MLflow model registry.")
    log.add_argument("--allow-tool-changes", action="store_true",
                     help="Log a compiled selector even if its tools changed since it was compiled.")
    log.add_argument("--tracking-uri", help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db).")
    log.set_defaults(handler=_log)


def _log(args: argparse.Namespace) -> int:
    import mlflow

    from tool_selection.selector import MultiToolSelector
    from tool_selection.serving import log_selector
    from tool_selection.toolset import load_tool_set

    try:
        selector = args.program or MultiToolSelector(load_tool_set(args.tool_set))
        info = log_selector(selector, args.model, name=args.name, registered_model_name=args.registered_model_name,
                            tracking_uri=args.tracking_uri, allow_tool_changes=args.allow_tool_changes)
    except (OSError, ValueError) as error:
        raise ToolSelectionError(f"Could not log the selector: {error}") from error
    print(f"model URI: {info.model_uri}")
    print("serve it:")
    print(f"  MLFLOW_TRACKING_URI={mlflow.get_tracking_uri()} \\\n"
          f"    mlflow models serve -m {info.model_uri} --env-manager local -p 5001")
    print("query it:")
    print(f"  curl -s localhost:5001/invocations -H 'Content-Type: application/json' -d '{EXAMPLE_REQUEST}'")
    return 0
