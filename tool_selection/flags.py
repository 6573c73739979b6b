"""One table of flags, made from the settings' own fields.

Every field of a settings model (``SelectorSpec``, ``RunConfig``, an optimizer's settings, ...) has a flat name:
its own name, or, inside a section, the section's prefix and its name (``gate.threshold`` -> ``gate_threshold``)
unless the field names itself (``retrieval.k`` -> ``retrieve``). The flat name is the command-line flag
(``--gate-threshold``), the sweep axis and the recorded run param. The field's description is the flag's help;
its type, bounds and choices are the flag's type, bounds and choices. So a new field is a new flag of every
command that takes the model, a new sweep axis and a new param, with no other edit.

A field may say more in ``json_schema_extra``:

- ``flat``: its flat name (default: the section's prefix and the field's name);
- ``prefix``: on a section, the prefix of its fields' flat names (default: the section's name and ``_``);
- ``cli_type``: a named parser of ``PARSERS`` for its text (default: from the annotation);
- ``metavar``, ``default_text``: how its help shows the value and the default; ``const``: the value of the flag
  given without one;
- ``cli``: False for a field no command-line flag sets; ``exclusive``: a group name, whose flags exclude each other;
- ``record``: how a run records it, ``changed`` (default: when it departs from the default), ``always`` or
  ``never``; on a section, ``gated`` (the gate's fields, recorded with a ``gate+`` strategy).
"""

from __future__ import annotations

import argparse
import math
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from annotated_types import Ge, Le
from pydantic import BaseModel
from pydantic.fields import FieldInfo

__all__ = ["PARSERS", "FlatField", "add_field_flag", "add_flags", "count", "flat_fields", "given", "given_fields",
           "nest", "number", "threshold"]


# ------------------------------------------------------------------ parsers of command-line text
def count(low: int = 1, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high`` (no upper bound when None)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or (high is not None and value > high):
            allowed = f"from {low:,} to {high:,}" if high is not None else f"at least {low:,}"
            raise argparse.ArgumentTypeError(f"{value:,} is out of range: give a number {allowed}")
        return value

    parse.__name__ = "count"  # argparse names the type in its message
    return parse


def number(low: float | None = None, high: float | None = None) -> Callable[[str], float]:
    """An argparse type: a number from ``low`` to ``high`` (either bound may be absent)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if math.isnan(value) or (low is not None and value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{text} is out of range: give a number"
                                             f"{f' from {low:g}' if low is not None else ''}"
                                             f"{f' to {high:g}' if high is not None else ''}")
        return value

    parse.__name__ = "number"
    return parse


def threshold(text: str) -> float:
    """A threshold: a number, -inf or inf. NaN is refused: every comparison with it is false, so it would silently
    never (or always) trigger."""
    value = float(text)
    if math.isnan(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give a number, or -inf or inf")
    return value


def given(text: str) -> str:
    """Text that is not blank (an empty value would read as the flag left out)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty; give a value, or leave the flag out")
    return text


def whole(text: str) -> int:
    """A whole number."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def names(text: str) -> tuple[str, ...]:
    """A comma-separated list of names."""
    return tuple(name.strip() for name in text.split(",") if name.strip())


def boolean(text: str) -> bool:
    """true/false, yes/no, on/off, 1/0 (a sweep axis' values of a switch)."""
    value = text.strip().lower()
    if value in ("true", "yes", "on", "1"):
        return True
    if value in ("false", "no", "off", "0"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not true or false")


def relevance_signals(text: str) -> tuple[str, ...]:
    """Signal names, with ``cheap`` for every signal but those that cost model calls."""
    from tool_selection.relevance import CHEAP_SIGNALS  # lazy: the relevance package loads numpy

    return tuple(signal for name in names(text) for signal in (CHEAP_SIGNALS if name == "cheap" else (name,)))


PARSERS: dict[str, Callable[[str], Any]] = {"threshold": threshold, "relevance_signals": relevance_signals}
"""Parsers a field names with ``cli_type`` where its annotation does not say enough."""


# ------------------------------------------------------------------ the flat view of a model's fields
@dataclass(frozen=True)
class FlatField:
    """One field of a settings model under its flat name: where it is (``path``) and what it is."""

    name: str
    path: tuple[str, ...]
    info: FieldInfo
    section: FieldInfo | None = None  # the section's own field, for a field inside one

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def extra(self, key: str, default: Any = None) -> Any:
        return _extra(self.info, key, default)

    @property
    def record(self) -> str:
        """How a run records the field: its section's rule (``gated``), else its own (default ``changed``)."""
        section_rule = _extra(self.section, "record") if self.section is not None else None
        return section_rule or self.extra("record", "changed")

    def value_in(self, model: BaseModel) -> Any:
        """The field's value in ``model`` (None where its section is None)."""
        value: Any = model
        for part in self.path:
            value = getattr(value, part) if value is not None else None
        return value

    @property
    def kind(self) -> Any:
        """The field's type without ``None``."""
        return _without_none(self.info.annotation)

    def parse(self, text: str) -> Any:
        """Command-line text as the field's value (argparse's type, and a sweep axis' conversion)."""
        return self.parser()(text)

    def parser(self) -> Callable[[str], Any]:
        if self.extra("cli_type"):
            return PARSERS[self.extra("cli_type")]
        kind, low, high = self.kind, _bound(self.info, Ge), _bound(self.info, Le)
        if kind is bool:
            return boolean
        if kind is int:
            return whole if low is None and high is None else count(int(low) if low is not None else -(2**63),
                                                                    int(high) if high is not None else None)
        if kind is float:
            return number(low, high)
        if typing.get_origin(kind) is tuple:
            return names
        return given

    @property
    def choices(self) -> tuple[Any, ...] | None:
        return typing.get_args(self.kind) if typing.get_origin(self.kind) is Literal else None

    @property
    def help(self) -> str:
        text = (self.info.description or "").replace("%", "%%")
        default = self.extra("default_text")
        if default is None and not self.info.is_required() and self.info.default is not None \
                and not callable(self.info.default_factory):
            value = self.info.default
            default = ",".join(value) if isinstance(value, tuple) else str(value).lower() if isinstance(value, bool) \
                else str(value)
        if default in (None, ""):
            return text
        return f"{text[:-1]} (default: {default})." if text.endswith(".") else f"{text} (default: {default})"


def flat_fields(model: type[BaseModel]) -> dict[str, FlatField]:
    """Every field of ``model`` by its flat name, sections' fields included (in declaration order)."""
    fields: dict[str, FlatField] = {}
    for name, info in model.model_fields.items():
        section = _section_model(info)
        if section is None:
            _add(fields, FlatField(_extra(info, "flat") or name, (name,), info), model)
            continue
        prefix = _extra(info, "prefix")
        prefix = f"{name}_" if prefix is None else prefix
        for inner, inner_info in section.model_fields.items():
            flat = _extra(inner_info, "flat") or f"{prefix}{inner}"
            _add(fields, FlatField(flat, (name, inner), inner_info, section=info), model)
    return fields


def nest(model: type[BaseModel], values: dict[str, Any], base: dict[str, Any] | None = None) -> dict[str, Any]:
    """``values`` by flat name as ``model``'s fields (on ``base``, a dump of the fields to start from: a section
    given in part keeps the rest of its base)."""
    fields = {key: dict(value) if isinstance(value, dict) else value for key, value in (base or {}).items()}
    table = flat_fields(model)
    for flat, value in values.items():
        path = table[flat].path
        if len(path) == 1:
            fields[path[0]] = value
        else:
            section = fields.get(path[0])
            fields[path[0]] = {**(section if isinstance(section, dict) else {}), path[1]: value}
    return fields


# ------------------------------------------------------------------ argparse
def add_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup, model: type[BaseModel], *,
              skip: Iterable[str] = (), lists: bool = False) -> None:
    """A flag per field of ``model`` (``skip``: flat names left out). Every flag defaults to None, so that
    ``given_fields`` can tell a flag given from one left out; ``lists``: each flag takes a comma list of values
    (a sweep's axes), kept as text."""
    skipped, exclusive = set(skip), {}
    for field in flat_fields(model).values():
        if field.name not in skipped and field.extra("cli", True):
            group = field.extra("exclusive")
            if group is not None and not lists and group not in exclusive:
                exclusive[group] = parser.add_mutually_exclusive_group()
            _add_argument(exclusive.get(group, parser), field, lists=lists)


def add_field_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup, model: type[BaseModel],
                   name: str) -> None:
    """The flag of one field of ``model`` (by flat name), for a command that takes only that one."""
    _add_argument(parser, flat_fields(model)[name], lists=False)


def given_fields(args: argparse.Namespace, model: type[BaseModel]) -> dict[str, Any]:
    """``{flat name: value}`` of the flags of ``model`` given on the command line."""
    return {name: getattr(args, name) for name in flat_fields(model) if getattr(args, name, None) is not None}


def _add_argument(parser: Any, field: FlatField, *, lists: bool) -> None:
    options: dict[str, Any] = {"dest": field.name, "default": None, "help": field.help}
    if lists:
        options.update(metavar=f"{field.name.upper()}[,...]")
    elif field.kind is bool:
        options["action"] = argparse.BooleanOptionalAction
    else:
        options["type"] = field.parser()
        if field.choices:
            options["choices"] = field.choices
        if field.extra("metavar"):
            options["metavar"] = field.extra("metavar")
        if field.extra("const") is not None:
            options.update(nargs="?", const=field.extra("const"))
    parser.add_argument(field.flag, **options)


# ------------------------------------------------------------------ helpers
def _extra(info: FieldInfo, key: str, default: Any = None) -> Any:
    extra = info.json_schema_extra
    return extra.get(key, default) if isinstance(extra, dict) else default


def _without_none(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kinds = [kind for kind in typing.get_args(annotation) if kind is not type(None)]
        return kinds[0] if len(kinds) == 1 else annotation
    return Path if annotation is Path else annotation


def _section_model(info: FieldInfo) -> type[BaseModel] | None:
    kind = _without_none(info.annotation)
    return kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None


def _bound(info: FieldInfo, kind: type) -> float | None:
    for item in info.metadata:
        if isinstance(item, kind):
            return item.ge if kind is Ge else item.le
    return None


def _add(fields: dict[str, FlatField], field: FlatField, model: type[BaseModel]) -> None:
    if field.name in fields:
        raise TypeError(f"{model.__name__}: two fields have the flat name {field.name!r} "
                        f"({'.'.join(fields[field.name].path)} and {'.'.join(field.path)}); name one with "
                        "json_schema_extra={'flat': ...}")
    fields[field.name] = field
