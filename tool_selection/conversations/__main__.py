"""``python -m tool_selection.conversations discuss|debate ...``: the same commands as ``toolsel discuss`` and
``toolsel debate``, for an environment whose installed entry points predate them."""

import argparse
import sys

from tool_selection.conversations.cli import register_debate, register_discuss
from tool_selection.errors import ToolSelectionError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tool_selection.conversations")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    register_discuss(subparsers)
    register_debate(subparsers)
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        return int(args.handler(args) or 0)
    except ToolSelectionError as error:
        print(f"toolsel: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # what was finished is in the transcript or state file
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
