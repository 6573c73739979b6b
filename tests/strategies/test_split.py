"""Splitting a request into its actions: the list read, one decision per action, calls merged (scripted models)."""

import pytest

from tests.lm.conftest import StagedLlama
from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.interop import from_openai
from tool_selection.selector import MultiToolSelector
from tool_selection.strategies.split import MAX_ACTIONS, actions_of, merged

RATE = {"name": "get_exchange_rate", "description": "The exchange rate between two currencies.",
        "parameters": {"type": "object", "properties": {"base": {"type": "string"}, "quote": {"type": "string"}},
                       "required": ["base", "quote"]}}
NEWS = {"name": "get_news", "description": "Latest news headlines on a topic.",
        "parameters": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}}
TOOLS = from_openai([RATE, NEWS], name="fx")
EUR, GBP = (ToolCall(tool_name="get_exchange_rate", arguments={"base": b, "quote": "USD"}) for b in ("EUR", "GBP"))


def _call(call: ToolCall) -> str:
    import json

    return f'<tool_call>\n{json.dumps({"name": call.tool_name, "arguments": call.arguments})}\n</tool_call>'


@pytest.mark.parametrize(("text", "actions"), [
    ("Get the EUR rate\nGet the GBP rate", ["Get the EUR rate", "Get the GBP rate"]),
    ("1. Get the EUR rate\n2) Get the GBP rate\n\n- Read the news\n* Step 4: stop", [
        "Get the EUR rate", "Get the GBP rate", "Read the news", "Step 4: stop"]),
    ("  \n\n", []),
    ("\n".join(f"action {n}" for n in range(20)), [f"action {n}" for n in range(MAX_ACTIONS)]),
])
def test_the_list_is_read_one_action_a_line(text, actions):
    assert actions_of(text) == actions


def test_merging_keeps_order_drops_exact_repeats_and_rechecks():
    news = ToolCall(tool_name="get_news", arguments={"topic": "rates"})
    unknown = ToolCall(tool_name="get_weather", arguments={})
    decision = merged([MultiToolDecision(tool_calls=[EUR]), MultiToolDecision(tool_calls=[EUR, GBP]),
                       MultiToolDecision(parse_error="unreadable"), MultiToolDecision(tool_calls=[news, unknown])],
                      TOOLS)
    assert decision.tool_calls == [EUR, GBP, news, unknown] and decision.parse_error is None
    assert [(p.kind, p.call_index) for p in decision.problems] == [("unknown_tool", 3)]
    assert merged([MultiToolDecision(parse_error="a"), MultiToolDecision(parse_error="b")], TOOLS).parse_error == "a"
    assert merged([MultiToolDecision(), MultiToolDecision()], TOOLS).abstained


def test_a_request_of_several_actions_gets_a_decision_each(scripted):
    lm, llama = scripted(["Get the EUR to USD rate\nGet the GBP to USD rate", _call(EUR), _call(GBP)])
    selector = MultiToolSelector(TOOLS, strategy="native-split")
    import dspy

    with dspy.context(lm=lm):
        prediction = selector(request="What are the EUR to USD and GBP to USD rates?")
    assert prediction.decision.tool_calls == [EUR, GBP]
    assert prediction.row_extras["split_actions"] == 2.0
    split, first, second = llama.calls
    assert "tools" not in split and split["messages"][-1]["content"] == "What are the EUR to USD and GBP to USD rates?"
    assert first["messages"][-1]["content"] == "Get the EUR to USD rate" and first["tools"]
    assert second["messages"][-1]["content"] == "Get the GBP to USD rate"


def test_a_request_of_one_action_is_decided_as_written(scripted):
    lm, llama = scripted(["Get the EUR to USD rate", _call(EUR)])
    import dspy

    with dspy.context(lm=lm):
        prediction = MultiToolSelector(TOOLS, strategy="native-split")(request="EUR to USD rate, please.")
    assert prediction.decision.tool_calls == [EUR]
    assert llama.calls[1]["messages"][-1]["content"] == "EUR to USD rate, please."
    assert "split_actions" not in (getattr(prediction, "row_extras", None) or {})


def test_actions_that_fit_no_tool_add_no_call_and_all_abstaining_abstains(scripted):
    import dspy

    lm, _ = scripted(["Get the EUR to USD rate\nBook a flight to Oslo", _call(EUR), "None of them can do this."])
    with dspy.context(lm=lm):
        assert MultiToolSelector(TOOLS, strategy="native-split")(request="EUR rate, and book me a flight to Oslo"
                                                                 ).decision.tool_calls == [EUR]
    lm, _ = scripted(["Bake a cake\nBook a flight", "No function fits.", "No function fits."])
    with dspy.context(lm=lm):
        assert MultiToolSelector(TOOLS, strategy="native-split")(request="Bake a cake and book a flight"
                                                                 ).decision.abstained


class SplitStagedLlama(StagedLlama):
    """A staged llama that also answers the split's plain chat call."""

    def __init__(self, split_answer, stages):
        super().__init__(stages)
        self.split_answer = split_answer

    def create_chat_completion(self, messages, **options):
        self.calls.append({"messages": messages, **options})
        return {"choices": [{"message": {"role": "assistant", "content": self.split_answer},
                             "finish_reason": "stop"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}


def test_native_strict_split_decodes_each_action_under_the_grammar(tmp_path):
    import dspy

    from tool_selection.lm import LocalEngine

    llama = SplitStagedLlama("Get the EUR to USD rate\nGet the GBP to USD rate",
                             ["<tool_call>\n", _call(EUR).removeprefix("<tool_call>\n"), "",
                              "<tool_call>\n", _call(GBP).removeprefix("<tool_call>\n"), ""])
    engine = LocalEngine(tmp_path / "m.gguf", llama=llama)
    engine.supports_native_tools = lambda: True
    lm = dspy.LM("local:fake", engine=engine, cache=False, temperature=0.0, max_tokens=200)
    with dspy.context(lm=lm):
        prediction = MultiToolSelector(TOOLS, strategy="native-strict-split")(request="EUR and GBP to USD rates?")
    assert prediction.decision.tool_calls == [EUR, GBP]
    assert sum(call.get("grammar") is not None for call in llama.calls) == 2


def _strict_selector_run(tmp_path, stages, strategy="native-strict-more", request="EUR and GBP to USD rates?"):
    import dspy

    from tests.lm.conftest import staged_lm

    lm, llama = staged_lm(tmp_path, stages, max_tokens=1000)
    with dspy.context(lm=lm):
        return MultiToolSelector(TOOLS, strategy=strategy)(request=request), llama


def _json(call: ToolCall) -> str:
    return _call(call).removeprefix("<tool_call>\n").removesuffix("\n</tool_call>")


def test_more_calls_are_opened_after_the_models_own_until_one_repeats(tmp_path):
    prediction, llama = _strict_selector_run(tmp_path, ["<tool_call>\n", _json(EUR), "", _json(GBP), _json(EUR)])
    assert prediction.decision.tool_calls == [EUR, GBP]
    forced = [call["prompt"] for call in llama.calls[3:]]
    assert all(prompt.endswith("<tool_call>\n") for prompt in forced) and len(forced) == 2
    assert _json(GBP) in forced[1] and forced[1].count("</tool_call>") == 2  # both calls closed


def test_more_calls_stop_at_their_budget_and_add_nothing_to_an_abstention(tmp_path):
    news = [ToolCall(tool_name="get_news", arguments={"topic": t}) for t in "abcde"]
    prediction, _ = _strict_selector_run(tmp_path, ["<tool_call>\n", _json(EUR), "", *map(_json, news)],
                                         request="EUR to USD, and news on a, b, c, d and e")
    assert prediction.decision.tool_calls == [EUR, *news[:3]]  # three more at most
    prediction, llama = _strict_selector_run(tmp_path, ["None of the functions can do this.", _json(EUR)])
    assert prediction.decision.abstained and len(llama.calls) == 1


def test_native_strict_asks_for_no_more_calls(tmp_path):
    prediction, llama = _strict_selector_run(tmp_path, ["<tool_call>\n", _json(EUR), "", _json(GBP)],
                                             strategy="native-strict")
    assert prediction.decision.tool_calls == [EUR] and len(llama.calls) == 3


def test_a_call_whose_values_the_request_does_not_spell_out_ends_the_answer(tmp_path):
    made_up = ToolCall(tool_name="get_exchange_rate", arguments={"base": "JPY", "quote": "USD"})
    prediction, _ = _strict_selector_run(tmp_path, ["<tool_call>\n", _json(EUR), "", _json(made_up), _json(GBP)])
    assert prediction.decision.tool_calls == [EUR]


@pytest.mark.parametrize("same_again", [
    ToolCall(tool_name="get_exchange_rate", arguments={"base": "USD", "quote": "EUR"}),  # values swapped
    ToolCall(tool_name="get_exchange_rate", arguments={"base": "eur", "quote": "usd"}),  # in other case
])
def test_a_call_that_adds_no_value_ends_the_answer(tmp_path, same_again):
    prediction, _ = _strict_selector_run(tmp_path, ["<tool_call>\n", _json(EUR), "", _json(same_again), _json(GBP)])
    assert prediction.decision.tool_calls == [EUR]


def test_another_function_with_the_same_values_is_kept(tmp_path):
    news = ToolCall(tool_name="get_news", arguments={"topic": "EUR"})
    prediction, _ = _strict_selector_run(tmp_path, ["<tool_call>\n", _json(EUR), "", _json(news), _json(EUR)],
                                         request="The EUR to USD rate and the news on the EUR")
    assert prediction.decision.tool_calls == [EUR, news]


def test_more_calls_take_the_form_of_the_models_own(tmp_path):
    prediction, llama = _strict_selector_run(tmp_path, ["```json\n", _json(EUR), "\n```", _json(GBP), _json(EUR)])
    assert prediction.decision.tool_calls == [EUR, GBP]
    assert llama.calls[-1]["prompt"].endswith("```\n```json\n") and "<tool_call>" not in llama.calls[-1]["prompt"]


def test_after_a_bare_call_more_calls_follow_as_json_lines(tmp_path):
    prediction, llama = _strict_selector_run(tmp_path, ["{", _json(EUR), "", _json(GBP), _json(EUR)])
    assert prediction.decision.tool_calls == [EUR, GBP]
    assert llama.calls[-1]["prompt"].endswith(_json(EUR) + "\n" + _json(GBP) + "\n")


def test_a_flipped_flag_or_reordered_list_adds_nothing_a_new_value_does():
    from tool_selection.lm.strict_calls import _adds_to

    case = ToolCall(tool_name="check_case", arguments={"case_id": 1234, "items": ["a b", "c"], "closed": True})
    assert not _adds_to([case], case.model_copy(update={"arguments": {**case.arguments, "closed": False}}))
    assert not _adds_to([case], case.model_copy(update={"arguments": {"case_id": 1234.0, "items": ["c", "A-B"]}}))
    assert _adds_to([case], case.model_copy(update={"arguments": {**case.arguments, "case_id": 5678}}))


def test_a_new_pairing_of_held_values_adds_a_call_a_swap_or_a_part_does_not():
    from tool_selection.lm.strict_calls import _adds_to

    def wins(team, season):
        return ToolCall(tool_name="win_rate", arguments={"team": team, "season": season})

    made = [wins("Lakers", 2018), wins("Bulls", 2020)]
    assert _adds_to(made, wins("Lakers", 2020))
    assert _adds_to(made, wins("Bulls", 2018.0))
    assert not _adds_to(made, wins("Bulls", 2020))
    assert not _adds_to(made, ToolCall(tool_name="win_rate", arguments={"team": "Lakers"}))
    assert not _adds_to(made[:1], ToolCall(tool_name="win_rate", arguments={"team": "2018", "season": "Lakers"}))
    swapped = [ToolCall(tool_name="route", arguments={"start": "Paris", "end": "Rome"}),
               ToolCall(tool_name="route", arguments={"start": "Rome", "end": "Oslo"})]
    assert not _adds_to(swapped, ToolCall(tool_name="route", arguments={"start": "Oslo", "end": "Paris"}))
    assert _adds_to(swapped, ToolCall(tool_name="route", arguments={"start": "Paris", "end": "Oslo"}))


def test_a_forced_call_may_come_back_only_where_the_request_writes_its_values_again():
    from tool_selection.lm.strict_calls import _answers, uncovered

    def route(start, end):
        return ToolCall(tool_name="route", arguments={"start": start, "end": end})

    there = [route("Paris", "Rome")]
    round_trip = "Route from Paris to Rome, then back from Rome to Paris"
    assert _answers(route("Rome", "Paris"), round_trip, there, uncovered(round_trip, there), [])
    assert not _answers(route("Paris", "Rome"), round_trip, there, uncovered(round_trip, there), [])  # a repeat
    one_way = "Route from Paris to Rome"
    assert not _answers(route("Rome", "Paris"), one_way, there, uncovered(one_way, there), [])  # a swap
    assert not _answers(ToolCall(tool_name="weather", arguments={"city": "Rome"}), one_way, there, [], [])
    assert _answers(ToolCall(tool_name="weather", arguments={"city": "Rome"}), one_way, there, [], ["weather"])


@pytest.mark.parametrize(("request_text", "left"), [
    ("Play Taylor Swift and Maroon 5 for 20 and 15 minutes", ["5", "15", "Maroon 5"]),
    ("What is the derivative of 3x^2 at 40 in m/s^2?", []),
    ("Can I get the gcd of 40 and 50?", []),
    ("Get the EUR to USD rate, then the GBP one.", ["GBP"]),
    ("Sell 3,000 at a 7% fee, 1e-9 apart", []),  # as values: 3000, 0.07 (or 7), 1e-09
    ("Sell 4,000 at a 8% fee", ["4,000", "8%"]),
])
def test_uncovered_lists_the_numbers_and_names_no_call_holds(request_text, left):
    from tool_selection.lm.strict_calls import uncovered

    calls = [ToolCall(tool_name="f", arguments={"a": "Taylor Swift", "n": 20, "gcd": [40, 50.0]}), EUR,
             ToolCall(tool_name="g", arguments={"amount": 3000, "fee": 0.07, "gap": 1e-09})]
    assert uncovered(request_text, calls) == left


def test_cover_opens_another_call_only_while_the_request_holds_an_unused_value(tmp_path):
    prediction, llama = _strict_selector_run(tmp_path, ["<tool_call>\n", _json(EUR), "", _json(GBP), _json(EUR)],
                                             strategy="native-strict-cover", request="The EUR and GBP to USD rates")
    assert prediction.decision.tool_calls == [EUR, GBP] and len(llama.calls) == 4  # no third call opened
    prediction, llama = _strict_selector_run(tmp_path, ["<tool_call>\n", _json(EUR), "", _json(GBP)],
                                             strategy="native-strict-cover", request="The EUR to USD rate")
    assert prediction.decision.tool_calls == [EUR] and len(llama.calls) == 3  # nothing left: no call opened


def test_cover_keeps_another_call_only_if_it_uses_a_value_left_unused(tmp_path):
    """A forced call that takes none of the request's unused values (another function with no arguments, or one on
    values already used) ends the answer: it is the model filling the slot, not the request asking for it."""
    news_eur = ToolCall(tool_name="get_news", arguments={"topic": "EUR"})
    prediction, _ = _strict_selector_run(tmp_path, ["<tool_call>\n", _json(EUR), "", _json(news_eur), _json(GBP)],
                                         strategy="native-strict-cover", request="The EUR and GBP to USD rates")
    assert prediction.decision.tool_calls == [EUR]  # GBP was left; the news call on EUR used none of it
    news_gbp = ToolCall(tool_name="get_news", arguments={"topic": "GBP"})
    prediction, _ = _strict_selector_run(tmp_path, ["<tool_call>\n", _json(EUR), "", _json(news_gbp)],
                                         strategy="native-strict-cover", request="The EUR to USD rate, GBP news")
    assert prediction.decision.tool_calls == [EUR, news_gbp]


def test_a_value_the_first_call_filled_in_may_stand_in_the_next(tmp_path):
    """The request names EUR and GBP but not USD: the model's own first call chose USD, and a forced call on GBP that
    keeps it is grounded (a default filled in the same way); a value neither the request nor a call holds is not."""
    prediction, _ = _strict_selector_run(tmp_path, ["<tool_call>\n", _json(EUR), "", _json(GBP)],
                                         strategy="native-strict-cover", request="The EUR and GBP rates")
    assert prediction.decision.tool_calls == [EUR, GBP]
    yen = ToolCall(tool_name="get_exchange_rate", arguments={"base": "GBP", "quote": "JPY"})
    prediction, _ = _strict_selector_run(tmp_path, ["<tool_call>\n", _json(EUR), "", _json(yen)],
                                         strategy="native-strict-cover", request="The EUR and GBP rates")
    assert prediction.decision.tool_calls == [EUR]


def test_cover_opens_a_call_for_a_function_the_request_names_and_no_call_uses(tmp_path):
    news = ToolCall(tool_name="get_news", arguments={"topic": "EUR"})
    prediction, llama = _strict_selector_run(tmp_path, ["<tool_call>\n", _json(EUR), "", _json(news), _json(EUR)],
                                             strategy="native-strict-cover", request="The EUR to USD rate, and news on it")
    assert prediction.decision.tool_calls == [EUR, news] and len(llama.calls) == 4  # nothing named is left after it


def test_a_call_not_kept_is_opened_again_for_the_function_the_request_names(tmp_path):
    """The model asked for another call repeats the one it made; the request names a function no call uses, so the
    call is opened once more under a grammar of that function alone."""
    news = ToolCall(tool_name="get_news", arguments={"topic": "GBP"})
    stages = ["<tool_call>\n", _json(EUR), "", _json(EUR), _json(news)]
    prediction, llama = _strict_selector_run(tmp_path, stages, strategy="native-strict-cover",
                                             request="The EUR to USD rate, and news on GBP")
    assert prediction.decision.tool_calls == [EUR, news] and len(llama.calls) == 5
    first, again = llama.calls[3]["grammar"]._grammar, llama.calls[4]["grammar"]._grammar
    assert "get_exchange_rate" in first and "get_exchange_rate" not in again and "get_news" in again
    stages = ["<tool_call>\n", _json(EUR), "", _json(EUR), _json(EUR)]
    prediction, llama = _strict_selector_run(tmp_path, stages, strategy="native-strict-more",
                                             request="The EUR to USD rate, and news on it")
    assert prediction.decision.tool_calls == [EUR] and len(llama.calls) == 4  # without the coverage check: no retry


def test_a_call_opened_again_is_kept_only_if_it_uses_a_value_left_unused(tmp_path):
    """The call the narrowed grammar forces was not the model's choice: "news" naming get_news is not enough, the
    call must also take a value no call holds, else the answer ends without it."""
    news = ToolCall(tool_name="get_news", arguments={"topic": "EUR"})
    stages = ["<tool_call>\n", _json(EUR), "", _json(EUR), _json(news)]
    prediction, llama = _strict_selector_run(tmp_path, stages, strategy="native-strict-cover",
                                             request="The EUR to USD rate, and news on it")
    assert prediction.decision.tool_calls == [EUR] and len(llama.calls) == 5  # opened again, and not kept


def test_a_call_opened_again_is_kept_where_a_clause_of_its_own_asks_for_its_function(tmp_path):
    """"Then the news on it" asks for get_news apart from the rate: the narrowed call is kept on values already used,
    without an optional argument the request does not write; a required one made up refuses it."""
    import dspy

    from tests.lm.conftest import staged_lm

    news = {**NEWS, "parameters": {"type": "object", "required": ["topic"], "properties": {
        "topic": {"type": "string"}, "language": {"type": "string"}}}}
    tools = from_openai([RATE, news], name="fx")
    request = "The EUR to USD rate. Then the news on it"
    for written, kept in [({"topic": "EUR", "language": "French"}, [{"topic": "EUR"}]), ({"topic": "Bitcoin"}, [])]:
        stages = ["<tool_call>\n", _json(EUR), "", _json(EUR), _json(ToolCall(tool_name="get_news", arguments=written))]
        lm, llama = staged_lm(tmp_path, stages, max_tokens=1000)
        with dspy.context(lm=lm):
            prediction = MultiToolSelector(tools, strategy="native-strict-cover")(request=request)
        assert prediction.decision.tool_calls == [EUR, *(ToolCall(tool_name="get_news", arguments=a) for a in kept)]
        assert len(llama.calls) == 5


def test_where_the_call_for_every_named_function_is_refused_the_asked_ones_are_opened_alone(tmp_path):
    """The request names get_news and get_weather ("weather" in the first clause, which the rate's call answers);
    only "news" is asked apart. The call under the grammar of both takes the weather and is refused; the call
    opened under the grammar of get_news alone is kept."""
    import dspy

    from tests.lm.conftest import staged_lm

    weather = {"name": "get_weather", "description": "The weather in a city.",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    news = ToolCall(tool_name="get_news", arguments={"topic": "EUR"})
    stages = ["<tool_call>\n", _json(EUR), "", _json(EUR),
              _json(ToolCall(tool_name="get_weather", arguments={"city": "EUR"})), _json(news)]
    lm, llama = staged_lm(tmp_path, stages, max_tokens=1000)
    with dspy.context(lm=lm):
        selector = MultiToolSelector(from_openai([RATE, NEWS, weather], name="fx"), strategy="native-strict-cover")
        prediction = selector(request="The EUR to USD rate for a weather bet. Then the news on it")
    assert prediction.decision.tool_calls == [EUR, news]  # the weather, still named, gets nothing kept after it
    both, asked = llama.calls[4]["grammar"]._grammar, llama.calls[5]["grammar"]._grammar
    assert "get_weather" in both and "get_news" in both and "get_weather" not in asked and "get_news" in asked


@pytest.mark.parametrize(("request_text", "called", "named", "asked"), [
    ("Add P2006 to my cart and then check out", "add_to_cart", ["checkout"], ["checkout"]),
    ("Add P2006 to my cart and check out", "add_to_cart", ["checkout"], []),  # one clause
    ("Check out. Then add P2006 to my cart", "add_to_cart", ["checkout"], ["checkout"]),
    ("Any synonyms for tired? Count the words too.", "find_synonyms", ["count_words"], []),  # its description's word
    ("Synonyms for tired. Then the cart", "find_synonyms", ["view_cart"], ["view_cart"]),
    ("Tired: synonyms and the cart", "find_synonyms", ["view_cart"], []),  # the clause that names it is the call's
    ("user: Show the cart.\nassistant: Empty.\nuser: Synonyms for tired", "find_synonyms", ["view_cart"], []),
    ("user: Hi\nassistant: Hello\nuser: Synonyms for tired. Then the cart", "find_synonyms", ["view_cart"],
     ["view_cart"]),  # a conversation asks in its last user turn
])
def test_asked_apart_reads_the_clauses_of_the_request(request_text, called, named, asked):
    from tool_selection.lm.strict_calls import asked_apart

    descriptions = {"add_to_cart": "Add a product to the shopping cart.",
                    "find_synonyms": "Find words with the same meaning as a word."}
    call = ToolCall(tool_name=called, arguments={})
    assert asked_apart(request_text, [call], named, descriptions) == asked


def test_a_narrowed_grammar_admits_only_the_named_functions():
    from tool_selection.lm.grammar import narrowed_grammar
    from tool_selection.strategies.native import call_schema

    tools = [{"type": "function", "function": tool} for tool in (RATE, NEWS)]
    response_format = {"type": "json_schema", "schema": call_schema(tools)}
    llama = type("Accepting", (), {"accepts_grammar": lambda self, grammar: True})()
    grammar = narrowed_grammar(llama, response_format, ["get_news"])._grammar
    assert "get_news" in grammar and "get_exchange_rate" not in grammar
    assert narrowed_grammar(llama, response_format, ["get_weather"]) is None


def _rate(base: str, quote: str) -> ToolCall:
    return ToolCall(tool_name="get_exchange_rate", arguments={"base": base, "quote": quote})


@pytest.mark.parametrize(("request_text", "made", "left"), [
    ("Rates of EUR and GBP to USD and JPY", [_rate("EUR", "USD"), _rate("GBP", "JPY")],
     ["get_exchange_rate: base=eur, quote=jpy", "get_exchange_rate: base=gbp, quote=usd"]),
    ("Rates of EUR and GBP to USD and JPY", [_rate("EUR", "USD"), _rate("GBP", "JPY"), _rate("GBP", "USD")],
     ["get_exchange_rate: base=eur, quote=jpy"]),
    ("Rates of EUR and GBP to USD and JPY respectively", [_rate("EUR", "USD"), _rate("GBP", "JPY")], []),
    ("The EUR to USD rate, then the GBP to JPY one", [_rate("EUR", "USD"), _rate("GBP", "JPY")], []),  # not listed
    ("Rates of EUR and GBP to USD", [_rate("EUR", "USD"), _rate("GBP", "USD")], []),  # one list
])
def test_unpaired_lists_the_pairings_of_two_listed_lists_no_call_makes(request_text, made, left):
    from tool_selection.lm.strict_calls import unpaired

    assert unpaired(request_text, made) == left


def test_cover_opens_calls_for_the_pairings_the_models_own_calls_leave_out(tmp_path):
    own = ["<tool_call>\n", _json(_rate("EUR", "USD")), "\n</tool_call>\n<tool_call>\n", _json(_rate("GBP", "JPY")), ""]
    prediction, llama = _strict_selector_run(
        tmp_path, [*own, _json(_rate("EUR", "JPY")), _json(_rate("GBP", "USD")), _json(_rate("EUR", "USD"))],
        strategy="native-strict-cover", request="Rates of EUR and GBP to USD and JPY")
    assert prediction.decision.tool_calls == [_rate("EUR", "USD"), _rate("GBP", "JPY"), _rate("EUR", "JPY"),
                                              _rate("GBP", "USD")]
    assert len(llama.calls) == 7  # five stages of its own, two forced; every pairing made: no further call
    prediction, llama = _strict_selector_run(tmp_path, [*own, _json(_rate("EUR", "JPY"))],
                                             strategy="native-strict-cover",
                                             request="Rates of EUR and GBP to USD and JPY respectively")
    assert prediction.decision.tool_calls == [_rate("EUR", "USD"), _rate("GBP", "JPY")] and len(llama.calls) == 5
