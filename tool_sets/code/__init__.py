"""The ``code`` tool set: run Python, JavaScript (Node.js, where installed) or bash programs.

Every run is a child process in a fresh temporary directory with a timeout, CPU, memory, process, file-size
and output limits and a minimal environment (``tool_sets._sandbox.process``); where Linux namespaces can be
created, it also sees no other process, has no network unless ``allow_network``, cannot change its limits and
cannot write to the host (it works in a private, size-limited tmpfs). Reading is not confined.
"""

from tool_selection import ToolSet
from tool_sets.code.tools import TOOLS, CodeTool, RunBash, RunJavaScript, RunPython

__all__ = ["TOOLS", "TOOL_SET", "CodeTool", "RunBash", "RunJavaScript", "RunPython"]

TOOL_SET = ToolSet(
    name="code",
    description="Run programs: Python, JavaScript (Node.js) and bash, each in a fresh, time- and memory-limited "
                "sandbox.",
    tools=TOOLS,
)
