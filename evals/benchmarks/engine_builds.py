"""Benchmark llama.cpp build profiles against each other on this machine: what portability costs.

    python -m evals.benchmarks.engine_builds [--profiles portable,avx512,native] [--n 30] [--rounds 3]

Each profile's wheel comes from the wheelhouse (``python tool_selection/lm/engine_build.py build --profile P``
makes it). Every profile runs in child processes of its own (a process can load one llama.cpp build only), on
the same tool-selection prompts as ``make bench`` (500-1500 tokens), greedy, with the KV cache reset before
each prompt so that prompt processing is measured in full. The profiles take turns in rounds, so that noise on a
shared machine falls on all of them; a profile whose child dies by a signal is reported as crashed, which is
itself the finding on a CPU that advertises AMX without granting it. Ratios are against the first profile.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from tool_selection.defaults import DEFAULT_MODEL_NAME

__all__ = ["main"]


def _child(spec: dict) -> None:
    """Run a slice of the prompts on the build unpacked at ``spec['build_dir']``; print the perf sums as JSON."""
    sys.path.insert(0, spec["build_dir"])
    import dspy
    import llama_cpp

    from evals.benchmarks.local_engine import SelectTool, _perf, build_prompts

    if not Path(llama_cpp.__file__).is_relative_to(spec["build_dir"]):
        raise SystemExit(f"loaded llama_cpp from {llama_cpp.__file__}, not from the build under test")
    llama = llama_cpp.Llama(model_path=spec["model"], n_ctx=4096, n_batch=512, verbose=False)
    adapter = dspy.ChatAdapter(use_json_adapter_fallback=False)

    def messages(inputs):
        return adapter.format(SelectTool, demos=[], inputs=inputs)

    def count_tokens(tools: str, request: str) -> int:
        text = "".join(m["content"] for m in messages({"tools": tools, "request": request}))
        return len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    prompts = build_prompts(spec["n"], spec["group"], count_tokens)[spec["start"]:spec["stop"]]
    totals = {"t_p_eval_ms": 0.0, "n_p_eval": 0, "t_eval_ms": 0.0, "n_eval": 0, "seconds": 0.0, "decisions": 0}
    texts = []
    for inputs in prompts:
        llama.reset()
        before = _perf(llama)
        start = time.perf_counter()
        out = llama.create_chat_completion(messages=messages(inputs), temperature=0.0, max_tokens=spec["max_tokens"])
        totals["seconds"] += time.perf_counter() - start
        after = _perf(llama)
        for key in ("t_p_eval_ms", "n_p_eval", "t_eval_ms", "n_eval"):
            totals[key] += after[key] - before[key]
        totals["decisions"] += 1
        texts.append(out["choices"][0]["message"]["content"] or "")
    print(json.dumps({"totals": totals, "texts": texts,
                      "system_info": llama_cpp.llama_print_system_info().decode().strip()}))


def _unpack(wheel: Path, into: Path) -> Path:
    target = into  # every profile's wheel has the same file name: the caller gives each its own folder
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)
    return target


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.engine_builds", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profiles", default="portable,avx512,native", help="Comma-separated build profiles; "
                                                                               "the first is the baseline.")
    parser.add_argument("--model", default=DEFAULT_MODEL_NAME, help="Embedded model name (default: 0.5B).")
    parser.add_argument("--n", type=int, default=30, help="Prompts per profile (default: 30).")
    parser.add_argument("--rounds", type=int, default=3, help="Turns each profile takes (default: 3).")
    parser.add_argument("--group", type=int, default=5, help="Prompts sharing a catalog (default: 5).")
    parser.add_argument("--max-tokens", type=int, default=32, help="Generation limit per prompt (default: 32).")
    parser.add_argument("--json", help="Also write the figures to this JSON file.")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(json.loads(args.child))
        return 0

    from tool_selection.lm.assemble import ensure_model
    from tool_selection.lm.catalog import load_catalog
    from tool_selection.lm.engine_build import plan

    model = str(ensure_model(load_catalog().local_model(args.model)))
    profiles = [p.strip() for p in args.profiles.split(",") if p.strip()]
    builds = {}
    for profile in profiles:
        wheel = plan(profile).wheel()
        if wheel is None:
            print(f"no {profile} wheel in the wheelhouse: python tool_selection/lm/engine_build.py build --profile "
                  f"{profile}", file=sys.stderr)
            return 2
        builds[profile] = wheel
    per_round = -(-args.n // args.rounds)
    results = {p: {"t_p_eval_ms": 0.0, "n_p_eval": 0, "t_eval_ms": 0.0, "n_eval": 0, "seconds": 0.0, "decisions": 0,
                   "texts": [], "crashed": None, "failed": None, "system_info": ""} for p in profiles}
    with tempfile.TemporaryDirectory(prefix="engine-builds-") as scratch:
        unpacked = {p: _unpack(w, Path(scratch) / p) for p, w in builds.items()}
        for round_index in range(args.rounds):
            start, stop = round_index * per_round, min(args.n, (round_index + 1) * per_round)
            order = profiles[round_index % len(profiles):] + profiles[:round_index % len(profiles)]
            for profile in order:
                result = results[profile]
                if result["crashed"] or result["failed"] or start >= stop:
                    continue
                spec = {"build_dir": str(unpacked[profile]), "model": model, "n": args.n, "group": args.group,
                        "start": start, "stop": stop, "max_tokens": args.max_tokens}
                child = subprocess.run([sys.executable, "-m", "evals.benchmarks.engine_builds", "--child",
                                        json.dumps(spec)], capture_output=True, text=True)
                if child.returncode < 0:
                    result["crashed"] = _signal_name(child.returncode)
                elif child.returncode != 0:
                    result["failed"] = (child.stderr.strip().splitlines() or ["?"])[-1]
                else:
                    data = json.loads(child.stdout.strip().splitlines()[-1])
                    for key, value in data["totals"].items():
                        result[key] += value
                    result["texts"] += data["texts"]
                    result["system_info"] = data["system_info"]
                print(f"  round {round_index + 1}/{args.rounds}: {profile} "
                      f"{result['crashed'] or result['failed'] or 'done'}", flush=True)
    figures = _report(results, profiles, args)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


def _report(results: dict, profiles: list[str], args) -> dict:
    figures = {}
    baseline = profiles[0]
    for profile in profiles:
        r = results[profile]
        if r["crashed"] or r["failed"] or not r["decisions"]:
            figures[profile] = {"crashed": r["crashed"], "failed": r["failed"]}
            continue
        figures[profile] = {
            "decisions": r["decisions"],
            "prompt_tokens_per_s": r["n_p_eval"] / r["t_p_eval_ms"] * 1000,
            "generated_tokens_per_s": r["n_eval"] / r["t_eval_ms"] * 1000,
            "s_per_decision": r["seconds"] / r["decisions"],
            "system_info": r["system_info"],
        }
    base = figures[baseline]
    print(f"\nllama.cpp build profiles: {args.model}, {args.n} prompts of 500-1500 tokens, max_tokens="
          f"{args.max_tokens}, greedy, KV cache reset before each prompt; ratios against {baseline}")
    print(f"  {'profile':<10} {'prompt tok/s':>13} {'gen tok/s':>10} {'s/decision':>11}   same answers as {baseline}")
    for profile in profiles:
        f = figures[profile]
        if "decisions" not in f:
            print(f"  {profile:<10} {'crashed (' + f['crashed'] + ')' if f['crashed'] else 'failed: ' + f['failed']}")
            continue
        ratio = ""
        if "decisions" in base and profile != baseline:
            f["prompt_ratio"] = f["prompt_tokens_per_s"] / base["prompt_tokens_per_s"]
            f["generation_ratio"] = f["generated_tokens_per_s"] / base["generated_tokens_per_s"]
            same = sum(a == b for a, b in zip(results[profile]["texts"], results[baseline]["texts"], strict=False))
            f["same_answers"] = same
            ratio = f"   {same}/{f['decisions']}  (x{f['prompt_ratio']:.2f} prompt, x{f['generation_ratio']:.2f} gen)"
        print(f"  {profile:<10} {f['prompt_tokens_per_s']:>13.0f} {f['generated_tokens_per_s']:>10.1f} "
              f"{f['s_per_decision']:>11.2f}{ratio}")
    return figures


if __name__ == "__main__":
    raise SystemExit(main())
