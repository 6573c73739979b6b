"""Example requests per tool from suites' train splits, for retrieval indexes (``--retrieve-examples``).

    toolsel suites events,finance,bfcl:multiple --examples examples.json     # the train split by default

Only single-turn cases that expect calls give examples, each request under every tool its expected calls name. A
request that a case of another split asks too, in any of the suites read, is left out: BFCL asks some requests in
more than one category, and an index must not hold a request that is scored.
"""

from __future__ import annotations

from collections.abc import Sequence

from evals.suite import Case, Suite, load_suite
from tool_selection.retrieval.examples import ToolExamples, ToolExamplesError, same_request

__all__ = ["examples_from_suites", "refuse_scored"]


def _single_turn(case: Case) -> bool:
    return bool(case.expected_calls) and len([m for m in case.messages or [] if m.role != "system"]) <= 1


def examples_from_suites(suites: Sequence[str | Suite], split: str = "train") -> ToolExamples:
    """The single-turn requests of ``suites``' ``split`` cases (suites or their names), by each tool they expect
    (``source`` records the suites, the split, the cases read and those left out because another split asks the same
    request)."""
    loaded = [suite if isinstance(suite, Suite) else load_suite(suite) for suite in suites]
    elsewhere = {same_request(case.prompt) for suite in loaded for case in suite if case.split != split}
    requests: dict[str, list[str]] = {}
    used, left_out = 0, 0
    for suite in loaded:
        for case in suite:
            if case.split != split or not _single_turn(case):
                continue
            if same_request(case.prompt) in elsewhere:
                left_out += 1
                continue
            used += 1
            for name in sorted({call.tool_name for call in case.expected_calls}):
                requests.setdefault(name, []).append(case.prompt)
    source = {"suites": [suite.name for suite in loaded], "split": split, "cases": used,
              "left_out_asked_in_another_split": left_out}
    return ToolExamples(requests=requests, source=source)


def refuse_scored(examples: ToolExamples, cases: Suite, where: str) -> None:
    """Refuse ``examples`` (read from ``where``) that hold a request of ``cases``: an index holding a scored request
    finds its tool by the request itself."""
    leaked = set(examples.among(case.prompt for case in cases))
    if leaked:
        ids = [case.id for case in cases if case.prompt in leaked]
        raise ToolExamplesError(
            f"{len(ids)} of the {len(cases)} requests scored are among the example requests of {where} (cases "
            f"{', '.join(ids[:5])}{', ...' if len(ids) > 5 else ''}): the index would hold the answer. Build the "
            "examples from another split than the one scored ('toolsel suites SUITE --examples FILE --split train').")
