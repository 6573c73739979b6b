"""The text a retriever indexes for each tool, and a hash of a registry's texts that keys index caches."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

from tool_selection.parsing import name_words
from tool_selection.registry import ToolRegistry
from tool_selection.tool import BaseTool

__all__ = ["DOCUMENT_FORMAT", "content_hash", "document_hash", "name_words", "tool_document", "tool_documents"]

# Bump when tool_document's output changes, so that cached indexes of the old text are not reused.
DOCUMENT_FORMAT = 1
_MAX_ENUM_VALUES = 8
_MAX_EXAMPLES = 8  # example requests per tool; more would be cut off by the dense model's 256 tokens anyway


def tool_document(tool: type[BaseTool], examples: Sequence[str] = ()) -> str:
    """Name (as written and as words), description, each argument's name (as words) and description, then up to
    eight example requests the tool serves, if any are given."""
    lines = [f"{tool.NAME} ({name_words(tool.NAME)}): {tool.description.strip()}"]
    for argument in tool.arguments():
        line = f"{name_words(argument.name)}: {argument.description.strip()}"
        if argument.enum:
            line += " (one of " + ", ".join(str(value) for value in argument.enum[:_MAX_ENUM_VALUES]) + ")"
        lines.append(line)
    distinct = list(dict.fromkeys(" ".join(example.split()) for example in examples))[:_MAX_EXAMPLES]
    if distinct:
        lines.append("example requests: " + " | ".join(distinct))
    return "\n".join(lines)


def tool_documents(registry: ToolRegistry, examples: Mapping[str, Sequence[str]] | None = None) -> dict[str, str]:
    """Each tool's document, by name, in the registry's (sorted) order; ``examples`` maps tool names to example
    requests (names not in the registry are ignored)."""
    examples = examples or {}
    return {tool.NAME: tool_document(tool, examples.get(tool.NAME, ())) for tool in registry.tools()}


def content_hash(documents: dict[str, str]) -> str:
    """A short hash of the names and documents: equal registries share it, any change to a tool alters it."""
    payload = json.dumps([DOCUMENT_FORMAT, sorted(documents.items())], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def document_hash(tool: type[BaseTool]) -> str:
    """A short hash of ``tool``'s document without examples: what examples written from it depend on."""
    return hashlib.sha256(tool_document(tool).encode()).hexdigest()[:12]
