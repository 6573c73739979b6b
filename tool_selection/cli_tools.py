"""``toolsel tools list|show|schema|examples``: inspect the registered tools, export their schemas, and have a
model write example requests for a retriever's index."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tool_selection.cli_output import print_json

if TYPE_CHECKING:
    from tool_selection.tool import BaseTool

SCHEMA_FORMATS = ("openai", "openai-strict", "anthropic", "mcp", "bfcl", "json-schema")


def register(subparsers: argparse._SubParsersAction) -> None:
    tools = subparsers.add_parser("tools", help="List tools, show one, or export its schema.",
                                  description="List tools, show one, or export its schema (with no subcommand: "
                                              "list them).")
    sub = tools.add_subparsers(dest="tools_command", metavar="SUBCOMMAND")
    tools.set_defaults(handler=lambda args: _list(args), tool_set=None)

    list_parser = sub.add_parser("list", help="Every registered tool, grouped by tool set.",
                                 description="Every registered tool, grouped by tool set.")
    list_parser.add_argument("--set", dest="tool_set", help="Only this tool set.")
    list_parser.set_defaults(handler=_list)

    show = sub.add_parser("show", help="A tool's description and arguments.",
                          description="A tool's description and arguments.")
    show.add_argument("name", help="Tool name, as listed by 'toolsel tools list'.")
    show.set_defaults(handler=_show)

    schema = sub.add_parser("schema", help="A tool's schema as JSON, in an ecosystem format.",
                            description="A tool's schema as JSON, in an ecosystem format.")
    schema.add_argument("name", help="Tool name, as listed by 'toolsel tools list'.")
    schema.add_argument("--format", choices=SCHEMA_FORMATS, default="openai", help="Schema format (default: openai).")
    schema.set_defaults(handler=_schema)

    examples = sub.add_parser(
        "examples", help="A model writes example requests for every tool, for a retriever's index.",
        description="A model writes three example requests for every tool of the tool sets (all of them by "
                    "default) into FILE, for --retrieve-examples: a retriever then meets each tool in its users' "
                    "words. A FILE written before is resumed: tools whose description is unchanged keep theirs.")
    examples.add_argument("--out", required=True, metavar="FILE", help="The examples file to write (or resume).")
    examples.add_argument("--set", dest="tool_sets", action="append", metavar="NAME",
                          help="Only this tool set (repeat for several).")
    examples.add_argument("--model", default=None, help="Model spec (default: the embedded default model).")
    examples.set_defaults(handler=_examples)


def _load_all_sets() -> dict[str, list[type[BaseTool]]]:
    from tool_selection.toolset import available_tool_sets, load_tool_set

    return {name: list(load_tool_set(name).tools) for name in available_tool_sets()}


def _list(args: argparse.Namespace) -> int:
    from tool_selection.named_registry import format_listing
    from tool_selection.toolset import load_tool_set

    sets = {args.tool_set: list(load_tool_set(args.tool_set).tools)} if args.tool_set else _load_all_sets()
    for set_name, tools in sets.items():
        print(f"{set_name} ({len(tools)} tools)")
        print(format_listing([(tool.NAME, tool.description.split(". ")[0].rstrip(".")) for tool in tools],
                             indent="  "))
        print()
    from tool_selection.registry import default_registry

    grouped = {t for tools in sets.values() for t in tools}
    others = [t for t in default_registry().tools() if t not in grouped]
    if others and not args.tool_set:
        print(f"(registered outside any tool set: {', '.join(t.NAME for t in others)})")
    return 0


def _find(name: str) -> type[BaseTool]:
    from tool_selection.registry import default_registry

    _load_all_sets()
    return default_registry().get(name)


def _show(args: argparse.Namespace) -> int:
    from tool_selection import interop

    tool = _find(args.name)
    print(interop.to_text(tool))
    print(f"\ncategory: {tool.category}\nmodule:   {tool.MODULE}\nclass:    {tool.__qualname__}")
    return 0


def _schema(args: argparse.Namespace) -> int:
    from tool_selection import interop

    tool = _find(args.name)
    exporters = {
        "openai": lambda t: interop.to_openai(t),
        "openai-strict": lambda t: interop.to_openai(t, strict=True),
        "anthropic": interop.to_anthropic,
        "mcp": lambda t: interop.to_mcp(t).model_dump(by_alias=True, exclude_none=True, mode="json"),
        "bfcl": interop.to_bfcl,
        "json-schema": lambda t: t.input_schema(),
    }
    print_json(exporters[args.format](tool))
    return 0


def _examples(args: argparse.Namespace) -> int:
    from tool_selection.defaults import DEFAULT_MODEL
    from tool_selection.registry import ToolRegistry
    from tool_selection.retrieval.written import write_examples_shown
    from tool_selection.toolset import load_tool_set

    sets = ({name: list(load_tool_set(name).tools) for name in args.tool_sets} if args.tool_sets
            else _load_all_sets())
    registry = ToolRegistry("examples", {tool for tools in sets.values() for tool in tools})
    write_examples_shown(registry, args.model or DEFAULT_MODEL, args.out)
    print(f"Use them with: toolsel eval ... --retrieve 5 --retrieve-examples {args.out}")
    return 0
