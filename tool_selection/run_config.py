"""How a run is carried out, as one value: ``RunConfig`` (what the selector does is ``SelectorSpec``).

    run = RunConfig(threads=4, serve=4, run_dir="runs/finance", mlflow=False, limit=20)
    evaluate("finance", "local:qwen2.5-coder-0.5b", selector=SelectorSpec(strategy="native"), run=run)

``toolsel eval`` builds it from its flags, or reads it from ``--run-config FILE.yaml``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, field_validator, model_validator

from tool_selection.defaults import (
    DEFAULT_MAX_TOKENS,
    EXPERIMENT,
    MAX_CONTEXT,
    MAX_GENERATED_TOKENS,
    MAX_SLOTS,
    MAX_THREADS,
)
from tool_selection.flags import add_field_flag
from tool_selection.spec import YamlValue, _validated

__all__ = ["RunConfig", "add_tracking_flag"]


class RunConfig(YamlValue):
    """Threads, served slots, Ray, the model-answer cache, a local model's context, MLflow, the run folder, and
    which cases."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    yaml_section: ClassVar[str] = "run"

    threads: int = Field(default=1, ge=1, le=MAX_THREADS, description="Cases (or optimizer evaluations) in "
                         "parallel (default: 1, or N with --serve N).",
                         json_schema_extra={"default_text": "", "metavar": "N"})
    serve: int | None = Field(default=None, ge=1, le=MAX_SLOTS, description="Run the local model in a llama-server "
                              "with N parallel slots for this evaluation (batched decoding, N cases in flight unless "
                              "--threads says otherwise). See 'toolsel serve model'.", json_schema_extra={"metavar": "N"})
    ray: str | None = Field(default=None, description="Fan the cases out over Ray, --threads at a time: a local Ray "
                            "instance, or the cluster at ADDRESS (HOST:PORT). Needs the ray extra.",
                            json_schema_extra={"metavar": "ADDRESS", "const": "local"})
    cache: bool = Field(default=False, description="Answer from DSPy's cache of model answers where it has one "
                        "(off: a run's time and tokens are measured, never read back from another run).")
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=1, le=MAX_GENERATED_TOKENS,
                            description="Generation limit per decision.", json_schema_extra={"metavar": "N"})
    n_ctx: int | None = Field(default=None, ge=256, le=MAX_CONTEXT, description="Context of a local model, in tokens "
                              "(default: its catalog entry's, e.g. 4096); a longer prompt grows it up to the model's "
                              "trained length. A case whose request and tools cannot fit in that length is refused "
                              "before the run starts (show fewer tools: --retrieve K).",
                              json_schema_extra={"metavar": "N"})
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="Sampling temperature of the selector's "
                               "model (0: greedy).", json_schema_extra={"metavar": "T"})
    mlflow: bool = Field(default=True, description="Log the run to MLflow (--no-mlflow: do not).")
    tracking_uri: str | None = Field(default=None, description="MLflow tracking URI (default: "
                                     "$MLFLOW_TRACKING_URI or sqlite:///mlflow.db).")
    experiment: str = Field(default=EXPERIMENT, description="MLflow experiment.")
    run_dir: Path | None = Field(default=None, description="Where per-case results go (default: "
                                 "runs/<suite>-<split>-<model>-...-<hash>, named for what the run is).")
    fresh: bool = Field(default=False, description="Discard results already in the run folder instead of resuming.")
    limit: int | None = Field(default=None, ge=1, description="Only the first N cases of the split.",
                              json_schema_extra={"metavar": "N", "exclusive": "cases"})
    sample: int | None = Field(default=None, ge=1, description="A fixed seeded sample of N cases of the split (see "
                               "--seed).", json_schema_extra={"metavar": "N", "exclusive": "cases"})
    ids: str | None = Field(default=None, min_length=1, description="Only the cases with these ids (comma-separated"
                            ", as a run's rows name them), in the suite's order: to run some cases again.",
                            json_schema_extra={"metavar": "ID[,ID...]", "exclusive": "cases"})
    seed: int = Field(default=0, description="Seed of --sample, and of the model's sampler with --temperature above "
                                             "0.")
    progress: bool = Field(default=True, description="Show progress.")

    @model_validator(mode="after")
    def _one_way_to_choose_cases(self) -> RunConfig:
        chosen = [name for name in ("limit", "sample", "ids") if getattr(self, name) is not None]
        if len(chosen) > 1:
            raise ValueError(f"{' and '.join(chosen)} each choose cases; give one (limit: the first N, sample: a "
                             "seeded random N, ids: the cases named)")
        return self

    @field_validator("run_dir")
    @classmethod
    def _not_a_file(cls, value: Path | None) -> Path | None:
        if value is not None and value.exists() and not value.is_dir():
            raise ValueError(f"{value} is a file; give a directory for the per-case results")
        return value

    @classmethod
    def build(cls, **fields: Any) -> RunConfig:
        """A run config from fields, with every bad one named in one ``SpecError``."""
        return _validated(cls, fields)

    def replace(self, **fields: Any) -> RunConfig:
        """This config with ``fields`` changed (validated again)."""
        return _validated(type(self), {**self.model_dump(), **fields})


def add_tracking_flag(parser: argparse.ArgumentParser) -> None:
    """``--tracking-uri``, for a command that reads or writes MLflow without the rest of a run's flags (declared
    once: ``RunConfig.tracking_uri``)."""
    add_field_flag(parser, RunConfig, "tracking_uri")
