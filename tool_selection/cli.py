"""The ``toolsel`` command line.

Each command group lives beside the code it drives and adds itself through a ``register(subparsers)``
function registered under the ``tool_selection.commands`` entry-point group (``pyproject.toml``), the convention
third-party tool sets use too; a handler returns an exit code. Expected failures (bad input, unknown
names, missing model files) are ``ToolSelectionError``s and print one clear message, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

from tool_selection.errors import ToolSelectionError

__all__ = ["add_deferred_command", "main"]

COMMAND_GROUP = "tool_selection.commands"  # entry points: NAME = "module:register"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolsel",
        description="Study how language models choose tools: inspect tools, run models, evaluate selectors.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for entry in entry_points(group=COMMAND_GROUP):
        try:
            register = entry.load()
        except ModuleNotFoundError as error:
            if error.name and entry.value.startswith(error.name):
                continue  # that command group is not part of this installation
            raise
        register(subparsers)
    return parser


def add_deferred_command(subparsers: argparse._SubParsersAction, name: str, *, module: str, help: str) -> None:
    """A subcommand whose options and handler live in a heavy ``module`` (``add_arguments(parser)`` and
    ``run_from_args(args)``), imported only when the subcommand runs or its help is asked for, so that building
    the parser (``toolsel --help``) loads no DSPy, pandas or MLflow."""
    parser = subparsers.add_parser(name, help=help, add_help=False, prefix_chars="\0")
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    parser.set_defaults(handler=lambda args: _run_deferred(module, parser.prog, args.argv))


def _run_deferred(module_name: str, prog: str, argv: list[str]) -> int:
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog=prog, description=(module.__doc__ or "").split("\n\n")[0].strip())
    module.add_arguments(parser)
    return module.run_from_args(parser.parse_args(argv))


def _version() -> str:
    from tool_selection import __version__

    return __version__


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        return int(args.handler(args) or 0)
    except BrokenPipeError:  # the reader went away ('toolsel ... | head'): stop quietly, as a killed writer would
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        return 141
    except ToolSelectionError as error:
        print(f"toolsel: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("toolsel: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
