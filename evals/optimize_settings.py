"""What an optimization is, as one value (``OptimizeSettings``): the optimization section of an experiment, and the
flags of ``toolsel optimize`` beside the selector's and the run's (made from these fields). Loads no DSPy."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tool_selection.errors import ToolSelectionError
from tool_selection.validation import validation_problems

__all__ = ["Budget", "OptimizeSettings", "Target"]

Budget = Literal["light", "medium", "heavy"]
Target = Literal["program", "descriptions"]  # what is optimized: the selector's prompt, or the tools' descriptions


class OptimizeSettings(BaseModel):
    """What an optimization is (besides the suite, the model, the selector and how it runs): what it optimizes
    (``target``: the selector's program, or the descriptions its tools show, ``evals.description_optimization``),
    the optimizer (default: bootstrap; gepa, the only one, for descriptions), its teacher (default: the student)
    and budget, how many train, dev and test cases, whether the test split is scored, and whether a program that
    abstains far more than the selector it started from may be saved."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    target: Target = Field(default="program", description="What is optimized: the selector's prompt, or the "
                           "descriptions its tools show (GEPA; the tool set is untouched).")
    optimizer: str = Field(default="bootstrap", description="DSPy optimizer (gepa with --target descriptions; an "
                           "unknown name lists the registered ones).")
    teacher: Any = Field(default=None, description="A model spec (or a dspy.LM) that generates demonstrations / "
                         "reflects (default: the student).", json_schema_extra={"metavar": "MODEL"})
    budget: Budget = Field(default="light", description="Search budget.")
    max_metric_calls: int | None = Field(default=None, ge=1, description="GEPA only: stop its search after N metric "
                                         "calls instead of the budget's number.", json_schema_extra={"metavar": "N"})
    train_limit: int | None = Field(default=None, ge=1, description="Use only the first N train cases.",
                                    json_schema_extra={"metavar": "N"})
    dev_limit: int | None = Field(default=None, ge=1, description="Use only the first N dev cases.",
                                  json_schema_extra={"metavar": "N"})
    test_limit: int | None = Field(default=None, ge=1, description="Score only the first N test cases.",
                                   json_schema_extra={"metavar": "N"})
    evaluate_test: bool = Field(default=True, description="Score the compiled selector on the test split "
                                "(--no-test: skip it).", json_schema_extra={"flat": "test"})
    allow_false_abstention_rise: bool = Field(
        default=False, description="Save the program even if its dev false abstention is more than 10 points above "
        "the unoptimized selector's (refused by default: such a program gains by refusing).")

    @field_validator("optimizer")
    @classmethod
    def _registered(cls, value: str) -> str:
        from evals.optimizers import get_optimizer  # lazy: the optimizers load DSPy (~1 s); --help does not

        get_optimizer(value)  # an unknown name lists the registered ones
        return value

    @model_validator(mode="before")
    @classmethod
    def _descriptions_default_to_gepa(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("target") == "descriptions" and "optimizer" not in data:
            return {**data, "optimizer": "gepa"}
        return data

    @model_validator(mode="after")
    def _descriptions_need_gepa(self) -> OptimizeSettings:
        if self.target == "descriptions" and self.optimizer != "gepa":
            raise ValueError(f"--target descriptions evolves the tool descriptions with GEPA, not {self.optimizer!r}: "
                             "use --optimizer gepa, or leave --optimizer out")
        if self.max_metric_calls is not None and self.optimizer != "gepa":
            raise ValueError(f"--max-metric-calls caps GEPA's search; {self.optimizer!r} is sized by --budget: "
                             "leave --max-metric-calls out, or use --optimizer gepa")
        return self

    @classmethod
    def build(cls, settings: OptimizeSettings | None = None, **fields: Any) -> OptimizeSettings:
        """``settings`` (default: the defaults) with ``fields`` changed; every bad field named in one error."""
        if "optimizer" in fields:
            from evals.optimizers import get_optimizer  # lazy: the optimizers load DSPy (~1 s)

            get_optimizer(fields["optimizer"])  # its own error class, before pydantic wraps it
        try:
            given = {k: v for k, v in dict(settings).items() if k in settings.model_fields_set} if settings else {}
            return cls.model_validate({**given, **fields})
        except ValidationError as error:
            raise ToolSelectionError(f"Bad optimization settings: {validation_problems(error)}.") from None
