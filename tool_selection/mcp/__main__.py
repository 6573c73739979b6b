"""``python -m tool_selection.mcp serve|list``: the ``toolsel mcp`` commands without loading the other groups."""

import argparse
import sys

from tool_selection.errors import ToolSelectionError
from tool_selection.mcp import cli


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tool_selection.mcp",
                                     description="Serve a tool set over MCP, or list an MCP server's tools.")
    cli.add_commands(parser)
    args = parser.parse_args()
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        return int(args.handler(args) or 0)
    except ToolSelectionError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
