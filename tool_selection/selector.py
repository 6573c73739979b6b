"""``MultiToolSelector``: a DSPy program that decides which tools a request needs.

One program serves any tool catalog: the available tools are an input, so a compiled selector's instructions and
demonstrations carry over between tool sets. How the model is asked and its answer read is the selector's
*strategy* (``tool_selection.strategies``): ``native`` (the model's own tool-calling format), ``native-cot``,
``native-strict`` (each call decoded under the tools' grammar), ``native-strict-cover`` (and more calls while the
request holds values no call uses), ``auto`` (the default: ``native-strict-cover`` with a local model, ``native``
with any other), ``json-cot`` (ChainOfThought over
JSON whose response schema admits only the listed tools), ``text:*`` protocols, ``json`` and ``chat-cot``;
``gate+NAME`` asks a relevance question first. The selector
carries its strategy's adapter, so calling it in Python with only an LM configured behaves as ``toolsel eval``
does. Every decision is checked against the registry; unknown tools and invalid arguments are recorded on the
``MultiToolDecision``, never raised, and an unreadable answer becomes a decision with ``parse_error`` set.
"""

from __future__ import annotations

import contextlib
import functools
import time
from pathlib import Path
from typing import Any

import dspy
from dspy.utils.usage_tracker import UsageTracker

from tool_selection.cascade import Cascade
from tool_selection.decision import MultiToolDecision
from tool_selection.defaults import AUTO_RELEVANCE, NO_CASCADE, NO_RELEVANCE
from tool_selection.demo_pool import DemoPool, refuse_unusable
from tool_selection.descriptions import DescriptionOverrides
from tool_selection.divide import decide_in_groups
from tool_selection.errors import ToolSelectionError
from tool_selection.joined_numbers import numbers_apart
from tool_selection.optional_arguments import unwritten_optional
from tool_selection.packed_values import values_apart
from tool_selection.rates import decimal_rates
from tool_selection.registry import ToolRegistry
from tool_selection.relevance import RelevanceModel, RelevanceStage, resolve_relevance
from tool_selection.relevance.model import configured_model
from tool_selection.respective_values import respective_values
from tool_selection.spec import GateSpec, RetrievalSpec, SelectorSpec, check_strategy
from tool_selection.strategies import (
    DEFAULT_STRATEGY,
    GATE_PREFIX,
    STRUCTURED_STRATEGY,
    UNDECLARED_ARGUMENTS,
    check_decision,
    drop_undeclared,
    get_strategy,
)
from tool_selection.strategies.base import ToolChoice, inner_predict, with_demos
from tool_selection.strategies.gate import IsRelevant, run_gate
from tool_selection.strategies.json_strategies import (
    DEMO_OMITS,
    REASONING,
    SelectTools,
    ToolSelectionAdapter,
    compact_demo,
    render_tools,
    response_schema,
)
from tool_selection.stuck import usage_totals
from tool_selection.stuck.learned import resolve_router
from tool_selection.toolset import ToolSet

__all__ = ["DEMO_OMITS", "MultiToolSelector", "REASONING", "SelectTools", "ToolSelectionAdapter", "check_decision",
           "apply_spec", "compact_demo", "read_values", "render_tools", "response_schema", "spec_of"]

Tools = ToolRegistry | ToolSet


def _as_registry(tools: Tools) -> ToolRegistry:
    if isinstance(tools, ToolRegistry):
        return tools
    if isinstance(tools, ToolSet):
        return tools.registry()
    raise TypeError(f"tools must be a ToolRegistry or ToolSet, got {type(tools).__name__}")


class _LoadDescriptor:
    """``MultiToolSelector.load(DIR)`` builds a selector from a compiled directory; on an instance, ``load(path)``
    loads a bare state file, checked first (``compiled.load_program_state``: nothing but a selector's state)."""

    def __get__(self, instance, owner):
        if instance is None:
            return owner.from_directory
        from tool_selection.compiled import load_program_state

        return functools.partial(load_program_state, instance)


def _relevance_stage(relevance: RelevanceStage | RelevanceModel | str | Path | None) -> RelevanceStage | None:
    """The stage for a constructor's ``relevance``: a setting (``auto``, ``none``, a file) resolves as a spec's does,
    with the configured LM's model for ``auto``."""
    if relevance is None or isinstance(relevance, RelevanceStage):
        return relevance
    model = resolve_relevance(relevance, None)
    return None if model is None else RelevanceStage(model)


def _relevance_setting(relevance: RelevanceStage | RelevanceModel | str | Path | None) -> str:
    """What a spec says of a constructor's ``relevance``: the setting given, else ``auto`` for a stage or model."""
    if relevance is None:
        return NO_RELEVANCE
    return str(relevance) if isinstance(relevance, str | Path) else AUTO_RELEVANCE


def check_undeclared_arguments(value: str) -> str:
    if value not in UNDECLARED_ARGUMENTS:
        raise ToolSelectionError(f"undeclared_arguments must be one of {', '.join(UNDECLARED_ARGUMENTS)}, "
                                 f"got {value!r}.")
    return value


def read_values(spec: SelectorSpec, decision: MultiToolDecision, registry: ToolRegistry,
                request: str) -> tuple[MultiToolDecision, dict[str, float]]:
    """``decision``'s values read as ``spec`` says: listed numbers a call joined taken apart, values paired
    "respectively" given one per call, listed values a string argument packs made one call each, rates as decimals,
    optional arguments the request does not write dropped; with the count of each rewrite the spec asks for
    (``numbers_apart``, ``respective_values``, ``values_apart``, ``rates_as_decimals``, ``optional_dropped``). A
    live selection and a rescored run read alike."""
    counts: dict[str, float] = {}
    if spec.listed_numbers == "apart":
        decision, made = numbers_apart(decision, registry, request)
        counts["numbers_apart"] = float(made)
    if spec.respectively == "paired":
        decision, paired = respective_values(decision, registry, request)
        counts["respective_values"] = float(paired)
    if spec.packed_values == "apart":
        decision, packed = values_apart(decision, registry, request)
        counts["values_apart"] = float(packed)
    if spec.rates == "decimal":
        decision, rewritten = decimal_rates(decision, registry, request)
        counts["rates_as_decimals"] = float(rewritten)
    if spec.optional_arguments == "written":
        decision, dropped = unwritten_optional(decision, registry, request)
        counts["optional_dropped"] = float(dropped)
    return decision, counts


class MultiToolSelector(dspy.Module):
    """Chooses zero or more tool calls for a request from the available tools.

    ``tools`` given here are the default catalog; ``forward(request, tools=...)`` can name another one per call
    (as evaluation suites with inline tool definitions do). ``strategy`` names how the model is asked (see the
    module docstring; ``tool_selection.strategies.strategy_names()``). ``constrain=True`` (the default) lets
    strategies constrain decoding where they can (the JSON strategies' response schema). With ``gate+NAME``,
    ``gate_threshold`` is the relevance score below which the selector answers with no call, and ``gate_lm`` an
    optional other model for the gate. ``undeclared_arguments="drop"`` removes arguments a call's tool does not
    declare (small models copy schema keys such as ``"type": "object"`` into their calls) and records how many in
    the row (``undeclared_dropped``); the default, ``"refuse"``, leaves such a call invalid, as the tool would.
    ``optional_arguments="written"`` (the default) removes optional arguments holding a string or number the
    request does not write, so the tool's default applies (``tool_selection.optional_arguments``), and records how
    many (``optional_dropped``); ``"any"`` keeps them. ``respectively="paired"`` (the default) gives each call its own
    part of a value the request pairs "respectively" where the model gave every call all of them
    (``tool_selection.respective_values``). ``listed_numbers="apart"`` (the default) makes a call that holds
    numbers the request lists, joined (510 for "5,10 and 15"), once per number (``tool_selection.joined_numbers``).
    ``packed_values="apart"`` (the default) makes a call whose string argument packs values the request lists
    ("Berlin, Madrid" for "Berlin and Madrid") once per value (``tool_selection.packed_values``).
    ``retrieval=RetrievalSpec(k=K)`` shows the model only the K tools its ``retriever`` ranks highest; with
    ``rerank=N`` the retriever gives N and the selection's model orders them by "does this function do exactly what
    the request asks?" (``tool_selection.retrieval.LLMReranker``) before the K best are kept; with ``catalogs=N``
    only the tools of the N catalogs (tool categories) whose best tool ranks highest are shown
    (``tool_selection.retrieval.catalog_first``; ``catalog_others`` of the K from the other catalogs); with
    ``show_catalogs``, each shown tool's description starts with its catalog
    (``tool_selection.retrieval.with_catalogs``); ``shown_tools(request)`` gives the shown tools without selecting.
    ``relevance``: a ``RelevanceStage``, a ``RelevanceModel``, or a setting as a spec's (``auto``, ``none``, a
    file).

    What it does is one value, ``spec`` (a ``SelectorSpec``); ``strategy_name``, ``gate_threshold``, ``retrieve``
    and the other settings read from it.
    """

    def __init__(self, tools: Tools | None = None, *, strategy: str = DEFAULT_STRATEGY, constrain: bool = True,
                 gate_threshold: float = 0.0, gate_lm: dspy.BaseLM | None = None,
                 retrieval: RetrievalSpec | None = None, undeclared_arguments: str = "refuse",
                 relevance: RelevanceStage | RelevanceModel | str | Path | None = None):
        super().__init__()
        strategy = check_strategy(strategy)
        gated = strategy.startswith(GATE_PREFIX)
        self.spec = SelectorSpec.model_construct(  # each field checked above or already a spec's
            strategy=strategy, constrain=constrain, retrieval=retrieval,
            gate=GateSpec(threshold=float(gate_threshold)) if gated else GateSpec(),
            undeclared_arguments=check_undeclared_arguments(undeclared_arguments),
            relevance=_relevance_setting(relevance))
        self.tools = None if tools is None else _as_registry(tools)
        self.strategy = get_strategy(strategy.removeprefix(GATE_PREFIX), constrain=constrain)
        self.select = self.strategy.build_predictor()
        self.gate = dspy.Predict(IsRelevant) if gated else None
        self.gate_lm = gate_lm
        self._retriever = None
        self._fitted_to: tuple[Any, ...] = ()  # (retriever, registry revision, examples file, tools) of the last fit
        self._retrieval_examples = None
        self._examples_checked: set[int] = set()  # hashes of the tool listings checked
        self.relevance = _relevance_stage(relevance)
        self.cascade: Cascade | None = None  # set from a spec's cascade (apply_spec)
        self._intents: Any = None  # the request's intents as retrieval queries (retrieval query), made on first use

    # the settings, read from the spec
    @property
    def strategy_name(self) -> str:
        return self.spec.strategy_or_default

    @property
    def constrain(self) -> bool:
        return self.spec.constrain

    @property
    def gate_threshold(self) -> float:
        return 0.0 if self.spec.gate.threshold is None else float(self.spec.gate.threshold)

    @property
    def retrieve(self) -> int | None:
        return self.spec.retrieval.k if self.spec.retrieval else None

    @property
    def retriever_name(self) -> str:
        return self.spec.retrieval.retriever if self.spec.retrieval else "hybrid"

    @property
    def rerank(self) -> int | None:
        return self.spec.retrieval.rerank if self.spec.retrieval else None

    @property
    def undeclared_arguments(self) -> str:
        return self.spec.undeclared_arguments

    @property
    def program_path(self) -> str | None:
        """The compiled program it was loaded from."""
        return self.spec.program

    def forward(self, request: str, tools: Tools | None = None, conversation: list[dict[str, Any]] | None = None,
                tool_choice: ToolChoice = "auto") -> dspy.Prediction:
        """The decision on ``request`` over ``tools``; ``conversation``: the turns so far (a tool-calling loop);
        ``tool_choice="required"``: the model must call (native strategies; the relevance stage still judges).
        With a cascade, a larger model decides where the router judges this decision likely wrong."""
        start = time.perf_counter()
        prediction = self._select(request, tools, conversation, tool_choice)
        if self.cascade is None:
            return prediction
        return self.cascade.after(prediction, request, tools, time.perf_counter() - start,
                                  conversation=conversation, tool_choice=tool_choice)

    def shown_tools(self, request: str, tools: Tools | None = None) -> list[str]:
        """The names of the tools a selection for ``request`` would be shown, best first, without selecting: the
        retrieval step alone (``retrieve``, routed, re-ranked or read through intents as the spec says; the last two
        ask the selection's model), or every tool's name without retrieval. ``tools``: as for ``forward``."""
        registry = self._described(tools)
        if self.retrieve is None:
            return registry.names()
        return self._shown_by_retrieval(registry, request, {})[1]

    def refit_retrieval(self) -> None:
        """Fit the retriever again before the next selection. The selector refits by itself when a tool is registered
        or unregistered, or another registry holds other tools; this is for tools whose documents changed in place
        (a description edited on its class), which neither shows."""
        self._fitted_to = ()

    def _select(self, request: str, tools: Tools | None, conversation: list[dict[str, Any]] | None,
                tool_choice: ToolChoice) -> dspy.Prediction:
        registry = self._described(tools)
        extras: dict[str, Any] = {}
        ranked = None
        if self.retrieve is not None:
            registry, ranked = self._shown_by_retrieval(registry, request, extras)
        if self.gate is not None and (refusal := self._gated(request, registry, extras)) is not None:
            return refusal
        limit = self.spec.max_calls
        if limit is not None and getattr(self.strategy, "more_calls", 0) >= limit:  # strict decoding stops there
            self.strategy.more_calls = limit - 1
        select = self.select
        if self.spec.demos is not None:  # this request's own demonstrations, on a copy of the predictor
            refuse_unusable(self.spec.demos, self.demo_pool, compiled_demos=0)
            shown = self.demo_pool.nearest(request, self.spec.demos)
            select = with_demos(self.select, [demo.example() for demo in shown])
            extras["demo_cases"] = [demo.case_id or demo.request for demo in shown]

        def decide(tools: ToolRegistry) -> dspy.Prediction:
            return self.strategy.decide(select, request, tools, conversation=conversation, tool_choice=tool_choice)

        with self._observed() as captured, dspy.context(adapter=self.strategy.adapter()):
            if self.spec.retrieval and self.spec.retrieval.groups:
                prediction, columns = decide_in_groups(decide, registry, ranked, self.spec.retrieval.groups)
                extras.update(columns)
            else:
                prediction = decide(registry)
        extras.update(getattr(prediction, "row_extras", None) or {})  # what the strategy recorded (split actions)
        if limit is not None and len(prediction.decision.tool_calls) > limit:
            extras["calls_dropped"] = float(len(prediction.decision.tool_calls) - limit)
            decision = prediction.decision.model_copy(update={"tool_calls": prediction.decision.tool_calls[:limit]})
            prediction.decision, prediction.tool_calls = decision, decision.tool_calls
        if self.undeclared_arguments == "drop":
            decision, dropped = drop_undeclared(prediction.decision, registry)
            prediction.decision, prediction.tool_calls = decision, decision.tool_calls
            extras["undeclared_dropped"] = float(dropped)
        if self.relevance is not None:
            decision, columns = self.relevance.judge(request, registry, prediction.decision, captured)
            extras.update(columns)
            if decision is not prediction.decision:
                prediction.decision, prediction.tool_calls = decision, decision.tool_calls
        self._read_values(prediction, registry, request, extras)
        if extras:
            prediction.row_extras = extras
        return prediction

    def _shown_by_retrieval(self, registry: ToolRegistry, request: str,
                            extras: dict[str, Any]) -> tuple[ToolRegistry, list[str]]:
        """The tools retrieval shows for ``request`` (with their catalogs where ``show_catalogs``) and their names,
        best first; what retrieval did goes into ``extras``."""
        start, asked = time.perf_counter(), self._intents.seconds if self._intents is not None else 0.0
        ranked = self._retrieved(registry, request, extras)
        shown = registry.subset(ranked, name=f"{registry.name}-top{self.retrieve}")
        if self.spec.retrieval.show_catalogs:
            from tool_selection.retrieval import with_catalogs

            shown = with_catalogs(shown)
        extras["retrieved"] = ranked
        if self._intents is not None:
            extras["retrieval_intents"] = list(self._intents(request))
            extras["intent_seconds"] = self._intents.seconds - asked
        if self._retrieval_examples is not None:  # which examples the index held, by content
            extras["retrieval_examples"] = self._retrieval_examples.fingerprint
        extras["retrieval_seconds"] = time.perf_counter() - start
        if self.rerank is not None:
            extras["rerank_seconds"] = extras["retrieval_seconds"]
        return shown, ranked

    def _read_values(self, prediction: dspy.Prediction, registry: ToolRegistry, request: str,
                     extras: dict[str, Any]) -> None:
        """The calls' values read as the spec says (``read_values``), in ``prediction``, with the counts in
        ``extras``."""
        decision, counts = read_values(self.spec, prediction.decision, registry, request)
        prediction.decision, prediction.tool_calls = decision, decision.tool_calls
        extras.update(counts)

    def _gated(self, request: str, registry: ToolRegistry, extras: dict[str, Any]) -> dspy.Prediction | None:
        """The gate's answer of no call when it judges that no listed tool fits, else None; its columns go into
        ``extras``."""
        start, tracker = time.perf_counter(), UsageTracker()
        with dspy.context(usage_tracker=tracker):  # the gate's cost is reported apart from the selection's
            verdict = run_gate(self.gate, request, registry, threshold=self.gate_threshold, lm=self.gate_lm)
        gate_in, gate_out = usage_totals(tracker)
        extras.update({"gate_score": verdict.score, "gate_passed": float(verdict.passed),
                       "gate_seconds": time.perf_counter() - start, "gate_input_tokens": float(gate_in),
                       "gate_output_tokens": float(gate_out)})
        if verdict.passed:
            return None
        decision = MultiToolDecision(reasoning=f"Relevance gate: no listed tool fits (score "
                                               f"{verdict.score:.2f} < {self.gate_threshold:g}).")
        return dspy.Prediction(decision=decision, reasoning=decision.reasoning, tool_calls=[], raw_response=None,
                               row_extras=extras)

    def _observed(self):
        if self.relevance is None:
            return contextlib.nullcontext()
        return self.relevance.observing(inner_predict(self.select).lm or dspy.settings.lm)

    def _retrieved(self, registry: ToolRegistry, request: str, extras: dict[str, Any]) -> list[str]:
        """The names of the ``retrieve`` tools most relevant to ``request``, best first (the index is built once per
        catalog); with ``catalogs``, only tools of the catalogs whose best tool ranks highest (where they lead the
        next by ``catalog_margin``, if set); with ``rerank``, the retriever's top ``rerank`` ordered by the
        selection's model, which keeps ``retrieve``; with a ``query`` other than the request, the retriever reads the
        actions the selection's model reads in the request. Whether it routed, and the lead, go into ``extras``."""
        from tool_selection.retrieval import LLMReranker, get_retriever, route_by_catalog

        if self._retriever is None:
            fusion = self.spec.retrieval.fusion
            self._retriever = get_retriever(self.retriever_name, **({} if fusion is None else {"fusion": fusion}))
        shown = self.rerank or self.retrieve
        catalogs = self.spec.retrieval.catalogs
        retriever = self._fitted_retriever(registry)
        if self.spec.retrieval.query is not None:
            from tool_selection.retrieval.intent import IntentRetriever, IntentRewriter

            if self._intents is None:
                self._intents = IntentRewriter(inner_predict(self.select).lm)
            retriever = IntentRetriever(retriever, self._intents, self.spec.retrieval.query)
        if catalogs is None:
            hits = retriever.retrieve(request, shown)
        else:
            hits, lead, routed = route_by_catalog(retriever, registry, request, catalogs, shown,
                                                  self.spec.retrieval.catalog_margin,
                                                  self.spec.retrieval.catalog_others or 0)
            extras["catalog_routed"] = float(routed)
            if lead != float("inf"):  # another catalog among the hits
                extras["catalog_lead"] = lead
        if self.rerank is not None:
            reranker = LLMReranker(inner_predict(self.select).lm, keep=self.retrieve)
            hits = reranker.rerank(request, registry, hits)
        return [hit.name for hit in hits]

    def _fitted_retriever(self, registry: ToolRegistry):
        """The retriever fitted to ``registry``: fitted again only when its tools differ from the last fit's, since a
        refit rebuilds and hashes every tool's document (about 0.9 s at 10,000 tools) before it finds the index
        unchanged. The same registry unchanged since (``ToolRegistry.revision``) is known at once; another registry
        of the same tool classes (a ``ToolSet`` passed with each call becomes a new registry each time) is compared
        tool by tool (milliseconds at 10,000 tools)."""
        retriever, revision, examples, tools = self._fitted_to or (None, None, None, None)
        if retriever is self._retriever and examples == self.spec.retrieval.examples:
            if revision is registry.revision:
                return self._retriever
            if registry.tools() == tools:  # classes compare by identity: the same documents
                self._fitted_to = (retriever, registry.revision, examples, tools)
                return self._retriever
        self._retriever.fit(registry, self._examples(registry))
        self._fitted_to = (self._retriever, registry.revision, self.spec.retrieval.examples, registry.tools())
        return self._retriever

    def _examples(self, registry: ToolRegistry) -> dict[str, tuple[str, ...]] | None:
        """The example requests the retriever indexes with each tool (``--retrieve-examples``), read once, and
        checked once per listing of tool names against the tool documents they were written from
        (``check_catalog``)."""
        path = self.spec.retrieval.examples if self.spec.retrieval else None
        if path is None:
            return None
        if self._retrieval_examples is None:
            from tool_selection.retrieval.examples import ToolExamples

            self._retrieval_examples = ToolExamples.load(path)
        listing = hash(tuple(registry.names()))
        if listing not in self._examples_checked:
            self._retrieval_examples.check_catalog(registry)
            self._examples_checked.add(listing)
        return self._retrieval_examples.requests

    def check_lm(self, lm: dspy.BaseLM | None = None) -> None:
        """Raise ``ToolSelectionError`` if ``lm`` (default: the configured one) cannot serve this strategy."""
        lm = lm or dspy.settings.lm
        if lm is None:
            raise ToolSelectionError("No language model: dspy.configure(lm=get_lm(...)) or pass lm=.")
        self.strategy.check_lm(lm)

    def pin_strategy(self, lm: dspy.BaseLM | None = None) -> str:
        """Check ``lm`` (default: the configured one) and replace a strategy chosen per model (``auto``) by the one
        it runs as with ``lm``, so that results and saved programs name what ran. Returns the strategy's name."""
        self.check_lm(lm)
        lm = lm or dspy.settings.lm
        resolved = self.strategy.resolved_name(lm)
        if hasattr(self.strategy, "tool_support"):  # chosen per model: say why
            self.strategy_reason = f"{self.strategy.name} runs as {resolved}: {self.strategy.tool_support(lm).how}"
        if resolved != self.strategy.name:
            strategy = get_strategy(resolved, constrain=self.constrain)
            if strategy.reasoning != self.strategy.reasoning or type(strategy.adapter()) is not type(self.strategy.adapter()):
                if inner_predict(self.select).demos:  # a compiled program's demos are in its strategy's format
                    raise ToolSelectionError(
                        f"{self.strategy.name} runs as {resolved} with this model, whose prompts differ from the "
                        "compiled program's demonstrations: compile it with this model, or name a strategy.")
                self.select = strategy.build_predictor()
            self.strategy = strategy
            pinned = f"{GATE_PREFIX}{resolved}" if self.gate is not None else resolved
            self.spec = self.spec.model_copy(update={"strategy": pinned})
        return self.strategy_name

    described: DescriptionOverrides | None = None  # descriptions shown in place of the tools' own
    strategy_reason: str | None = None  # why a strategy chosen per model (auto) runs as the one pinned
    demo_pool: DemoPool | None = None  # the solved requests spec.demos draws from
    load = _LoadDescriptor()

    def dump_state(self, json_mode: bool = True) -> dict[str, Any]:
        """DSPy's state, with demonstrations as the model sees them (see ``DEMO_OMITS``)."""
        state = super().dump_state(json_mode=json_mode)
        for predictor_state in state.values():
            if isinstance(predictor_state, dict) and "demos" in predictor_state:
                predictor_state["demos"] = [compact_demo(d) for d in predictor_state["demos"]]
        return state

    @classmethod
    def from_directory(cls, directory: str | Path, tools: Tools | None = None, *,
                       allow_tool_changes: bool = False) -> MultiToolSelector:
        """A compiled selector saved by ``toolsel optimize``; refuses if its tools changed (see ``compiled``). Its
        manifest's spec (``manifest.selector``; a manifest saved before specs names its tool set and strategy)
        says what it does."""
        from tool_selection.compiled import MANIFEST_FILE, load_compiled, read_manifest
        from tool_selection.toolset import load_tool_set

        directory = Path(directory)
        manifest = read_manifest(directory)
        try:  # the tool set and strategy the manifest names
            spec = manifest.selector_spec()
            if tools is None and spec.tools:
                tools = load_tool_set(spec.tools)
            selector = cls(tools, strategy=spec.strategy or STRUCTURED_STRATEGY, constrain=spec.constrain,
                           undeclared_arguments=spec.undeclared_arguments)
        except ToolSelectionError as error:
            raise ToolSelectionError(f"{directory / MANIFEST_FILE}: {error}") from None
        selector.manifest = load_compiled(selector, directory, selector.tools, allow_tool_changes=allow_tool_changes)
        gate = GateSpec(model=spec.gate.model, threshold=selector.gate_threshold if spec.gate.threshold is None
                        else spec.gate.threshold) if selector.gate is not None else spec.gate
        selector.spec = spec.model_copy(update={"strategy": selector.strategy_name, "program": str(directory),
                                                "gate": gate, "constrain": selector.constrain,
                                                "undeclared_arguments": selector.undeclared_arguments})
        return selector

    @classmethod
    def from_spec(cls, spec: SelectorSpec, *, model: str | None = None, gate_lm: dspy.BaseLM | None = None,
                  demo_pool: DemoPool | None = None, secondary_lm: dspy.BaseLM | None = None) -> MultiToolSelector:
        """The selector ``spec`` describes. ``model``: the model it will run with, which ``relevance="auto"``
        and ``cascade="auto"`` need now (each shipped relevance model and router belongs to one model; default:
        the configured LM's). ``gate_lm``: the gate's model, already built (default: built from
        ``spec.gate.model``, if any). ``demo_pool``: the solved requests ``spec.demos`` draws from (required with
        it). ``secondary_lm``: a cascade's larger model, already built (default: built from the router's)."""
        return selector_from_spec(cls, spec, model=model, gate_lm=gate_lm, demo_pool=demo_pool,
                                  secondary_lm=secondary_lm)

    def to_spec(self) -> SelectorSpec:
        """What this selector does, as a spec (its strategy as pinned; ``relevance`` is ``none`` where it runs
        without a relevance stage)."""
        return spec_of(self)

    def decide(self, request: str, tools: Tools | None = None) -> MultiToolDecision:
        """The ``MultiToolDecision`` for ``request`` (a convenience over ``__call__``)."""
        return self(request=request, tools=tools).decision

    def _described(self, tools: Tools | None) -> ToolRegistry:
        """The registry a selection reads: ``tools`` (default: the selector's), with the rewritten descriptions
        where it has them (``toolsel optimize --target descriptions``)."""
        registry = self._registry(tools)
        return registry if self.described is None else self.described.apply(registry)

    def _registry(self, tools: Tools | None) -> ToolRegistry:
        if tools is not None:
            return _as_registry(tools)
        if self.tools is None:
            raise ToolSelectionError(
                "MultiToolSelector has no tools: pass tools=... to the constructor or to the call "
                "(a ToolSet such as load_tool_set('finance'), or a ToolRegistry)."
            )
        return self.tools


# ------------------------------------------------------------------ a selector from a spec, and its spec
def selector_from_spec(cls: type[MultiToolSelector], spec: SelectorSpec, *, model: str | None,
                       gate_lm: dspy.BaseLM | None, demo_pool: DemoPool | None = None,
                       secondary_lm: dspy.BaseLM | None = None) -> MultiToolSelector:
    selector = load_program(cls, spec)
    if spec.tools is not None:
        from tool_selection.toolset import load_tool_set

        selector.tools = load_tool_set(spec.tools).registry()
    if gate_lm is None and spec.gate.model is not None:
        from tool_selection.lm import get_lm

        gate_lm = get_lm(spec.gate.model, temperature=0.0, max_tokens=2)
    apply_spec(selector, spec, model=model, gate_lm=gate_lm, demo_pool=demo_pool, secondary_lm=secondary_lm)
    return selector


def load_program(cls: type[MultiToolSelector], spec: SelectorSpec) -> MultiToolSelector:
    """A fresh selector with the spec's strategy, or a compiled one from ``spec.program`` (a program directory,
    whose manifest names its strategy, or DSPy state JSON saved from a selector with the spec's strategy)."""
    if spec.program is None:
        return cls(strategy=spec.strategy_or_default, constrain=spec.constrain)
    path = Path(spec.program)
    if path.is_dir():
        selector = cls.from_directory(path, allow_tool_changes=spec.allow_tool_changes)
        if spec.strategy is not None and spec.strategy != selector.strategy_name:
            raise ToolSelectionError(f"The compiled selector in {path} was built with strategy "
                                     f"{selector.strategy_name!r}, not {spec.strategy!r}; leave --strategy out or "
                                     "optimize a program for that strategy.")
        return selector
    from tool_selection.compiled import load_program_state

    selector = load_program_state(cls(strategy=spec.strategy_or_default, constrain=spec.constrain), path)
    selector.spec = selector.spec.model_copy(update={"program": spec.program})
    return selector


def apply_spec(selector: MultiToolSelector, spec: SelectorSpec, *, model: str | None,
               gate_lm: dspy.BaseLM | None, demo_pool: DemoPool | None = None,
               secondary_lm: dspy.BaseLM | None = None) -> None:
    """Set ``spec``'s relevance stage, gate, retrieval, argument handling, demonstrations (from ``demo_pool``,
    else the selector's own) and cascade (to ``secondary_lm``, default: built from the router's secondary) on
    ``selector`` (a compiled one keeps its own relevance model under ``relevance="auto"``), which then holds
    ``spec`` with what it keeps of its own (strategy, program, gate threshold, retrieval, constrained decoding).
    Options that apply to nothing are refused."""
    selector.demo_pool = demo_pool or selector.demo_pool
    refuse_unusable(spec.demos, selector.demo_pool, compiled_demos=len(inner_predict(selector.select).demos))
    _apply_relevance(selector, spec, model=model, gate_lm=gate_lm)
    _apply_cascade(selector, spec, model=model, gate_lm=gate_lm, secondary_lm=secondary_lm)
    gate_for_stage = selector.relevance is not None and "gate" in selector.relevance.signals
    if selector.gate is None and (spec.gate.threshold is not None or gate_lm is not None and not gate_for_stage):
        raise ToolSelectionError(f"--gate-model and --gate-threshold apply to a gated strategy (gate+NAME) or the "
                                 f"relevance signal 'gate', not {selector.strategy_name!r}.")
    gate = spec.gate
    if selector.gate is not None:
        selector.gate_lm = gate_lm or selector.gate_lm
        threshold = selector.gate_threshold if spec.gate.threshold is None else float(spec.gate.threshold)
        gate = GateSpec(model=spec.gate.model, threshold=threshold)
    held = selector.spec
    selector.spec = spec.model_copy(update={
        "strategy": held.strategy, "program": held.program if held.program is not None else spec.program,
        "gate": gate, "retrieval": spec.retrieval or held.retrieval, "constrain": held.constrain})


def _apply_relevance(selector: MultiToolSelector, spec: SelectorSpec, *, model: str | None,
                     gate_lm: dspy.BaseLM | None) -> None:
    own = selector.relevance.model if selector.relevance is not None else None
    relevance = resolve_relevance(spec.relevance, model, own=own)
    if spec.relevance == NO_RELEVANCE:  # also a compiled selector's own
        selector.relevance = None
    if spec.relevance_threshold is not None:
        if relevance is None:
            raise ToolSelectionError(f"--relevance-threshold sets a relevance model's threshold, and "
                                     f"{spec.relevance!r} finds none for {model or 'this model'}: give --relevance "
                                     "MODEL_JSON (toolsel bench relevance --save), or leave the threshold out.")
        relevance = relevance.with_threshold(spec.relevance_threshold, {"set_by": "relevance_threshold"})
    if relevance is not None or spec.relevance_signals:
        selector.relevance = RelevanceStage(relevance, signals=spec.relevance_signals,
                                            gate_lm=gate_lm if selector.gate is None else None)
        if "gate" in selector.relevance.signals and gate_lm is None:
            raise ToolSelectionError("The relevance signal 'gate' asks a gate model: give --gate-model.")


def _apply_cascade(selector: MultiToolSelector, spec: SelectorSpec, *, model: str | None,
                   gate_lm: dspy.BaseLM | None, secondary_lm: dspy.BaseLM | None) -> None:
    """The spec's cascade: the router for ``model`` (None: the configured LM's), the signals it reads added to the
    relevance stage, and the secondary model's selector, built from the same spec."""
    if spec.cascade == NO_CASCADE:
        selector.cascade = None
        return
    router = resolve_router(spec.cascade, model or configured_model())
    stage = selector.relevance
    router.check_stage(stage is not None and stage.model is not None)
    selector.relevance = RelevanceStage(stage.model if stage else None,
                                        signals=[*(stage.signals if stage else ()), *router.relevance_signals],
                                        gate_lm=stage.gate_lm if stage else None)
    if secondary_lm is None:
        from tool_selection.lm import get_lm, prepare_lm

        secondary_lm = get_lm(router.secondary, constrained=True)
        prepare_lm(secondary_lm)
    secondary = selector_from_spec(MultiToolSelector, spec.model_copy(update={"cascade": NO_CASCADE}),
                                   model=router.secondary, gate_lm=gate_lm, demo_pool=selector.demo_pool)
    secondary.pin_strategy(secondary_lm)
    selector.cascade = Cascade(router=router, decide=secondary, lm=secondary_lm)


def spec_of(selector: MultiToolSelector) -> SelectorSpec:
    """The spec ``selector`` holds; its ``relevance`` is ``none`` where no relevance stage was built."""
    if selector.relevance is None and selector.spec.relevance != NO_RELEVANCE:
        return selector.spec.model_copy(update={"relevance": NO_RELEVANCE})
    return selector.spec
