"""``toolsel serve log``: log a compiled selector as an MLflow model. ``toolsel serve selector``: serve it with
MLflow's scoring server after checking its MLmodel (``mlflow models serve`` works too, trusting that file).
``toolsel serve model``: serve a local model with llama-server (parallel slots, continuous batching)."""

from __future__ import annotations

import argparse
import signal
import time

from tool_selection.errors import ToolSelectionError
from tool_selection.run_config import add_tracking_flag

EXAMPLE_REQUEST = '{"inputs": {"request": "REQUEST"}}'


def register(subparsers: argparse._SubParsersAction) -> None:
    serve = subparsers.add_parser("serve", help="Serve a local model, or log a selector for MLflow's model server.",
                                  description="Serve a local model over an OpenAI-compatible API (model), or log a "
                                              "selector as an MLflow model for MLflow's model server (log).")
    sub = serve.add_subparsers(dest="serve_command", metavar="SUBCOMMAND")
    serve.set_defaults(handler=lambda args: serve.print_help() or 0)

    log = sub.add_parser(
        "log", help="Log a compiled selector (or a zero-shot one over a tool set) with its model.",
        description="Log a compiled selector directory, or a zero-shot selector over a tool set, as an MLflow "
                    "model (data only: the program's JSON state and manifest, loaded by this package's loader module; no "
                    "code, no pickle), and print how to serve and query it.",
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
    add_tracking_flag(log)
    log.set_defaults(handler=_log)

    selector = sub.add_parser(
        "selector", help="Serve a logged selector with MLflow's scoring server until interrupted.",
        description="Serve a selector logged with 'toolsel serve log' at http://HOST:PORT/invocations with MLflow's "
                    "scoring server, after checking that its MLmodel loads this package's loader and no code of "
                    "its own ('mlflow models serve' serves the same model but trusts the MLmodel file).",
        epilog="example: toolsel serve selector models:/m-... --port 5001 --timeout 300")
    selector.add_argument("model_uri", metavar="MODEL_URI", help="The model URI 'toolsel serve log' printed.")
    selector.add_argument("--host", default="127.0.0.1", help="Address to listen on (default: 127.0.0.1).")
    selector.add_argument("--port", type=int, default=5001, help="Port (default: 5001).")
    selector.add_argument("--timeout", type=int, help="Seconds one request may take (default: MLflow's, 60).")
    add_tracking_flag(selector)
    selector.set_defaults(handler=_serve_selector)

    model = sub.add_parser(
        "model", help="Serve a local model with llama-server until interrupted.",
        description="Serve an embedded model (or a GGUF file) with llama.cpp's llama-server on loopback: N parallel "
                    "slots decoded together (continuous batching), the model's own chat template and tool calls. "
                    "Evaluate through it with --model served:URL --threads N.",
        epilog="example: toolsel serve model qwen2.5-coder-0.5b --parallel 4   then   toolsel eval --suite finance "
               "--model served:http://127.0.0.1:PORT --threads 4")
    model.add_argument("name", help="Embedded model name (local: optional) or local:/path/to/model.gguf.")
    model.add_argument("--parallel", type=int, default=4, help="Requests decoded together (default: 4).")
    model.add_argument("--port", type=int, help="Port on 127.0.0.1 (default: a free one).")
    model.add_argument("--n-threads", type=int, help="CPU threads (default: every core).")
    model.add_argument("--n-ctx", type=int, help="Context per slot (default: the catalog's).")
    model.add_argument("--build", action="store_true", help="Build llama-server first if it is not built.")
    model.set_defaults(handler=_serve_model)


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
    print(f"  toolsel serve selector {info.model_uri} --tracking-uri {mlflow.get_tracking_uri()} --port 5001")
    print("or with MLflow's own server (which trusts the MLmodel file without checking it):")
    print(f"  MLFLOW_TRACKING_URI={mlflow.get_tracking_uri()} \\\n"
          f"    mlflow models serve -m {info.model_uri} --env-manager local -p 5001")
    print("query it:")
    print(f"  curl -s localhost:5001/invocations -H 'Content-Type: application/json' -d '{EXAMPLE_REQUEST}'")
    return 0


def _serve_selector(args: argparse.Namespace) -> int:
    import mlflow
    import uvicorn

    from tool_selection.serving import scoring_app
    from tool_selection.tracking import tracking_uri

    mlflow.set_tracking_uri(tracking_uri(args.tracking_uri))
    app = scoring_app(args.model_uri, timeout=args.timeout)
    print(f"serving {args.model_uri} at http://{args.host}:{args.port}/invocations (Ctrl-C to stop)", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def _serve_model(args: argparse.Namespace) -> int:
    from tool_selection.lm.server import ModelServer, ServerOptions
    from tool_selection.lm.specs import LocalEngineOptions

    name = args.name if args.name.startswith(("local:", "LOCAL:")) else f"local:{args.name}"
    server = ModelServer(name, parallel=args.parallel, local=LocalEngineOptions(n_threads=args.n_threads,
                                                                                n_ctx=args.n_ctx),
                         options=ServerOptions(port=args.port, build=args.build))
    signal.signal(signal.SIGTERM, _interrupt)  # a service manager's stop stops the server too
    with server:
        print(f"serving {server.spec} with {args.parallel} parallel slot(s) at {server.base_url}", flush=True)
        print(f"  evaluate: toolsel eval --suite SUITE --model {server.model_spec} --threads {args.parallel}",
              flush=True)
        print("  stop: Ctrl-C", flush=True)
        try:
            while True:
                server.check_alive()
                time.sleep(1)
        except KeyboardInterrupt:
            print("stopping", flush=True)
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
