"""Schema views (every one checked with jsonschema) and schema-only tools imported from the ecosystem."""

import jsonschema
import mcp.types
import pytest

from tests.core.tools_fixture import Add, Echo, Now
from tool_selection import ToolArgumentError, ToolDefinitionError, ToolSelectionError
from tool_selection.interop import (
    from_anthropic,
    from_bfcl,
    from_mcp,
    from_openai,
    to_anthropic,
    to_bfcl,
    to_mcp,
    to_openai,
    to_text,
)

TOOLS = [Echo, Add, Now]


def check(schema: dict) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.NAME)
def test_every_view_is_valid_json_schema(tool):
    openai = to_openai(tool)
    assert openai["type"] == "function" and openai["function"]["name"] == tool.NAME
    check(openai["function"]["parameters"])
    check(to_anthropic(tool)["input_schema"])
    wire = to_mcp(tool).model_dump(by_alias=True, exclude_none=True)
    assert set(wire) >= {"name", "description", "inputSchema"}
    check(wire["inputSchema"])
    strict = to_openai(tool, strict=True)["function"]
    assert strict["strict"] is True
    check(strict["parameters"])


def test_strict_mode_closes_objects_and_makes_optional_fields_nullable():
    params = to_openai(Echo, strict=True)["function"]["parameters"]
    assert params["additionalProperties"] is False
    assert params["required"] == ["message", "times", "mode"]
    assert params["properties"]["times"]["type"] == ["integer", "null"]
    assert None in params["properties"]["mode"]["enum"]
    validator = jsonschema.Draft202012Validator(params)
    assert validator.is_valid({"message": "a", "times": None, "mode": None})
    assert not validator.is_valid({"message": "a", "times": 1, "mode": "plain", "extra": 1})


def test_exported_schemas_accept_valid_and_reject_invalid_arguments():
    schema = to_anthropic(Echo)["input_schema"]
    assert jsonschema.Draft202012Validator(schema).is_valid({"message": "hi", "times": 2})
    assert not jsonschema.Draft202012Validator(schema).is_valid({"times": 9})


def test_bfcl_view_uses_bfcl_type_names():
    doc = to_bfcl(Add)
    assert doc["parameters"]["type"] == "dict"
    assert doc["parameters"]["properties"]["a"]["type"] == "float"


def test_text_view_lists_arguments():
    text = to_text(Echo)
    assert text.startswith("echo: Repeat a message")
    assert "times (integer, optional, default 1)" in text
    assert 'one of "plain", "shout"' in text
    assert "(no arguments)" in to_text(Now)


OPENAI_FUNCTIONS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name."},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    },
    {"name": "ping", "description": "No arguments."},
]


def test_import_openai_function_list():
    registry = from_openai(OPENAI_FUNCTIONS)
    assert registry.names() == ["get_weather", "ping"]
    weather = registry.get("get_weather")
    assert [a.name for a in weather.arguments()] == ["city", "unit"]
    assert weather.parse_arguments({"city": "Oslo", "unit": "celsius"}) == {"city": "Oslo", "unit": "celsius"}
    with pytest.raises(ToolArgumentError) as info:
        weather.parse_arguments({"unit": "kelvin", "country": "NO"})
    fields = sorted(p.field for p in info.value.problems)
    assert fields == ["city", "country", "unit"]
    with pytest.raises(ToolSelectionError, match="schema-only"):
        registry.execute("get_weather", {"city": "Oslo"})
    assert to_openai(weather)["function"]["parameters"] == OPENAI_FUNCTIONS[0]["function"]["parameters"]


BFCL_FUNCTIONS = [
    {
        "name": "math.hypot",
        "description": "Calculate the Euclidean norm, sqrt(sum(squares)).",
        "parameters": {
            "type": "dict",
            "properties": {
                "x": {"type": "integer", "description": "The x-coordinate value."},
                "y": {"type": "integer", "description": "The y-coordinate value."},
                "z": {"type": "integer", "description": "Optional. The z-coordinate value. Default is 0.", "default": 0},
            },
            "required": ["x", "y"],
        },
    },
    {
        "name": "calculate_area",
        "description": "Area of a shape.",
        "parameters": {
            "type": "dict",
            "properties": {
                "dimensions": {"type": "tuple", "items": {"type": "float"}, "description": "Side lengths."},
                "options": {"type": "dict", "properties": {"unit": {"type": "string"}}, "description": "Options."},
                "anything": {"type": "any", "description": "Any value."},
                "precision": {"type": "float", "description": "Precision.", "default": "None"},
            },
            "required": ["dimensions"],
        },
    },
]


def test_import_bfcl_function_docs_maps_non_standard_types():
    registry = from_bfcl(BFCL_FUNCTIONS)
    assert registry.names() == ["calculate_area", "math.hypot"]
    area = registry.get("calculate_area")
    schema = area.input_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    props = schema["properties"]
    assert schema["type"] == "object"
    assert props["dimensions"] == {"type": "array", "items": {"type": "number"}, "description": "Side lengths."}
    assert props["options"]["type"] == "object"
    assert "type" not in props["anything"]
    assert "default" not in props["precision"]  # "None" contradicts type float
    assert area.check_arguments({"dimensions": [3, 4.5], "anything": {"a": 1}}) == []
    assert [p.field for p in area.check_arguments({"dimensions": "3x4"})] == ["dimensions"]
    hypot = registry.get("math.hypot")
    assert hypot.check_arguments({"x": 3, "y": 4}) == []
    assert [p.field for p in hypot.check_arguments({"x": 3.5})] == ["x", "y"]


@pytest.mark.parametrize("required", [[{"type": "dict"}, "city"], [["city"]], "city"])
def test_a_bfcl_required_list_that_is_not_of_names_is_refused_not_crashed_on(required):
    """BFCL's required names are filtered to the listed properties; anything else is left for the schema check."""
    doc = {"name": "weather", "description": "Weather for a city.",
           "parameters": {"type": "dict", "properties": {"city": {"type": "string"}}, "required": required}}
    with pytest.raises(ToolDefinitionError, match="PARAMETERS is not valid JSON Schema"):
        from_bfcl([doc])
    assert from_bfcl([{**doc, "parameters": {**doc["parameters"], "required": ["city", "country"]}}]).get(
        "weather").input_schema()["required"] == ["city"]


def test_import_mcp_tools_list_result():
    result = mcp.types.ListToolsResult(tools=[to_mcp(Echo), to_mcp(Add)])
    for payload in (result, result.model_dump(by_alias=True), result.tools):
        registry = from_mcp(payload)
        assert registry.names() == ["add_numbers", "echo"]
        assert registry.get("echo").input_schema() == Echo.input_schema()


def test_import_anthropic_round_trip():
    registry = from_anthropic([to_anthropic(t) for t in TOOLS])
    assert registry.get("echo").check_arguments({"message": "x", "times": 9})[0].field == "times"


def test_malformed_external_definitions_are_rejected_clearly():
    with pytest.raises(ToolDefinitionError, match="missing 'name'"):
        from_openai([{"function": {"description": "no name"}}])
    with pytest.raises(ToolDefinitionError, match="not valid JSON Schema"):
        from_openai([{"name": "bad", "parameters": {"type": "object", "properties": {"x": {"type": "strng"}}}}])


def test_strict_nulls_mean_omitted_for_optional_arguments():
    from tool_selection.interop import drop_strict_nulls

    args = drop_strict_nulls(Echo, {"message": "hi", "times": None, "mode": None})
    assert args == {"message": "hi"} and Echo.check_arguments(args) == []
    assert drop_strict_nulls(Echo, {"message": None}) == {"message": None}  # required: still an error


def test_strict_export_refuses_free_form_objects_and_names_the_argument():
    from pydantic import BaseModel, Field

    from tool_selection import BaseTool

    class Tag(BaseTool, abstract=True):
        NAME = "tag_item"
        description = "Attach labels to an item."

        class Arguments(BaseModel):
            item: str = Field(description="Item id.")
            labels: dict[str, str] = Field(description="Label name to value.")

    check(to_openai(Tag)["function"]["parameters"])
    with pytest.raises(ToolSelectionError, match="'labels' is a free-form object"):
        to_openai(Tag, strict=True)


@pytest.mark.parametrize("tool_set", ["treasure_hunt", "events", "ecommerce", "finance", "language"])
def test_every_domain_tool_exports_in_strict_mode(tool_set):
    from tool_selection import load_tool_set

    for tool in load_tool_set(tool_set):
        check(to_openai(tool, strict=True)["function"]["parameters"])
