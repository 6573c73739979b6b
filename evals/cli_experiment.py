"""The flags of an experiment, in one place: those that say what the selector does build a ``SelectorSpec``,
those that say how the run is carried out a ``RunConfig``; ``--spec FILE.yaml`` and ``--run-config FILE.yaml``
start from a file, and flags given beside it change it.

Every flag here defaults to None, so that building can tell a flag given from one left out; the defaults are the
spec's and the run config's own (said in the help)."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from tool_selection.defaults import MAX_CONTEXT, MAX_GENERATED_TOKENS, MAX_SLOTS, MAX_THREADS
from tool_selection.errors import ToolSelectionError
from tool_selection.strategies import UNDECLARED_ARGUMENTS

if TYPE_CHECKING:
    from tool_selection.run_config import RunConfig
    from tool_selection.spec import SelectorSpec

__all__ = ["add_run_flags", "add_selector_flags", "count", "given", "run_config", "selector_spec", "threshold"]


def threshold(text: str) -> float:
    """A threshold flag's value: a number, -inf or inf. NaN is refused: every comparison with it is false, so it
    would silently never (or always) trigger."""
    value = float(text)
    if math.isnan(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give a number, or -inf or inf")
    return value


def count(low: int = 1, high: int | None = None):
    """An argparse type: a whole number from ``low`` to ``high`` (no upper bound when None)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or (high is not None and value > high):
            allowed = f"from {low:,} to {high:,}" if high is not None else f"at least {low:,}"
            raise argparse.ArgumentTypeError(f"{value:,} is out of range: give a number {allowed}")
        return value

    parse.__name__ = "count"  # argparse names the type in its message
    return parse


def temperature(text: str) -> float:
    """``--temperature``: a number from 0 (greedy) to 2."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 2.0:
        raise argparse.ArgumentTypeError(f"{text} is out of range: give a number from 0 (greedy) to 2")
    return value


def given(text: str) -> str:
    """An argparse type: text that is not blank (an empty value would read as the flag left out)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty; give a value, or leave the flag out")
    return text


def add_selector_flags(parser: argparse.ArgumentParser) -> None:
    """The flags ``selector_spec`` reads."""
    group = parser.add_argument_group("the selector (a SelectorSpec)")
    group.add_argument("--spec", type=given, metavar="FILE.yaml", help="A selector spec to start from (the flags below change it).")
    group.add_argument("--program", type=given, help="A compiled selector directory (or DSPy state JSON) to evaluate.")
    group.add_argument("--allow-tool-changes", action="store_true", default=None,
                       help="Evaluate a compiled selector even if its tools changed since it was compiled.")
    group.add_argument("--strategy", help="How the selector asks the model: auto (default: native-strict-cover "
                                          "with a local model, native with any other), native, native-cot, "
                                          "native-strict, native-strict-cover, "
                                          "json-cot, json, chat-cot, text:fenced, text:call, text:tags; gate+NAME "
                                          "puts the relevance gate first (see 'toolsel strategies').")
    group.add_argument("--gate-model", help="Model spec for the relevance gate of a gate+NAME strategy "
                                            "(default: --model).")
    group.add_argument("--gate-threshold", type=threshold,
                       help="Relevance score below which the gate answers with no call (default: 0; choose it on "
                            "dev with 'toolsel bench gate' from a run with --gate-threshold=-inf, the gate open).")
    group.add_argument("--adapter", choices=["json", "chat"], help="Former name of the strategy choice: chat = "
                                                                   "--strategy chat-cot.")
    group.add_argument("--retrieve", type=count(), metavar="K",
                       help="Show the selector only the K tools a retriever ranks highest for each request (K below "
                            "the size of the largest catalog in the suite).")
    group.add_argument("--retriever", choices=["bm25", "dense", "hybrid"],
                       help="Retriever for --retrieve (default: hybrid; needs the retrieval extra).")
    group.add_argument("--rerank", type=count(), metavar="N",
                       help="With --retrieve K: the model re-ranks the retriever's top N (N > K) by whether each "
                            "tool does exactly what is asked, and the selector sees the K best (one short prompt "
                            "per candidate).")
    group.add_argument("--undeclared-arguments", choices=UNDECLARED_ARGUMENTS,
                       help="An argument a call's tool does not declare: refuse (default: the call is invalid, as "
                            "the tool would refuse it) or drop it and check the call again (counted per case as "
                            "undeclared_dropped).")
    group.add_argument("--relevance", metavar="auto|none|MODEL_JSON",
                       help="A relevance model: a decision it judges irrelevant (no listed tool does what is "
                            "asked) keeps no call. 'auto' (default): a compiled selector's own, else the one "
                            "shipped for the model, if any (the embedded 0.5B model has one); 'none'; or a file "
                            "from 'toolsel bench relevance --save'.")
    group.add_argument("--relevance-signals", metavar="NAMES",
                       help="Relevance signals to record per case (comma-separated, or 'cheap' for all but "
                            "'gate' and 'agreement', which cost model calls): without --relevance they are only "
                            "recorded, to fit a relevance model on train and dev runs.")


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """The flags ``run_config`` reads."""
    group = parser.add_argument_group("the run (a RunConfig)")
    group.add_argument("--run-config", type=given, metavar="FILE.yaml", help="A run config to start from (the flags below "
                                                                 "change it).")
    cases = group.add_mutually_exclusive_group()
    cases.add_argument("--limit", type=count(), help="Only the first N cases of the split.")
    cases.add_argument("--sample", type=count(), help="A fixed seeded sample of N cases of the split (see --seed).")
    group.add_argument("--seed", type=int, help="Seed of --sample, and of the model's sampler with --temperature above 0 "
                                                "(default: 0).")
    group.add_argument("--threads", type=count(1, MAX_THREADS), help="Cases evaluated in parallel (default: 1, or N with --serve N).")
    group.add_argument("--serve", type=count(1, MAX_SLOTS), metavar="N",
                       help="Run the local model in a llama-server with N parallel slots for this evaluation "
                            "(batched decoding, N cases in flight unless --threads says otherwise). See 'toolsel "
                            "serve model'.")
    group.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                       help="Fan the cases out over Ray, --threads at a time: a local Ray instance, or the cluster "
                            "at ADDRESS (HOST:PORT). Needs the ray extra.")
    group.add_argument("--max-tokens", type=count(1, MAX_GENERATED_TOKENS), help="Generation limit per decision (default: 512).")
    group.add_argument("--n-ctx", type=count(256, MAX_CONTEXT), metavar="N",
                       help="Context of a local model, in tokens (default: its catalog entry's, e.g. 4096); a longer "
                            "prompt grows it up to the model's trained length. A case whose request and tools cannot "
                            "fit in that length is refused before the run starts (show fewer tools: --retrieve K).")
    group.add_argument("--cache", action=argparse.BooleanOptionalAction, default=None,
                       help="Answer from DSPy's cache of model answers where it has one (default: off, so that a "
                            "run's time and tokens are measured, never read back from another run).")
    group.add_argument("--temperature", type=temperature, metavar="T",
                       help="Sampling temperature of the selector's model (default: 0, greedy).")
    group.add_argument("--run-dir", type=given, help="Where per-case results go (default: runs/<suite>-<split>-<model>-<hash>).")
    group.add_argument("--fresh", action="store_true", default=None,
                       help="Discard results already in the run directory.")
    group.add_argument("--no-mlflow", action="store_true", default=None, help="Do not log the run to MLflow.")
    group.add_argument("--tracking-uri", help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI or "
                                              "sqlite:///mlflow.db).")


def selector_spec(args: argparse.Namespace, **fixed: Any) -> SelectorSpec:
    """The spec the selector flags describe (on ``--spec``'s, if given); ``fixed``: fields a command sets itself."""
    from tool_selection.spec import SelectorSpec

    base = SelectorSpec.load_yaml(args.spec) if getattr(args, "spec", None) else SelectorSpec()
    fields = _given(args, {"program": "program", "allow_tool_changes": "allow_tool_changes",
                           "strategy": "strategy", "undeclared_arguments": "undeclared_arguments",
                           "relevance": "relevance"})
    if getattr(args, "adapter", None) == "chat" and fields.get("strategy", base.strategy) is None:
        fields["strategy"] = "chat-cot"  # the former --adapter chat
    gate = _given(args, {"model": "gate_model", "threshold": "gate_threshold"})
    if gate:
        fields["gate"] = {**base.gate.model_dump(), **gate}  # validated with the spec, every problem at once
    retrieval = _given(args, {"k": "retrieve", "retriever": "retriever", "rerank": "rerank"})
    if retrieval:
        if "k" not in retrieval and base.retrieval is None:
            raise ToolSelectionError(f"{'rerank (--rerank) orders' if 'rerank' in retrieval else '--retriever is'} "
                                     "the retriever's candidates: give retrieve (--retrieve) too.")
        fields["retrieval"] = {**(base.retrieval.model_dump() if base.retrieval else {}), **retrieval}
    if getattr(args, "relevance_signals", None) is not None:
        fields["relevance_signals"] = tuple(signal_names(args.relevance_signals))
    return SelectorSpec.build(**{**base.model_dump(exclude_defaults=True), **fields, **fixed})


def run_config(args: argparse.Namespace, **fixed: Any) -> RunConfig:
    """The run config the run flags describe (on ``--run-config``'s, if given); ``fixed``: fields a command sets
    itself. ``--serve N`` without ``--threads`` runs N cases at a time."""
    from tool_selection.run_config import RunConfig

    base = RunConfig.load_yaml(args.run_config) if getattr(args, "run_config", None) else RunConfig()
    fields = _given(args, {"limit": "limit", "sample": "sample", "seed": "seed", "threads": "threads",
                           "serve": "serve", "ray": "ray", "max_tokens": "max_tokens", "n_ctx": "n_ctx",
                           "run_dir": "run_dir", "fresh": "fresh", "tracking_uri": "tracking_uri"})
    if getattr(args, "cache", None) is not None:
        fields["cache"] = args.cache
    if getattr(args, "temperature", None) is not None:
        fields["temperature"] = args.temperature
    if getattr(args, "no_mlflow", None):
        fields["mlflow"] = False
    if "threads" not in fields and fields.get("serve") is not None:
        fields["threads"] = fields["serve"]
    return RunConfig.build(**{**base.model_dump(exclude_defaults=True), **fields, **fixed})


def signal_names(value: str) -> list[str]:
    """``--relevance-signals``: names, with ``cheap`` for every signal but ``gate`` and ``agreement``."""
    from tool_selection.relevance import CHEAP_SIGNALS

    names = [name.strip() for name in value.split(",") if name.strip()]
    return [signal for name in names for signal in (CHEAP_SIGNALS if name == "cheap" else (name,))]


def _given(args: argparse.Namespace, names: dict[str, str]) -> dict[str, Any]:
    """``{field: value}`` for each flag (``names``: field -> flag attribute) given on the command line."""
    return {field: getattr(args, flag) for field, flag in names.items() if getattr(args, flag, None) is not None}
