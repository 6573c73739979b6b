"""Native strategies: the model's own tool-calling format (BFCL's "FC" mode).

The tools go to the model as tools, not as prose: a hosted model gets them through its provider's native function
calling (``tools=`` via DSPy/LiteLLM); a local GGUF model gets them rendered by the chat template embedded in its
file (for Qwen2.5, a ``<tools>`` block in the system turn), and the local engine parses its ``<tool_call>`` blocks
(or the ```` ```json ```` fences small models often write instead) back into calls. Demonstrations are earlier
turns in the same format: the user's request, the assistant's calls, a tool result.

- ``native``: the calls only (``dspy.Predict``); any prose the model writes is kept as the decision's reasoning.
- ``native-cot``: one short thought first (which function fits, or that none does), kept as the reasoning.
- ``native-strict``: as ``native``, but a local model's calls are decoded under a grammar of the listed tools and
  their argument schemas (``tool_selection.lm.strict_calls``); its prose stays free.
- ``native-cot-strict``: ``native-cot``'s thought, then ``native-strict``'s calls.
- ``auto`` (the default): ``native-strict-cover`` with a local model, ``native`` with any other that takes native
  tool calls (LiteLLM's word, or the server's answer to one request with a tool), ``json-cot`` with one that does
  not; chosen per call from the LM in use (a cascade may mix them). ``pin_strategy`` fixes the choice for a run.
"""

from __future__ import annotations

import json
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError

from tool_selection.decision import ToolCall
from tool_selection.errors import ToolSelectionError
from tool_selection.interop import to_openai
from tool_selection.lm.endpoint import ToolSupport, native_tools
from tool_selection.lm.model_errors import MODEL_FAILURES, unreadable_answer
from tool_selection.lm.strict_calls import COVER_RULES, DESCRIBED_CALLS, MORE_CALLS, UNTIL_COVERED
from tool_selection.parsing import ParsedAnswer, call_arguments, parse_native, safe_text
from tool_selection.registry import ToolRegistry
from tool_selection.strategies.base import (
    SelectionStrategy,
    ToolChoice,
    as_calls,
    check_decision,
    decided,
    inner_predict,
    parse_failure,
    register_strategy,
)

__all__ = ["NativeSelect", "NativeToolAdapter", "call_schema"]

TEXT_FALLBACK = "json-cot"  # what auto runs as where the model takes no native tool calls
ABSTAIN_TEXT = "None of the available functions can do this."
DEMO_RESULT = "(example call; result not shown)"


class NativeSelect(dspy.Signature):
    """You choose function calls for the user's request. Call a function only when it does exactly what the user
    asks, with argument values taken from the request; call several when the request asks for several things.
    If none of the functions can do what is asked, do not call any: reply in one sentence that none of the
    available functions can do this."""

    request: str = dspy.InputField(desc="What the user asked for.")
    conversation: list[dict[str, Any]] = dspy.InputField(
        default=[], desc="The turns so far, when the request is part of a tool-calling loop (chat messages).")
    tool_calls: list[ToolCall] = dspy.OutputField(desc="The function calls to make; none when no function fits.")


THOUGHT = dspy.OutputField(desc="One short sentence before any call: which function fits and why, or that none "
                                "of them can do what is asked.")
THINK_FIRST = ("Before calling, write one short sentence saying which function fits and why, or that none of them "
               "can do what is asked.")


# DSPy's lm15 reads a provider's arguments string leniently: one that is not JSON comes as {"partial_json": TEXT},
# JSON that is not an object as {"value": VALUE}. Either is an unreadable answer, unless the tool declares that key.
_LM15_UNREADABLE_ARGUMENTS = {"partial_json": lambda value: isinstance(value, str),
                              "value": lambda value: not isinstance(value, dict)}


def _provider_call(call: dict[str, Any], declared: dict[str, set[str]]) -> ToolCall | None:
    """The call a provider returned, or None when its arguments are not a JSON object. ``declared``: the argument
    names of each offered tool."""
    function = call.get("function") or call
    arguments = call_arguments(function)
    name = function.get("name")
    if not isinstance(name, str) or arguments is None:
        return None
    if len(arguments) == 1:
        ((key, value),) = arguments.items()
        unreadable = _LM15_UNREADABLE_ARGUMENTS.get(key)
        if unreadable is not None and unreadable(value) and key not in declared.get(name, ()):
            return None
    return ToolCall(tool_name=name, arguments=arguments)


def _declared_arguments(tools: list[dict[str, Any]] | None) -> dict[str, set[str]]:
    """The argument names of each tool in an OpenAI ``tools`` list."""
    functions = [tool.get("function", tool) for tool in tools or []]
    return {function.get("name"): set((function.get("parameters") or {}).get("properties") or {})
            for function in functions}


class NativeToolAdapter(dspy.Adapter):
    """Formats a request in the model's own tool-calling conversation and reads its calls back.

    The tools come in the call's ``tools`` keyword (OpenAI shape) and go to the LM as tools; the LM returns calls
    (its provider parsed them, or the local engine did) and/or text, which is parsed with ``parse_native`` for
    calls the provider did not recognise. An answer whose call could not be read raises ``AdapterParseError``.
    """

    def __init__(self, callbacks=None):
        super().__init__(callbacks=callbacks, use_native_function_calling=True)

    def _call_preprocess(self, lm, lm_kwargs, signature, inputs):
        return signature  # the tools stay in lm_kwargs; the signature has no dspy.Tool fields to rewrite

    def format(self, signature, demos, inputs):
        thinking = "reasoning" in signature.output_fields
        system = signature.instructions + ("\n\n" + THINK_FIRST if thinking else "")
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        for index, demo in enumerate(demos):
            messages.extend(self._demo_turns(demo, index, thinking))
        conversation = list(inputs.get("conversation") or [])
        if conversation and conversation[0].get("role") == "system":  # a loop's own prompt: instead of ours, or after
            own = conversation.pop(0)
            if own.get("replaces_instructions"):
                messages[0]["content"] = own["content"] + ("\n\n" + THINK_FIRST if thinking else "")
            else:
                messages[0]["content"] += "\n\n" + own["content"]
        messages.extend(conversation or [{"role": "user", "content": inputs["request"]}])
        return messages

    def _demo_turns(self, demo: Any, index: int, thinking: bool) -> list[dict[str, Any]]:
        if "request" not in demo or demo.get("tool_calls") is None:
            return []
        calls = as_calls(demo["tool_calls"])
        thought = (demo.get("reasoning") or "") if thinking else ""
        if not calls:
            return [{"role": "user", "content": demo["request"]},
                    {"role": "assistant", "content": thought or ABSTAIN_TEXT}]
        ids = [f"demo{index}_call{n}" for n in range(len(calls))]
        turns = [{"role": "user", "content": demo["request"]},
                 {"role": "assistant", "content": thought or None, "tool_calls": [
                     {"id": call_id, "type": "function",
                      "function": {"name": call.tool_name, "arguments": json.dumps(call.arguments)}}
                     for call_id, call in zip(ids, calls, strict=True)]}]
        turns += [{"role": "tool", "tool_call_id": call_id, "content": DEMO_RESULT} for call_id in ids]
        return turns

    def _call_postprocess(self, processed_signature, original_signature, outputs, lm, lm_kwargs):
        values = []
        for output in outputs:
            text, provider_calls, logprobs = output, None, None
            if isinstance(output, dict):
                text, provider_calls, logprobs = output.get("text"), output.get("tool_calls"), output.get("logprobs")
            text = safe_text(text or "")
            if provider_calls:
                declared = _declared_arguments(lm_kwargs.get("tools"))
                calls = [_provider_call(call, declared) for call in provider_calls]
                if any(call is None for call in calls):
                    raise AdapterParseError(adapter_name=type(self).__name__, signature=original_signature,
                                            lm_response=text + json.dumps(provider_calls)[:2000],
                                            message="A native tool call's arguments are not a JSON object.")
                parsed = ParsedAnswer(calls=calls, text=parse_native(text).text if "<tool_call>" in text else text)
            else:
                parsed = self._parsed(original_signature, text)
            value: dict[str, Any] = {"tool_calls": parsed.calls, "reasoning": parsed.text.strip()}
            if logprobs:
                value["logprobs"] = logprobs
            values.append(value)
        return values

    def _parsed(self, signature, text: str) -> ParsedAnswer:
        parsed = parse_native(text)
        if parsed.failed:
            raise AdapterParseError(adapter_name=type(self).__name__, signature=signature, lm_response=text,
                                    message="; ".join(parsed.failures)[:500])
        return parsed

    def parse(self, signature, completion):
        parsed = self._parsed(signature, safe_text(completion))
        return {"tool_calls": parsed.calls, "reasoning": parsed.text.strip()}


def call_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON Schema of one call to any of ``tools`` (OpenAI shape): ``{"name": ..., "arguments": {...}}``, the
    arguments following the named function's own parameters. Definitions the parameters share move to the top."""
    definitions: dict[str, Any] = {}
    alternatives = []
    for tool in tools:
        function = tool.get("function", tool)
        parameters = dict(function.get("parameters") or {"type": "object", "properties": {}})
        definitions.update(parameters.pop("$defs", {}))
        alternatives.append({"type": "object", "additionalProperties": False, "required": ["name", "arguments"],
                             "properties": {"name": {"const": function["name"]}, "arguments": parameters}})
    schema: dict[str, Any] = alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}
    return {**schema, "$defs": definitions} if definitions else schema


def openai_tools(registry: ToolRegistry) -> list[dict[str, Any]]:
    return [to_openai(tool) for tool in registry]


class _NativeStrategy(SelectionStrategy):
    strict = False  # decode each call under a grammar of the listed tools (local models)
    more_calls = 0  # with strict calls: calls opened for the model after its own, until one adds nothing
    until_covered = False  # ... and only while the request holds a value no call uses
    described_calls = False  # with strict calls: an answer that describes a call instead of making it gets it opened

    def build_predictor(self) -> dspy.Module:
        if self.reasoning:
            return dspy.ChainOfThought(NativeSelect, rationale_field=THOUGHT)
        return dspy.Predict(NativeSelect)

    def adapter(self) -> dspy.Adapter:
        return NativeToolAdapter()

    def decide(self, predictor: dspy.Module, request: str, registry: ToolRegistry,
               conversation: list[dict[str, Any]] | None = None, tool_choice: ToolChoice = "auto") -> dspy.Prediction:
        inner = inner_predict(predictor)
        demos = list(inner.demos)
        tools = openai_tools(registry)
        config: dict[str, Any] = {"tools": tools}
        if tool_choice != "auto":
            config["tool_choice"] = tool_choice
        if self.strict_for(inner.lm or dspy.settings.lm):  # with tools, the local engine applies the schema to each call
            config["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "tool_call", "schema": call_schema(tools)}}
            metadata = {**({MORE_CALLS: self.more_calls} if self.more_calls else {}),
                        **({UNTIL_COVERED: COVER_RULES} if self.more_calls and self.until_covered else {}),
                        **({DESCRIBED_CALLS: True} if self.described_calls else {})}
            if metadata:
                config["metadata"] = metadata
        try:
            prediction = predictor(request=request, conversation=conversation or [], config=config, demos=demos)
        except AdapterParseError as error:
            return parse_failure(error, error.lm_response)
        except MODEL_FAILURES as error:
            if (answer := unreadable_answer(error)) is None:
                raise
            return parse_failure(f"The answer could not be read: {answer}", answer)
        # Predict keeps the adapter's prose under "reasoning" too (it is not a signature field there)
        return decided(check_decision(getattr(prediction, "reasoning", "") or "", as_calls(prediction.tool_calls),
                                      registry))

    def strict_for(self, lm: dspy.BaseLM | None) -> bool:
        """Whether calls to ``lm`` are decoded under the tools' grammar."""
        return self.strict

    def check_lm(self, lm: dspy.BaseLM) -> None:
        from tool_selection.lm.engine import local_engine

        engine = local_engine(lm)
        if self.strict and engine is None:
            raise ToolSelectionError(
                f"{getattr(lm, 'model', lm)!r} cannot serve the {self.name} strategy: it constrains a local model's "
                "decoding (local:NAME). For hosted models use native, whose providers validate calls themselves.")
        if engine is not None:
            if not engine.supports_native_tools():
                raise ToolSelectionError(
                    f"{engine.spec} cannot serve the {self.name} strategy: its chat template does not render tools "
                    "(a model without a tool-calling format, or a fixed chat_format in the catalog). Use json-cot "
                    "or a text:* strategy.")
            return
        if not getattr(lm, "supports_function_calling", False):
            raise ToolSelectionError(
                f"{getattr(lm, 'model', lm)!r} cannot serve the {self.name} strategy: DSPy/LiteLLM report no native "
                "function calling for it. Use json-cot or a text:* strategy.")


@register_strategy
class Native(_NativeStrategy):
    name = "native"
    summary = "the model's own tool-calling format (chat template tools / provider function calling), no reasoning"


@register_strategy
class NativeCoT(_NativeStrategy):
    name = "native-cot"
    summary = "the model's own tool-calling format, with one short thought before the calls"
    reasoning = True


@register_strategy
class NativeStrict(_NativeStrategy):
    name = "native-strict"
    summary = ("the model's own tool-calling format, each call it opens decoded under a grammar of the listed "
               "tools and their argument schemas (local models)")
    strict = True


@register_strategy
class NativeCoTStrict(_NativeStrategy):
    name = "native-cot-strict"
    summary = "native-cot's short thought first, then native-strict's calls (local models)"
    reasoning = True
    strict = True


@register_strategy
class NativeStrictMore(_NativeStrategy):
    name = "native-strict-more"
    summary = ("native-strict, then more calls opened for the model after its own, each under the grammar, until "
               "one adds nothing (requests that ask for several things; local models)")
    strict = True
    more_calls = 3


@register_strategy
class NativeStrictCover(NativeStrictMore):
    name = "native-strict-cover"
    summary = ("native-strict-more, opening another call only while the request holds a number or a name no call "
               "uses, and keeping it only if it uses one; an answer that describes a call instead of making it gets "
               "the call opened for it (local models)")
    until_covered = True
    described_calls = True


@register_strategy
class Auto(_NativeStrategy):
    """The default: the most accurate strategy the model can serve (README, Results: selection strategies)."""

    name = "auto"
    summary = ("native-strict-cover with a local model, native with a hosted or served one that takes tool calls, "
               f"{TEXT_FALLBACK} with one that does not")
    more_calls, until_covered = NativeStrictCover.more_calls, NativeStrictCover.until_covered  # where strict
    described_calls = NativeStrictCover.described_calls

    def strict_for(self, lm: dspy.BaseLM | None) -> bool:
        from tool_selection.lm.engine import local_engine

        return self.constrain and local_engine(lm) is not None

    def check_lm(self, lm: dspy.BaseLM) -> None:
        from tool_selection.lm.engine import local_engine

        if local_engine(lm) is not None:  # any other model is served: natively where it can be, else as text
            super().check_lm(lm)

    def resolved_name(self, lm: dspy.BaseLM | None) -> str:
        if self.strict_for(lm):
            return NativeStrictCover.name
        if lm is None or self.tool_support(lm).supported:
            return Native.name
        return TEXT_FALLBACK

    def tool_support(self, lm: dspy.BaseLM) -> ToolSupport:
        """Whether ``lm`` takes native tool calls (a server of one's own is asked once), and how that was found."""
        from tool_selection.lm.engine import local_engine

        if local_engine(lm) is not None:
            return ToolSupport(True, "the model's chat template renders tools")
        return native_tools(lm)
