import json

import pytest

WEATHER = {"name": "get_weather", "description": "Current weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City."}},
                          "required": ["city"]}}
CLOCK = {"name": "get_time", "description": "Current time in a city.",
         "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City."}},
                        "required": ["city"]}}


def make_cases():
    cases = []
    for i, city in enumerate(["Oslo", "Paris", "Rome", "Lima", "Kyiv", "Baku"]):
        cases.append({"id": f"w-{i}", "request": f"What is the weather in {city}?", "tools": [WEATHER, CLOCK],
                      "expected_calls": [{"tool_name": "get_weather", "arguments": {"city": city}}],
                      "tags": ["single"], "split": "test" if i % 2 else "train"})
    cases.append({"id": "none-1", "request": "Tell me a joke about cats", "tools": [WEATHER, CLOCK],
                  "expected_calls": [], "tags": ["no_tool"], "split": "test"})
    cases.append({"id": "multi-1", "request": "Weather and time in Quito?", "tools": [WEATHER, CLOCK],
                  "expected_calls": [{"tool_name": "get_weather", "arguments": {"city": "Quito"}},
                                     {"tool_name": "get_time", "arguments": {"city": "Quito"}}],
                  "tags": ["multi"], "split": "test"})
    return cases


@pytest.fixture
def suite_path(tmp_path):
    path = tmp_path / "mini.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in make_cases()) + "\n")
    return path
