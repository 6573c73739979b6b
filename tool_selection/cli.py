"""The ``toolsel`` command line.

Each command group lives beside the code it drives and adds itself through a ``register(subparsers)``
function registered under the ``tool_selection.commands`` entry-point group (``pyproject.toml``), the convention
third-party tool sets use too; a handler returns an exit code. Expected failures (bad input, unknown
names, missing model files) are ``ToolSelectionError``s and print one clear message, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

from tool_selection.errors import ToolSelectionError

__all__ = ["main"]

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
    except ToolSelectionError as error:
        print(f"toolsel: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("toolsel: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
