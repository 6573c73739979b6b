"""The flags of an experiment, in one place: one flag per field of ``SelectorSpec`` (what the selector does) and
of ``RunConfig`` (how the run is carried out), made from the fields themselves (``tool_selection.flags``), so a
new field is a new flag of ``eval``, ``sweep``, ``optimize``, ``eval loop`` and ``bench stuck`` with no other
edit. ``--spec FILE.yaml`` and ``--run-config FILE.yaml`` start from a file, and flags given beside it change it.

Every flag defaults to None, so that building can tell a flag given from one left out; the defaults are the
spec's and the run config's own (said in the help)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from evals.experiment import Experiment
from evals.optimize_settings import OptimizeSettings
from tool_selection.flags import add_field_flag, add_flags, given, given_fields, nest
from tool_selection.run_config import RunConfig
from tool_selection.spec import SelectorSpec

__all__ = ["EXPERIMENT_TYPE", "RUN_GROUP", "SELECTOR_GROUP", "add_experiment_flags", "add_run_flags",
           "add_selector_flags", "experiment", "optimization_section", "run_config", "selector_spec", "spec_type"]

SELECTOR_GROUP = "the selector (a SelectorSpec)"
RUN_GROUP = "the run (a RunConfig)"

EXPERIMENT_TYPE: type[Experiment] = Experiment
"""The experiment every command builds (a subclass with more fields gives every command more flags)."""


def spec_type() -> type[SelectorSpec]:
    """The selector spec class of the experiment (``EXPERIMENT_TYPE``'s ``selector`` field)."""
    return EXPERIMENT_TYPE.model_fields["selector"].annotation


def add_experiment_flags(parser: argparse.ArgumentParser) -> None:
    """``--suite``, ``--model``, ``--split``, then the selector's and the run's flags."""
    for name in ("suite", "model", "split"):
        add_field_flag(parser, EXPERIMENT_TYPE, name)
    add_selector_flags(parser)
    add_run_flags(parser)


def experiment(args: argparse.Namespace, *, selector_defaults: dict[str, Any] | None = None,
               **sections: Any) -> Experiment:
    """The experiment the flags describe (``selector_defaults``: a command's own defaults of the selector's flat
    fields; ``sections``: a command's own, e.g. ``loop=``)."""
    top = {name: getattr(args, name) for name in ("suite", "model", "split") if getattr(args, name, None) is not None}
    return EXPERIMENT_TYPE.build(**top, selector=selector_spec(args, defaults=selector_defaults),
                                 run=run_config(args), **sections)


def add_selector_flags(parser: argparse.ArgumentParser, *, skip: Iterable[str] = ()) -> None:
    """``--spec`` and a flag per field of the experiment's selector spec (``skip``: flat names a command does not
    take)."""
    group = parser.add_argument_group(SELECTOR_GROUP)
    group.add_argument("--spec", type=given, metavar="FILE.yaml", help="A selector spec to start from (the flags "
                                                                       "below change it).")
    add_flags(group, spec_type(), skip=skip)


def add_run_flags(parser: argparse.ArgumentParser, *, skip: Iterable[str] = ()) -> None:
    """``--run-config`` and a flag per field of ``RunConfig`` (``skip``: flat names a command sets itself)."""
    group = parser.add_argument_group(RUN_GROUP)
    group.add_argument("--run-config", type=given, metavar="FILE.yaml", help="A run config to start from (the flags "
                                                                             "below change it).")
    add_flags(group, RunConfig, skip=skip)


def optimization_section(args: argparse.Namespace) -> OptimizeSettings:
    """The optimization the optimize flags describe."""
    return OptimizeSettings.build(**given_fields(args, OptimizeSettings))


def selector_spec(args: argparse.Namespace, *, defaults: dict[str, Any] | None = None, **fixed: Any) -> SelectorSpec:
    """The spec the selector flags describe (on ``--spec``'s, if given); ``defaults``: a command's own defaults
    of flat fields (a spec file's fields stand before them), ``fixed``: flat fields a command sets."""
    kind = spec_type()
    base = kind.load_yaml(args.spec) if getattr(args, "spec", None) else kind()
    base_fields = base.model_dump(exclude_defaults=True)
    own = {name: value for name, value in (defaults or {}).items() if name not in base_fields}
    fields = {**own, **given_fields(args, kind), **fixed}
    return kind.build(**nest(kind, fields, base=base_fields))


def run_config(args: argparse.Namespace, **fixed: Any) -> RunConfig:
    """The run config the run flags describe (on ``--run-config``'s, if given); ``fixed``: fields a command sets
    itself. ``--serve N`` without ``--threads`` runs N cases at a time."""
    base = RunConfig.load_yaml(args.run_config) if getattr(args, "run_config", None) else RunConfig()
    fields = {**given_fields(args, RunConfig), **fixed}
    if "threads" not in fields and fields.get("serve") is not None:
        fields["threads"] = fields["serve"]
    return RunConfig.build(**{**base.model_dump(exclude_defaults=True), **fields})
