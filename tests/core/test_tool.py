"""The tool model: definition-time checks, argument views and validation."""

import pytest
from pydantic import BaseModel, Field

from tests.core.tools_fixture import Add, Echo, Now
from tool_selection import BaseTool, ToolArgumentError, ToolDefinitionError


def test_definition_errors_are_collected_into_one_error():
    with pytest.raises(ToolDefinitionError) as info:

        class Broken(BaseTool):
            description = "   "

            class Arguments(BaseModel):
                x: int
                y: str = Field(description="fine")
                z: int = 3

    error = info.value
    assert len(error.problems) == 4
    message = str(error)
    assert "missing NAME" in message
    assert "empty description" in message
    assert "argument 'x' has no description" in message
    assert "argument 'z' has no description" in message
    assert "argument 'y'" not in message


@pytest.mark.parametrize("bad_name", ["1abc", "has space", "dash-name", "class", "x" * 65, ""])
def test_invalid_names_are_rejected(bad_name):
    with pytest.raises(ToolDefinitionError, match="invalid NAME"):
        type("T", (BaseTool,), {"NAME": bad_name, "description": "d", "__module__": __name__})


@pytest.mark.filterwarnings("ignore:Field name .* shadows an attribute in parent")
def test_a_constant_declared_as_a_pydantic_field_says_so_and_how_to_fix_it():
    """``description: str = "..."`` makes an instance field and leaves the class constant empty (or, for category,
    silently inherited): the error names that, not an "empty description"."""
    with pytest.raises(ToolDefinitionError) as info:

        class Weather(BaseTool):
            NAME: str = "weather"
            description: str = "Weather."
            category: str = "weather"

    assert info.value.problems == [
        "NAME is declared as a pydantic field (NAME: str = 'weather'), so the tool has no NAME; write it as a "
        "plain class attribute, without the annotation: NAME = 'weather'",
        "description is declared as a pydantic field (description: str = 'Weather.'), so the tool has no "
        "description; write it as a plain class attribute, without the annotation: description = 'Weather.'",
        "category is declared as a pydantic field (category: str = 'weather'), so the tool gets the inherited "
        "category 'general'; write it as a plain class attribute, without the annotation: category = 'weather'",
    ]


@pytest.mark.filterwarnings("ignore:Field name .* shadows an attribute in parent")
def test_a_constant_declared_as_a_field_without_a_value_is_named_too():
    with pytest.raises(ToolDefinitionError) as info:

        class Weather(BaseTool):
            NAME = "weather"
            description: str

    assert info.value.problems == [
        "description is declared as a pydantic field (description: str = ...), so the tool has no description; "
        "write it as a plain class attribute, without the annotation: description = '...'"
    ]


def test_abstract_base_classes_skip_checks():
    class Family(BaseTool, abstract=True):
        category = "family"

    class Member(Family):
        NAME = "member"
        description = "A member of the family."

    assert Member.category == "family"
    assert Member.MODULE == __name__


def test_arguments_are_derived_from_the_arguments_model():
    args = {a.name: a for a in Echo.arguments()}
    assert list(args) == ["message", "times", "mode"]
    assert args["message"].required and args["message"].type == "string"
    assert not args["times"].required and args["times"].default == 1 and args["times"].type == "integer"
    assert args["mode"].enum == ("plain", "shout")
    assert Now.arguments() == ()


def test_validate_and_execute_coerces_and_runs():
    assert Echo().validate_and_execute(message="hi", times=2) == "hi hi"
    assert Add().validate_and_execute(a=1, b="2.5") == 3.5
    assert Now(clock="09:30").validate_and_execute() == "09:30"


def test_validation_names_every_bad_field():
    with pytest.raises(ToolArgumentError) as info:
        Echo().validate_and_execute(message="", times=9, mode="whisper", colour="red")
    error = info.value
    assert error.tool == "echo"
    assert sorted(p.field for p in error.problems) == ["colour", "message", "mode", "times"]
    assert "unexpected argument" in next(p.message for p in error.problems if p.field == "colour")
    assert error.to_dict()["error"] == "invalid_arguments"


def test_check_arguments_reports_missing_required_and_non_dict():
    assert [p.field for p in Add.check_arguments({"a": 1})] == ["b"]
    assert Add.check_arguments({"a": 1, "b": 2}) == []
    assert Add.check_arguments(["a"])[0].field == "(arguments)"


def test_schema_hash_changes_with_the_schema():
    class EchoV2(Echo):
        NAME = "echo"

        class Arguments(Echo.Arguments):
            extra: bool = Field(default=False, description="New flag.")

    assert EchoV2.schema_hash() != Echo.schema_hash()
    assert Echo.schema_hash() == Echo.schema_hash()


def test_input_schema_inlines_nested_models_and_keeps_titles_inside_values():
    class Line(BaseModel):
        sku: str = Field(description="Stock keeping unit.")

    class PlaceOrder(BaseTool, abstract=True):  # abstract: kept out of the default registry
        NAME = "place_order"
        description = "Place an order."

        class Arguments(BaseModel):
            lines: list[Line] = Field(description="Order lines.")
            meta: dict = Field(default={"title": "kept"}, description="Free-form metadata.")

    schema = PlaceOrder.input_schema()
    assert "$defs" not in schema and "$ref" not in str(schema)
    assert schema["properties"]["lines"]["items"]["properties"]["sku"]["type"] == "string"
    assert schema["properties"]["meta"]["default"] == {"title": "kept"}
    assert "title" not in schema["properties"]["lines"]


def test_input_schema_leaves_the_arguments_docstring_out():
    class Lookup(BaseTool, abstract=True):
        NAME = "lookup"
        description = "Look a word up."

        class Arguments(BaseModel):
            """Developer notes on this model, not for the language model."""

            word: str = Field(description="The word.")

    assert "description" not in Lookup.input_schema()  # a small model copies it into its arguments otherwise
    assert "description" not in Now.input_schema() and Now.input_schema()["properties"] == {}
    assert Lookup.input_schema()["properties"]["word"]["description"] == "The word."
