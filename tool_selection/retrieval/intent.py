"""The request reduced to what it asks for, as retrieval queries (Re-Invoke's query side).

A request names people, places, amounts and dates, and often says more than it asks; a tool's document names none
of that. Re-Invoke (Chen et al., 2024) has the model extract the request's intents before retrieval and ranks tools
by each intent. Here the model writes the actions a request asks for, each as a short phrase in the words a tool's
description would use (two fixed demonstrations, greedy); the retriever ranks the tools for each phrase, and with
``request+intent`` for the request too, and the rankings are fused by reciprocal rank, so that a request asking
for two things finds a tool for each.

    rewriter = IntentRewriter(get_lm("local:qwen2.5-coder-0.5b", constrained=True, max_tokens=MAX_TOKENS))
    rewriter("Convert 100 EUR to USD and tell me the weather in Oslo")
    # ('convert an amount between currencies', 'get the current weather for a city')
    IntentRetriever(get_retriever("hybrid"), rewriter, query="request+intent").fit(registry).retrieve(request, k=5)
"""

from __future__ import annotations

import re
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, Self

import dspy
from dspy.utils.exceptions import AdapterParseError

from tool_selection.registry import ToolRegistry
from tool_selection.retrieval._base import RetrievedTool, ToolRetriever, check_k
from tool_selection.retrieval._hybrid import reciprocal_rank_fusion

__all__ = ["INTENT_VERSION", "MAX_INTENTS", "MAX_TOKENS", "QUERIES", "IntentRetriever", "IntentRewriter",
           "RequestIntents", "parse_intents"]

INTENT_VERSION = 1  # bump when the instructions or demonstrations change: kept intents are then written again
MAX_INTENTS = 4  # a request asking for more is rare; a runaway list is cut here
REMEMBERED = 10_000  # requests whose intents a rewriter keeps by default (a long-running selector's memory bound)
MAX_TOKENS = 80
QUERIES = ("intent", "request+intent")
Query = Literal["intent", "request+intent"]
FUSION_DEPTH = 50  # each query's ranking read this deep before fusing


class RequestIntents(dspy.Signature):
    """List the actions the user's request asks an assistant to do, each as a short phrase naming the action and
    what it acts on, in the general words a tool's description would use, without the request's names, numbers or
    dates. Separate the actions with semicolons."""

    request: str = dspy.InputField()
    actions: str = dspy.OutputField(desc="one to four short phrases separated by semicolons")


_DEMOS = (
    dspy.Example(request="What's 250 euros in Japanese yen, and will it rain in Kyoto tomorrow?",
                 actions="convert an amount between currencies; get the weather forecast for a city"
                 ).with_inputs("request"),
    dspy.Example(request="Book me a table for four at Luigi's on Friday at 8pm.",
                 actions="reserve a table at a restaurant").with_inputs("request"),
)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[\w']+", text.lower()))


_DEMO_WORDS = [_words(text) for demo in _DEMOS for text in (demo.request, *demo.actions.split(";"))]


def _copied(phrase: str) -> bool:
    """Whether ``phrase`` repeats a demonstration (its words, three or more, all in one demonstration's text)."""
    words = _words(phrase)
    return len(words) >= 3 and any(words <= demo for demo in _DEMO_WORDS)


def parse_intents(text: str) -> tuple[str, ...]:
    """The distinct phrases of an answer (split on semicolons and line breaks, list marks dropped), without copies
    of the demonstrations (``_copied``), at most ``MAX_INTENTS``."""
    phrases: dict[str, str] = {}
    for part in re.split(r"[;\n]+", text or ""):
        phrase = " ".join(re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", part).split()).strip(" .")
        if phrase and not _copied(phrase):
            phrases.setdefault(phrase.lower(), phrase)
    return tuple(phrases.values())[:MAX_INTENTS]


class IntentRewriter:
    """The actions ``lm`` (default: the configured LM) reads in a request (``RequestIntents``), remembered per
    request (``known``: some already read), the ``remember`` most recently asked (None: every one, as a benchmark
    that writes them all needs); none where its answer does not parse (retrieval then reads the request alone).
    ``seconds``: the time spent asking."""

    def __init__(self, lm: dspy.BaseLM | None = None, *, known: Mapping[str, Sequence[str]] | None = None,
                 remember: int | None = REMEMBERED):
        if remember is not None and remember < 1:
            raise ValueError(f"remember must be a positive number of requests or None, got {remember!r}")
        self.lm, self.remember = lm, remember
        self.predict = dspy.Predict(RequestIntents)
        self.predict.demos = list(_DEMOS)
        self.seen: OrderedDict[str, tuple[str, ...]] = OrderedDict(
            (request, tuple(v)) for request, v in (known or {}).items())
        self.seconds = 0.0

    def __call__(self, request: str) -> tuple[str, ...]:
        if request in self.seen:
            self.seen.move_to_end(request)
            return self.seen[request]
        started = time.perf_counter()
        self.seen[request] = phrases = self._rewrite(request)
        self.seconds += time.perf_counter() - started
        while self.remember is not None and len(self.seen) > self.remember:
            self.seen.popitem(last=False)
        return phrases

    def _rewrite(self, request: str) -> tuple[str, ...]:
        try:
            with dspy.context(lm=self.lm or dspy.settings.lm, adapter=dspy.ChatAdapter()):
                answer = self.predict(request=request)
        except (AdapterParseError, ValueError) as error:
            print(f"  intent: none for {request[:40]!r} ({type(error).__name__})", file=sys.stderr)
            return ()
        return parse_intents(str(answer.actions or ""))


class IntentRetriever(ToolRetriever):
    """``retriever`` read through each request's intents (``intents``: request -> phrases, an ``IntentRewriter``):
    each query's ranking (the intents, and with ``request+intent`` the request too) fused by reciprocal rank. A
    request without intents: the request's ranking alone."""

    name = "intent"

    def __init__(self, retriever: ToolRetriever, intents: Callable[[str], Sequence[str]],
                 query: Query = "request+intent"):
        if query not in QUERIES:
            raise ValueError(f"query must be one of {', '.join(QUERIES)}, got {query!r}")
        self.retriever, self.intents, self.query = retriever, intents, query

    def fit(self, registry: ToolRegistry, examples: Mapping[str, Sequence[str]] | None = None) -> Self:
        self.retriever.fit(registry, examples)
        return self

    def retrieve(self, request: str, k: int = 5) -> list[RetrievedTool]:
        check_k(k)
        intents = self.intents(request)
        if not intents:
            return self.retriever.retrieve(request, k)
        queries = [*([request] if self.query == "request+intent" else []), *intents]
        depth = max(k, FUSION_DEPTH)
        return reciprocal_rank_fusion([self.retriever.retrieve(text, depth) for text in queries])[:k]
