"""Agreement of our scoring of BFCL cases with BFCL's own AST checker, on the same answers.

A BFCL figure of ours compares with a published one only if both score an answer alike. Each answer (a kept run's
row, or one built from BFCL's possible answers by ``evals.bfcl_answers``) is scored twice: by ``bfcl-eval``'s
``ast_checker`` in the category's language (irrelevance: no call, as its runner reads it) and by ours
(``score_case``'s full match, after the decision checks a run makes). Where the verdicts differ, the difference is
either a rule of ours that follows BFCL's or one documented in ``docs/bfcl-agreement.md`` (``KNOWN_DIFFERENCES``).

In the Java and JavaScript categories our scoring *is* BFCL's checker (``Case.bfcl_checker``), so the verdicts agree
by construction; what can still differ is how a run reads an answer before scoring it (a null dropped for an
optional argument), which the report counts as for the other categories.

    python -m evals.bfcl_agreement RUN_DIR ... [--generated CATEGORY ...]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cache
from itertools import permutations
from typing import Any

from evals.bfcl import BFCL_CATEGORIES, bfcl_records, load_bfcl
from evals.bfcl_answers import Answer, generated_answers, run_answers
from evals.bfcl_checker import check, language_of
from evals.metrics import score_case
from evals.suite import Case, registry_for
from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.errors import ToolSelectionError
from tool_selection.strategies import check_decision

__all__ = ["KNOWN_DIFFERENCES", "Agreement", "Disagreement", "bfcl_verdict", "compare", "format_report",
           "our_verdict"]

@dataclass(frozen=True)
class Disagreement:
    """An answer the two checkers judge differently, with BFCL's error where BFCL refuses it."""

    answer: Answer
    bfcl_valid: bool
    bfcl_error: str
    ours_valid: bool
    known: str | None  # the KNOWN_DIFFERENCES key that explains it, if one does


@dataclass
class Agreement:
    """The verdicts of both checkers on the answers of one category from one source."""

    category: str
    source: str
    answers: int = 0
    bfcl_valid: int = 0
    ours_valid: int = 0
    disagreements: list[Disagreement] = field(default_factory=list)

    @property
    def agreeing(self) -> int:
        return self.answers - len(self.disagreements)


@cache
def _cases(category: str) -> dict[str, Case]:
    return {case.id: case for case in load_bfcl([category]).cases}


def bfcl_verdict(category: str, answer: Answer) -> tuple[bool, str]:
    """(valid, error) under BFCL: irrelevance asks for no call (an answer that does not decode counts as none, as
    BFCL's runner reads it); the other categories go to ``ast_checker`` in the category's language (Python, Java or
    JavaScript, as BFCL's runner picks it), which a non-decoding answer fails."""
    if category == "irrelevance":
        return (True, "") if answer.parse_failure or not answer.calls else (
            False, "irrelevance_error:decoder_success: Valid syntax. Successfully decode AST when it should not.")
    if answer.parse_failure:
        return False, "ast_decoder:decoder_failed: Invalid syntax. Failed to decode AST."
    functions, truth = bfcl_records(category)
    return check(functions[answer.case_id], answer.calls, truth[answer.case_id], language=language_of(category),
                 category=category)


def our_verdict(category: str, answer: Answer) -> bool:
    """Our full match, on the decision a run makes of the same calls (unknown tools and bad arguments recorded,
    OpenAI-strict nulls for omitted optional arguments dropped)."""
    case = _cases(category)[answer.case_id]
    if answer.parse_failure:
        decision = MultiToolDecision(parse_error="the answer could not be parsed")
    else:
        decision = check_decision("", [ToolCall.model_validate(c) for c in answer.calls], registry_for(case))
    return bool(score_case(case, decision)["full_match"])


def compare(category: str, answers: Iterable[Answer], *, source: str) -> Agreement:
    """Both verdicts on each answer; the disagreements with the known difference that explains each."""
    answers = list(answers)
    functions, _ = bfcl_records(category)
    unknown = [a.case_id for a in answers if a.case_id not in functions]
    if unknown:
        raise ToolSelectionError(f"{source}: {len(unknown)} case(s) are not in BFCL's {category!r} category "
                                 f"(e.g. {unknown[:3]}); the agreement reads BFCL's own records of each case.")
    report = Agreement(category, source)
    for answer in answers:
        bfcl_valid, error = bfcl_verdict(category, answer)
        ours_valid = our_verdict(category, answer)
        report.answers += 1
        report.bfcl_valid += bfcl_valid
        report.ours_valid += ours_valid
        if bfcl_valid != ours_valid:
            report.disagreements.append(Disagreement(answer, bfcl_valid, error, ours_valid,
                                                     explain(category, answer, bfcl_valid, error)))
    return report


KNOWN_DIFFERENCES: dict[str, str] = {
    "unparseable read as no call": "irrelevance: BFCL counts an answer it cannot decode as no call, so right; we "
                                   "count an answer we cannot parse as a parse failure, never as an abstention",
    "null read as omitted": "we read null for an optional argument as left out (the strict strategies write it so) "
                            "before scoring; BFCL's checker sees a value of the wrong type",
    "calls paired greedily": "BFCL pairs each expected call in turn with the first answer call that fits, so an "
                             "order of the same calls can fail; we find a pairing whenever one exists",
    "list in a dictionary compared exactly": "BFCL compares a list held in a dictionary argument as written, "
                                             "without normalising its strings as it does elsewhere; we normalise "
                                             "strings at any depth",
}


_MOST_CALLS_REORDERED = 6  # every order of up to this many calls is tried (720)


def explain(category: str, answer: Answer, bfcl_valid: bool, error: str) -> str | None:
    """The ``KNOWN_DIFFERENCES`` key of a disagreement (BFCL says ``bfcl_valid``, we say the opposite), or None
    for one nobody has explained. Each is recognised by what makes BFCL agree, not by how the answer was built."""
    if bfcl_valid:
        return "unparseable read as no call" if category == "irrelevance" and answer.parse_failure else None
    without_nulls = tuple({**call, "arguments": {k: v for k, v in call["arguments"].items() if v is not None}}
                          for call in answer.calls)
    if without_nulls != answer.calls and bfcl_verdict(category, replace(answer, calls=without_nulls))[0]:
        return "null read as omitted"
    if 1 < len(answer.calls) <= _MOST_CALLS_REORDERED and any(
            bfcl_verdict(category, replace(answer, calls=order))[0] for order in permutations(answer.calls)):
        return "calls paired greedily"
    if "value_error:dict_value" in error and any(_string_list_in_dict(v) for call in answer.calls
                                                   for v in call["arguments"].values()):
        return "list in a dictionary compared exactly"
    return None


def _string_list_in_dict(value: Any, in_dict: bool = False) -> bool:
    """Whether ``value`` holds, inside a dictionary, a list with a string in it."""
    if isinstance(value, dict):
        return any(_string_list_in_dict(v, True) for v in value.values())
    if isinstance(value, list):
        return (in_dict and any(isinstance(v, str) for v in value)) or any(_string_list_in_dict(v, in_dict)
                                                                           for v in value)
    return False


def format_report(reports: list[Agreement], *, every: bool = False) -> str:
    """A table of the agreement per category and source, each source's disagreements counted by known difference,
    then each unexplained disagreement (``every``: each disagreement) with both verdicts and BFCL's error."""
    header = (f"{'category':<18} {'source':<44} {'answers':>7} {'agree':>6} {'%':>6} {'BFCL right':>10} "
              f"{'ours right':>10} {'unexplained':>11}")
    lines = [header]
    for r in reports:
        share = 100 * r.agreeing / r.answers if r.answers else float("nan")
        unexplained = sum(d.known is None for d in r.disagreements)
        lines.append(f"{r.category:<18} {_tail(r.source, 44):<44} {r.answers:>7} {r.agreeing:>6} {share:>6.1f} "
                     f"{r.bfcl_valid:>10} {r.ours_valid:>10} {unexplained:>11}")
    by_checker = sorted({r.category for r in reports if language_of(r.category) != "python"})
    if by_checker:
        lines += ["", f"{', '.join(by_checker)}: our scoring is BFCL's own checker (Case.bfcl_checker), so the "
                      "verdicts agree by construction; a disagreement there comes from how a run reads the answer "
                      "before scoring it."]
    kinds = Counter((r.category, _tail(r.source, 44), d.known) for r in reports for d in r.disagreements)
    if kinds:
        lines += ["", "disagreements by known difference:"]
        lines += [f"  {category:<18} {source:<44} {count:>6}  {known or 'UNEXPLAINED'}"
                  for (category, source, known), count in kinds.items()]
    for r in reports:
        for d in r.disagreements:
            if every or d.known is None:
                lines.append(f"\n{r.category} {d.answer.case_id} [{d.answer.label}] in {r.source}: BFCL "
                             f"{_word(d.bfcl_valid)}, ours {_word(d.ours_valid)} ({d.known or 'UNEXPLAINED'})\n"
                             f"  calls: {json.dumps(d.answer.calls, default=str)[:400]}\n  BFCL: {d.bfcl_error[:400]}")
    return "\n".join(lines)


def _tail(text: str, width: int) -> str:
    return text if len(text) <= width else "..." + text[-width + 3:]


def _word(valid: bool) -> str:
    return "right" if valid else "wrong"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="*", metavar="RUN_DIR", help="Finished runs of 'toolsel eval' on BFCL.")
    parser.add_argument("--generated", nargs="+", default=[], choices=BFCL_CATEGORIES, metavar="CATEGORY",
                        help="Also answers built from BFCL's possible answers, for these categories "
                             f"({', '.join(BFCL_CATEGORIES)}).")
    parser.add_argument("--every", action="store_true", help="List every disagreement, not only unexplained ones.")


def run_from_args(args: argparse.Namespace) -> int:
    """Print the report; exit status 1 if a disagreement is unexplained."""
    if not args.runs and not args.generated:
        raise ToolSelectionError("Give run directories, --generated CATEGORY ..., or both.")
    reports = [compare(category, generated_answers(category), source="generated") for category in args.generated]
    reports += [compare(category, answers, source=str(run_dir))
                for run_dir in args.runs for category, answers in sorted(run_answers(run_dir).items())]
    print(format_report(reports, every=args.every))
    return int(any(d.known is None for r in reports for d in r.disagreements))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.bfcl_agreement", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
