"""Build ``translated.jsonl``: test cases of four domain suites asked in English and, with the same tools and
expected calls, in the languages of ``translations.json`` (hand-written translations). What it is for and how the
cases were chosen: ``translated.card.md``.

    python evals/suites/build_translated.py            # (re)write translated.jsonl
    python evals/suites/build_translated.py --check    # exit 1 if it is not what the script would write

Each source case gives one case per language, one after the other: ``<source id>.en`` (the request unchanged),
``<source id>.es``, ``<source id>.zh``. Only the request changes; the tags gain the domain's name, ``lang_<code>``,
and ``translated`` for every language but English. Standard library only, so it runs without the project installed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from evals.suite_file import suite_lines, write_suite_file

SUITES_DIR = Path(__file__).resolve().parent
OUTPUT = SUITES_DIR / "translated.jsonl"
TRANSLATIONS = SUITES_DIR / "translations.json"
DOMAINS = ("treasure_hunt", "events", "ecommerce", "finance")
SOURCE = "en"


def read_cases(path: Path) -> list[dict]:
    """A suite's lines as JSON objects, in file order."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def translated_case(case: dict, domain: str, language: str, request: str) -> dict:
    tags = [*case["tags"], domain, f"lang_{language}", *(["translated"] if language != SOURCE else [])]
    return {**case, "id": f"{case['id']}.{language}", "request": request, "tags": tags}


def build(suites_dir: Path = SUITES_DIR) -> list[dict]:
    """Every translated source case in each language, in the domain suites' order."""
    table = json.loads((suites_dir / TRANSLATIONS.name).read_text(encoding="utf-8"))
    languages, requests = list(table["languages"]), table["requests"]
    cases, found = [], set()
    for domain in DOMAINS:
        for case in read_cases(suites_dir / f"{domain}.jsonl"):
            if case["id"] not in requests:
                continue
            if "request" not in case or case["split"] != "test":
                raise SystemExit(f"{case['id']}: only single-turn test cases are translated")
            found.add(case["id"])
            missing = [lang for lang in languages if not requests[case["id"]].get(lang)]
            if missing:
                raise SystemExit(f"{TRANSLATIONS.name}: {case['id']} has no {', '.join(missing)} translation")
            cases.append(translated_case(case, domain, SOURCE, case["request"]))
            cases += [translated_case(case, domain, lang, requests[case["id"]][lang]) for lang in languages]
    unknown = sorted(set(requests) - found)
    if unknown:
        raise SystemExit(f"{TRANSLATIONS.name}: no case of {', '.join(DOMAINS)} has the id {', '.join(unknown)}")
    return cases


render = suite_lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="Only compare with the existing translated.jsonl.")
    args = parser.parse_args(argv)
    return write_suite_file(OUTPUT, render(build()), check=args.check, script="evals/suites/build_translated.py")


if __name__ == "__main__":
    sys.exit(main())
