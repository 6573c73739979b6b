"""5,000 malformed compiled selectors through MultiToolSelector.load and load_program_state: each loads (and then
decides a request) or is refused with a ToolSelectionError naming its file, never another exception. Each is a seeded mutation (tests/fuzz_mutations.py) of
a real compiled selector's program.json, manifest.json or both (a file replaced by a folder or removed among them);
half the mutated programs get the manifest hash of their new content, as their author would give them, so that
the state checks run and not only the hash check."""

import json
import random
import time

import dspy
from dspy.utils.dummies import DummyLM

from tests.core.tools_fixture import Add, Echo
from tests.fuzz_mutations import mutate
from tool_selection import ToolSet
from tool_selection.compiled import Manifest, program_sha256, save_compiled, tool_fingerprint
from tool_selection.errors import ToolSelectionError
from tool_selection.selector import MultiToolSelector

TOOLS = ToolSet(name="fixture", tools=(Echo, Add))
PROGRAMS = 5_000
ANSWER = {"reasoning": "echo fits", "tool_calls": '[{"tool_name": "echo", "arguments": {"message": "hi"}}]'}
FOCUS = ("select.predict", "select", "metadata", "tools", "strategy", "tool_set", "program_sha256")


def _compiled(directory, strategy):
    """A real compiled selector with a bootstrapped demonstration, as ``toolsel optimize`` saves one."""
    program = MultiToolSelector(TOOLS, strategy=strategy)
    predictor = next(predictor for _, predictor in program.named_predictors())
    values = {"tools": "echo: Echo a message.", "request": "say hi", "reasoning": "echo fits",
              "conversation": [{"role": "user", "content": "hello"}],
              "tool_calls": [{"tool_name": "echo", "arguments": {"message": "hi"}}]}
    predictor.demos = [dspy.Example(augmented=True, **{field: values[field] for field in predictor.signature.fields})]
    save_compiled(program, directory, Manifest(tool_set=None, tools=tool_fingerprint(TOOLS.registry()), model="m",
                                               strategy=strategy))
    return directory


def _fuzz(rng, base, target, on_disk: dict):
    """Write into ``target`` the files of ``base``, one or both mutated (``on_disk``: what each file holds now, so
    that a file already right is not written again)."""
    names = rng.choice([["program.json"], ["manifest.json"], ["program.json", "manifest.json"]])
    for name in ("program.json", "manifest.json"):
        path, text = target / name, (base / name).read_bytes()
        if path.is_dir():
            path.rmdir()
        if name in names and rng.random() < 0.02:
            path.unlink(missing_ok=True)
            if rng.random() < 0.5:
                path.mkdir()
            on_disk[name] = None
            continue
        content = mutate(rng, text.decode("utf-8"), FOCUS) if name in names else text
        if on_disk.get(name) != content:
            _replace(path, content)
            on_disk[name] = content
    if "program.json" in names and on_disk["program.json"] is not None and rng.random() < 0.5:
        try:
            manifest = json.loads(on_disk["manifest.json"])
            manifest["program_sha256"] = program_sha256(json.loads(on_disk["program.json"]))
        except (ValueError, TypeError, RecursionError, AttributeError):
            return  # a manifest or program too broken to rehash stays as it is
        on_disk["manifest.json"] = json.dumps(manifest).encode("utf-8")
        _replace(target / "manifest.json", on_disk["manifest.json"])


def _replace(path, content: bytes) -> None:
    path.unlink(missing_ok=True)  # a new file: truncating one in place is far slower on some file systems
    path.write_bytes(content)


def test_five_thousand_malformed_compiled_selectors_load_or_are_refused_clearly(tmp_path):
    rng = random.Random(20261128)
    bases = [_compiled(tmp_path / f"base-{strategy}", strategy) for strategy in ("json-cot", "native")]
    outcomes = {"loaded": 0, "refused": 0}
    tracebacks = []
    target, on_disk = tmp_path / "fuzzed", {}
    target.mkdir()
    start = time.perf_counter()
    for index in range(PROGRAMS):
        base = rng.choice(bases)
        _fuzz(rng, base, target, on_disk)
        try:
            if rng.random() < 0.8:
                selector = MultiToolSelector.load(target, tools=TOOLS if rng.random() < 0.7 else None)
            else:  # a bare state file, as --program FILE.json loads it
                selector = MultiToolSelector(strategy=base.name.removeprefix("base-")).load(target / "program.json")
            with dspy.context(lm=DummyLM([ANSWER])):  # what loads can build its prompt and decide
                selector(request="say hi", tools=TOOLS)
            outcomes["loaded"] += 1
        except ToolSelectionError as error:
            assert str(target) in str(error), str(error)
            outcomes["refused"] += 1
        except Exception as error:  # what the test looks for
            tracebacks.append(f"program {index}: {type(error).__name__}: {str(error)[:200]}")
    elapsed = time.perf_counter() - start
    assert not tracebacks, f"{len(tracebacks)} of {PROGRAMS} raised something else:\n" + "\n".join(tracebacks[:20])
    assert outcomes["loaded"] > 50 and outcomes["refused"] > 2_000, outcomes
    print(f"\n{PROGRAMS} fuzzed compiled selectors in {elapsed:.1f} s: {outcomes}")
