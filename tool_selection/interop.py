"""Schema views of tools for the ecosystem, and schema-only tools imported from it.

Exports (all derived from a tool's one ``Arguments`` model): OpenAI function (optionally ``strict``), Anthropic
tool, MCP ``Tool``, BFCL function doc, and plain text for prompts. Imports: OpenAI function lists, MCP
``tools/list`` results, Anthropic tool lists and BFCL function docs become registries of *schema-only* tools,
which validate arguments against their JSON Schema but have no implementation.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import jsonschema
from referencing.exceptions import Unresolvable

from tool_selection.errors import ArgumentProblem, ToolDefinitionError, ToolSelectionError
from tool_selection.registry import ToolRegistry
from tool_selection.schema_patterns import ArgumentValidator
from tool_selection.schema_refs import LOCAL_ONLY
from tool_selection.tool import BaseTool

if TYPE_CHECKING:
    import mcp.types

__all__ = [
    "SchemaOnlyTool",
    "from_anthropic",
    "from_bfcl",
    "from_mcp",
    "drop_strict_nulls",
    "from_openai",
    "schema_only_tool",
    "to_anthropic",
    "to_bfcl",
    "to_mcp",
    "to_openai",
    "to_text",
]

# ----------------------------------------------------------------------------------------- exports


def to_openai(tool: type[BaseTool], *, strict: bool = False) -> dict[str, Any]:
    """OpenAI Chat Completions ``tools`` entry. ``strict=True`` applies Structured Outputs' schema rules."""
    parameters = tool.input_schema()
    function: dict[str, Any] = {"name": tool.NAME, "description": tool.description}
    if strict:
        try:
            function["parameters"] = _strict_schema(parameters)
        except _OpenObject as error:
            raise ToolSelectionError(
                f"Tool {tool.NAME!r} cannot be exported in OpenAI strict mode: {error} is a free-form object "
                "(strict mode closes every object). Declare its fields with a Pydantic model, or export with "
                "strict=False."
            ) from None
        function["strict"] = True
    else:
        function["parameters"] = parameters
    return {"type": "function", "function": function}


def to_anthropic(tool: type[BaseTool]) -> dict[str, Any]:
    """Anthropic Messages API ``tools`` entry."""
    return {"name": tool.NAME, "description": tool.description, "input_schema": tool.input_schema()}


def to_mcp(tool: type[BaseTool]) -> mcp.types.Tool:
    """MCP ``Tool`` (official SDK type); ``.model_dump(by_alias=True)`` gives the wire form with ``inputSchema``."""
    import mcp.types  # here, not at the top: the SDK takes 0.4 s to import, and loading a suite needs none of it

    return mcp.types.Tool(name=tool.NAME, description=tool.description, inputSchema=tool.input_schema())


def to_bfcl(tool: type[BaseTool]) -> dict[str, Any]:
    """Berkeley Function Calling Leaderboard function doc (``dict``/``float`` type names)."""
    return {"name": tool.NAME, "description": tool.description, "parameters": _to_bfcl_types(tool.input_schema())}


def to_text(tool: type[BaseTool]) -> str:
    """A compact plain-text description for prompts: name, description and one line per argument."""
    lines = [f"{tool.NAME}: {tool.description}"]
    for arg in tool.arguments():
        need = "required" if arg.required else f"optional, default {json.dumps(arg.default)}"
        choices = f"; one of {', '.join(json.dumps(v) for v in arg.enum)}" if arg.enum else ""
        lines.append(f"  - {arg.name} ({arg.type}, {need}{choices}): {arg.description}")
    if not tool.arguments():
        lines.append("  (no arguments)")
    return "\n".join(lines)


class _OpenObject(Exception):
    """An object schema with free-form keys, which strict mode cannot express."""


def _strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAI strict mode: every object closed, every property required, optional ones made nullable."""
    schema = copy.deepcopy(schema)

    def visit(node: Any, path: str) -> None:
        if isinstance(node, list):
            for item in node:
                visit(item, path)
            return
        if not isinstance(node, dict):
            return
        node.pop("default", None)
        props = node.get("properties")
        if node.get("type") == "object" and not props and node.get("additionalProperties", True) is not False:
            if path:
                raise _OpenObject(f"argument {path!r}")
        if node.get("type") == "object" or props is not None:
            props = node.setdefault("properties", {})
            required = set(node.get("required", []))
            for name, prop in props.items():
                if name not in required:
                    props[name] = _nullable(prop)
            node["required"] = list(props)
            node["additionalProperties"] = False
        for key, value in node.items():
            if key == "properties":
                for name, prop in value.items():
                    visit(prop, f"{path}.{name}" if path else name)
            elif isinstance(value, dict | list):
                visit(value, path)

    visit(schema, "")
    return schema


def drop_strict_nulls(tool: type[BaseTool], arguments: dict[str, Any]) -> dict[str, Any]:
    """Undo strict mode's convention: ``null`` for an optional argument that does not accept null means omitted."""
    if not isinstance(arguments, dict):
        return arguments
    schema = tool.input_schema()
    required = set(schema.get("required", []))
    props = schema.get("properties", {})

    def accepts_null(prop: dict[str, Any]) -> bool:
        t = prop.get("type")
        return t == "null" or (isinstance(t, list) and "null" in t) or any(
            accepts_null(p) for p in prop.get("anyOf", []) + prop.get("oneOf", []))

    return {k: v for k, v in arguments.items()
            if not (v is None and k in props and k not in required and not accepts_null(props[k]))}


def _nullable(prop: dict[str, Any]) -> dict[str, Any]:
    prop = dict(prop)
    t = prop.get("type")
    if isinstance(t, str) and t != "null":
        prop["type"] = [t, "null"]
        if "enum" in prop:
            prop["enum"] = [*prop["enum"], None]
        return prop
    if isinstance(t, list):
        if "null" not in t:
            prop["type"] = [*t, "null"]
        return prop
    if "anyOf" in prop:
        if {"type": "null"} not in prop["anyOf"]:
            prop["anyOf"] = [*prop["anyOf"], {"type": "null"}]
        return prop
    description = prop.pop("description", None)
    out: dict[str, Any] = {"anyOf": [prop, {"type": "null"}]}
    if description:
        out["description"] = description
    return out


_JSON_TO_BFCL = {"object": "dict", "number": "float"}


def _to_bfcl_types(node: Any) -> Any:
    if isinstance(node, list):
        return [_to_bfcl_types(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, str):
            out[key] = _JSON_TO_BFCL.get(value, value)
        elif key == "properties":
            out[key] = {name: _to_bfcl_types(prop) for name, prop in value.items()}
        else:
            out[key] = _to_bfcl_types(value)
    return out


# ----------------------------------------------------------------------------------------- imports

# External catalogs use names like "math.factorial" or "get-weather"; schema-only tools accept them.
_EXTERNAL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")


class SchemaOnlyTool(BaseTool, abstract=True):
    """A tool known only by its schema: arguments validate against ``PARAMETERS`` (JSON Schema); no execute."""

    PARAMETERS: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
    SOURCE: ClassVar[str] = "external"

    @classmethod
    def _definition_problems(cls) -> list[str]:
        problems = []
        name = cls.__dict__.get("NAME")
        if not isinstance(name, str) or not _EXTERNAL_NAME.match(name):
            problems.append(f"invalid NAME {name!r}: use letters, digits, '_', '.', '-' (at most 128 characters)")
        try:
            jsonschema.Draft202012Validator.check_schema(cls.PARAMETERS)
        except jsonschema.SchemaError as error:
            problems.append(f"PARAMETERS is not valid JSON Schema: {error.message}")
        return problems

    @classmethod
    def input_schema(cls) -> dict[str, Any]:
        schema = copy.deepcopy(cls.PARAMETERS)
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        return schema

    @classmethod
    def undeclared_arguments(cls, arguments: dict[str, Any]) -> list[str]:
        """Keys outside ``properties``, where the schema forbids others (JSON Schema allows them by default)."""
        schema = cls.input_schema()
        if schema.get("additionalProperties", True) is not False:
            return []
        return [key for key in arguments if key not in schema["properties"]]

    @classmethod
    def check_arguments(cls, arguments: dict[str, Any]) -> list[ArgumentProblem]:
        if not isinstance(arguments, dict):
            return [ArgumentProblem("(arguments)", f"expected an object, got {type(arguments).__name__}")]
        validator = ArgumentValidator(cls.input_schema(), registry=LOCAL_ONLY)  # patterns match under a time limit
        try:
            errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
        except Unresolvable as error:  # refused when the tool was defined, unless input_schema changed since
            raise ToolDefinitionError(cls.NAME, [f"argument schema: {error}; only references inside the schema "
                                                 "are resolved (remote ones are never fetched)"]) from None
        problems = []
        for error in errors:
            field = ".".join(str(p) for p in error.path)
            if not field and error.validator == "required":
                field = error.message.split("'")[1] if "'" in error.message else "(arguments)"
            elif not field and error.validator == "additionalProperties":
                field = ",".join(sorted(set(arguments) - set(cls.input_schema()["properties"]))) or "(arguments)"
            problems.append(ArgumentProblem(field or "(arguments)", error.message, error.instance))
        return sorted(problems, key=lambda p: p.field)

    @classmethod
    def parse_arguments(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        from tool_selection.errors import ToolArgumentError

        problems = cls.check_arguments(arguments)
        if problems:
            raise ToolArgumentError(cls.NAME, problems)
        return dict(arguments)

    def execute(self, **kwargs: Any) -> Any:
        raise ToolSelectionError(
            f"Tool {self.NAME!r} is schema-only (imported from {self.SOURCE}) and has no implementation; "
            "it can be selected and its arguments validated, but not executed."
        )


def schema_only_tool(
    name: str, description: str, parameters: Mapping[str, Any] | None, *, category: str = "external",
    source: str = "external", base: type[SchemaOnlyTool] = SchemaOnlyTool,
) -> type[SchemaOnlyTool]:
    """A ``SchemaOnlyTool`` subclass for one external definition (of ``base``, an abstract subclass that may add
    configuration fields and an ``execute``)."""
    class_name = "".join(p.title() for p in re.split(r"[^A-Za-z0-9]+", name) if p) or "Tool"
    namespace = {
        "NAME": name,
        "description": (description or "").strip() or f"{name} (no description given)",
        "category": category,
        "PARAMETERS": dict(parameters or {"type": "object", "properties": {}}),
        "SOURCE": source,
        "__module__": __name__,
        "__qualname__": f"{source}:{name}",
    }
    return type(class_name, (base,), namespace)


def _registry(name: str, tools: Iterable[type[BaseTool]]) -> ToolRegistry:
    return ToolRegistry(name, tools)


def from_openai(functions: Iterable[Mapping[str, Any]], *, name: str = "openai", category: str = "external") -> ToolRegistry:
    """Registry from an OpenAI ``tools`` list (``{"type": "function", "function": {...}}``) or bare functions."""
    tools = []
    for index, entry in enumerate(functions):
        fn = entry.get("function", entry)
        _require(fn, ("name",), f"OpenAI tool #{index}")
        tools.append(schema_only_tool(fn["name"], fn.get("description", ""), fn.get("parameters"),
                                      category=category, source="openai"))
    return _registry(name, tools)


def from_anthropic(tools: Iterable[Mapping[str, Any]], *, name: str = "anthropic", category: str = "external") -> ToolRegistry:
    """Registry from an Anthropic ``tools`` list (``name``, ``description``, ``input_schema``)."""
    out = []
    for index, entry in enumerate(tools):
        _require(entry, ("name",), f"Anthropic tool #{index}")
        out.append(schema_only_tool(entry["name"], entry.get("description", ""), entry.get("input_schema"),
                                    category=category, source="anthropic"))
    return _registry(name, out)


def from_mcp(result: Any, *, name: str = "mcp", category: str = "external") -> ToolRegistry:
    """Registry from an MCP ``tools/list`` result: a ``ListToolsResult``, its JSON, or a list of ``Tool``s."""
    import mcp.types

    if isinstance(result, Mapping) and "tools" in result:
        result = result["tools"]
    elif isinstance(result, mcp.types.ListToolsResult):
        result = result.tools
    out = []
    for index, entry in enumerate(result):
        tool = entry if isinstance(entry, mcp.types.Tool) else mcp.types.Tool.model_validate(entry)
        out.append(schema_only_tool(tool.name, tool.description or "", tool.input_schema, category=category,
                                    source="mcp"))
        del index
    return _registry(name, out)


def from_bfcl(functions: Iterable[Mapping[str, Any]], *, name: str = "bfcl", category: str = "external") -> ToolRegistry:
    """Registry from BFCL function docs, mapping BFCL's type names (``dict``, ``float``, ``tuple``, ``any``)."""
    out = []
    for index, fn in enumerate(functions):
        _require(fn, ("name",), f"BFCL function #{index}")
        out.append(schema_only_tool(fn["name"], fn.get("description", ""), bfcl_to_json_schema(fn.get("parameters") or {}),
                                    category=category, source="bfcl"))
    return _registry(name, out)


_BFCL_TYPES = {
    "dict": "object", "object": "object", "float": "number", "number": "number", "double": "number",
    "integer": "integer", "int": "integer", "long": "integer", "string": "string", "str": "string",
    "char": "string", "String": "string", "boolean": "boolean", "bool": "boolean", "Boolean": "boolean",
    "array": "array", "list": "array", "tuple": "array", "ArrayList": "array", "Array": "array",
    "HashMap": "object", "Hashtable": "object", "Queue": "array", "Stack": "array", "Set": "array",
    "null": "null",
}


def bfcl_to_json_schema(node: Any) -> Any:
    """Map a BFCL parameter schema to JSON Schema. Unknown or ``any`` types become unconstrained."""
    if isinstance(node, list):
        return [bfcl_to_json_schema(n) for n in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type":
            mapped = _BFCL_TYPES.get(value) if isinstance(value, str) else None
            if mapped:
                out["type"] = mapped
        elif key == "properties" and isinstance(value, Mapping):
            out["properties"] = {k: bfcl_to_json_schema(v) for k, v in value.items()}
        elif key == "items":
            out["items"] = bfcl_to_json_schema(value)
        elif key in ("required", "enum", "description", "default", "format", "minimum", "maximum",
                     "minItems", "maxItems", "additionalProperties", "anyOf", "oneOf"):
            out[key] = bfcl_to_json_schema(value) if key in ("additionalProperties", "anyOf", "oneOf") else value
    if out.get("type") == "number" and "enum" in out:
        out["enum"] = [float(v) if isinstance(v, int | float) else v for v in out["enum"]]
    required = out.get("required")
    if "properties" in out and isinstance(required, list) and all(isinstance(r, str) for r in required):
        out["required"] = [r for r in required if r in out["properties"]]  # else left for the schema check to refuse
    # BFCL sometimes writes a default that contradicts its own type (e.g. "default": "None"): drop it.
    if "default" in out and "type" in out:
        try:
            jsonschema.validate(out["default"], {"type": out["type"]})
        except jsonschema.ValidationError:
            out.pop("default")
    return out


def _require(entry: Any, keys: tuple[str, ...], what: str) -> None:
    if not isinstance(entry, Mapping):
        raise ToolDefinitionError(what, [f"expected an object, got {type(entry).__name__}"])
    missing = [k for k in keys if not entry.get(k)]
    if missing:
        raise ToolDefinitionError(what, [f"missing {k!r}" for k in missing])
