"""Which tools a conversation's agents get, and how their system prompt lists them.

A discussion names its tools in a registry of entries: a tool set (``code``), one of the names the original
configuration format used for a set (``code_execution``, ``web_search``, ``file_manipulation``), or a single
tool (``run_python``), with ``parameters`` that configure the entry's tools (``timeout: 15`` sets the code tools'
``timeout_s``). A debate agent lists OpenAI function schemas whose names must match a tool implementation. In
both, a name that matches nothing is warned about and skipped; a bad parameter is a configuration error.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tool_selection.agent import AgentConfig
from tool_selection.conversations.errors import ConversationConfigError
from tool_selection.registry import ToolRegistry
from tool_selection.tool import BaseTool
from tool_selection.toolset import available_tool_sets, load_tool_set
from tool_selection.validation import validation_problems

__all__ = ["SET_ALIASES", "Toolbox", "ToolEntry", "agent_tools", "available_tools", "describe_tools",
           "discussion_tools"]

SET_ALIASES = {"code_execution": "code", "file_manipulation": "files"}
"""Tool set names of the original discussion format, kept as names of this toolkit's sets."""
PARAMETER_ALIASES = {"timeout": "timeout_s"}
"""Parameter names of the original format, for tools whose field carries its unit."""


class ToolEntry(BaseModel):
    """One entry of a discussion's tool registry."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100)
    enabled: bool = True
    parameters: dict[str, Any] = Field(default_factory=dict, description="Configuration fields of the entry's tools.")


@dataclass
class Toolbox:
    """The tools an agent gets, the configuration their session starts with, and the names that were skipped."""

    registry: ToolRegistry
    config: dict[str, Any] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


@cache
def available_tools() -> dict[str, type[BaseTool] | tuple[str, ...]]:
    """Every tool of every installed tool set, by name; a name two sets define differently maps to those sets."""
    found: dict[str, type[BaseTool]] = {}
    owners: dict[str, list[str]] = {}
    for set_name in available_tool_sets():
        for tool in load_tool_set(set_name):
            owners.setdefault(tool.NAME, []).append(set_name)
            if found.setdefault(tool.NAME, tool) is not tool:
                found[tool.NAME] = None  # type: ignore[assignment]
    return {name: tool if tool is not None else tuple(owners[name]) for name, tool in found.items()}


def _tool(name: str) -> type[BaseTool] | None:
    tool = available_tools().get(name)
    if isinstance(tool, tuple):
        raise ConversationConfigError(f"Tool {name!r} is defined differently by the tool sets {', '.join(tool)}; "
                                      f"name one of those sets instead of the tool.")
    return tool


def _entry_tools(name: str) -> list[type[BaseTool]] | None:
    set_name = SET_ALIASES.get(name, name)
    if set_name in available_tool_sets():
        return list(load_tool_set(set_name))
    tool = _tool(name)
    return [tool] if tool is not None else None


def discussion_tools(entries: list[ToolEntry], *, enabled: bool = True) -> Toolbox:
    """The tools of a discussion's registry: disabled entries left out, unknown names warned about and skipped,
    every entry's parameters checked against its tools' configuration fields."""
    box = Toolbox(ToolRegistry("discussion-tools"))
    if not enabled:
        return box
    set_by: dict[str, tuple[str, Any]] = {}
    for entry in entries:
        if not entry.enabled:
            continue
        tools = _entry_tools(entry.name)
        if tools is None:
            warnings.warn(f"Discussion tool {entry.name!r} matches no tool set or tool; skipped. Tool sets: "
                          f"{', '.join([*SET_ALIASES, *available_tool_sets()])}.", stacklevel=2)
            box.skipped.append(entry.name)
            continue
        parameters = _parameters(entry, tools)
        for key, value in parameters.items():
            earlier = set_by.setdefault(key, (entry.name, value))
            if earlier[1] != value:
                raise ConversationConfigError(f"Discussion tools {earlier[0]!r} and {entry.name!r} both set {key} "
                                              f"({earlier[1]!r} vs {value!r}); tools of one session share their "
                                              "configuration, so give it one value.")
        box.config.update(parameters)
        for tool in tools:
            if tool.NAME not in box.registry:
                box.registry.register(tool)
    return box


def _parameters(entry: ToolEntry, tools: list[type[BaseTool]]) -> dict[str, Any]:
    """The entry's parameters under their field names, each checked by building every tool that takes it."""
    fields = {name for tool in tools for name in tool.model_fields}
    parameters = {}
    for key, value in entry.parameters.items():
        name = key if key in fields else PARAMETER_ALIASES.get(key, key)
        if name not in fields:
            raise ConversationConfigError(f"Discussion tool {entry.name!r}: unknown parameter {key!r}; its tools "
                                          f"take {', '.join(sorted(fields)) or 'no parameters'}.")
        parameters[name] = value
    for tool in tools:
        taken = {k: v for k, v in parameters.items() if k in tool.model_fields}
        if taken:
            try:
                tool(**taken)
            except ValidationError as error:
                raise ConversationConfigError(f"Discussion tool {entry.name!r} ({tool.NAME}): "
                                              f"{validation_problems(error, 'parameters.')}") from None
    return parameters


def agent_tools(agent: str, schemas: list[dict[str, Any]]) -> ToolRegistry:
    """A debate agent's tools from its OpenAI function schemas: each name looked up among the installed tools
    (the implementation's own schema is what the model sees); names that match none are warned about and
    skipped, as ``AgentConfig`` does, and so is a schema whose properties the implementation does not take."""
    known = {}
    for schema in schemas:
        name = (schema.get("function") or schema).get("name")
        tool = _tool(name) if isinstance(name, str) else None
        if tool is not None:
            known[name] = tool
            declared = set(((schema.get("function") or schema).get("parameters") or {}).get("properties") or {})
            extra = sorted(declared - set(tool.input_schema().get("properties", {})))
            if extra:
                warnings.warn(f"Agent {agent!r}: tool {name!r} does not take {', '.join(extra)} (its arguments: "
                              f"{', '.join(tool.input_schema().get('properties', {}))}); the tool's own schema is "
                              "used.", stacklevel=2)
    return AgentConfig(name=agent, tools=schemas).registry(ToolRegistry("available", known.values()))


def describe_tools(registry: ToolRegistry) -> str:
    """The tools as a system prompt lists them: one line each, name, description and arguments."""
    if not len(registry):
        return "You have no tools; answer in plain text."
    lines = ["Your tools (call one when it helps; otherwise answer in plain text):"]
    for tool in registry:
        arguments = ", ".join(f"{a.name}{'' if a.required else '?'}" for a in tool.arguments())
        lines.append(f"- {tool.NAME}({arguments}): {tool.description}")
    return "\n".join(lines)
