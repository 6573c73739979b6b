"""An MCP server whose tool set changes while it runs: ``unlock_bonus`` adds ``bonus`` and ``lock_bonus``
removes it, each announcing ``notifications/tools/list_changed``. Serves stdio, or HTTP given a port:
``python changing_server.py [PORT]``."""

import sys
from functools import partial

import anyio
import anyio.from_thread
from pydantic import Field

from tool_selection import BaseTool, StrictArguments
from tool_selection.mcp import ToolServer


class Bonus(BaseTool):
    NAME = "bonus"
    description = "Double a number (served only while unlocked)."
    category = "test"

    class Arguments(StrictArguments):
        number: int = Field(description="The number to double.")

    def execute(self, number: int) -> int:
        return 2 * number


class UnlockBonus(BaseTool):
    NAME = "unlock_bonus"
    description = "Start serving the bonus tool."
    category = "test"

    def execute(self) -> str:
        anyio.from_thread.run(SERVER.add_tools, Bonus)
        return "bonus unlocked"


class LockBonus(BaseTool):
    NAME = "lock_bonus"
    description = "Stop serving the bonus tool."
    category = "test"

    def execute(self) -> str:
        anyio.from_thread.run(SERVER.remove_tools, Bonus.NAME)
        return "bonus locked"


SERVER = ToolServer([UnlockBonus, LockBonus], name="changing")

if __name__ == "__main__":
    anyio.run(partial(SERVER.serve_http, port=int(sys.argv[1])) if sys.argv[1:] else SERVER.serve_stdio)
