"""Third-round attacks on what models write, tool schemas and the command line (#44 items 3, 7 and 11): each is
refused or scored as a failure, and each is timed against an upper bound (run with -s to see the times)."""

import json

import dspy
import pytest

from evals.metrics import score_case
from evals.suite import Case
from tests.lm.conftest import FakeLlama
from tool_selection import ToolDefinitionError, load_tool_set
from tool_selection.cli import main
from tool_selection.decision import ToolCall
from tool_selection.interop import from_openai
from tool_selection.lm import LocalEngine
from tool_selection.lm.engine import AsyncLocalEngine
from tool_selection.selector import MultiToolSelector

SHOP = load_tool_set("ecommerce").registry()
VIEW_CART = Case(id="cart", request="What is in my cart?", tool_set="ecommerce", split="test", tags=["single"],
                 expected_calls=[{"tool_name": "view_cart", "arguments": {}}])


def _local_lm(tmp_path, answer: str) -> dspy.LM:
    engine = LocalEngine(tmp_path / "fake.gguf", llama=FakeLlama([answer]), spec="local:fake")
    return dspy.LM("local:fake", engine=engine, async_engine=AsyncLocalEngine(engine), cache=False, num_retries=0,
                   temperature=0.0, max_tokens=128)


# ------------------------------------------------------------------ item 3: arguments that are not an object
NULL_ANSWERS = {
    "native": '<tool_call>\n{"name": "view_cart", "arguments": null}\n</tool_call>',
    "native-cot": 'The cart tool fits.\n<tool_call>\n{"name": "view_cart", "arguments": null}\n</tool_call>',
    "text:tags": '<tool>{"name": "view_cart", "arguments": null}</tool>',
    "text:fenced": '```tool\n{"name": "view_cart", "arguments": null}\n```',
}
NOT_OBJECTS = ["null", '"null"', "[]", "0", "false", '"[1]"']


@pytest.mark.parametrize("undeclared", ["refuse", "drop"])
@pytest.mark.parametrize("strategy", sorted(NULL_ANSWERS))
def test_null_arguments_are_a_parse_failure(timed, tmp_path, strategy, undeclared):
    selector = MultiToolSelector(SHOP, strategy=strategy, undeclared_arguments=undeclared)

    def attack():
        with dspy.context(lm=_local_lm(tmp_path, NULL_ANSWERS[strategy])):
            return selector(request=VIEW_CART.request)

    decision = timed(attack, within_s=2.0).decision
    assert decision.parse_error and decision.tool_calls == []
    assert score_case(VIEW_CART, decision)["full_match"] == 0.0


@pytest.mark.parametrize("arguments", NOT_OBJECTS)
def test_no_shape_of_arguments_but_an_object_is_a_call(arguments):
    from tool_selection.parsing import parse_native
    from tool_selection.strategies.native import _provider_call

    parsed = parse_native(f'<tool_call>\n{{"name": "view_cart", "arguments": {arguments}}}\n</tool_call>')
    assert parsed.failed and parsed.calls == []
    provider = {"function": {"name": "view_cart", "arguments": json.loads(arguments)}}
    assert _provider_call(provider, {}) is None
    # no arguments at all is a call without arguments, as providers send for a tool that takes none
    assert parse_native('<tool_call>\n{"name": "view_cart"}\n</tool_call>').calls == [ToolCall(tool_name="view_cart")]
    assert _provider_call({"function": {"name": "view_cart", "arguments": ""}}, {}) == ToolCall(tool_name="view_cart")


INVENTED = '{"reasoning": "cart", "tool_calls": [{"tool_name": "view_cart", "arguments": {"order_id": }}]}'


@pytest.mark.parametrize("strategy", ["json", "json-cot", "chat-cot"])
def test_a_repair_that_invents_a_value_is_not_a_full_match(timed, tmp_path, strategy):
    selector = MultiToolSelector(SHOP, strategy=strategy, undeclared_arguments="drop")
    answer = INVENTED if strategy != "chat-cot" else (
        "[[ ## reasoning ## ]]\ncart\n\n[[ ## tool_calls ## ]]\n"
        '[{"tool_name": "view_cart", "arguments": {"order_id": }}]\n\n[[ ## completed ## ]]')

    def attack():
        with dspy.context(lm=_local_lm(tmp_path, answer)):
            return selector(request=VIEW_CART.request)

    prediction = timed(attack, within_s=2.0)
    assert prediction.decision.tool_calls == [] and prediction.decision.parse_error
    assert score_case(VIEW_CART, prediction.decision)["full_match"] == 0.0


def test_a_repair_that_only_closes_what_was_left_open_still_reads():
    from tool_selection.strategies.json_strategies import read_json, repair_kept_what_was_written

    cut = '{"tool_calls": [{"tool_name": "view_cart", "arguments": {"note": "it\'s \\"new\\"", "n": 2.0'
    assert read_json(cut) == {"tool_calls": [{"tool_name": "view_cart", "arguments": {"note": 'it\'s "new"',
                                                                                        "n": 2.0}}]}
    assert not repair_kept_what_was_written('{"a": 1, "b": }', {"a": 1})  # b was dropped
    assert not repair_kept_what_was_written('{"a": 1, "b": }', {"a": 1, "b": ""})  # b's value was invented
    assert repair_kept_what_was_written("{'a': True, 'b': None}", {"a": True, "b": None})


# ------------------------------------------------------------------ item 7: a $ref to a URL behind a local one
HIDDEN_URL = {"type": "object", "properties": {"q": {"$ref": "#/x-lib/q"}},
              "x-lib": {"q": {"$ref": "http://127.0.0.1:9/schema.json"}}}


@pytest.mark.parametrize("schema", [
    HIDDEN_URL,
    {"type": "object", "properties": {"q": {"$ref": "#/x-lib/a"}},
     "x-lib": {"a": {"$ref": "#/x-lib/b"}, "b": {"items": {"$ref": "https://example.com/s"}}}},
    {"type": "object", "properties": {"q": {"$ref": "#/x-lib/a"}}, "x-lib": {"a": {"$ref": "#/x-lib/gone"}}},
])
def test_a_reference_that_leads_outside_through_a_local_one_is_refused_when_defined(timed, schema):
    function = {"name": "lookup", "description": "Look something up.", "parameters": schema}
    with pytest.raises(ToolDefinitionError, match="refers outside the schema|points to nothing"):
        timed(lambda: from_openai([function]), within_s=1.0)


def test_local_references_that_loop_or_chain_still_define_a_tool():
    schema = {"type": "object", "properties": {"node": {"$ref": "#/$defs/node"}, "q": {"$ref": "#/x-lib/q"}},
              "x-lib": {"q": {"type": "string"}},
              "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}}}
    tools = from_openai([{"name": "walk", "description": "Walk a list.", "parameters": schema}])
    assert tools.get("walk").check_arguments({"node": {"next": {}}, "q": "x"}) == []


# ------------------------------------------------------------------ item 11: flags accepted silently before
@pytest.mark.parametrize(("argv", "message"), [
    (["eval", "--mcp", ""], "--mcp: is empty"),
    (["eval", "--limit", "5", "--sample", "5"], "--sample: not allowed with argument --limit"),
    (["eval", "--threads", "100000"], "--threads: 100,000 is out of range: give a number from 1 to 256"),
    (["eval", "--max-tokens", "999999999"], "--max-tokens: 999,999,999 is out of range: give a number from 1 to"),
    (["eval", "--serve", "1000"], "--serve: 1,000 is out of range"),
    (["eval", "--n-ctx", "10000000"], "--n-ctx: 10,000,000 is out of range"),
    (["eval", "--limit", "0"], "--limit: 0 is out of range: give a number at least 1"),
    (["eval", "--run-dir", " "], "--run-dir: is empty"),
    (["eval", "loop", "--limit", "2", "--sample", "3"], "--sample: not allowed with argument --limit"),
    (["eval", "loop", "--max-tokens", "999999999"], "--max-tokens: 999,999,999 is out of range"),
    (["optimize", "--threads", "100000"], "--threads: 100,000 is out of range"),
    (["bench", "stuck", "--threads", "100000"], "--threads: 100,000 is out of range"),
])
def test_out_of_range_flags_are_refused_at_once(timed, capsys, argv, message):
    argv = [*argv, "--suite", "no-such-suite"]  # were the flag let through, the run would stop here, not run
    with pytest.raises(SystemExit) as exit_:
        timed(lambda: main(argv), within_s=1.0)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_a_run_config_refuses_both_ways_of_choosing_cases_and_out_of_range_values():
    from tool_selection.run_config import RunConfig
    from tool_selection.spec import SpecError

    with pytest.raises(SpecError, match="limit and sample each choose cases"):
        RunConfig.build(limit=5, sample=5)
    with pytest.raises(SpecError, match="sample and ids each choose cases"):
        RunConfig.build(sample=5, ids="a,b")
    with pytest.raises(SpecError, match="threads"):
        RunConfig.build(threads=100_000)
    with pytest.raises(SpecError, match="max_tokens"):
        RunConfig.build(max_tokens=999_999_999)
