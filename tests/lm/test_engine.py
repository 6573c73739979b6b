"""The local engine through DSPy's LM layer, with a scripted llama object in place of a real model."""

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

import dspy
import pytest
from dspy.lm15 import Config, FunctionTool, Message, Request, ToolCallPart, ToolChoice, UnsupportedFeatureError
from dspy.utils import DummyLM
from dspy.utils.exceptions import ContextWindowExceededError

from tool_selection.lm import LocalEngine
from tool_selection.lm.engine import LoadSettings

from .conftest import FakeLlama


class PickTool(dspy.Signature):
    """Pick the tool that serves the request."""

    tools: str = dspy.InputField()
    request: str = dspy.InputField()
    tool_name: Literal["get_weather", "send_email"] = dspy.OutputField()


TOOLS = "get_weather: the forecast for a city\nsend_email: send an email"
CHAT_ANSWER = "[[ ## tool_name ## ]]\nget_weather\n\n[[ ## completed ## ]]"


def test_predict_through_the_engine_matches_dummy_lm(make_lm):
    """The local LM behaves like DSPy's own DummyLM for the same scripted answer."""
    lm, llama = make_lm([CHAT_ANSWER])
    with dspy.context(lm=lm, adapter=dspy.ChatAdapter()):
        local = dspy.Predict(PickTool)(tools=TOOLS, request="Rain in Oslo?")
    with dspy.context(lm=DummyLM([{"tool_name": "get_weather"}]), adapter=dspy.ChatAdapter()):
        dummy = dspy.Predict(PickTool)(tools=TOOLS, request="Rain in Oslo?")
    assert local.tool_name == dummy.tool_name == "get_weather"

    (call,) = llama.calls
    assert [m["role"] for m in call["messages"]] == ["system", "user"]
    assert "`tool_name`" in call["messages"][0]["content"]
    assert "[[ ## request ## ]]\nRain in Oslo?" in call["messages"][1]["content"]
    assert call["temperature"] == 0.0 and call["max_tokens"] == 64 and call["grammar"] is None
    assert "logprobs" not in call and "response_format" not in call


def test_generation_settings_reach_llama(make_lm):
    lm, llama = make_lm(["ok"], top_p=0.9, stop=["END"], seed=7)
    lm(messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
                 {"role": "assistant", "content": "hello"}, {"role": "user", "content": "again"}])
    (call,) = llama.calls
    assert call["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
                                {"role": "assistant", "content": "hello"}, {"role": "user", "content": "again"}]
    assert (call["top_p"], call["stop"], call["seed"]) == (0.9, ["END"], 7)


def test_usage_is_reported_to_history_and_usage_tracking(make_lm):
    lm, _ = make_lm([CHAT_ANSWER])
    with dspy.context(lm=lm, adapter=dspy.ChatAdapter(), track_usage=True):
        prediction = dspy.Predict(PickTool)(tools=TOOLS, request="Rain?")
    usage = lm.history[-1]["usage"]
    completion_tokens = len(range(0, len(CHAT_ANSWER), 3))
    assert usage["prompt_tokens"] == 120 and usage["completion_tokens"] == completion_tokens
    assert usage["total_tokens"] == 120 + completion_tokens
    assert usage["prompt_tokens_details"]["cached_tokens"] == 7  # prompt tokens reused from the KV cache
    tracked = prediction.get_lm_usage()["local:fake"]
    assert tracked["prompt_tokens"] == 120 and tracked["completion_tokens"] == completion_tokens


def test_logprobs_appear_on_outputs_and_predictions(make_lm):
    lm, _ = make_lm(["get_weather", CHAT_ANSWER], logprobs=True)
    (output,) = lm("which tool?")
    assert output["text"] == "get_weather"
    content = output["logprobs"]["content"]
    assert "".join(t["token"] for t in content) == "get_weather"  # the end-of-sequence token is not included
    assert [t["logprob"] for t in content] == pytest.approx([-0.01, -0.02, -0.03, -0.04])
    assert content[0]["bytes"] == list(b"get") and content[0]["top_logprobs"] == []

    with dspy.context(lm=lm, adapter=dspy.ChatAdapter()):
        prediction = dspy.Predict(PickTool)(tools=TOOLS, request="Rain?")
    assert prediction.tool_name == "get_weather"
    assert "".join(t["token"] for t in prediction.logprobs["content"]) == CHAT_ANSWER


def test_top_logprobs_and_no_logprobs_unless_asked(make_lm):
    lm, _ = make_lm(["abcdef", "abcdef"])
    (plain,) = lm("x")
    assert plain == "abcdef"  # a bare string: no logprobs were asked for
    (output,) = lm("y", logprobs=True, top_logprobs=2)
    tops = output["logprobs"]["content"][0]["top_logprobs"]
    assert [(t["token"], t["logprob"]) for t in tops] == [("alt0", -1.0), ("alt1", -2.0)]


def test_logprobs_stop_at_the_returned_text(make_lm):
    """A stop string ends the text inside the token stream; tokens past the text are not reported."""
    llama = FakeLlama(["abcdefg"], extra_tokens=["STOP", "more"])
    lm, _ = make_lm(llama=llama, logprobs=True)
    (output,) = lm("x")
    assert [t["token"] for t in output["logprobs"]["content"]] == ["abc", "def", "g"]


def test_finish_reason_length_is_kept(make_lm):
    lm, _ = make_lm(llama=FakeLlama(["truncated answ"], finish_reason="length"))
    lm("x")
    assert lm.history[-1]["response"].finish_reason == "length"


def test_a_repeated_call_is_served_from_dspy_cache(make_lm):
    lm, llama = make_lm(["first", "second"], cache=True)
    assert lm("same prompt") == ["first"]
    assert lm("same prompt") == ["first"]
    assert len(llama.calls) == 1
    assert lm.history[-1]["usage"] == {}  # a cache hit costs no tokens
    assert lm("same prompt", cache=False) == ["second"]
    assert len(llama.calls) == 2


def test_cache_off_calls_the_model_every_time(make_lm):
    lm, llama = make_lm(["one", "two"], cache=False)
    assert [lm("same prompt"), lm("same prompt")] == [["one"], ["two"]]
    assert len(llama.calls) == 2


def test_capabilities_follow_constrained(make_lm):
    plain, _ = make_lm()
    constrained, _ = make_lm(constrained=True)
    assert not plain.supports_response_schema and "response_format" not in plain.supported_params
    assert constrained.supports_response_schema and "response_format" in constrained.supported_params
    assert {"logprobs", "top_logprobs"} <= plain.supported_params
    assert plain.supports_function_calling  # tools render through the model's own chat template


def test_json_adapter_schema_becomes_a_grammar(make_lm):
    pytest.importorskip("llama_cpp")
    lm, llama = make_lm(['{"tool_name": "send_email"}'], constrained=True)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        prediction = dspy.Predict(PickTool)(tools=TOOLS, request="Mail Bob")
    assert prediction.tool_name == "send_email"
    grammar = llama.calls[0]["grammar"]._grammar
    assert '\\"get_weather\\"' in grammar and '\\"send_email\\"' in grammar and "tool-name" in grammar


def test_without_constrained_json_adapter_sends_no_schema(make_lm):
    lm, llama = make_lm(['{"tool_name": "send_email"}'])
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        assert dspy.Predict(PickTool)(tools=TOOLS, request="Mail Bob").tool_name == "send_email"
    assert llama.calls[0]["grammar"] is None


def test_json_object_response_format_gets_the_generic_json_grammar(make_lm):
    llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")
    lm, llama = make_lm(['{"a": 1}'])
    lm("json please", response_format={"type": "json_object"})
    assert llama.calls[0]["grammar"]._grammar == llama_grammar.JSON_GBNF


def test_a_schema_llama_cpp_cannot_convert_falls_back_to_json_and_says_so(make_lm, monkeypatch):
    llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")
    from tool_selection.lm import grammar

    def refuse(*args, **kwargs):
        raise NotImplementedError("unsupported keyword")

    monkeypatch.setattr(llama_grammar, "json_schema_to_gbnf", refuse)
    grammar._compiled_grammar.cache_clear()
    lm, llama = make_lm(['{"x": 1}'])
    schema = {"type": "json_schema", "json_schema": {"name": "X", "schema": {"type": "object"}}}
    lm("x", response_format=schema)
    grammar._compiled_grammar.cache_clear()
    assert llama.calls[0]["grammar"]._grammar == llama_grammar.JSON_GBNF
    (note,) = lm.history[-1]["adaptations"]
    assert (note.field, note.action, note.applied) == ("config.response_format", "substituted", "json_object")


def test_a_grammar_llama_cpp_refuses_is_relaxed_then_dropped_to_json(make_lm):
    """llama.cpp crashes on a grammar it cannot parse, so one it refuses is never used."""
    llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")
    schema = {"type": "object", "required": ["sql"],
              "properties": {"sql": {"type": "string", "maxLength": 300}, "day": {"type": "string",
                                                                               "pattern": "^\\d{2}$"}}}
    response_format = {"type": "json_schema", "json_schema": {"name": "Q", "schema": schema}}

    lm, llama = make_lm(['{"sql": "SELECT 1"}'], llama=FakeLlama(['{"sql": "SELECT 1"}'],
                                                                refuses=lambda text: "char (char" in text))
    lm("q", response_format=response_format)
    used = llama.calls[0]["grammar"]._grammar
    assert "char (char" not in used and '\\"sql\\"' in used  # the schema without its bounds
    (note,) = lm.history[-1]["adaptations"]
    assert note.applied == "json_schema without length, size and pattern constraints"

    lm, llama = make_lm(llama=FakeLlama(['{"sql": "x"}'], refuses=lambda text: True))
    lm("another q", response_format=response_format)
    assert llama.calls[0]["grammar"]._grammar == llama_grammar.JSON_GBNF
    assert lm.history[-1]["adaptations"][0].applied == "json_object"


def test_relaxing_a_schema_keeps_properties_named_like_keywords():
    from tool_selection.lm.grammar import _without_bounds

    schema = {"type": "object", "required": ["pattern"], "properties": {
        "pattern": {"type": "string", "maxLength": 50, "pattern": "^a"},
        "flags": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 3,
                  "default": [{"pattern": "kept: data, not a schema"}]}}}
    assert _without_bounds(schema) == {"type": "object", "required": ["pattern"], "properties": {
        "pattern": {"type": "string"},
        "flags": {"type": "array", "items": {"type": "string"}, "default": [{"pattern": "kept: data, not a schema"}]}}}


def test_native_tools_reach_the_chat_template_and_calls_come_back_parsed(tmp_path):
    answer = ('I will check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>\n'
              '```json\n{"name": "ignored", "arguments": {}}\n```')
    llama = FakeLlama([answer, "No function fits this request."])
    engine = LocalEngine(tmp_path / "m.gguf", llama=llama)
    tool = FunctionTool(name="get_weather", description="Weather.", parameters={"type": "object", "properties": {
        "city": {"type": "string"}}})
    earlier = (Message.user("Rain in Rome?"),
               Message.assistant([ToolCallPart(id="call_0", name="get_weather", input={"city": "Rome"})]),
               Message.tool({"call_0": "sunny"}), Message.user("And in Oslo?"))
    response = engine.complete(Request(model="local:m", messages=earlier, tools=(tool,)))
    sent = llama.calls[0]
    assert sent["tools"] == [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                                                              "parameters": tool.parameters}}]
    assert sent["messages"][1] == {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]}
    assert sent["messages"][2]["role"] == "tool" and sent["messages"][2]["content"] == "sunny"
    calls = [p for p in response.message.parts if isinstance(p, ToolCallPart)]
    assert [(c.name, dict(c.input)) for c in calls] == [("get_weather", {"city": "Oslo"})]
    assert response.finish_reason == "tool_call"

    plain = engine.complete(Request(model="local:m", messages=(Message.user("Tell a joke"),), tools=(tool,)))
    assert plain.text == "No function fits this request." and plain.finish_reason == "stop"


def test_forcing_a_tool_choice_without_strict_calls_is_refused_with_the_reason(tmp_path):
    engine = LocalEngine(tmp_path / "m.gguf", llama=FakeLlama(["x"]))
    tool = FunctionTool(name="f", description="d", parameters={"type": "object", "properties": {}})
    for choice, named in [(ToolChoice(mode="required"), "not 'required'"), (ToolChoice(mode="none"), "not 'none'"),
                          (ToolChoice(mode="required", allowed=("f",)), "not 'required' limited to f")]:
        with pytest.raises(UnsupportedFeatureError, match=f"or 'required' with tools and a call schema .*{named}"):
            engine.complete(Request(model="local:m", messages=(Message.user("hi"),), tools=(tool,),
                                    config=Config(tool_choice=choice)))
    plain = engine.complete(Request(model="local:m", messages=(Message.user("hi"),), tools=(tool,),
                                    config=Config(tool_choice=ToolChoice(mode="auto"))))
    assert plain.text == "x"


def test_unknown_extensions_are_refused_and_llama_settings_pass(tmp_path):
    llama = FakeLlama(["x", "y"])
    engine = LocalEngine(tmp_path / "m.gguf", llama=llama)
    engine.complete(Request(model="m", messages=(Message.user("hi"),), config=Config(extensions={"min_p": 0.1})))
    assert llama.calls[0]["min_p"] == 0.1
    with pytest.raises(UnsupportedFeatureError, match="no setting \\['n_gpu_layers'\\]"):
        engine.complete(Request(model="m", messages=(Message.user("hi"),),
                                config=Config(extensions={"n_gpu_layers": 9})))


def test_a_prompt_longer_than_the_context_is_a_context_window_error(make_lm):
    class TooLong(FakeLlama):
        def create_chat_completion(self, messages, grammar=None, **options):
            raise ValueError("Requested tokens (5000) exceed context window of 4096")

    lm, _ = make_lm(llama=TooLong())
    with pytest.raises(ContextWindowExceededError, match="n_ctx=4096"):
        lm("a very long prompt")


class ShortContext(FakeLlama):
    """Refuses prompts of ``requested`` tokens, as llama.cpp does past its context; trained for ``trained``."""

    def __init__(self, requested=5000, trained=32768, n_ctx=4096):
        super().__init__()
        self.requested, self.trained, self.context = requested, trained, n_ctx

    def n_ctx_train(self):
        return self.trained

    def create_chat_completion(self, messages, grammar=None, **options):
        raise ValueError(f"Requested tokens ({self.requested}) exceed context window of {self.context}")


def _engine_loading(monkeypatch, tmp_path, by_context):
    """An engine whose model loads as ``by_context[n_ctx]()`` (recording each load), and its LM."""
    from tool_selection.lm import engine as engine_module
    from tool_selection.lm.engine import AsyncLocalEngine, LoadedModel

    loads = []

    def load(path, settings=None):
        loads.append(settings.n_ctx)
        return LoadedModel(str(path), settings, by_context[settings.n_ctx]())

    monkeypatch.setattr(engine_module, "load_model", load)
    engine = LocalEngine(tmp_path / "m.gguf", settings=LoadSettings(n_ctx=4096), spec="local:m")
    lm = dspy.LM("local:m", engine=engine, async_engine=AsyncLocalEngine(engine), max_tokens=600, num_retries=0,
                 cache=False)
    return engine, lm, loads


def test_a_prompt_past_the_context_loads_the_model_with_one_that_holds_it(monkeypatch, tmp_path, fresh_cache):
    engine, lm, loads = _engine_loading(monkeypatch, tmp_path, {4096: ShortContext, 8192: lambda: FakeLlama(["ok"])})
    assert lm("a long prompt") == ["ok"]
    assert loads == [4096, 8192] and engine.settings.n_ctx == 8192  # 5,000 prompt + 600 answer tokens, in 4k steps
    assert lm("another") and loads[-1] == 8192  # and keeps it


def test_a_prompt_past_the_trained_context_asks_for_fewer_tools(monkeypatch, tmp_path, fresh_cache):
    _, lm, loads = _engine_loading(monkeypatch, tmp_path, {4096: lambda: ShortContext(requested=40000)})
    with pytest.raises(ContextWindowExceededError, match=r"trained for 32,768 tokens.*--retrieve K"):
        lm("a prompt with a thousand tools")
    assert loads == [4096]  # no larger context would hold it: refused without loading the model again


def test_calls_from_many_threads_never_overlap(make_lm):
    class Watchful(FakeLlama):
        active, overlaps = 0, 0

        def create_chat_completion(self, messages, grammar=None, **options):
            type(self).active += 1
            if type(self).active > 1:
                type(self).overlaps += 1
            time.sleep(0.005)
            type(self).active -= 1
            return super().create_chat_completion(messages, grammar=grammar, **options)

    llama = Watchful([f"answer {i}" for i in range(16)])
    lm, _ = make_lm(llama=llama, cache=False)
    with ThreadPoolExecutor(8) as pool:
        outputs = list(pool.map(lambda i: lm(f"question {i}")[0], range(16)))
    assert Watchful.overlaps == 0 and len(llama.calls) == 16
    assert sorted(outputs) == sorted(f"answer {i}" for i in range(16))
    assert llama.trace is None


def test_async_calls_use_the_same_model(make_lm):
    lm, llama = make_lm(["async answer"])
    assert asyncio.run(lm.acall("hello")) == ["async answer"]
    assert len(llama.calls) == 1


def test_streaming_yields_the_whole_answer(tmp_path):
    engine = LocalEngine(tmp_path / "m.gguf", llama=FakeLlama(["streamed text"]))
    events = list(engine.stream(Request(model="m", messages=(Message.user("hi"),))))
    assert events[0].type == "start" and events[-1].type == "end"
    assert "".join(e.delta.text for e in events if e.type == "delta") == "streamed text"


def test_a_closed_engine_refuses_calls(tmp_path):
    engine = LocalEngine(tmp_path / "m.gguf", llama=FakeLlama(["x"]))
    engine.close()
    with pytest.raises(Exception, match="closed"):
        engine.complete(Request(model="m", messages=(Message.user("hi"),)))


def test_the_engine_is_saved_and_loaded_with_the_lm(tmp_path):
    pytest.importorskip("llama_cpp")
    from tool_selection.lm import LocalEngineOptions, get_lm

    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF")
    lm = get_lm(f"local:{gguf}", constrained=True, local=LocalEngineOptions(n_ctx=2048))
    state = lm.dump_state()
    assert state["engine"]["state"] == {"spec": f"local:{gguf}", "constrained": True,
                                        "settings": {"n_ctx": 2048, "n_threads": None, "n_batch": 512,
                                                     "chat_format": None}}
    loaded = dspy.LM.load_state(state, allow_custom_lm_class=True)
    assert loaded.engine.spec == lm.engine.spec and loaded.engine.settings == LoadSettings(n_ctx=2048)
    assert loaded.supports_response_schema


def test_each_model_is_loaded_once_per_settings(tmp_path, monkeypatch):
    tracing = pytest.importorskip("tool_selection.lm.tracing")
    from tool_selection.lm import engine

    loads = []

    class Recorder:
        def __init__(self, model_path, **kwargs):
            loads.append((model_path, kwargs))

        def close(self):
            pass

    monkeypatch.setattr(tracing, "TracingLlama", Recorder)
    monkeypatch.setattr(engine, "require_working_engine", lambda path: None)  # no real model to smoke-test
    monkeypatch.setattr(engine, "_LOADED", {})
    gguf = tmp_path / "m.gguf"
    first = engine.load_model(gguf, LoadSettings(n_threads=3))
    assert engine.load_model(gguf, LoadSettings(n_threads=3)) is first
    engine.load_model(gguf, LoadSettings(n_threads=3, n_ctx=8192))
    assert len(loads) == 2
    assert loads[0][1]["n_threads"] == loads[0][1]["n_threads_batch"] == 3 and loads[0][1]["n_ctx"] == 4096
    assert LoadSettings().llama_kwargs()["n_threads"] >= 1  # every available core by default

    calls = []
    engine._LOADED[next(iter(engine._LOADED))].llama.close = lambda: calls.append(1)
    engine.unload_models()
    assert engine._LOADED == {} and calls == [1]


def test_large_bounds_are_dropped_but_small_bounds_and_digit_patterns_kept():
    from tool_selection.lm.grammar import MAX_GRAMMAR_BOUND, _without_bounds

    schema = {"type": "object", "properties": {
        "reasoning": {"type": "string", "maxLength": 400},
        "text": {"type": "string", "maxLength": 100_000, "minLength": 1},
        "order_id": {"type": "string", "pattern": "^ORD-\\d{5}$"},
        "code": {"type": "string", "pattern": "^[\\d-]+$"}}}
    kept = _without_bounds(schema, keep_upto=MAX_GRAMMAR_BOUND, keep_patterns=True)["properties"]
    assert kept["reasoning"] == {"type": "string", "maxLength": 400}
    assert kept["text"] == {"type": "string", "minLength": 1}
    assert kept["order_id"]["pattern"] == "^ORD-[0-9]{5}$"
    assert kept["code"]["pattern"] == "^[0-9-]+$"
    assert "pattern" not in _without_bounds(schema, keep_upto=MAX_GRAMMAR_BOUND)["properties"]["order_id"]


def test_a_refused_pattern_goes_before_the_reasoning_bound_does(make_lm):
    """Dropping every bound lets a small model ramble until max_tokens; patterns are dropped first."""
    pytest.importorskip("llama_cpp.llama_grammar")
    schema = {"type": "object", "properties": {"reasoning": {"type": "string", "maxLength": 40},
                                               "word": {"type": "string", "pattern": "^[^\\W_]+$"}}}
    response_format = {"type": "json_schema", "json_schema": {"name": "W", "schema": schema}}
    lm, llama = make_lm(llama=FakeLlama(['{"reasoning": "r", "word": "w"}'],
                                         refuses=lambda text: "\\W" in text or "W_" in text))
    lm("w", response_format=response_format)
    (note,) = lm.history[-1]["adaptations"]
    assert note.applied == "json_schema without patterns or bounds above 500"
    assert "(char (char" in llama.calls[0]["grammar"]._grammar  # maxLength 40 unrolled: the reasoning stays bounded
