import datetime as dt

import pytest

from tool_selection.decision import ToolCall
from tool_selection.lm.request_values import meanings, number_of, same_meaning, written_values
from tool_selection.lm.strict_calls import _grounded, uncovered


@pytest.mark.parametrize(("text", "expected"), [
    ("3,000", (3000.0,)),
    ("7%", (7.0, 0.07)),
    ("1.267 billion", (1.267e9,)),
    ("20k", (20000.0,)),
    ("5m", (5.0, 5e6)),
    ("2kg", (2.0,)),
    ("-3", (-3.0,)),
    ("Paris", ()),
])
def test_a_number_means_what_its_scale_or_unit_says(text, expected):
    assert number_of(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["April 5, 2022", "5 April 2022", "Apr. 5 2022", "2022-04-05", "04/05/2022",
                                  "Apr 5th, 2022"])
def test_the_common_spellings_of_a_date_mean_the_same_day(text):
    assert meanings(text) == (dt.date(2022, 4, 5),)


def test_a_date_that_names_no_day_is_not_a_date():
    assert not any(isinstance(meaning, dt.date) for meaning in meanings("2022-02-30"))


def test_a_request_s_date_is_one_value_not_a_name_and_a_number():
    found = [text for text, _ in written_values("Book Queens Hotel from March 10, 2022 to March 20, 2022 for 2")]
    assert found == ["March 10, 2022", "March 20, 2022", "2", "Queens Hotel"]


def test_numbers_and_dates_compare_by_value():
    assert same_meaning((0.07,), (7e-2,)) and not same_meaning((0.07,), (0.7,))
    assert same_meaning((dt.date(2022, 4, 5),), (1.0, dt.date(2022, 4, 5)))
    assert not same_meaning((2022.0,), (dt.date(2022, 4, 5),))


def test_a_value_written_in_another_spelling_is_grounded_and_covered():
    request = ("Check 'Queens Hotel' from March 10, 2022 to March 20, 2022 and 'Royal Hotel' from April 5, 2022 "
               "to April 15, 2022 for 1.341 billion at 50%")
    first = ToolCall(tool_name="check", arguments={"hotel": "Queens Hotel", "check_in": "2022-03-10",
                                                   "check_out": "2022-03-20"})
    second = ToolCall(tool_name="check", arguments={"hotel": "Royal Hotel", "check_in": "2022-04-05",
                                                    "check_out": "04/15/2022", "amount": 1341000000, "rate": 0.5})
    assert _grounded(second, request, [first])
    assert not _grounded(second.model_copy(update={"arguments": {"check_in": "2022-04-06"}}), request, [first])
    # quoted names are not read whole; "Hotel'", written twice, is held once
    assert uncovered(request, [first]) == ["April 5, 2022", "April 15, 2022", "1.341 billion", "50%", "Hotel'"]
    assert uncovered(request, [first, second]) == []


def test_a_number_with_its_unit_attached_is_read_as_a_value():
    request = "The circumference of circles of radius 5m, 10m and 15m"
    first = ToolCall(tool_name="circumference", arguments={"radius": 5, "units": "m"})
    assert uncovered(request, [first]) == ["10m", "15m"]


@pytest.mark.parametrize(("text", "numbers"), [
    ("the factorial of 5,10 and 15", ["5", "10", "15"]),  # a comma before other than three digits lists numbers
    ("for 1,5 and 10 years", ["1", "5", "10"]),
    ("a loan of 3,000 over 1,234.5 days", ["3,000", "1,234.5"]),  # thousands stay one number
    ("points A(3,4) and B(1,2)", ["3", "4", "1", "2"]),
])
def test_numbers_listed_with_commas_are_read_one_by_one(text, numbers):
    assert [value for value, means in written_values(text) if means] == numbers


def test_a_number_glued_to_a_letter_grounds_a_value_but_is_not_asked_for():
    """"5x^2 - 7x + 3 = 0" writes the coefficients 5 and -7: a forced call that takes them is not making them up,
    though the coverage check does not ask for a call to use them (3x is not a value a request asks to be used)."""
    request = "Roots of 3x^2 + 4x + 2 = 0 and of 5x^2 - 7x + 3 = 0, and of the 18th case"
    first = ToolCall(tool_name="roots", arguments={"a": 3, "b": 4, "c": 2})
    assert _grounded(ToolCall(tool_name="roots", arguments={"a": 5, "b": -7, "c": 3}), request, [first])
    assert _grounded(ToolCall(tool_name="case", arguments={"n": 18}), request, [first])
    assert not _grounded(ToolCall(tool_name="roots", arguments={"a": 6, "b": -7, "c": 3}), request, [first])
    assert uncovered(request, [first]) == ["0", "0"]


def test_a_value_is_grounded_by_its_stem_not_by_a_part_of_a_word():
    request = "I am melting 500 grams of ice, then vaporizing it and condensing it back"
    melting = ToolCall(tool_name="energy", arguments={"mass": 500, "phase_transition": "melting"})

    def phase(name):
        return melting.model_copy(update={"arguments": {"mass": 500, "phase_transition": name}})

    assert _grounded(phase("vaporization"), request, [melting])
    assert _grounded(phase("condensation"), request, [melting])
    assert not _grounded(phase("freezing"), request, [melting])
    assert not _grounded(phase("vapor pressure"), request, [melting])


def test_a_function_the_request_names_and_no_call_uses_is_left_to_call():
    from tool_selection.lm.strict_calls import uncalled

    request = "Get the temperature and humidity forecast for Boston. Also compute the total distance."
    names = ["weather_forecast_temperature", "weather_forecast_humidity", "weather_get_wind", "kinematics.distance"]
    first = ToolCall(tool_name="weather_forecast_temperature", arguments={"location": "Boston"})
    assert uncalled(request, [first], names) == ["weather_forecast_humidity", "kinematics.distance"]
    assert uncalled("Get the temperature forecast for Boston", [first], names) == []  # "forecast": a called name's
    assert uncalled("Get the data", [], ["get_data", "getDataInfo"]) == []  # generic words name nothing
    cart = ToolCall(tool_name="add_to_cart", arguments={"product_id": "P2006"})
    assert uncalled("Add P2006 to my cart and then check out", [cart], ["add_to_cart", "checkout"]) == ["checkout"]


def test_a_capitalised_code_in_parentheses_is_a_written_value():
    request = "Put two packs of socks (P3006) and six of toothbrushes (P6004) in my basket"
    assert [text for text, _ in written_values(request)] == ["P3006", "P6004"]


def test_a_value_written_twice_is_left_until_two_calls_hold_it():
    request = "Route from San Francisco to Palo Alto, then from Palo Alto to San Jose, then back to San Francisco"

    def route(start, end):
        return ToolCall(tool_name="route", arguments={"start": start, "end": end})

    assert uncovered(request, [route("San Francisco", "Palo Alto")]) == ["San Francisco", "Palo Alto", "San Jose"]
    assert uncovered(request, [route("San Francisco", "Palo Alto"), route("Palo Alto", "San Jose")]) == [
        "San Francisco"]
    assert uncovered(request, [route("San Francisco", "Palo Alto"), route("Palo Alto", "San Jose"),
                               route("San Jose", "San Francisco")]) == []
    assert uncovered("Solve a = 1, b = 2, c = 1", [ToolCall(tool_name="solve", arguments={"a": 1, "b": 2, "c": 1})]) == []


@pytest.mark.parametrize(("request_text", "values", "listed"), [
    ("The price per ounce of gold, silver, platinum, and palladium?", ["gold"], ["silver", "platinum", "palladium"]),
    ("The price per ounce of gold, silver, platinum, and palladium?", ["palladium"], ["platinum", "silver", "gold"]),
    ("Win rates of Lakers and Bulls in seasons 2018 and 2020", ["Lakers", "2020"], ["Bulls", "2018"]),
    ("Sequences of human HbA1c, normal hemoglobin, and rat hemoglobin", ["human HbA1c"],
     ["normal hemoglobin", "rat hemoglobin"]),
    ("Resistance with copper or aluminum", ["copper"], ["aluminum"]),
    ("Play Taylor Swift and Maroon 5 for 20 and 15 minutes", ["Taylor Swift", "20"], ["Maroon 5", "15"]),
    ("Play Taylor Swift and Maroon 5", ["Maroon 5"], ["Taylor Swift"]),  # not the sentence's first word
    ("Rank Barcelona and Real Madrid in the UEFA Champions League and La Liga respectively",
     ["UEFA Champions League", "Barcelona"], ["La Liga", "Real Madrid"]),  # a name is its capitalised words
    ("Book a table in Boston and then call me", ["Boston"], []),  # a clause, not a listed item
    ("Area with base 10 and height 5", ["10"], []),  # a word is not listed beside a number
    ("Area with a = 1, b = 2, and c = 3", ["1"], []),
])
def test_coordinated_lists_the_items_written_beside_a_value(request_text, values, listed):
    from tool_selection.lm.request_values import coordinated

    assert coordinated(request_text, values) == listed


def test_listed_items_no_call_holds_are_uncovered():
    request = "What is the current price per ounce of gold, silver and palladium?"
    gold = ToolCall(tool_name="price", arguments={"metal": "gold", "measure": "ounce"})
    assert uncovered(request, [gold]) == ["silver", "palladium"]
    assert uncovered(request, [gold, *(gold.model_copy(update={"arguments": {"metal": metal}})
                                       for metal in ("silver", "palladium"))]) == []
