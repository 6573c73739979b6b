"""What a selector does, as one value: ``SelectorSpec``.

    spec = SelectorSpec(tools="finance", strategy="gate+native", gate=GateSpec(threshold=0.3),
                        retrieval=RetrievalSpec(k=5))
    selector = MultiToolSelector.from_spec(spec, model="local:qwen2.5-coder-0.5b")
    spec.describe()         # {"strategy": "gate+native", "program": "zero-shot", "retrieve": 5, ...}
    spec.dump_yaml("finance-gated.yaml"); SelectorSpec.load_yaml("finance-gated.yaml") == spec

The same value is what ``toolsel eval`` flags build (or ``--spec FILE.yaml`` holds), what ``evaluate``,
``optimize``, the stuck benchmark and the loop evaluation take as ``selector=``, what a compiled selector's
manifest stores, and what run names, MLflow params and reports are made from (``describe``). How a run is carried
out (threads, Ray, cache, MLflow, the run folder) is the other value, ``tool_selection.run_config.RunConfig``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tool_selection.defaults import AUTO_RELEVANCE, DEFAULT_RELEVANCE, DEFAULT_STRATEGY, NO_CASCADE, NO_RELEVANCE
from tool_selection.errors import ToolSelectionError
from tool_selection.flags import flat_fields, nest
from tool_selection.joined_numbers import ListedNumbers
from tool_selection.optional_arguments import OptionalArguments
from tool_selection.packed_values import PackedValues
from tool_selection.rates import Rates
from tool_selection.respective_values import Respectively
from tool_selection.strategies.registry import GATE_PREFIX
from tool_selection.strict_files import read_yaml

__all__ = ["GateSpec", "RetrievalSpec", "SelectorSpec", "SpecError", "YamlValue", "check_strategy", "selection_params"]


class SpecError(ToolSelectionError, ValueError):
    """A selector spec or run config that does not validate; the message names each bad field."""


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class YamlValue(BaseModel):
    """A settings value written to and read from YAML: its fields, or a mapping under ``yaml_section:``."""

    yaml_section: ClassVar[str] = "settings"

    def to_yaml(self) -> str:
        import yaml  # lazy: PyYAML only where a file is written

        return yaml.safe_dump(self.model_dump(mode="json", exclude_defaults=True), sort_keys=False)

    def dump_yaml(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.to_yaml(), encoding="utf-8")
        return path

    @classmethod
    def load_yaml(cls, path: str | Path) -> Self:
        """The value a YAML file holds (its fields, or a mapping under ``yaml_section:``); every bad field named."""
        return _validated(cls, _read_yaml(path, section=cls.yaml_section), where=str(path))


class GateSpec(_Frozen):
    """The relevance gate of a ``gate+NAME`` strategy (its model also serves the relevance signal ``gate``)."""

    model: str | None = Field(default=None, description="Model spec for the relevance gate of a gate+NAME strategy "
                                                        "(default: the selector's model).")
    threshold: float | None = Field(
        default=None, description="Relevance score below which the gate answers with no call (default: 0, or a "
                                  "compiled selector's own; choose it on dev with 'toolsel bench gate' from a run "
                                  "with --gate-threshold=-inf, the gate open).",
        json_schema_extra={"cli_type": "threshold", "metavar": "T"})

    @field_validator("threshold")
    @classmethod
    def _a_number(cls, value: float | None) -> float | None:
        if value is not None and math.isnan(value):
            raise ValueError("gate_threshold (--gate-threshold) is NaN; give a number, or -inf or inf")
        return value


class RetrievalSpec(_Frozen):
    """Retrieval in front of the selection: only the ``k`` tools ``retriever`` ranks highest are shown; with
    ``rerank=N`` the retriever gives N and the selection's model orders them before the ``k`` best are kept."""

    k: int = Field(ge=1, description="Show the selector only the K tools a retriever ranks highest for each "
                                     "request (K below the size of the largest catalog in the suite).",
                   json_schema_extra={"flat": "retrieve", "metavar": "K"})
    retriever: str = Field(default="hybrid", description="Retriever for --retrieve: a registered one (bm25, dense, "
                                                         "hybrid; dense-hnsw / hybrid-hnsw with an approximate index; "
                                                         "dense-multi / hybrid-multi, each example request a vector "
                                                         "of its own, ...; needs the retrieval extra).")
    rerank: int | None = Field(default=None, ge=1, description="With --retrieve K: the model re-ranks the "
                               "retriever's top N (N > K) by whether each tool does exactly what is asked, and the "
                               "selector sees the K best (one short prompt per candidate).",
                               json_schema_extra={"metavar": "N"})
    groups: int | None = Field(default=None, ge=1, description="With --retrieve K: divide and conquer: the K "
                               "candidates in groups of G by rank, a decision per group, then one among the tools "
                               "the groups chose (one model call per group, and one more).",
                               json_schema_extra={"metavar": "G"})
    examples: str | None = Field(default=None, description="With --retrieve K: a JSON file of example requests per "
                                 "tool ('toolsel suites SUITE --examples FILE' writes one), added to each tool's "
                                 "document in the index, so that a tool is found by requests like those it answered.",
                                 json_schema_extra={"flat": "retrieve_examples", "metavar": "FILE"})
    catalogs: int | None = Field(default=None, ge=1, description="With --retrieve K: show only the tools of the N "
                                 "catalogs (each tool's category: a tool set, an MCP server) whose best tool the "
                                 "retriever ranks highest, up to K of them: the catalog first, then the tool, so that "
                                 "look-alikes from other catalogs are not shown.",
                                 json_schema_extra={"flat": "retrieve_catalogs", "metavar": "N"})
    catalog_margin: float | None = Field(
        default=None, gt=0, description="With --retrieve-catalogs N and a fusion by score (convex, convex-catalog): "
        "route only where the Nth catalog's best tool scores at least M above the next catalog's; else show the "
        "retriever's top K from every catalog (default: always route).",
        json_schema_extra={"flat": "retrieve_catalog_margin", "metavar": "M"})
    catalog_others: int | None = Field(
        default=None, ge=1, description="With --retrieve-catalogs: N of the K shown are the best tools of the other "
        "catalogs, the rest from the chosen ones, so that a request routed to the wrong catalog still sees the "
        "retriever's best (default: none).", json_schema_extra={"flat": "retrieve_catalog_others", "metavar": "N"})
    show_catalogs: bool | None = Field(default=None, description="With --retrieve K: each shown tool's description "
                                       "starts with its catalog ([ecommerce] ...), so that the model sees which "
                                       "catalog each look-alike comes from (default: off; unset, runs name and "
                                       "record nothing for it).", json_schema_extra={"flat": "retrieve_show_catalogs"})
    fusion: Literal["rrf", "convex", "convex-catalog"] | None = Field(
        default=None, description="With --retrieve K and a hybrid retriever: how its rankings are fused (default: rrf, "
        "reciprocal rank; convex, every tool's scores min-max normalised and weighted 0.3 lexical, 0.7 dense; "
        "convex-catalog, convex with each tool raised by 0.2 times its catalog's two best scores; unset, runs name "
        "and record nothing for it).", json_schema_extra={"flat": "retrieve_fusion"})
    query: Literal["intent", "request+intent"] | None = Field(
        default=None, description="With --retrieve K: what the retriever reads (default: the request): intent, the "
        "actions the selection's model reads in the request (one short model call per request; each action ranked, "
        "the rankings fused); request+intent, both.",
        json_schema_extra={"flat": "retrieve_query"})

    @model_validator(mode="before")
    @classmethod
    def _depth_given(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("k") is None:
            what = ("rerank (--rerank) orders" if data.get("rerank") else "groups (--groups) divide"
                    if data.get("groups") else "examples (--retrieve-examples) index"
                    if data.get("examples") else "catalogs (--retrieve-catalogs) narrow"
                    if data.get("catalogs") else "the catalog margin (--retrieve-catalog-margin) routes"
                    if data.get("catalog_margin") else "the other catalogs' share (--retrieve-catalog-others) mixes"
                    if data.get("catalog_others") else "the query (--retrieve-query) feeds"
                    if data.get("query") else "catalogs shown (--retrieve-show-catalogs) label"
                    if data.get("show_catalogs") else "the fusion (--retrieve-fusion) merges"
                    if data.get("fusion") else "--retriever is")
            raise ValueError(f"{what} the retriever's candidates: give retrieve (--retrieve) too.")
        return data

    @model_validator(mode="after")
    def _settings_agree(self) -> RetrievalSpec:
        if self.rerank is not None and self.rerank <= self.k:
            raise ValueError(f"rerank={self.rerank} must exceed retrieve={self.k}: the model re-ranks the "
                             f"retriever's top {self.rerank} and keeps {self.k}.")
        if self.fusion is not None:
            self._check_fusion()
        if self.catalog_margin is not None:
            self._check_catalog_margin()
        if self.catalog_others is not None and (self.catalogs is None or self.catalog_others >= self.k):
            raise ValueError(f"catalog_others={self.catalog_others} (--retrieve-catalog-others) keeps that many of the "
                             f"{self.k} shown tools for other catalogs than the chosen: give catalogs "
                             "(--retrieve-catalogs) too, and fewer than retrieve (--retrieve).")
        if self.groups is not None and self.groups >= self.k:
            raise ValueError(f"groups={self.groups} must be below retrieve={self.k}: the retriever's top {self.k} are "
                             f"split into groups of {self.groups}.")
        return self

    def _check_catalog_margin(self) -> None:
        from tool_selection.retrieval import SCORE_FUSIONS

        if self.catalogs is None:
            raise ValueError(f"catalog_margin={self.catalog_margin:g} (--retrieve-catalog-margin) decides when to route "
                             "to the best catalogs: give catalogs (--retrieve-catalogs) too.")
        if self.fusion not in SCORE_FUSIONS:
            raise ValueError(f"catalog_margin={self.catalog_margin:g} (--retrieve-catalog-margin) compares scores "
                             "fused by score, on one scale for every request: give fusion (--retrieve-fusion) convex "
                             "or convex-catalog.")

    def _check_fusion(self) -> None:
        from tool_selection.retrieval import RETRIEVERS, HybridRetriever

        kind = RETRIEVERS.get(self.retriever) if self.retriever in RETRIEVERS else None
        if kind is not None and not issubclass(kind, HybridRetriever):
            raise ValueError(f"fusion={self.fusion} (--retrieve-fusion) merges a hybrid retriever's rankings, and "
                             f"{self.retriever} is not one: use hybrid or hybrid-multi (--retriever).")
        if kind is not None and self.fusion != "rrf" and not kind.scores_every_tool:
            raise ValueError(f"fusion={self.fusion} (--retrieve-fusion) reads every tool's score, and {self.retriever} "
                             "searches an approximate index: use fusion=rrf, or hybrid / hybrid-multi.")


class SelectorSpec(_Frozen, YamlValue):
    """Everything that decides what a selector does (see the module docstring); frozen, so it can be shared,
    hashed into run names and compared."""

    yaml_section: ClassVar[str] = "selector"

    tools: str | None = Field(default=None, description="A tool set name (load_tool_set); None: the tools come "
                                                        "with each request (a suite's cases carry their own).",
                              json_schema_extra={"record": "never", "cli": False})
    program: str | None = Field(default=None, description="A compiled selector directory (or DSPy state JSON) to "
                                                          "evaluate.", json_schema_extra={"record": "always"})
    allow_tool_changes: bool = Field(default=False, description="Evaluate a compiled selector even if its tools "
                                                                "changed since it was compiled.",
                                     json_schema_extra={"record": "never"})
    strategy: str | None = Field(
        default=None, description="How the selector asks the model: auto (native-strict-cover with a local model, "
                                  "native with any other), native, native-cot, native-strict, native-strict-cover, "
                                  "json-cot, json, chat-cot, text:fenced, text:call, text:tags; gate+NAME puts the "
                                  "relevance gate first (see 'toolsel strategies').",
        json_schema_extra={"record": "always", "default_text": "the compiled program's own, else auto"})
    gate: GateSpec = Field(default_factory=GateSpec, json_schema_extra={"record": "gated"})
    retrieval: RetrievalSpec | None = Field(default=None, json_schema_extra={"prefix": ""})
    undeclared_arguments: Literal["refuse", "drop"] = Field(
        default="refuse", description="An argument a call's tool does not declare: refuse (the call is invalid, "
                                      "as the tool would refuse it) or drop it and check the call again (counted "
                                      "per case as undeclared_dropped).")
    rates: Rates = Field(
        default="decimal", description="A rate argument (a number parameter its tool names or describes as a rate, "
                                       "return, yield or growth, not as a percent) holding a percentage the request "
                                       "writes (5%): decimal writes it as 0.05 (counted per case as "
                                       "rates_as_decimals), as-written keeps the model's 5.")
    optional_arguments: OptionalArguments = Field(
        default="written", description="An optional argument (one its tool does not require) holding a string or "
        "number the request does not write: written drops it, so the tool's default applies (counted per case as "
        "optional_dropped); any keeps the model's value.")
    respectively: Respectively = Field(
        default="paired", description="A request that pairs values \"respectively\" (\"Taylor Swift and Maroon 5 "
        "for 20 and 15 minutes respectively\") where every call of a tool holds all of them in one argument: paired "
        "gives each call its own (counted per case as respective_values); as-written keeps the model's values.")
    listed_numbers: ListedNumbers = Field(
        default="apart", description="An integer argument holding numbers the request lists, joined (\"the "
        "factorial of 5,10 and 15\" answered with 510, a grammar's single integer where the model began a list): "
        "apart makes the call once per listed number (the calls taken apart counted per case as numbers_apart); "
        "as-written keeps the model's value.")
    packed_values: PackedValues = Field(
        default="apart", description="A string argument packing values the request lists, each written on its "
        "own (location=\"New York, Los Angeles, London, Tokyo\" for four cities): apart makes the call once per "
        "value (the calls taken apart counted per case as values_apart); as-written keeps the model's value.")
    constrain: bool = Field(default=True, description="Constrain decoding to the tools' grammar where the strategy "
                                                      "can.")
    max_calls: int | None = Field(
        default=None, ge=1, le=32, description="Most calls one decision keeps: later ones are dropped (counted per "
        "case as calls_dropped), and a local model's strict decoding opens none past it (default: no limit but the "
        "strategy's own).", json_schema_extra={"metavar": "N"})
    demos: int | None = Field(
        default=None, ge=1, le=16, description="Show each request the K solved requests most similar to it (TF-IDF "
        "cosine over their words), each with its expected calls, as demonstrations: an evaluation draws them from its "
        "suite's train split, never the request itself (default: none).", json_schema_extra={"metavar": "K"})
    relevance: str = Field(
        default=DEFAULT_RELEVANCE, description="A relevance model: a decision it judges irrelevant (no listed tool "
        "does what is asked) keeps no call. 'auto': a compiled selector's own, else the one shipped for the model, if "
        "any (the embedded models have one); 'invariant': the one shipped for the model whose probability stays put "
        "when unrelated tools are listed beside (it catches fewer irrelevant requests on BFCL); 'none'; or a file "
        "from 'toolsel bench relevance --save'.",
        json_schema_extra={"metavar": "auto|invariant|none|MODEL_JSON"})
    relevance_threshold: float | None = Field(
        default=None, ge=0.0, le=1.0, description="With a relevance model: the probability below which a call is "
        "dropped, in place of the one the model was given on dev (lower keeps more calls and refuses fewer "
        "requests; the relevance pages show the trade-off).", json_schema_extra={"metavar": "P"})
    relevance_signals: tuple[str, ...] | None = Field(
        default=None, description="Relevance signals to record per case (comma-separated, or 'cheap' for all but "
        "'gate' and 'agreement', which cost model calls): without --relevance they are only recorded, to fit a "
        "relevance model on train and dev runs.",
        json_schema_extra={"cli_type": "relevance_signals", "metavar": "NAMES", "record": "never"})
    cascade: str = Field(
        default=NO_CASCADE, description="Hand the decisions a router judges likely wrong to a larger model, which "
        "decides them instead: 'auto' (the router shipped for the model, which names the larger one: the embedded "
        "0.5B model has one, to the 1.5B), a router file, or 'none' (default).",
        json_schema_extra={"metavar": "auto|none|ROUTER_JSON"})

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, value: str | None) -> str | None:
        return None if value is None else check_strategy(value)

    @field_validator("program", "relevance", "cascade", mode="before")
    @classmethod
    def _path_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, Path) else value

    @model_validator(mode="after")
    def _threshold_of_a_model(self) -> SelectorSpec:
        if self.relevance_threshold is not None and self.relevance == NO_RELEVANCE:
            raise ValueError("relevance_threshold (--relevance-threshold) sets a relevance model's threshold: not "
                             "with relevance 'none'.")
        return self

    @classmethod
    def build(cls, **fields: Any) -> SelectorSpec:
        """A spec from fields, with every bad one named in one ``SpecError``."""
        return _validated(cls, fields)

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> SelectorSpec:
        """The spec a finished run's params describe (what ``selection_params`` recorded). A run that names no
        strategy ran ``json-cot`` (runs made before strategies were named); a relevance stage is recorded as a
        description, so a run that had one comes back with ``relevance="auto"``, one that had none with ``none``."""
        strategy = params.get("strategy") or "json-cot"
        recorded = {name: params[name] for name, field in flat_fields(cls).items()
                    if name in params and name not in ("program", "strategy", "relevance")
                    and field.record != "never"
                    and (field.record != "gated" or str(strategy).startswith(GATE_PREFIX))}
        program = params.get("program")
        return _validated(cls, {**nest(cls, recorded), "strategy": strategy,
                                "program": None if program in (None, "", "zero-shot") else program,
                                "relevance": AUTO_RELEVANCE if params.get("relevance") else NO_RELEVANCE})

    # ------------------------------------------------------------- views
    @property
    def gated(self) -> bool:
        return (self.strategy or "").startswith(GATE_PREFIX)

    @property
    def strategy_or_default(self) -> str:
        """The strategy named, else ``DEFAULT_STRATEGY``: what a selector built afresh from this spec uses."""
        return self.strategy or DEFAULT_STRATEGY

    @property
    def base_strategy(self) -> str | None:
        """The strategy without the gate (what a gated run's selection rows were made with)."""
        return None if self.strategy is None else self.strategy.removeprefix(GATE_PREFIX)

    def describe(self) -> dict[str, Any]:
        """The spec as run names, MLflow params and reports record it (``selection_params``)."""
        return selection_params(self, relevance=None if self.relevance == NO_RELEVANCE else self.relevance)


def selection_params(spec: SelectorSpec, *, relevance: str | None, gate_model: str | None = None,
                     program: str | None = None) -> dict[str, Any]:
    """What a run's params say about its selector, from ``spec`` (as declared, or as built: ``relevance`` is the
    description of the relevance stage that runs, ``gate_model`` the gate's model name, ``program`` the program's
    label): the strategy and the program always, the gate's fields with a ``gate+`` strategy, a section's fields
    where it is set, and every other field that departs from its default (unless it says ``record: never``)."""
    params: dict[str, Any] = {"program": program or spec.program or "zero-shot",
                              "strategy": spec.strategy_or_default}
    for name, field in flat_fields(type(spec)).items():
        rule, value = field.record, field.value_in(spec)
        if name in params or name == "relevance" or rule == "never":
            continue
        if rule == "gated":
            if spec.gated:
                params[name] = (gate_model or value) if name == "gate_model" else value
        elif field.section is not None:
            if getattr(spec, field.path[0]) is not None and value is not None:
                params[name] = value
        elif rule == "always" or value != field.info.get_default(call_default_factory=True):
            params[name] = list(value) if isinstance(value, tuple) else value
    if relevance is not None:
        params["relevance"] = relevance
    return params


def check_strategy(name: str) -> str:
    """``name`` (``NAME`` or ``gate+NAME``) stripped, or ``UnknownStrategyError`` with the known names and a close
    match: the one check of a strategy's name, for a spec's field and a selector built from a bare string."""
    from tool_selection.strategies.registry import STRATEGIES, UnknownStrategyError

    if not isinstance(name, str) or not name.strip():
        raise UnknownStrategyError("a strategy is named by a non-empty string ('toolsel strategies' lists them)")
    STRATEGIES.check_name(name.strip().removeprefix(GATE_PREFIX))  # before DSPy loads, where the names are declared
    return name.strip()


def _validated(cls: type[BaseModel], fields: dict[str, Any], where: str = "") -> Any:
    from tool_selection.validation import validation_problems

    try:
        return cls.model_validate(fields)
    except ValidationError as error:
        raise SpecError(f"{where}: {validation_problems(error)}" if where else validation_problems(error)) from None


def _read_yaml(path: str | Path, *, section: str) -> dict[str, Any]:
    """The fields of a spec or run config file (``strict_files.read_yaml``: a refusal is a ``FileFormatError``)."""
    path = Path(path)
    what = {"selector": "selector spec"}.get(section, f"{section} config")
    data = read_yaml(path, what=what, fix=f"Write the {section} fields as a plain YAML mapping ('toolsel eval "
                                          "--help' lists them).") or {}
    if isinstance(data, dict) and isinstance(data.get(section), dict):
        data = data[section]
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping of {section} fields, got {type(data).__name__}.")
    return data
