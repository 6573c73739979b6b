"""``toolsel strategies`` and ``toolsel suites``: what a selector and an evaluation can be given."""

from __future__ import annotations

import argparse

from tool_selection.defaults import DEFAULT_STRATEGY
from tool_selection.errors import ToolSelectionError

__all__ = ["register_listings"]


def register_listings(subparsers: argparse._SubParsersAction) -> None:
    """``toolsel strategies`` and ``toolsel suites``."""
    strategies = subparsers.add_parser("strategies", help="List the selection strategies.",
                                       description="The selection strategies a selector can use (--strategy NAME; "
                                                   "gate+NAME adds the relevance gate).")
    strategies.set_defaults(handler=_strategies)

    suites = subparsers.add_parser("suites", help="List the available suites and their composition.",
                                   description="List the available suites with case, tag and split counts.")
    suites.add_argument("name", nargs="?", help="Show one suite's tag and split counts.")
    suites.add_argument("--card", metavar="NAME", help="Print a suite's card: size per split and tag (counted now), "
                                                       "its tools, sources and how the cases were written.")
    suites.add_argument("--export", metavar="FOLDER", help="Save the named suite as a Hugging Face dataset in FOLDER "
                                                           "(save_to_disk; it loads back as --suite hf:FOLDER).")
    suites.add_argument("--examples", metavar="FILE", help="Write the named suites' (comma-separated) single-turn "
                        "requests of one split, by the tools they expect, as example requests for --retrieve-examples "
                        "(requests another split also asks are left out).")
    suites.add_argument("--split", default="train", choices=["train", "dev", "test"],
                        help="With --examples: the split whose requests are written (default: train).")
    suites.set_defaults(handler=_suites)


def _strategies(args: argparse.Namespace) -> int:
    from tool_selection.named_registry import format_listing
    from tool_selection.strategies import STRATEGIES

    rows = [(name, summary + (" (default)" if name == DEFAULT_STRATEGY else ""))
            for name, summary in STRATEGIES.listing(lambda strategy: strategy.summary)]
    rows.append(("gate+NAME", "a relevance question first (Yes/No, scored by log-probabilities); no call below "
                              "--gate-threshold"))
    print(format_listing(rows))
    return 0


def _card(name: str) -> int:
    from evals.suite import SUITES_DIR, load_suite

    suite = load_suite(name)
    tags = sorted(suite.tag_counts())
    splits = ["train", "dev", "test"]
    counts = {split: suite.split(split).tag_counts() for split in splits}
    print(f"# {suite.name}: {len(suite)} cases\n")
    print("| tag | " + " | ".join(splits) + " | all |\n|---|" + "---|" * (len(splits) + 1))
    print("| cases | " + " | ".join(str(len(suite.split(s))) for s in splits) + f" | {len(suite)} |")
    for tag in tags:
        print(f"| {tag} | " + " | ".join(str(counts[s][tag]) for s in splits) + f" | {suite.tag_counts()[tag]} |")
    tool_sets = sorted({c.tool_set for c in suite.cases if c.tool_set})
    if tool_sets:
        from tool_selection import load_tool_set

        for tool_set in tool_sets:
            print(f"\ntools ({tool_set}): {', '.join(load_tool_set(tool_set).names())}")
    card = SUITES_DIR / f"{name}.card.md"
    if card.is_file():
        print("\n" + card.read_text(encoding="utf-8"))
    else:
        print(f"\n(no card file {card.name}: the counts above are all there is)")
    return 0


def _examples(args: argparse.Namespace) -> int:
    from evals.tool_examples import examples_from_suites

    if not args.name:
        raise ToolSelectionError("--examples reads suites: name them, e.g. toolsel suites events,finance --examples "
                                 "FILE.")
    examples = examples_from_suites([name for name in args.name.split(",") if name], args.split)
    path = examples.save(args.examples)
    print(f"{len(examples)} example requests for {len(examples.requests)} tools, from {examples.source['cases']} "
          f"{args.split} cases ({examples.source['left_out_asked_in_another_split']} left out: another split asks "
          f"them) -> {path} (examples {examples.fingerprint})")
    return 0


def _suites(args: argparse.Namespace) -> int:
    from evals.suite import available_suites, load_suite

    if args.card:
        return _card(args.card)
    if args.examples:
        return _examples(args)
    if args.export:
        if not args.name:
            raise ToolSelectionError("--export saves one suite: name it, e.g. toolsel suites finance --export FOLDER.")
        suite = load_suite(args.name)
        suite.to_dataset().save_to_disk(args.export)
        print(f"{len(suite)} cases of {suite.name} saved to {args.export}; load them with --suite hf:{args.export}")
        return 0

    from tool_selection.named_registry import format_listing

    rows = []
    for name in [args.name] if args.name else available_suites():
        try:
            suite = load_suite(name)
        except ToolSelectionError as error:
            if args.name:
                raise
            rows.append((name, f"(unavailable: {str(error).splitlines()[0]})"))
            continue
        splits = ", ".join(f"{k} {v}" for k, v in sorted(suite.split_counts().items()))
        rows.append((name, f"{len(suite):>4} cases  ({splits})"))
    print(format_listing(rows))
    if args.name:
        print(format_listing([(tag, str(count)) for tag, count in suite.tag_counts().most_common()], indent="  "))
    return 0
