"""Benchmark the local engine: DSPy's path against raw llama-cpp-python, and the gain from KV-cache prefix reuse.

    python -m evals.benchmarks.local_engine [--model local:qwen2.5-coder-0.5b] [--n 50] [--max-tokens 32]

Prompts are tool-selection decisions of about 500-1500 tokens: a tool catalog (the repo's domain tool sets,
padded with made-up tools built through ``interop.from_openai``) and a request (from the domain's suite when
there is one). Prompts come in groups of ``--group`` that share one catalog, as consecutive decisions over one
tool set do, so the prompt prefix repeats.

Three modes see the same prompts, in the same order, each on its own ``Llama`` (so no mode warms another's KV
cache), with a fixed ``max_tokens`` and greedy decoding; the modes take turns group by group, in rotating order,
so that noise on a shared machine falls on all of them:

- dspy:  ``dspy.Predict`` over a small signature with ChatAdapter, through ``get_lm`` (cache off);
- raw:   ``Llama.create_chat_completion`` with the messages ChatAdapter formats for the same inputs;
- reset: raw, with ``Llama.reset()`` before each call (no prefix reuse).
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import dspy

from tool_selection import interop
from tool_selection.defaults import DEFAULT_MODEL
from tool_selection.toolset import available_tool_sets, load_tool_set

__all__ = ["main"]

SYNTHETIC_TOOLS = [
    ("get_weather", "Current weather and a short forecast for a city.",
     {"city": ("string", "City name, e.g. 'Lisbon'"), "days": ("integer", "Forecast days, 1-7")}),
    ("send_email", "Send an email from the user's account.",
     {"to": ("string", "Recipient address"), "subject": ("string", "Subject line"), "body": ("string", "Text")}),
    ("search_flights", "Search flights between two airports on a date.",
     {"origin": ("string", "IATA code"), "destination": ("string", "IATA code"), "date": ("string", "YYYY-MM-DD")}),
    ("book_hotel", "Book a hotel room for given dates.",
     {"city": ("string", "City"), "check_in": ("string", "YYYY-MM-DD"), "nights": ("integer", "Number of nights")}),
    ("convert_currency", "Convert an amount between two currencies at today's rate.",
     {"amount": ("number", "Amount"), "from_currency": ("string", "ISO code"), "to_currency": ("string", "ISO code")}),
    ("create_calendar_event", "Add an event to the user's calendar.",
     {"title": ("string", "Event title"), "start": ("string", "ISO datetime"), "minutes": ("integer", "Duration")}),
    ("translate_text", "Translate text into another language.",
     {"text": ("string", "Text to translate"), "target_language": ("string", "ISO 639-1 code")}),
    ("search_web", "Search the web and return the top results.",
     {"query": ("string", "Search terms"), "max_results": ("integer", "How many results, at most 10")}),
    ("read_file", "Read a text file from the user's workspace.",
     {"path": ("string", "Path relative to the workspace")}),
    ("run_sql", "Run a read-only SQL query against the analytics database.",
     {"query": ("string", "A SELECT statement")}),
    ("set_reminder", "Remind the user of something at a given time.",
     {"text": ("string", "What to remind"), "at": ("string", "ISO datetime")}),
    ("get_stock_quote", "Latest price and daily change of a stock.",
     {"symbol": ("string", "Ticker symbol")}),
    ("play_music", "Play a song, album or playlist.",
     {"query": ("string", "What to play"), "shuffle": ("boolean", "Shuffle the tracks")}),
    ("get_directions", "Driving, walking or transit directions between two places.",
     {"origin": ("string", "Start address"), "destination": ("string", "End address"),
      "mode": ("string", "driving, walking or transit")}),
    ("order_food", "Order food for delivery from a restaurant.",
     {"restaurant": ("string", "Restaurant name"), "items": ("string", "Comma-separated dishes")}),
    ("summarize_document", "Summarize a long document in a few sentences.",
     {"path": ("string", "Document path"), "sentences": ("integer", "Length of the summary")}),
]
SYNTHETIC_REQUESTS = [
    "Will I need an umbrella in Oslo this weekend?", "Email Dana that the review moved to Friday.",
    "Find me a flight from BOS to SFO on 2025-03-14.", "How many euros is 250 US dollars?",
    "Put 'dentist' on my calendar tomorrow at 9 for 30 minutes.", "What does 'merci beaucoup' mean in German?",
    "Look up recent news about solar panels.", "Show me what's in notes/todo.txt.",
    "How many orders did we get last week? Query the analytics DB.", "Remind me to call mom at 6pm.",
    "How is AAPL doing today?", "Play some jazz on shuffle.", "How do I walk from the station to the museum?",
    "Order two margheritas from Luigi's.", "Give me a three-sentence summary of reports/q3.pdf.",
]
TARGET_TOKENS = (600, 1000, 1400, 800, 1200, 500, 1500, 900, 1300, 700)


class SelectTool(dspy.Signature):
    """Choose the one tool that best serves the user's request."""

    tools: str = dspy.InputField(desc="the available tools")
    request: str = dspy.InputField(desc="the user's request")
    tool_name: str = dspy.OutputField(desc="the exact name of the chosen tool")


@dataclass
class Mode:
    """One way of running the prompts, and what it measured."""

    name: str
    seconds: list[float] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)
    completion_tokens: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    failures: int = 0
    lm_calls: int = 0
    perf: dict[str, float] = field(default_factory=lambda: {"t_p_eval_ms": 0.0, "n_p_eval": 0, "t_eval_ms": 0.0,
                                                            "n_eval": 0})


def _synthetic_tools() -> list:
    functions = [{"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "required": [next(iter(args))],
                       "properties": {k: {"type": t, "description": d} for k, (t, d) in args.items()}}}}
        for name, description, args in SYNTHETIC_TOOLS]
    return list(interop.from_openai(functions, name="benchmark").tools())


def _domain_sources() -> list[tuple[str, list, list[str]]]:
    """(name, tools, requests) for every domain tool set that loads, with its suite's requests when present."""
    sources = []
    suites = Path(__file__).resolve().parents[1] / "suites"
    for name in available_tool_sets():
        try:
            tools = list(load_tool_set(name).tools)
        except Exception as error:
            print(f"  (tool set {name!r} left out: {type(error).__name__}: {error})")
            continue
        requests = []
        suite = suites / f"{name}.jsonl"
        if suite.is_file():
            for line in suite.read_text().splitlines():
                case = json.loads(line) if line.strip() else {}
                if case.get("tool_set") == name and case.get("request"):
                    requests.append(case["request"])
        sources.append((name, tools, requests or SYNTHETIC_REQUESTS))
    return sources


def build_prompts(n: int, group: int, count_tokens) -> list[dict[str, str]]:
    """``n`` prompt inputs ({"tools", "request"}) in groups of ``group`` sharing a catalog of a target size."""
    synthetic = _synthetic_tools()
    sources = _domain_sources() + [("synthetic", synthetic, SYNTHETIC_REQUESTS)]
    prompts = []
    for index in range((n + group - 1) // group):
        _, tools, requests = sources[index % len(sources)]
        pool = tools + [t for t in synthetic if t not in tools]
        target = TARGET_TOKENS[index % len(TARGET_TOKENS)]
        chosen = []
        for tool in pool:
            chosen.append(tool)
            if count_tokens("\n\n".join(interop.to_text(t) for t in chosen), requests[0]) >= target:
                break
        catalog = "\n\n".join(interop.to_text(t) for t in chosen)
        start = (index * group) % len(requests)
        for request in itertools.islice(itertools.cycle(requests), start, start + group):
            prompts.append({"tools": catalog, "request": request})
    return prompts[:n]


def _perf(llama) -> dict[str, float]:
    import llama_cpp

    data = llama_cpp.llama_perf_context(llama._ctx.ctx)
    return {"t_p_eval_ms": data.t_p_eval_ms, "n_p_eval": data.n_p_eval, "t_eval_ms": data.t_eval_ms,
            "n_eval": data.n_eval}


def _add_perf(mode: Mode, before: dict[str, float], after: dict[str, float]) -> None:
    for key in mode.perf:
        mode.perf[key] += after[key] - before[key]


def run(model: str, n: int, max_tokens: int, group: int, n_threads: int | None) -> dict[str, Mode]:
    import llama_cpp

    from tool_selection.lm import LocalEngineOptions, get_lm

    lm = get_lm(model, cache=False, max_tokens=max_tokens, temperature=0.0,
                local=LocalEngineOptions(n_threads=n_threads))
    engine = lm.engine
    adapter = dspy.ChatAdapter(use_json_adapter_fallback=False)
    predict = dspy.Predict(SelectTool)
    raw_llamas = {name: llama_cpp.Llama(model_path=str(engine.model_path), verbose=False,
                                        **engine.settings.llama_kwargs()) for name in ("raw", "reset")}
    dspy_llama = engine.model.llama

    def messages(inputs):
        return adapter.format(SelectTool, demos=[], inputs=inputs)

    def count_tokens(tools: str, request: str) -> int:
        text = "".join(m["content"] for m in messages({"tools": tools, "request": request}))
        return len(raw_llamas["raw"].tokenize(text.encode("utf-8"), add_bos=False, special=True))

    prompts = build_prompts(n, group, count_tokens)
    modes = {name: Mode(name) for name in ("dspy", "raw", "reset")}

    def call_raw(name: str, inputs) -> None:
        mode, llama = modes[name], raw_llamas[name]
        if name == "reset":
            llama.reset()
        before = _perf(llama)
        start = time.perf_counter()
        out = llama.create_chat_completion(messages=messages(inputs), temperature=0.0, max_tokens=max_tokens)
        mode.seconds.append(time.perf_counter() - start)
        _add_perf(mode, before, _perf(llama))
        mode.prompt_tokens.append(out["usage"]["prompt_tokens"])
        mode.completion_tokens.append(out["usage"]["completion_tokens"])
        mode.texts.append(out["choices"][0]["message"]["content"] or "")

    def call_dspy(inputs) -> None:
        mode, calls = modes["dspy"], len(lm.history)
        before = _perf(dspy_llama)
        start = time.perf_counter()
        try:
            with dspy.context(lm=lm, adapter=adapter):
                predict(**inputs)
        except Exception:
            mode.failures += 1
        mode.seconds.append(time.perf_counter() - start)
        _add_perf(mode, before, _perf(dspy_llama))
        entries = lm.history[calls:]
        mode.lm_calls += len(entries)
        mode.prompt_tokens.append(sum(e["usage"].get("prompt_tokens", 0) for e in entries))
        mode.completion_tokens.append(sum(e["usage"].get("completion_tokens", 0) for e in entries))
        mode.texts.append(str(entries[-1]["outputs"][0]) if entries else "")

    runners = {"dspy": call_dspy, "raw": lambda inputs: call_raw("raw", inputs),
               "reset": lambda inputs: call_raw("reset", inputs)}
    warmup = {"tools": "ping: replies pong", "request": "ping"}
    for name, runner in runners.items():
        runner(warmup)
        modes[name] = Mode(name)
    order = list(runners)
    for index, start in enumerate(range(0, len(prompts), group)):
        block = prompts[start:start + group]
        for name in order[index % 3:] + order[:index % 3]:
            for inputs in block:
                runners[name](inputs)
        print(f"  {start + len(block)}/{len(prompts)} prompts", flush=True)
    return modes


def report(modes: dict[str, Mode], model: str, max_tokens: int) -> dict[str, float]:
    dspy_mode, raw, reset = modes["dspy"], modes["raw"], modes["reset"]
    mean = statistics.fmean
    figures = {
        "decisions": len(raw.seconds),
        "prompt_tokens_mean": mean(raw.prompt_tokens),
        "prompt_tokens_min": min(raw.prompt_tokens),
        "prompt_tokens_max": max(raw.prompt_tokens),
        "completion_tokens_mean": mean(raw.completion_tokens),
        "dspy_s_per_decision": mean(dspy_mode.seconds),
        "raw_s_per_decision": mean(raw.seconds),
        "dspy_over_raw": mean(dspy_mode.seconds) / mean(raw.seconds),
        "dspy_over_raw_median": statistics.median(dspy_mode.seconds) / statistics.median(raw.seconds),
        "reset_s_per_decision": mean(reset.seconds),
        "prefix_reuse_speedup": mean(reset.seconds) / mean(raw.seconds),
        "prompt_tokens_per_s": reset.perf["n_p_eval"] / reset.perf["t_p_eval_ms"] * 1000,
        "generated_tokens_per_s": reset.perf["n_eval"] / reset.perf["t_eval_ms"] * 1000,
        "raw_prompt_tokens_evaluated_mean": raw.perf["n_p_eval"] / len(raw.seconds),
        "dspy_prompt_tokens_evaluated_mean": dspy_mode.perf["n_p_eval"] / len(dspy_mode.seconds),
        "dspy_lm_calls": dspy_mode.lm_calls,
        "dspy_parse_failures": dspy_mode.failures,
        "same_output_dspy_raw": sum(a == b for a, b in zip(dspy_mode.texts, raw.texts, strict=True)),
        "same_prompt_tokens_dspy_raw": sum(a == b for a, b in zip(dspy_mode.prompt_tokens, raw.prompt_tokens,
                                                                  strict=True)),
    }
    n = figures["decisions"]
    print(f"\nLocal engine benchmark: {model}, {n} decisions, max_tokens={max_tokens}, greedy")
    print(f"  prompt tokens            mean {figures['prompt_tokens_mean']:.0f} "
          f"(min {figures['prompt_tokens_min']}, max {figures['prompt_tokens_max']}); "
          f"completion tokens mean {figures['completion_tokens_mean']:.1f}")
    print(f"  DSPy (Predict, engine)   {figures['dspy_s_per_decision']:.3f} s/decision "
          f"({figures['dspy_lm_calls']} LM calls, {figures['dspy_parse_failures']} parse failures)")
    print(f"  raw llama_cpp            {figures['raw_s_per_decision']:.3f} s/decision")
    print(f"  DSPy / raw               {figures['dspy_over_raw']:.3f}x mean, "
          f"{figures['dspy_over_raw_median']:.3f}x median (target <= 1.15x)")
    print(f"  same output / same prompt tokens (DSPy vs raw): {figures['same_output_dspy_raw']}/{n}, "
          f"{figures['same_prompt_tokens_dspy_raw']}/{n}")
    print(f"  prompt processing        {figures['prompt_tokens_per_s']:.0f} tokens/s (full prompts, no reuse)")
    print(f"  generation               {figures['generated_tokens_per_s']:.1f} tokens/s")
    print(f"  prefix reuse             {figures['reset_s_per_decision']:.3f} s/decision with the cache reset vs "
          f"{figures['raw_s_per_decision']:.3f} with reuse: {figures['prefix_reuse_speedup']:.2f}x speedup; "
          f"prompt tokens evaluated per decision {figures['raw_prompt_tokens_evaluated_mean']:.0f} (raw), "
          f"{figures['dspy_prompt_tokens_evaluated_mean']:.0f} (DSPy) of {figures['prompt_tokens_mean']:.0f}")
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.local_engine", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=DEFAULT_MODEL, help="A local model spec.")
    parser.add_argument("--n", type=int, default=50, help="Number of decisions (default: 50).")
    parser.add_argument("--max-tokens", type=int, default=32, help="Generation limit per call (default: 32).")
    parser.add_argument("--group", type=int, default=5, help="Consecutive prompts sharing a catalog (default: 5).")
    parser.add_argument("--threads", type=int, help="llama.cpp threads (default: every available core).")
    parser.add_argument("--json", help="Also write the figures to this JSON file.")
    args = parser.parse_args(argv)
    logging.getLogger("dspy.clients.lm").setLevel(logging.ERROR)  # truncation at --max-tokens is expected here
    modes = run(args.model, args.n, args.max_tokens, args.group, args.threads)
    figures = report(modes, args.model, args.max_tokens)
    if args.json:
        Path(args.json).write_text(json.dumps({"model": args.model, "max_tokens": args.max_tokens, **figures},
                                              indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
