"""10,000 generated answers, however pathological, through every strategy's decide(): each becomes a decision
(calls, an abstention or a scored parse failure) whose row can be written, never an exception."""

import json
import random
import time

import dspy

from tests.core.tools_fixture import Add, Echo, Now
from tests.lm.conftest import FakeLlama
from tool_selection import ToolSet
from tool_selection.selector import MultiToolSelector

TOOLS = ToolSet(name="fixture", tools=(Echo, Add, Now))
STRATEGIES = ("json-cot", "json", "native", "native-cot", "text:fenced", "text:call", "text:tags", "chat-cot")
ANSWERS = 10_000


def _value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 3 else 5)
    return [lambda: rng.randrange(-10**6, 10**6), lambda: rng.choice(["1e999", "-1e999", "NaN", "Infinity"]),
            lambda: "".join(rng.choice("ab\ud800\udfff\u202e\x00é\"\\{}[]<>") for _ in range(rng.randrange(8))),
            lambda: rng.choice([True, False, None]), lambda: rng.random(),
            lambda: [_value(rng, depth + 1) for _ in range(rng.randrange(3))],
            lambda: {str(rng.randrange(9)): _value(rng, depth + 1) for _ in range(rng.randrange(3))},
            lambda: "x" * rng.choice([0, 10, 5000]), lambda: "\ud800" * 3][kind]()


def _call(rng: random.Random) -> str:
    name = rng.choice(["echo", "add_numbers", "get_time", "launch", "", "\ud800", "a" * 300])
    arguments = {rng.choice(["message", "a", "b", "times", "zz"]): _value(rng) for _ in range(rng.randrange(4))}
    text = json.dumps({"name": name, "tool_name": name, "arguments": arguments}, ensure_ascii=False)
    return text.replace('"1e999"', "1e999").replace('"NaN"', "NaN")


def fuzzed_answer(rng: random.Random) -> str:
    depth = rng.choice([10, 100, 2000])
    shapes = [
        lambda: "<tool_call>" + _call(rng) + rng.choice(["</tool_call>", "", "</tool"]),
        lambda: "```json\n" + _call(rng) + "\n```",
        lambda: "```tool\n" + _call(rng) + "\n```",
        lambda: "<tool>" + _call(rng) + "</tool>",
        lambda: "TOOL_CALL: echo(message=" + rng.choice(['"hi"', "(" * depth, "[" * depth, "1e999", "x"]) + ")",
        lambda: json.dumps({"reasoning": _value(rng), "tool_calls": [json.loads(_call(rng).replace("1e999", "1")
                                                                                .replace("NaN", "0"))]}),
        lambda: '{"reasoning": "' + "\ud800" * 5 + '", "tool_calls": ' + "[" * depth + "]" * depth + "}",
        lambda: "{" * depth + "}" * rng.choice([0, depth]),
        lambda: "x" * rng.choice([1, 30_000, 200_000]),
        lambda: "".join(chr(rng.randrange(0x10FFFF)) for _ in range(50) if not 0xD800 <= rng.randrange(0xE000) < 0),
        lambda: "[[ ## reasoning ## ]]\n" + str(_value(rng)) + "\n[[ ## tool_calls ## ]]\n" + _call(rng),
        lambda: "",
    ]
    return rng.choice(shapes)()


def test_ten_thousand_fuzzed_answers_are_decisions_never_exceptions(tmp_path):
    rng = random.Random(20261123)
    answers = [fuzzed_answer(rng) for _ in range(ANSWERS)]
    per_strategy = ANSWERS // len(STRATEGIES)
    outcomes = {"calls": 0, "abstained": 0, "parse_error": 0}
    start = time.perf_counter()
    for index, strategy in enumerate(STRATEGIES):
        chunk = answers[index * per_strategy:(index + 1) * per_strategy]
        llama = FakeLlama(chunk)
        from tool_selection.lm import LocalEngine

        engine = LocalEngine(tmp_path / "fake.gguf", llama=llama, spec="local:fake", constrained=True)
        lm = dspy.LM("local:fake", engine=engine, cache=False, num_retries=0)
        selector = MultiToolSelector(TOOLS, strategy=strategy)
        with dspy.context(lm=lm):
            for _ in chunk:
                prediction = selector(request="do it")
                decision = prediction.decision
                row = {"decision": decision.model_dump(), "raw": prediction.get("raw_response")}
                json.dumps(row, ensure_ascii=False, default=str).encode("utf-8")  # the row can be written
                outcomes["parse_error" if decision.parse_error else "calls" if decision.tool_calls
                         else "abstained"] += 1
    elapsed = time.perf_counter() - start
    assert sum(outcomes.values()) == per_strategy * len(STRATEGIES) >= 9_990
    assert all(outcomes.values()), outcomes  # the generator reaches every outcome
    print(f"\n{sum(outcomes.values())} fuzzed answers in {elapsed:.1f} s: {outcomes}")
