"""The tool model: one Pydantic class per tool, both its definition and its implementation.

A tool declares ``NAME``, ``description``, ``category`` and a nested ``Arguments`` model. The ``Arguments``
model is the single source of truth: it validates calls and yields the JSON Schema from which every
exported view (OpenAI, Anthropic, MCP, BFCL, prompt text) is derived.

    @register_tool
    class GiveHint(BaseTool):
        NAME = "give_hint"
        description = "Give the player a hint about the treasure's location."
        category = "treasure_hunt"

        class Arguments(BaseModel):
            hint_total: int = Field(ge=0, description="Hints given so far.")

        def execute(self, hint_total: int) -> str: ...
"""

from __future__ import annotations

import copy
import hashlib
import json
import keyword
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from tool_selection.errors import ArgumentProblem, ToolArgumentError, ToolDefinitionError
from tool_selection.schema_refs import outside_references

__all__ = ["BaseTool", "NoArguments", "ToolArgument", "problems_from_validation_error"]

# OpenAI and Anthropic both accept at most 64 characters of [a-zA-Z0-9_-]; we also require an identifier.
_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class StrictArguments(BaseModel):
    """A base for ``Arguments`` models that refuse arguments they do not declare."""

    model_config = ConfigDict(extra="forbid")


class NoArguments(StrictArguments):
    """Arguments model for tools that take none."""


@dataclass(frozen=True)
class ToolArgument:
    """One argument of a tool, as derived from its JSON Schema."""

    name: str
    type: str
    description: str
    required: bool
    default: Any = None
    enum: tuple | None = None


def _json_type(schema: dict) -> str:
    if "type" in schema:
        t = schema["type"]
        return "|".join(t) if isinstance(t, list) else t
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return "|".join(dict.fromkeys(_json_type(s) for s in schema[key]))
    if "enum" in schema:
        return "string"
    if "$ref" in schema:
        return "object"
    return "any"


def problems_from_validation_error(error: ValidationError) -> list[ArgumentProblem]:
    """Turn a Pydantic ``ValidationError`` into one ``ArgumentProblem`` per bad field."""
    problems = []
    for item in error.errors(include_url=False):
        field = ".".join(str(p) for p in item["loc"]) or "(arguments)"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unexpected argument (not in the tool's schema)"
        problems.append(ArgumentProblem(field=field, message=message, value=item.get("input")))
    return problems


class BaseTool(BaseModel):
    """Base class of every tool. Subclasses are validated when they are defined.

    Instance fields (ordinary Pydantic fields) hold a tool's configuration, such as a sandbox root or a
    database path; the class-level constants describe the tool to models.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    NAME: ClassVar[str]
    MODULE: ClassVar[str]
    description: ClassVar[str] = ""
    category: ClassVar[str] = "general"
    Arguments: ClassVar[type[BaseModel]] = NoArguments

    def __init_subclass__(cls, abstract: bool = False, **kwargs: Any) -> None:
        cls.__abstract_tool__ = abstract
        super().__init_subclass__(**kwargs)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if "MODULE" not in cls.__dict__:
            cls.MODULE = cls.__module__
        if cls.__dict__.get("__abstract_tool__"):
            return
        problems = cls._definition_problems()
        if not problems:  # every view of the tool derives from this schema: none of them may send anyone to a URL
            problems = [f"argument schema: {problem}" for problem in outside_references(cls.input_schema())]
        if problems:
            raise ToolDefinitionError(f"{cls.__module__}.{cls.__qualname__}", problems)

    @classmethod
    def _declared_as_field(cls, attribute: str) -> str | None:
        """The problem when a class constant was written the pydantic way (``description: str = "..."``).

        Pydantic turns an annotated class attribute into an instance field and removes it from the class, so
        the class constant is missing, or silently inherited from the base (``category`` stays "general").
        """
        field = cls.model_fields.get(attribute)
        if field is None:
            return None
        annotation = getattr(field.annotation, "__name__", None) or str(field.annotation)
        written = isinstance(field.default, str) and field.default.strip()  # else shown as "..."
        value = field.default if written else "..."
        declared = f"{attribute}: {annotation} = {value!r}" if written else f"{attribute}: {annotation} = ..."
        inherited = getattr(cls, attribute, None) if attribute != "NAME" else None
        effect = (f"the tool gets the inherited {attribute} {inherited!r}" if isinstance(inherited, str)
                  and inherited.strip() else f"the tool has no {attribute}")
        return (f"{attribute} is declared as a pydantic field ({declared}), so {effect}; write it as a plain "
                f"class attribute, without the annotation: {attribute} = {value!r}")

    @classmethod
    def _definition_problems(cls) -> list[str]:
        problems = []
        name = cls.__dict__.get("NAME")
        if field_problem := cls._declared_as_field("NAME"):
            problems.append(field_problem)
        elif name is None:
            problems.append('missing NAME: add a class constant such as NAME = "search_products"')
        elif not isinstance(name, str) or not _NAME_PATTERN.match(name) or keyword.iskeyword(name):
            problems.append(
                f"invalid NAME {name!r}: use an identifier of at most 64 characters "
                "(letters, digits, underscores; not starting with a digit; not a Python keyword)"
            )
        if field_problem := cls._declared_as_field("description"):
            problems.append(field_problem)
        elif not isinstance(cls.description, str) or not cls.description.strip():
            problems.append("empty description: set description to a sentence saying what the tool does")
        if field_problem := cls._declared_as_field("category"):
            problems.append(field_problem)
        elif not isinstance(cls.category, str) or not cls.category.strip():
            problems.append("empty category: set category, for example the tool set's domain")
        args_model = cls.Arguments
        if not (isinstance(args_model, type) and issubclass(args_model, BaseModel)):
            problems.append(f"Arguments must be a pydantic BaseModel subclass, got {args_model!r}")
        else:
            for field_name, field in args_model.model_fields.items():
                if not (field.description and field.description.strip()):
                    problems.append(
                        f"argument {field_name!r} has no description: "
                        f"declare it as {field_name}: ... = Field(description=\"...\")"
                    )
        return problems

    # ----------------------------------------------------------------- schema
    @classmethod
    def input_schema(cls) -> dict[str, Any]:
        """JSON Schema (draft 2020-12) of the tool's arguments, derived from ``Arguments``."""
        schema = _inline_refs(copy.deepcopy(cls.Arguments.model_json_schema()))
        _strip_titles(schema)
        schema.pop("description", None)  # the Arguments class's docstring: the tool's description says what it does
        schema.setdefault("properties", {})
        schema["type"] = "object"
        return schema

    @classmethod
    def arguments(cls) -> tuple[ToolArgument, ...]:
        """The tool's arguments (name, JSON type, description, required, default), from its schema."""
        schema = cls.input_schema()
        required = set(schema.get("required", []))
        out = []
        for name, prop in schema["properties"].items():
            prop = _resolve_ref(prop, schema)
            enum = prop.get("enum")
            if enum is None and ("anyOf" in prop or "oneOf" in prop):  # Optional[Literal[...]]
                members = [_resolve_ref(m, schema) for m in prop.get("anyOf", prop.get("oneOf", []))]
                enum = [v for m in members for v in m.get("enum", [m["const"]] if "const" in m else [])] or None
            out.append(
                ToolArgument(
                    name=name,
                    type=_json_type(prop),
                    description=prop.get("description", ""),
                    required=name in required,
                    default=prop.get("default"),
                    enum=tuple(enum) if enum else None,
                )
            )
        return tuple(out)

    @classmethod
    def schema_hash(cls) -> str:
        """A short stable hash of the name, description and argument schema (for compiled-program manifests)."""
        payload = json.dumps(
            {"name": cls.NAME, "description": cls.description, "schema": cls.input_schema()}, sort_keys=True
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    # ------------------------------------------------------------- validation
    @classmethod
    def undeclared_arguments(cls, arguments: dict[str, Any]) -> list[str]:
        """The keys of ``arguments`` the tool refuses for not declaring them (none when it allows extras)."""
        if cls.Arguments.model_config.get("extra") == "allow":
            return []
        fields = cls.Arguments.model_fields
        known = {f.alias or name for name, f in fields.items()} | set(fields)
        return [key for key in arguments if key not in known]

    @classmethod
    def check_arguments(cls, arguments: dict[str, Any]) -> list[ArgumentProblem]:
        """Every problem with ``arguments`` (empty when they are valid). Never raises."""
        if not isinstance(arguments, dict):
            return [ArgumentProblem("(arguments)", f"expected an object, got {type(arguments).__name__}")]
        undeclared = cls.undeclared_arguments(arguments)
        problems = [ArgumentProblem(key, "unexpected argument (not in the tool's schema)", arguments[key])
                    for key in undeclared]
        try:
            cls.Arguments.model_validate(arguments)
        except ValidationError as error:
            problems += [p for p in problems_from_validation_error(error) if p.field not in undeclared]
        return problems

    @classmethod
    def parse_arguments(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validated and coerced arguments; raises ``ToolArgumentError`` naming every bad field."""
        problems = cls.check_arguments(arguments)
        if problems:
            raise ToolArgumentError(cls.NAME, problems)
        return cls.Arguments.model_validate(arguments).model_dump()

    # -------------------------------------------------------------- execution
    def execute(self, **kwargs: Any) -> Any:
        raise NotImplementedError(f"Tool {self.NAME!r} does not implement execute()")

    def validate_and_execute(self, **kwargs: Any) -> Any:
        """Validate ``kwargs`` through ``Arguments``, then execute with the validated values."""
        return self.execute(**self.parse_arguments(kwargs))


_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")  # name -> schema
_SCHEMA_VALUES = ("default", "enum", "const", "examples")  # data, not schemas


def _strip_titles(schema: Any) -> None:
    """Remove Pydantic's auto-generated ``title`` keywords, which only add noise to prompts and exports."""
    if isinstance(schema, dict):
        schema.pop("title", None)
        for key, value in schema.items():
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                for sub in value.values():
                    _strip_titles(sub)
            elif key not in _SCHEMA_VALUES:
                _strip_titles(value)
    elif isinstance(schema, list):
        for item in schema:
            _strip_titles(item)


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with local ``$ref``s replaced by their definitions, so it stands alone when embedded in another
    schema (as in a response schema listing many tools). Recursive models keep their ``$defs``."""
    defs = schema.get("$defs") or {}
    if not defs:
        return schema

    def inline(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [inline(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in seen or name not in defs:
                raise RecursionError(name)
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return {**inline(defs[name], (*seen, name)), **rest}
        return {k: (v if k in _SCHEMA_VALUES else inline(v, seen)) for k, v in node.items() if k != "$defs"}

    try:
        return inline(schema, ())
    except RecursionError:
        return schema


def _resolve_ref(prop: dict, root: dict) -> dict:
    ref = prop.get("$ref")
    if not ref or not ref.startswith("#/"):
        return prop
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    return {**node, **{k: v for k, v in prop.items() if k != "$ref"}}
