"""A sweep's plan: the suites, models and selector settings it varies, its cells and its baseline (``SweepPlan``;
``toolsel sweep`` runs it with ``evals.sweep.run_sweep``)."""

from __future__ import annotations

import hashlib
import itertools
import json
from argparse import ArgumentTypeError
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evals.naming import slug
from tool_selection.defaults import DEFAULT_MODEL, DEFAULT_SUITE
from tool_selection.errors import ToolSelectionError
from tool_selection.flags import FlatField, flat_fields, nest
from tool_selection.run_config import RunConfig
from tool_selection.spec import SelectorSpec, SpecError
from tool_selection.strict_files import read_yaml

__all__ = ["AXES", "PLAN_FILE", "ROW_SETTINGS", "SELECTOR_AXES", "SWEEPS_DIR", "Cell", "SweepError", "SweepPlan",
           "parse_baseline", "selector_axes"]

SWEEPS_DIR = Path("runs") / "sweeps"
PLAN_FILE = "sweep.yaml"



def selector_axes(spec_type: type[SelectorSpec] = SelectorSpec) -> dict[str, FlatField]:
    """The selector's axes: every field of the spec a flag sets, by its flat name (``tool_selection.flags``)."""
    return {name: field for name, field in flat_fields(spec_type).items() if field.extra("cli", True)}


SELECTOR_AXES = selector_axes()
"""The axes of a plain ``SelectorSpec`` (a plan whose ``selector`` is a subclass gets that class' fields)."""
AXES = ("suite", "model", *SELECTOR_AXES)
# run settings that change a cell's rows (the rest, such as threads or MLflow, do not)
ROW_SETTINGS = ("limit", "sample", "seed", "max_tokens", "temperature")


class SweepError(SpecError):
    """A sweep plan that cannot run (unknown axis, suite or strategy, a bad baseline); said before any model loads."""


@dataclass(frozen=True)
class Cell:
    """One evaluation of a sweep: a suite, a model and a selector spec, with the axis values that made it."""

    index: int
    values: dict[str, Any]  # axis -> value, in the plan's axis order
    suite: str
    suite_name: str
    model: str
    spec: SelectorSpec
    folder: str  # under the sweep's folder

    @property
    def settings(self) -> str:
        """The selector as ``SelectorSpec.describe`` says it, less the strategy (a column of its own) and the
        zero-shot program."""
        described = self.spec.describe()
        described.pop("strategy")
        if described.get("program") == "zero-shot":
            described.pop("program")
        return ", ".join(f"{key}={value}" for key, value in described.items())

    @property
    def title(self) -> str:
        return ", ".join(f"{axis} {value}" for axis, value in self.values.items())


class SweepPlan(BaseModel):
    """What a sweep runs (``sweep.yaml``): a name, the split, the base selector and run, the axes and the baseline."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="The sweep's folder name under runs/sweeps.")
    split: str = Field(default="test", description="train, dev, test or all.")
    selector: SelectorSpec = Field(default_factory=SelectorSpec, description="Each cell's spec before its axes.")
    run: RunConfig = Field(default_factory=RunConfig, description="How every cell runs (the cell picks the folder).")
    axes: dict[str, list[Any]] = Field(default_factory=dict, description=f"Values to sweep, per axis: {AXES}.")
    baseline: dict[str, Any] = Field(default_factory=dict, description="Axis values of the cell the others are "
                                                                      "compared with (default: every axis' first).")

    @field_validator("split")
    @classmethod
    def _known_split(cls, value: str) -> str:
        if value not in ("train", "dev", "test", "all"):
            raise ValueError(f"split {value!r} is not one of train, dev, test, all")
        return value

    @field_validator("run")
    @classmethod
    def _no_run_dir(cls, value: RunConfig) -> RunConfig:
        if value.run_dir is not None:
            raise ValueError("a sweep gives every cell its own folder: leave run_dir (--run-dir) out and name the "
                             "sweep's folder with --out")
        return value

    @model_validator(mode="before")
    @classmethod
    def _known_axes(cls, data: Any) -> Any:
        """The axes and the baseline checked against the selector's fields, their values typed."""
        if not isinstance(data, dict):
            return data
        given = data.get("selector")  # a spec of a subclass brings its own fields as axes
        axes_of = selector_axes(type(given) if isinstance(given, SelectorSpec) else cls.model_fields["selector"].annotation)
        known = ("suite", "model", *axes_of)
        axes, baseline = data.get("axes") or {}, data.get("baseline") or {}
        if not (isinstance(axes, dict) and isinstance(baseline, dict)
                and all(isinstance(values, list) for values in axes.values())):
            return data  # the fields' own types say what is wrong
        problems = [f"unknown axis {name!r} (axes: {', '.join(known)})" for name in axes if name not in known]
        problems += [f"axis {name!r} has no values" for name, values in axes.items() if not values]
        problems += [f"axis {name!r} repeats a value" for name, values in axes.items()
                     if len({json.dumps(v) for v in values or []}) < len(values or [])]
        if problems:
            raise ValueError("; ".join(problems))
        axes = {name: [_typed(axes_of.get(name), value) for value in values] for name, values in axes.items()}
        # suite and model first (the table's order), then the selector's axes as given
        data = {**data, "axes": {"suite": axes.get("suite", [DEFAULT_SUITE]),
                                 "model": axes.get("model", [DEFAULT_MODEL]),
                                 **{name: values for name, values in axes.items() if name not in ("suite", "model")}},
                "baseline": {axis: _typed(axes_of.get(axis), value) for axis, value in baseline.items()}}
        return data

    @model_validator(mode="after")
    def _baseline_on_the_axes(self) -> SweepPlan:
        if "suite" in self.baseline:
            raise ValueError("the baseline cannot name a suite: cells are compared within each suite")
        for axis, value in self.baseline.items():
            if axis not in self.axes:
                raise ValueError(f"baseline axis {axis!r} is not swept (axes: {', '.join(self.axes)})")
            if value not in self.axes[axis]:
                raise ValueError(f"baseline {axis}={value} is not among the {axis} values "
                                 f"{', '.join(map(str, self.axes[axis]))}")
        return self

    @classmethod
    def build(cls, **fields: Any) -> SweepPlan:
        """A plan from fields, every bad one named in one ``SweepError``."""
        from tool_selection.validation import validation_problems

        try:
            return cls.model_validate(fields)
        except ValidationError as error:
            raise SweepError("Bad sweep plan: " + validation_problems(error).replace("(section): ", "")) from None

    @classmethod
    def load_yaml(cls, path: str | Path) -> SweepPlan:
        """A plan from a sweep file (what ``sweep.yaml`` holds; its ``cells`` list is only a record); the name
        defaults to the file's stem."""
        path = Path(path)
        data = read_yaml(path, what="sweep", fix="Write the plan as a plain YAML mapping (name, split, "
                                                      "selector, run, axes, baseline; see evals/sweeps/).") or {}
        if not isinstance(data, dict):
            raise SweepError(f"{path}: expected a mapping (name, split, selector, run, axes, baseline), got "
                             f"{type(data).__name__}.")
        data.pop("cells", None)
        data.setdefault("name", path.parent.name if path.name == PLAN_FILE else path.stem)
        try:
            return cls.build(**data)
        except SweepError as error:
            raise SweepError(f"{path}: {error}") from None

    def to_yaml(self, cells: list[Cell] | None = None) -> str:
        import yaml

        data = self.model_dump(mode="json", exclude_defaults=True)
        data.update(name=self.name, axes=self.axes)
        if cells:
            data["cells"] = [{"folder": cell.folder, **cell.values} for cell in cells]
        return yaml.safe_dump(data, sort_keys=False)

    @property
    def baseline_values(self) -> dict[str, Any]:
        """The axis values that make a cell the baseline: as given (the other axes stay the compared cell's), else
        the first value of every axis but the suite."""
        return dict(self.baseline) or {axis: values[0] for axis, values in self.axes.items() if axis != "suite"}

    @property
    def swept_axes(self) -> list[str]:
        """The axes with more than one value, but the suite (cells are told apart by these)."""
        return [axis for axis, values in self.axes.items() if axis != "suite" and len(values) > 1]

    def cells(self) -> list[Cell]:
        """Every cell, in axis order (suites outermost), each spec and suite checked: an unknown strategy or suite,
        or settings that do not go together, stop here, before any model loads."""
        from evals.suite import load_suite

        suites, problems = {}, []
        for suite in self.axes["suite"]:
            try:
                loaded = load_suite(suite)
                if not len(loaded.split(None if self.split == "all" else self.split)):
                    problems.append(f"suite {suite!r} has no {self.split!r} cases (its splits: "
                                    f"{dict(loaded.split_counts())})")
                suites[suite] = loaded
            except ToolSelectionError as error:
                problems.append(f"suite {suite!r}: {error}")
        cells = []
        for index, combination in enumerate(itertools.product(*self.axes.values())):
            values = dict(zip(self.axes, combination, strict=True))
            try:
                spec = self._spec(values)
            except SpecError as error:
                problems.append(f"{', '.join(f'{k}={v}' for k, v in values.items() if k not in ('suite', 'model'))}: "
                                f"{error}")
                continue
            if values["suite"] in suites:
                cells.append(self._cell(index, values, suites[values["suite"]], spec))
        if problems:
            raise SweepError("Bad sweep plan (nothing was run): " + "; ".join(dict.fromkeys(problems)))
        return cells

    def _spec(self, values: dict[str, Any]) -> SelectorSpec:
        spec_type = type(self.selector)
        chosen = {axis: value for axis, value in values.items() if axis not in ("suite", "model")}
        return spec_type.build(**nest(spec_type, chosen, base=self.selector.model_dump(exclude_defaults=True)))

    def _cell(self, index: int, values: dict[str, Any], suite: Any, spec: SelectorSpec) -> Cell:
        identity = {"suite": values["suite"], "suite_fingerprint": suite.fingerprint, "split": self.split,
                    "model": values["model"], "selector": spec.model_dump(mode="json"),
                    **{name: getattr(self.run, name) for name in ROW_SETTINGS}}
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:8]
        label = "-".join(slug(str(value)) for value in (suite.name, *list(values.values())[1:]))
        return Cell(index=index, values=values, suite=values["suite"], suite_name=suite.name, model=values["model"],
                    spec=spec, folder=f"{label[:100]}-{digest}")

    def baseline_of(self, cell: Cell, cells: list[Cell]) -> Cell | None:
        """The cell ``cell`` is compared with: the baseline's values, ``cell``'s suite and other values."""
        wanted = {**cell.values, **self.baseline_values}
        return next((other for other in cells if other.values == wanted), None)


def _typed(field: FlatField | None, value: Any) -> Any:
    """An axis' value written as text (``"-inf"``, ``"5"``, ``"true"``) as its field's type, so that values
    compare (the suite and the model, with no field, stay text)."""
    if field is None or not isinstance(value, str) or field.kind is str:
        return value
    try:
        return field.parse(value)
    except (ValueError, ArgumentTypeError) as error:
        raise ValueError(f"{field.name} value {value!r}: {error}") from None


def parse_baseline(text: str | None, spec_type: type[SelectorSpec] = SelectorSpec) -> dict[str, Any]:
    """``--baseline strategy=native,gate_threshold=0.3``: axis values (numbers for the numeric axes)."""
    baseline: dict[str, Any] = {}
    axes_of = selector_axes(spec_type)
    known = ("suite", "model", *axes_of)
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        axis, sep, value = part.partition("=")
        axis = axis.strip().replace("-", "_")
        if not sep or axis not in known:
            raise SweepError(f"--baseline {text!r}: give AXIS=VALUE pairs (axes: {', '.join(known)}), e.g. "
                             "--baseline strategy=native")
        try:
            baseline[axis] = _typed(axes_of.get(axis), value.strip())
        except ValueError as error:
            raise SweepError(f"--baseline {text!r}: {error}") from None
    return baseline
