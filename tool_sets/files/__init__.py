"""The ``files`` tool set: read, write, list and search text files inside one working folder.

The folder is the tools' ``root`` (default: a temporary directory per process). Paths outside it are refused
(``..``, absolute paths, symbolic links that lead out, special files); reads, writes, listings and searches
are bounded, and ``read_only=True`` refuses every write.
"""

from tool_selection import ToolSet
from tool_sets.files.tools import TOOLS, FilesTool, ListDirectory, ReadFile, SearchFiles, WriteFile, default_root

__all__ = ["TOOLS", "TOOL_SET", "FilesTool", "ListDirectory", "ReadFile", "SearchFiles", "WriteFile", "default_root"]

TOOL_SET = ToolSet(
    name="files",
    description="Files in a working folder: read, write, list and search text files.",
    tools=TOOLS,
)
