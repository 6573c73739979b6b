"""Fakes for the stuck-detection tests: a DummyLM that also reports token usage, log-probabilities and samples,
and a tiny suite with dev and test splits."""

import itertools
import json
import re

import pytest
from dspy.clients.engines.dummy_engine import AsyncDummyEngine, DummyEngine
from dspy.lm15 import Message, Response, TextPart, TokenLogprob, Usage
from dspy.utils.dummies import DummyLM

from tests.lm.conftest import fresh_cache, make_lm  # noqa: F401  (the scripted local-engine LM fixtures)
from tool_selection.interop import from_openai
from tool_selection.selector import ToolSelectionAdapter

WEATHER = {"name": "get_weather", "description": "Current weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City."}},
                          "required": ["city"]}}
CLOCK = {"name": "get_time", "description": "Current time in a city.",
         "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City."}},
                        "required": ["city"]}}
TOOLS = from_openai([WEATHER, CLOCK], name="weather-clock")

TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def calls(*pairs):
    return json.dumps([{"tool_name": n, "arguments": a} for n, a in pairs])


def answer(reasoning, *pairs):
    return {"reasoning": reasoning, "tool_calls": calls(*pairs)}


class ScriptedEngine(DummyEngine):
    """DummyLM's engine on DSPy's canonical path, so that requests carry their config (temperature, logprobs)."""

    complete_legacy = None

    def complete(self, request):
        owner = self.owner
        last = request.messages[-1].text or ""
        key = next((k for k in owner.answers if k in last), None)
        fields = owner.answers[key] if key is not None else {"reasoning": "", "tool_calls": "no more responses"}
        if request.config.temperature and key in owner.samples:
            fields = next(owner.samples[key])
        text = owner._format_answer_fields(fields)
        tokens = TOKEN.findall(text)
        logprob = owner.token_logprobs.get(key, -0.01)
        owner.calls.append(last)
        prompt_tokens = sum(len((m.text or "").split()) for m in request.messages)
        return Response(
            id=None, model=owner.model, message=Message.assistant([TextPart(text)]), finish_reason="stop",
            usage=Usage(input_tokens=prompt_tokens, output_tokens=len(tokens),
                        total_tokens=prompt_tokens + len(tokens)),
            logprobs=tuple(TokenLogprob(token=t, logprob=logprob) for t in tokens)
            if request.config.logprobs is not None else None,
        )


class ScriptedLM(DummyLM):
    """DummyLM answering by key (a substring of the last message), in JSON, with token usage; optionally
    log-probabilities per key (every token of that answer gets it) and different answers when sampled
    (temperature > 0), cycling through ``samples[key]``."""

    def __init__(self, answers, *, name="dummy", logprobs=None, samples=None):
        super().__init__(answers, adapter=ToolSelectionAdapter())
        self.model = name
        self.token_logprobs = logprobs or {}
        self.samples = {k: itertools.cycle(v) for k, v in (samples or {}).items()}
        self.calls = []
        self._attach()

    def _attach(self):
        self._engine_spec = ScriptedEngine(self)
        self._async_engine_spec = AsyncDummyEngine(self._engine_spec)

    def copy(self, **kwargs):
        copied = super().copy(**kwargs)
        copied._attach()
        return copied


CITIES = {"dev": ["Oslo", "Rome", "Kyiv", "Baku", "Cairo"], "test": ["Paris", "Lima", "Quito", "Hanoi", "Dakar"]}
HARD = {"Rome", "Kyiv", "Lima", "Quito", "Hanoi"}  # the weak model fails these; the strong one fails Dakar


def make_cases():
    """Per split: five weather requests and one request no tool fits."""
    cases = []
    for split, cities in CITIES.items():
        for city in cities:
            cases.append({"id": f"w-{city.lower()}", "request": f"What is the weather in {city}?",
                          "tools": [WEATHER, CLOCK], "tags": ["single"], "split": split,
                          "expected_calls": [{"tool_name": "get_weather", "arguments": {"city": city}}]})
    for split, topic in (("dev", "cats"), ("test", "dogs")):
        cases.append({"id": f"none-{topic}", "request": f"Tell me a joke about {topic}", "tools": [WEATHER, CLOCK],
                      "expected_calls": [], "tags": ["no_tool"], "split": split})
    return cases


def weak_answers():
    """Right on the easy cities and the jokes; stuck in several ways on the hard ones, unless guided."""
    answers = {}
    for city in sorted(HARD):  # first: a guided request also contains the city
        answers[f"{city}?\n\nGuidance from"] = answer(f"Guided: get_weather for {city}.",
                                                       ("get_weather", {"city": city}))
    for city in CITIES["dev"] + CITIES["test"]:
        if city in ("Rome", "Quito"):
            answers[city] = answer("I'm not sure how to do this, maybe the clock?", ("get_time", {"city": city}))
        elif city in ("Kyiv", "Hanoi"):
            answers[city] = answer("Perhaps a forecast tool might work.", ("get_forecast", {"city": city}))
        elif city == "Lima":
            answers[city] = answer("I think it is the weather tool.", ("get_weather", {"town": city}))
        else:
            answers[city] = answer(f"The user asks for the weather in {city}; get_weather with city {city}.",
                                   ("get_weather", {"city": city}))
    answers["joke"] = answer("No tool here tells jokes, so no call is needed for this request.")
    return answers


def weak_logprobs():
    return {key: (-1.6 if any(city in key for city in HARD) and "Guidance" not in key else -0.02)
            for key in weak_answers()}


def strong_answers():
    answers = {"Stuck detector": {"guidance": "Call get_weather with the city named in the request."}}
    for city in CITIES["dev"] + CITIES["test"]:
        answers[city] = answer(f"Weather for {city}: call get_weather with city {city}.",
                               ("get_weather", {"city": city}))
    answers["Dakar"] = answer("Time in Dakar.", ("get_time", {"city": "Dakar"}))
    answers["joke"] = answer("None of these tools tells jokes; no call.")
    return answers


def relative_cost(spec, input_tokens, output_tokens):
    """Per-token prices of the fake catalog: the strong model costs ten times as much."""
    return (10.0 if "strong" in spec else 1.0) * (input_tokens + 2 * output_tokens) / 1000


@pytest.fixture
def suite_path(tmp_path):
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in make_cases()) + "\n")
    return path


@pytest.fixture
def weak_lm():
    return ScriptedLM(weak_answers(), name="test/weak", logprobs=weak_logprobs())


@pytest.fixture
def strong_lm():
    return ScriptedLM(strong_answers(), name="test/strong")


@pytest.fixture(scope="session")
def bench_run(tmp_path_factory):
    """One benchmark of the weak and strong fakes over the tiny suite, logged to MLflow in a temporary store,
    with a live guide run at 0.5."""
    from evals.stuck_bench import run_stuck_bench
    from tool_selection.run_config import RunConfig
    from tool_selection.spec import SelectorSpec

    root = tmp_path_factory.mktemp("bench")
    path = root / "tiny.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in make_cases()) + "\n")
    weak = ScriptedLM(weak_answers(), name="test/weak", logprobs=weak_logprobs())
    strong = ScriptedLM(strong_answers(), name="test/strong")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    result = run_stuck_bench(str(path), [(weak, strong)], selector=SelectorSpec(strategy="json-cot"),
                             run=RunConfig(run_dir=root / "out", tracking_uri=uri, progress=False),
                             cost_fn=relative_cost, live_threshold=0.5, strategy="guide", live_detector="heuristic")
    return result, uri
