"""Build ``multiple_removed.jsonl``: BFCL ``multiple`` cases with the functions their answer calls taken out of the
list, so that no listed function does what is asked. What it is for: ``multiple_removed.card.md``.

    python evals/suites/build_multiple_removed.py            # (re)write multiple_removed.jsonl
    python evals/suites/build_multiple_removed.py --check    # exit 1 if it is not what the script would write

Each ``multiple_<n>`` case becomes ``multiple_removed_<n>``: the same request and split, the remaining one to three
functions (BFCL's own documents, in their order), no expected call, tags ``no_tool`` and ``removed_from_multiple``.
Needs the project and bfcl-eval's data (the dev extra), like ``--suite bfcl:multiple``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evals.suite_file import suite_lines, write_suite_file

SUITES_DIR = Path(__file__).resolve().parent
OUTPUT = SUITES_DIR / "multiple_removed.jsonl"


def removed_case(case) -> dict:
    """The case with the functions its expected calls name taken out, and no call expected."""
    called = {call.tool_name for call in case.expected_calls}
    tools = [tool for tool in case.tools if tool["name"] not in called]
    if not tools or len(tools) == len(case.tools):
        raise SystemExit(f"{case.id}: removing {sorted(called)} leaves {len(tools)} of {len(case.tools)} functions")
    return {"id": case.id.replace("multiple_", "multiple_removed_", 1), "request": case.messages[-1].content,
            "tools": tools, "expected_calls": [], "tags": ["no_tool", "removed_from_multiple"], "split": case.split}


def build() -> list[dict]:
    from evals.suite import load_suite

    return [removed_case(case) for case in load_suite("bfcl:multiple")]


render = suite_lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="Only compare with the existing file.")
    args = parser.parse_args(argv)
    return write_suite_file(OUTPUT, render(build()), check=args.check, script="evals/suites/build_multiple_removed.py")


if __name__ == "__main__":
    sys.exit(main())
