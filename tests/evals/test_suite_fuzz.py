"""5,000 malformed suite files through load_suite: each loads or is refused with a SuiteError naming the file,
never another exception. The files are seeded mutations (tests/fuzz_mutations.py) of real suite lines, with
inline tools among them, and of whole files (blank, binary, a folder, a line past the size limit, a line twice)."""

import json
import random
import time

from evals.suite import MAX_LINE_BYTES, SUITES_DIR, SuiteError, load_suite, registry_for
from tests.evals.conftest import make_cases
from tests.fuzz_mutations import mutate

FILES = 5_000


FOCUS = ("tools", "expected_calls", "tags", "request", "messages")  # where the loader has the most to check


def _real_lines() -> list[str]:
    """Lines with inline tools (half of those drawn) and lines of the built-in suites."""
    inline = [json.dumps(case) for case in make_cases()]
    inline.append(json.dumps({**make_cases()[0], "id": "strict", "strict_arguments": True,
                              "messages": [{"role": "user", "content": "Oslo?"}], "request": None}))
    inline.append(json.dumps({**make_cases()[0], "id": "wrapped", "tools": [
        {"type": "function", "function": tool} for tool in make_cases()[0]["tools"]]}))
    built_in = [line for path in sorted(SUITES_DIR.glob("*.jsonl"))
                for line in path.read_text(encoding="utf-8").splitlines()[::25]]
    return inline * (len(built_in) // len(inline)) + built_in


def _fuzzed_file(rng: random.Random, lines: list[str], path):
    shape = rng.randrange(40)
    if shape == 0:
        path.mkdir()
    elif shape == 1:
        path.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(200))))
    elif shape == 2:
        path.write_bytes(b'{"id": "' + b"x" * (MAX_LINE_BYTES + 1) + b'"}\n' + lines[0].encode())
    elif shape == 3:
        path.write_bytes(b"\n \n")
    elif shape == 4:
        path.write_text(f"{rng.choice(lines)}\n" * 2)
    else:
        chosen = rng.sample(lines, rng.randrange(1, 4))
        mutated = [mutate(rng, line, FOCUS) if rng.random() < 0.8 else line.encode() for line in chosen]
        path.write_bytes(b"\n".join(mutated) + rng.choice([b"\n", b"", b"\n\n"]))


def test_five_thousand_malformed_suite_files_load_or_are_refused_clearly(tmp_path):
    rng = random.Random(20261127)
    lines = _real_lines()
    outcomes = {"loaded": 0, "refused": 0}
    tracebacks = []
    start = time.perf_counter()
    for index in range(FILES):
        path = tmp_path / f"suite-{index}.jsonl"
        _fuzzed_file(rng, lines, path)
        try:
            suite = load_suite(path)
            suite.fingerprint  # noqa: B018 - a loaded suite hashes, and its cases have their tools
            for case in suite:
                registry_for(case)
            outcomes["loaded"] += 1
        except SuiteError as error:
            assert str(path) in str(error), str(error)
            outcomes["refused"] += 1
        except Exception as error:  # what the test looks for
            tracebacks.append(f"{path.name}: {type(error).__name__}: {str(error)[:200]}")
    elapsed = time.perf_counter() - start
    assert not tracebacks, f"{len(tracebacks)} of {FILES} files raised something else:\n" + "\n".join(tracebacks[:20])
    assert outcomes["loaded"] > 100 and outcomes["refused"] > 2_000, outcomes
    print(f"\n{FILES} fuzzed suite files in {elapsed:.1f} s: {outcomes}")
